"""KataGo's ownership target (Wu 2019), shared by colony-zero's self-play and PPO's rollouts.

Who controls the colony each cell ends the game in (R7.1): 100 labels per position where the game's
result is one, a dense signal that teaches the trunk what colonies are. The head that predicts it is
`PolicyValueNet.ownership` (training/model.py); play never reads it.
"""

from __future__ import annotations

import numpy as np
import torch

import colony_env as ce
from colony_env.constants import BOARD_SIZE, I_TO_MOVE, N_CELLS


def final_ownership(final: ce.GameState) -> np.ndarray:
    """int8[100], board frame: +1 where red controls the cell's colony at the end, -1 blue, 0 no colony or nobody."""
    board = np.zeros(N_CELLS, np.int8)
    for colony in ce.colonies(final):
        if colony.controller is not None:
            for r, c in colony.cells:
                board[r * BOARD_SIZE + c] = 1 if int(colony.controller) == 0 else -1
    return board


def mover_views(board: np.ndarray, movers: np.ndarray) -> np.ndarray:
    """int8[P, 100]: `final_ownership`'s board from each mover's side (+1 = the mover's) in its canonical frame
    (blue's view is the transposed board, as in its observation planes), so the target lines up cell for cell
    with what the network sees."""
    blue_view = -board.reshape(BOARD_SIZE, BOARD_SIZE).T.reshape(-1)
    return np.where((np.asarray(movers) == 0)[:, None], board[None, :], blue_view[None, :]).astype(np.int8)


def ownership(states: np.ndarray, final: ce.GameState) -> np.ndarray:
    """int8[P, 100]: for each packed state of a game that ended in `final`, its `mover_views` target."""
    return mover_views(final_ownership(final), states[:, I_TO_MOVE])


def ownership_errors(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """float[B]: each position's mean squared error of tanh(the head's logits) against its -1/0/+1 target."""
    return ((torch.tanh(logits) - target.to(logits.dtype)) ** 2).mean(-1)
