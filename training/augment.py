"""Board-symmetry augmentation, shared by the PPO trainer and distillation.

Both show a sample to the network in one of the 4 colour-preserving symmetries of the
board; the observation planes and the candidate action ids must move together, so the
mapping is written once here (from `colony_env.symmetry`).
"""

from __future__ import annotations

import numpy as np

from colony_env import symmetry

AUG_SYMS = np.asarray(symmetry.COLOUR_PRESERVING, np.int64)
"""The symmetries augmentation draws from: those that keep each colour's edges (R1.3)."""


def augment(obs: np.ndarray, ids: np.ndarray, syms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Show sample i in board symmetry syms[i]: planes moved, candidate action ids mapped.

    Slot j of the result is the image of slot j of the input, so a slot sampled in the
    symmetric frame indexes the same canonical action in `ids`.
    """
    return augment_planes(obs, syms), np.take_along_axis(symmetry.ACTION_MAP[syms], ids, axis=1)


def augment_planes(obs: np.ndarray, syms: np.ndarray) -> np.ndarray:
    """The planes of sample i [N, C, 10, 10] in board symmetry syms[i] (for a fit with no action ids, e.g. a value)."""
    n, c = obs.shape[:2]
    gather = symmetry.CELL_GATHER[syms]  # [N, 100]
    return np.take_along_axis(obs.reshape(n, c, -1), gather[:, None, :], axis=2).reshape(obs.shape)


def augment_cells(cells: np.ndarray, syms: np.ndarray) -> np.ndarray:
    """One plane per sample, flat [N, 100] (e.g. an ownership target), in board symmetry syms[i]: `augment_planes`'s
    move of the cells, so the plane stays aligned with the observation shown in the same symmetry."""
    return np.take_along_axis(cells, symmetry.CELL_GATHER[syms], axis=1)
