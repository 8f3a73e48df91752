"""What the analysis reads from a loaded network beyond its policy: batched values and the ownership map.

Runs in the worker processes only (it imports torch). `model` is the `PolicyValueNet` of a
`colony_training.agents.PolicyAgent`.
"""

from __future__ import annotations

import numpy as np
import torch

import colony_env as ce
from colony_env import observation, symmetry
from colony_env.constants import BOARD_SIZE

from colony_training.teacher import greedy_action_features

VALUE_BATCH = 256  # positions per forward pass of the value graph


@torch.no_grad()
def head_values(model, states: list[ce.GameState]) -> np.ndarray:
    """The value head's output for each (ongoing) position, for its mover: one forward pass per batch,
    where `PolicyAgent.policy` would take one per position (the value head needs no legal actions)."""
    out = np.zeros(len(states), np.float64)
    for start in range(0, len(states), VALUE_BATCH):
        chunk = states[start:start + VALUE_BATCH]
        obs = np.stack([observation.encode_observation(s, s.to_move) for s in chunk])
        out[start:start + len(chunk)] = model.value(torch.from_numpy(obs)).double().numpy()
    return out


@torch.no_grad()
def ownership(model, state: ce.GameState) -> list[float] | None:
    """Red's view of who will control each cell's colony at the end, in [-1, 1] per cell (board
    order a10..j1; +1 red, -1 blue), from the ownership head; None when the network has none.

    The head answers for the mover in the mover's canonical frame (blue's is the transposed
    board), as its training target (`colony_training.zero.selfplay.ownership`) is written.
    """
    if not getattr(model, "ownership_head", False):
        return None
    colour = state.to_move
    board_ids = ce.legal_actions(state)
    canonical = symmetry.board_action_to_canonical(board_ids, colour)
    obs = torch.from_numpy(observation.encode_observation(state, colour))[None]
    feats = None
    if model.heuristic_prior:
        feats = torch.from_numpy(greedy_action_features(state._a[None], np.zeros(1, np.int64), len(board_ids)))
    _, _, own = model(obs, torch.from_numpy(canonical)[None], feats, with_ownership=True)
    mover = torch.tanh(own[0]).double().numpy()
    if colour == ce.RED:
        red = mover
    else:  # canonical cell (r, c) of blue is board cell (c, r); blue's +1 is red's -1
        red = -mover.reshape(BOARD_SIZE, BOARD_SIZE).T.reshape(-1)
    return [round(float(v), 3) for v in red]
