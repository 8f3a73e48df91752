"""One-ply lookahead targets for the policy from the learner's own value head (`lookahead_coef`).

The policy of a PPO run learns that a move is bad only when it samples the move and the game
punishes it; the value head, which every position trains, learns sooner which positions are
bad (docs/training.md, "One-ply lookahead"). At a `lookahead_share` of the learner's decisions
each legal move is played on a copy of the position and the position after it is scored:
exactly where the game ends (R7.4), else by the value head read as in training (head + Phi with
reward shaping, `agents.ValueReading`), for the colour that moved (the sign turned where the
other colour moves next; in grace the same colour may move again, R6.3). The moves within
`lookahead_margin` of the best form the *kept set*, and the loss `-log P(kept set)` moves the
policy's mass off the others without telling it how to share it among the kept ones: in a
quiet position, where every move is kept, it is 0.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from colony_env import _core
from colony_env.constants import I_REASON, I_TO_MOVE, N_CELLS, NOBODY, STATE_LEN
from colony_env.frame import to_frame
from colony_env.observation import OBS_SHAPE, encode_given

from ..agents import ValueReading
from ..model import PolicyValueNet


@njit(cache=True)
def expand_children(states: np.ndarray, rows: np.ndarray, ids: np.ndarray, counts: np.ndarray,
                    child_states: np.ndarray, child_obs: np.ndarray, exact: np.ndarray, over: np.ndarray,
                    sign: np.ndarray) -> int:
    """Play every legal (canonical) id of each game in `rows` on a copy of its packed state; returns how many
    children were written. Child k: its packed state, its mover's planes (ongoing games), whether the game is over
    and then its result for the parent's mover (`exact`), else +1 / -1 for whether the parent's mover moves next."""
    k = 0
    for r in rows:
        a = states[r]
        mover = a[I_TO_MOVE]
        for j in range(counts[r]):
            new = _core.apply_unchecked(a, to_frame(ids[r, j], mover == 1))
            child_states[k, :] = new
            if new[I_REASON] != 0:
                over[k] = True
                w = _core.winner(new[:N_CELLS])
                exact[k] = 0.0 if w == NOBODY else (1.0 if w == mover else -1.0)
            else:
                over[k] = False
                colour = new[I_TO_MOVE]
                label, size, count = _core.components(new[:N_CELLS])
                encode_given(new, colour, colour == 1, label, size, count, child_obs[k])
                sign[k] = 1.0 if colour == mover else -1.0
            k += 1
    return k


@torch.no_grad()
def kept_slots(model: PolicyValueNet, states: np.ndarray, rows: np.ndarray, ids: np.ndarray, counts: np.ndarray,
               shaping_scale: float, margin: float, device: torch.device) -> np.ndarray:
    """bool[len(rows), ids.shape[1]]: for each game in `rows`, its legal slots whose one-ply value for the mover is
    within `margin` of the best (module docstring). `states` are the packed board-frame states, `ids`/`counts` the
    canonical legal ids (the vector env's)."""
    total = int(counts[rows].sum())
    child_states = np.zeros((total, STATE_LEN), np.int32)
    child_obs = np.zeros((total, *OBS_SHAPE), np.float32)
    exact = np.zeros(total, np.float32)
    over = np.zeros(total, np.bool_)
    sign = np.zeros(total, np.float32)
    expand_children(np.ascontiguousarray(states), rows.astype(np.int64), ids, counts, child_states, child_obs,
                    exact, over, sign)
    values = exact.astype(np.float64)
    live = np.flatnonzero(~over)
    if len(live):
        was_training = model.training
        model.eval()
        head = model.value(torch.from_numpy(child_obs[live]).to(device)).float().cpu().numpy()
        model.train(was_training)
        values[live] = sign[live] * ValueReading(tanh=False, shaping_scale=shaping_scale)(head, child_states[live])
    kept = np.zeros((len(rows), ids.shape[1]), np.bool_)
    start = 0
    for i, r in enumerate(rows):
        v = values[start:start + counts[r]]
        kept[i, :counts[r]] = v >= v.max() - margin
        start += counts[r]
    return kept

