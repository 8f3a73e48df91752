"""The weakest yardstick: a uniformly random legal action."""

from __future__ import annotations

import numpy as np

from ..engine import GameState, legal_actions
from .base import Agent, require_ongoing


class RandomAgent(Agent):
    """Uniform over the legal actions of R4 (pass only when it is the only one, R4.3)."""

    def __init__(self, name: str = "random") -> None:
        self.name = name

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        require_ongoing(state)
        legal = legal_actions(state)
        return int(legal[rng.integers(len(legal))])
