"""The agent interface shared by every player of Colony: engine-level, one method.

An agent sees the engine's `GameState` and returns a legal action id in the absolute
board frame (docs/rules.md R8). Randomness is injected: the caller passes the
`numpy.random.Generator` to use, so a game is reproducible from its seeds and one agent
object can serve many games (in parallel workers, each with its own generator).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from ..engine import GameState

MAX_SIMULATIONS = 1_000_000
"""The most simulations a search (`mcts:N`, `az:N`) takes per move. Its arrays grow with them, about 2 KB a
simulation, so a million already asks for gigabytes; a larger number could only fail to allocate."""
MAX_LEAF_PLAYOUTS = 1000
"""The most random playouts one leaf of an `az` search may average (`rn=N`); each is a game to its end."""


class Agent(ABC):
    """A player: `act(state, rng) -> action id` (board frame), never an illegal action.

    `name` identifies the agent in tables and game records (the agent spec string
    when built from one, e.g. `mcts:200`).
    """

    name: str = "agent"

    @abstractmethod
    def act(self, state: GameState, rng: np.random.Generator) -> int:
        """A legal action for `state.to_move`; `ValueError` if the game is over."""

    def act_batch(self, states: Sequence[GameState], rngs: Sequence[np.random.Generator]) -> list[int]:
        """`act` for several games, each with its own generator. Agents that can share work
        across games (a network search batching its leaves) override it."""
        return [self.act(state, rng) for state, rng in zip(states, rngs, strict=True)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def require_ongoing(state: GameState) -> None:
    """Agents are asked to move only in ongoing games (R8.4: nothing is legal after the end)."""
    if state.is_over:
        raise ValueError(f"the game is over ({state.end_reason}); no action is legal (R8.4)")
