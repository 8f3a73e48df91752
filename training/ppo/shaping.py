"""Potential-based reward shaping (Ng, Harada & Russell 1999) for the sparse terminal reward.

Colony pays only at the end (R7.4), after ~100 decisions per colour, so early on PPO has
almost no signal about which move mattered. Shaping with a potential Phi adds
`gamma * Phi(s') - Phi(s)` between a colour's consecutive decisions and `-Phi(s)` at its
last one (Phi of a finished game is 0). The sum telescopes, so the optimal policy is
unchanged; only credit arrives sooner. In GAE this is the same as using `V + Phi` in place
of `V` (`train.py` does exactly that), so the value head learns the residual `V_true - Phi`.

The potential is the provisional score if the game ended now, from the mover's side:

    Phi_red(s) = scale * clip(0.5 * w + 0.25 * (controlled_red - controlled_blue), -1, 1),
    Phi_blue(s) = -Phi_red(s)

with `w` = +1 / -1 / 0 for who would win now (R7.2-R7.3) and `controlled_*` the colonies
each colour controls (R7.1). It reads the engine's scoring kernel; no rule is decided here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from colony_env import _core
from colony_env.constants import N_CELLS, NOBODY

WINNER_WEIGHT = 0.5
COLONY_WEIGHT = 0.25


@njit(cache=True)
def red_potential(states: np.ndarray) -> np.ndarray:
    """Unscaled Phi_red of each packed state in `states` [N, 108] (board frame)."""
    n = states.shape[0]
    out = np.zeros(n, np.float32)
    for i in range(n):
        board = states[i, :N_CELLS]
        table = _core.colony_table(board)
        diff = 0
        for row in range(table.shape[0]):
            if table[row, 4] == 0:
                diff += 1
            elif table[row, 4] == 1:
                diff -= 1
        w = _core.winner_of_table(table)
        win = 0.0 if w == NOBODY else (1.0 if w == 0 else -1.0)
        phi = WINNER_WEIGHT * win + COLONY_WEIGHT * diff
        out[i] = min(1.0, max(-1.0, phi))
    return out


def mover_potential(states: np.ndarray, scale: float) -> np.ndarray:
    """scale * Phi of the colour to move in each state (float32[N]); zeros when scale is 0."""
    from colony_env.constants import I_TO_MOVE

    states = np.ascontiguousarray(states)
    if scale == 0.0:
        return np.zeros(states.shape[0], np.float32)
    red = red_potential(states) * np.float32(scale)
    return np.where(states[:, I_TO_MOVE] == 0, red, -red).astype(np.float32)
