"""A one-ply greedy agent with a hand-written heuristic about colonies (docs/rules.md R3, R7).

For every legal action the agent looks at the position after it and scores it for
itself (the mover `p`):

* a finished game: +1000 won, -1000 lost, 0 drawn (R7.4);
* otherwise the sum of
  - 10 x (colonies `p` controls - colonies the opponent controls) (R7.1, R7.2),
  - 4 x who would win if the game ended now: +1 `p`, -1 the opponent, 0 a draw; this is
    the tiebreak of R7.3 when the counts are equal,
  - margins inside colonies: 0.5 per point of `p`'s value lead in each uncrowned
    colony, capped at 4 points either way (a narrow lead can be overturned by one
    more satellite joining), and +-2 per crowned colony (R3.4: nothing can join it,
    so its control is final),
  - minus the threat: the largest loss of the first two terms (or of a won game) that
    one reply of the opponent can cause, so that a move that hands the opponent a
    colony (a connection the opponent can complete or outweigh at once) is avoided.
    Only replies that can change colonies (connection moves, displacements) or end
    the game are tried; any other move leaves the colonies as they are.

Ties, e.g. all the quiet moves of the opening while connections are locked (R3.5), are
broken uniformly at random. The scoring runs in compiled code (`_search.greedy_scores`).
"""

from __future__ import annotations

import numpy as np

from ..engine import GameState, legal_actions
from ._search import greedy_scores
from .base import Agent, require_ongoing

# Scores closer than this are ties (they are sums of a few multiples of 0.5).
TIE_TOLERANCE = 1e-9


class GreedyAgent(Agent):
    """The best action by the one-ply heuristic above; ties at random."""

    def __init__(self, name: str = "greedy") -> None:
        self.name = name

    def scores(self, state: GameState) -> tuple[np.ndarray, np.ndarray]:
        """(legal actions, their heuristic scores) for the player to move."""
        legal = legal_actions(state)
        return legal, greedy_scores(state._a, legal)

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        require_ongoing(state)
        legal, scores = self.scores(state)
        if len(legal) == 1:
            return int(legal[0])
        best = np.flatnonzero(scores >= scores.max() - TIE_TOLERANCE)
        return int(legal[best[rng.integers(len(best))]])
