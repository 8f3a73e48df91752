"""The eight board symmetries, their action maps, and the canonical (mover's) view.

Colony's rules are geometric except for whose edges are whose (R2.3: red North/South,
blue West/East). So the four symmetries that keep each colour's edges (identity,
North-South flip, East-West flip, 180-degree turn) map a position to one that plays
the same, and the four that exchange rows and columns (transpose, anti-transpose and
the two quarter turns) do too once the colours are swapped as well.

Symmetry index `sym`, written as the map of cell (r, c) (B = BOARD_SIZE - 1 = 9):

| sym | name           | (r, c) ->        | swaps colours |
|-----|----------------|------------------|---------------|
| 0   | identity       | (r, c)           | no            |
| 1   | flip_ns        | (B - r, c)       | no            |
| 2   | flip_ew        | (r, B - c)       | no            |
| 3   | rot180         | (B - r, B - c)   | no            |
| 4   | transpose      | (c, r)           | yes           |
| 5   | anti_transpose | (B - c, B - r)   | yes           |
| 6   | rot90          | (c, B - r)       | yes (clockwise quarter turn) |
| 7   | rot270         | (B - c, r)       | yes           |

Action ids (R8) map by moving the source cell and turning the move and push
directions; distances are unchanged (a displacement's landing distance is the
satellite's value, which a symmetry keeps). Every id has an image, including ids that
point off the board (their images point off the board too), so each map is a
permutation of 0..16000 and pass maps to pass.

**Canonical view.** The agent to move sees its own start edges North and South:
red's view is the board itself (sym 0), blue's is the transpose (sym 4). One network
can then play both colours; `board_action_to_canonical` / `canonical_action_to_board`
translate its actions. Both maps are their own inverse.
"""

from __future__ import annotations

import numpy as np

from .constants import (
    BOARD_SIZE,
    DIRECTIONS,
    DISPLACEMENT_BASE,
    I_FINISHED,
    I_TO_MOVE,
    MAX_PUSH,
    MAX_STEP,
    MOVES_PER_CELL,
    N_ACTIONS,
    N_CELLS,
    N_DIRECTIONS,
    NOBODY,
    PASS_ACTION,
    Colour,
)

SYMMETRY_NAMES: tuple[str, ...] = (
    "identity", "flip_ns", "flip_ew", "rot180", "transpose", "anti_transpose", "rot90", "rot270",
)  # fmt: skip
N_SYMMETRIES = len(SYMMETRY_NAMES)
IDENTITY, FLIP_NS, FLIP_EW, ROT180, TRANSPOSE, ANTI_TRANSPOSE, ROT90, ROT270 = range(N_SYMMETRIES)
COLOUR_PRESERVING: tuple[int, ...] = (IDENTITY, FLIP_NS, FLIP_EW, ROT180)
COLOUR_SWAPPING: tuple[int, ...] = (TRANSPOSE, ANTI_TRANSPOSE, ROT90, ROT270)
CANONICAL_SYMMETRY: dict[Colour, int] = {Colour.RED: IDENTITY, Colour.BLUE: TRANSPOSE}
_B = BOARD_SIZE - 1

# Each symmetry as (r, c) -> (r', c'), and its linear part on directions (dr, dc).
_CELL_FUNCS = (
    lambda r, c: (r, c),
    lambda r, c: (_B - r, c),
    lambda r, c: (r, _B - c),
    lambda r, c: (_B - r, _B - c),
    lambda r, c: (c, r),
    lambda r, c: (_B - c, _B - r),
    lambda r, c: (c, _B - r),
    lambda r, c: (_B - c, r),
)
_DIR_FUNCS = (
    lambda dr, dc: (dr, dc),
    lambda dr, dc: (-dr, dc),
    lambda dr, dc: (dr, -dc),
    lambda dr, dc: (-dr, -dc),
    lambda dr, dc: (dc, dr),
    lambda dr, dc: (-dc, -dr),
    lambda dr, dc: (dc, -dr),
    lambda dr, dc: (-dc, dr),
)


def _build_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CELL_MAP[sym, i], DIRECTION_MAP[sym, d], ACTION_MAP[sym, a], INVERSE[sym], built once."""
    cell_map = np.empty((N_SYMMETRIES, N_CELLS), np.int64)
    dir_map = np.empty((N_SYMMETRIES, N_DIRECTIONS), np.int64)
    for sym in range(N_SYMMETRIES):
        for i in range(N_CELLS):
            r, c = _CELL_FUNCS[sym](*divmod(i, BOARD_SIZE))
            cell_map[sym, i] = r * BOARD_SIZE + c
        for d, (dr, dc) in enumerate(DIRECTIONS):
            dir_map[sym, d] = DIRECTIONS.index(_DIR_FUNCS[sym](dr, dc))
    # R8 layout, written out as index arithmetic over all ids at once.
    action_map = np.empty((N_SYMMETRIES, N_ACTIONS), np.int64)
    move = np.arange(DISPLACEMENT_BASE)
    s, d, k1 = move // MOVES_PER_CELL, (move % MOVES_PER_CELL) // MAX_STEP, move % MAX_STEP
    disp = np.arange(DISPLACEMENT_BASE, PASS_ACTION) - DISPLACEMENT_BASE
    pk1 = disp % MAX_PUSH
    pd = (disp // MAX_PUSH) % N_DIRECTIONS
    dd = (disp // (MAX_PUSH * N_DIRECTIONS)) % N_DIRECTIONS
    ds = disp // (MAX_PUSH * N_DIRECTIONS * N_DIRECTIONS)
    for sym in range(N_SYMMETRIES):
        cm, dm = cell_map[sym], dir_map[sym]
        action_map[sym, :DISPLACEMENT_BASE] = MOVES_PER_CELL * cm[s] + MAX_STEP * dm[d] + k1
        action_map[sym, DISPLACEMENT_BASE:PASS_ACTION] = (
            DISPLACEMENT_BASE + MAX_PUSH * (N_DIRECTIONS * (N_DIRECTIONS * cm[ds] + dm[dd]) + dm[pd]) + pk1
        )
        action_map[sym, PASS_ACTION] = PASS_ACTION
    inverse = np.empty(N_SYMMETRIES, np.int64)
    for sym in range(N_SYMMETRIES):
        inverse[sym] = next(t for t in range(N_SYMMETRIES) if np.array_equal(cell_map[t][cell_map[sym]], np.arange(N_CELLS)))
    return cell_map, dir_map, action_map, inverse


CELL_MAP, DIRECTION_MAP, ACTION_MAP, INVERSE = _build_tables()
for _table in (CELL_MAP, DIRECTION_MAP, ACTION_MAP, INVERSE):
    _table.flags.writeable = False
# out[j] = in[CELL_GATHER[sym, j]] moves every cell i to CELL_MAP[sym, i].
CELL_GATHER = CELL_MAP[INVERSE]
CELL_GATHER.flags.writeable = False
# Blue's canonical map on actions, as the int16 table the vector env's kernels use.
TRANSPOSE_ACTIONS = ACTION_MAP[TRANSPOSE].astype(np.int16)
TRANSPOSE_ACTIONS.flags.writeable = False


def _check_sym(sym: int) -> int:
    if not 0 <= int(sym) < N_SYMMETRIES:
        raise ValueError(f"symmetry must be 0..{N_SYMMETRIES - 1} ({', '.join(SYMMETRY_NAMES)}), got {sym!r}")
    return int(sym)


def swaps_colours(sym: int) -> bool:
    """Whether `sym` exchanges rows and columns, and so the colours' roles."""
    return _check_sym(sym) in COLOUR_SWAPPING


def transform_action(ids: np.ndarray | int, sym: int) -> np.ndarray:
    """Image of action id(s) under `sym` (any shape; int64)."""
    return ACTION_MAP[_check_sym(sym)][np.asarray(ids, np.int64)]


def transform_mask(mask: np.ndarray, sym: int) -> np.ndarray:
    """Mask(s) `[..., 16001]` of a position -> the mask of the transformed position."""
    return np.asarray(mask)[..., ACTION_MAP[INVERSE[_check_sym(sym)]]]


def transform_planes(planes: np.ndarray, sym: int) -> np.ndarray:
    """Board-shaped array(s) `[..., 10, 10]` (boards, observation planes) under `sym`.

    Purely spatial: observation planes are relative to the observer ("own" /
    "opponent"), so they need no channel swap even when `sym` swaps the colours.
    """
    a = np.asarray(planes)
    if a.shape[-2:] != (BOARD_SIZE, BOARD_SIZE):
        raise ValueError(f"planes must end in ({BOARD_SIZE}, {BOARD_SIZE}), got shape {a.shape}")
    flat = a.reshape(*a.shape[:-2], N_CELLS)
    return flat[..., CELL_GATHER[_check_sym(sym)]].reshape(a.shape)


def transform_board(board: np.ndarray, sym: int) -> np.ndarray:
    """A signed board (red +v, blue -v) under `sym`, colours swapped (negated) if `sym` swaps them."""
    out = transform_planes(board, sym)
    return -out if sym in COLOUR_SWAPPING else out


def transform_state(state, sym: int):
    """The `GameState` that `sym` maps `state` to: cells moved, and for a colour-swapping
    symmetry the colours exchanged (board negated, `to_move` and `finished` swapped).

    The transformed position plays exactly like the original (its legal set is the
    image of the original's), which the tests check against the engine.
    """
    from .engine import GameState

    sym = _check_sym(sym)
    a = state.to_array()
    a[:N_CELLS] = a[:N_CELLS][CELL_GATHER[sym]]
    if sym in COLOUR_SWAPPING:
        a[:N_CELLS] = -a[:N_CELLS]
        a[I_TO_MOVE] = 1 - a[I_TO_MOVE]
        if a[I_FINISHED] != NOBODY:
            a[I_FINISHED] = 1 - a[I_FINISHED]
    return GameState.from_array(a)


def _colour_select(table: np.ndarray, ids: np.ndarray | int, colour) -> np.ndarray:
    ids = np.asarray(ids, np.int64)
    if np.any((ids < 0) | (ids >= N_ACTIONS)):
        raise ValueError(f"action ids must be in 0..{N_ACTIONS - 1}")
    blue = np.asarray(colour) == int(Colour.BLUE)
    return np.where(blue, table[ids], ids)


def board_action_to_canonical(ids: np.ndarray | int, colour) -> np.ndarray:
    """Board-frame action id(s) -> the canonical frame of `colour` (a Colour, int, or an
    array of colours broadcast against `ids`)."""
    return _colour_select(ACTION_MAP[TRANSPOSE], ids, colour)


def canonical_action_to_board(ids: np.ndarray | int, colour) -> np.ndarray:
    """Canonical-frame action id(s) of `colour` -> board frame (the transpose is its own inverse)."""
    return _colour_select(ACTION_MAP[TRANSPOSE], ids, colour)


def canonical_mask(mask: np.ndarray, colour) -> np.ndarray:
    """Board-frame mask `[16001]` of `colour`'s turn -> its canonical frame."""
    return transform_mask(mask, CANONICAL_SYMMETRY[Colour(int(colour))])


def canonical_planes(planes: np.ndarray, colour) -> np.ndarray:
    """Board-frame planes of `colour` -> its canonical view (and back: the map is an involution)."""
    return transform_planes(planes, CANONICAL_SYMMETRY[Colour(int(colour))])


__all__ = [
    "ACTION_MAP",
    "CANONICAL_SYMMETRY",
    "CELL_MAP",
    "COLOUR_PRESERVING",
    "COLOUR_SWAPPING",
    "DIRECTION_MAP",
    "N_SYMMETRIES",
    "SYMMETRY_NAMES",
    "board_action_to_canonical",
    "canonical_action_to_board",
    "canonical_mask",
    "canonical_planes",
    "swaps_colours",
    "transform_action",
    "transform_board",
    "transform_mask",
    "transform_planes",
    "transform_state",
]
