"""Observation planes: a position as `float32[C, 10, 10]` from one colour's point of view.

One compiled encoder serves the PettingZoo env (board frame), the Gymnasium wrapper
and the vector env (canonical frame, see `symmetry.py`). The planes only *describe*
the position; every fact they carry (connected, components, controllers) comes from
the engine's kernels, so no rule is decided here.

"Own" and "opponent" are relative to the observing colour; value planes are one-hot.
Constant planes repeat one number over the whole board (the AlphaZero convention), so
a convolutional network sees them at every cell.

| plane | content                                                                     |
|-------|-----------------------------------------------------------------------------|
| 0-3   | own satellites of value 1, 2, 3, 4                                          |
| 4-7   | opponent satellites of value 1, 2, 3, 4                                     |
| 8     | own connected satellites (R3.1; they never move again, R3.2)                |
| 9     | opponent connected satellites                                               |
| 10    | satellites in a colony (component of 3+, R3.4)                              |
| 11    | colonies controlled by the observer (R7.1), every cell of the colony        |
| 12    | colonies controlled by the opponent                                         |
| 13    | colonies controlled by nobody (equal totals)                                |
| 14    | crowned colonies (exactly 6, R3.4)                                          |
| 15    | component size / 6 on every satellite (1/6 for a lone satellite)            |
| 16    | empty cells next to an opponent satellite (an own satellite landing there connects) |
| 17    | empty cells next to an own satellite (an opponent landing there connects)   |
| 18    | the observer's start edges (R2.3): rows 0 and 9 for red, columns 0 and 9 for blue, in the frame of the planes |
| 19    | connections unlocked (R3.5), constant                                        |
| 20    | the observer is to move, constant                                            |
| 21    | the observer is finished (R6.3), constant                                    |
| 22    | the opponent is finished, i.e. the observer is the grace player, constant     |
| 23    | grace moves left / 3 (R6.3), constant                                        |
| 24    | the last action was a pass (one more pass ends the game, R6.2), constant     |
| 25    | ply / max_plies (the ply limit ends the game, R6.2), constant                |
| 26    | own exact reach: empty cells an own unconnected satellite of value v lands on v cells away (R4.1), max v / 4 |
| 27    | opponent exact reach (where an opponent's connection move can land)         |
| 28    | own reach: the same for 1 to v cells away (any move's landing cell, R4.1)   |
| 29    | opponent reach                                                               |

Planes 26-29 give the reach of moves (satellites jump, R4.1) to every cell: without them a network's
3 x 3 convolutions need several layers to tell which cells a satellite four cells away reaches, which
is what tells a move that hands the opponent a connection from a safe one. They ignore the other
legality conditions (connections unlocked, R5), so they describe geometry and decide no rule. A
network trained before they were added reads the first 26 planes (`training/model.py`).

There is no plane for the observer's colour on purpose: the rules are invariant under
the transpose that swaps the colours (`symmetry.py`), so a colour plane would only let
a network tell apart positions that play the same.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _core
from .constants import (
    BOARD_SIZE,
    GRACE_MOVES,
    I_FINISHED,
    I_GRACE,
    I_MAX_PLIES,
    I_PASSES,
    I_PLY,
    I_TO_MOVE,
    I_UNLOCKED,
    MAX_COMPONENT,
    MAX_VALUE,
    MIN_COLONY,
    N_CELLS,
    NOBODY,
    Colour,
)

# Plane indices (the table above).
P_OWN = 0  # + value - 1
P_OPP = MAX_VALUE  # + value - 1
P_OWN_CONNECTED = 2 * MAX_VALUE
P_OPP_CONNECTED = P_OWN_CONNECTED + 1
P_COLONY = P_OWN_CONNECTED + 2
P_OWN_CONTROLS = P_COLONY + 1
P_OPP_CONTROLS = P_COLONY + 2
P_NOBODY_CONTROLS = P_COLONY + 3
P_CROWNED = P_COLONY + 4
P_COMPONENT_SIZE = P_COLONY + 5
P_OWN_CONTACT = P_COLONY + 6
P_OPP_CONTACT = P_COLONY + 7
P_OWN_EDGES = P_COLONY + 8
P_UNLOCKED = P_COLONY + 9
P_TO_MOVE = P_COLONY + 10
P_OWN_FINISHED = P_COLONY + 11
P_OPP_FINISHED = P_COLONY + 12
P_GRACE = P_COLONY + 13
P_LAST_PASS = P_COLONY + 14
P_PLY = P_COLONY + 15
P_OWN_EXACT = P_PLY + 1
P_OPP_EXACT = P_PLY + 2
P_OWN_REACH = P_PLY + 3
P_OPP_REACH = P_PLY + 4
OBS_CHANNELS = P_OPP_REACH + 1  # 30

PLANE_NAMES: tuple[str, ...] = (
    "own_1", "own_2", "own_3", "own_4",
    "opp_1", "opp_2", "opp_3", "opp_4",
    "own_connected", "opp_connected", "colony", "own_controls", "opp_controls",
    "nobody_controls", "crowned", "component_size", "own_contact", "opp_contact",
    "own_edges", "unlocked", "to_move", "own_finished", "opp_finished", "grace_left",
    "last_pass", "ply_progress", "own_exact_reach", "opp_exact_reach", "own_reach", "opp_reach",
)  # fmt: skip
assert len(PLANE_NAMES) == OBS_CHANNELS
OBS_SHAPE = (OBS_CHANNELS, BOARD_SIZE, BOARD_SIZE)
LAST = BOARD_SIZE - 1
_IDENTITY = np.arange(N_CELLS, dtype=np.int64)
_TRANSPOSED = (_IDENTITY % BOARD_SIZE) * BOARD_SIZE + _IDENTITY // BOARD_SIZE  # (r, c) -> (c, r)


@njit(cache=True)
def encode_into(a: np.ndarray, colour: int, transpose: bool, out: np.ndarray) -> None:
    """Write the planes of packed state `a` seen by `colour` (0 red, 1 blue) into `out[C,10,10]`.

    With `transpose` the planes are written in the transposed frame, cell (r, c) of the
    board at (c, r): that is blue's canonical view (`symmetry.py`).
    """
    label, size, count = _core.components(a[:N_CELLS])
    encode_given(a, colour, transpose, label, size, count, out)


@njit(cache=True)
def encode_given(
    a: np.ndarray, colour: int, transpose: bool, label: np.ndarray, size: np.ndarray, count: int, out: np.ndarray
) -> None:
    """`encode_into` with the components of `a`'s board already known (`_core.components`),
    so that planes and legal ids of one position compute them once (`frame.py`)."""
    board = a[:N_CELLS]
    me = 1 if colour == 0 else -1
    cells = _TRANSPOSED if transpose else _IDENTITY
    flat = out.reshape(OBS_CHANNELS * N_CELLS)  # plane p, cell i -> p * N_CELLS + cells[i]
    flat[: P_UNLOCKED * N_CELLS] = 0.0  # the constant planes from P_UNLOCKED to P_PLY are written in full below
    flat[P_OWN_EXACT * N_CELLS :] = 0.0  # the reach planes, filled by the loop below
    # Occupied cells, gathered without branching on the board (about 24 of 100).
    sats = np.empty(N_CELLS, np.int64)
    n_sats = 0
    for i in range(N_CELLS):
        sats[n_sats] = i
        n_sats += board[i] != 0
    # R7.1 controller per component (the colour with the strictly greater total), kept
    # as the plane its colony cells go to.
    total = np.zeros(count, np.int64)  # red total minus blue total
    for k in range(n_sats):
        i = sats[k]
        total[label[i]] += board[i]
    ctrl_plane = np.empty(count, np.int64)
    for k in range(count):
        t = total[k] * me
        ctrl_plane[k] = P_OWN_CONTROLS if t > 0 else P_OPP_CONTROLS if t < 0 else P_NOBODY_CONTROLS
    # Written without data-dependent branches (they mispredict on a random board): every
    # store below is either the plane's value or a 0 over a 0.
    for k in range(n_sats):
        i = sats[k]
        v = board[i]
        opp = v * me < 0
        value = v if v > 0 else -v
        cell = cells[i]
        flat[(P_OWN + MAX_VALUE * opp + value - 1) * N_CELLS + cell] = 1.0
        # An empty neighbour of an opponent satellite is an own contact cell and vice versa;
        # an occupied neighbour gets a 0 there, which no other satellite overwrites with 1.
        contact = (P_OWN_CONTACT if opp else P_OPP_CONTACT) * N_CELLS
        connected = False
        for j in range(4):
            n = _core.ORTH[i, j]
            if n >= 0:
                flat[contact + cells[n]] = board[n] == 0
                connected |= board[n] * v < 0  # R3.1
        flat[(P_OWN_CONNECTED + opp) * N_CELLS + cell] = connected
        lab = label[i]
        sz = size[lab]
        flat[P_COMPONENT_SIZE * N_CELLS + cell] = sz / MAX_COMPONENT
        in_colony = sz >= MIN_COLONY
        flat[P_COLONY * N_CELLS + cell] = in_colony
        flat[ctrl_plane[lab] * N_CELLS + cell] = in_colony
        flat[P_CROWNED * N_CELLS + cell] = sz == MAX_COMPONENT
    # Reach (R4.1): the empty cells an unconnected satellite (R3.2) lands on exactly its value away (where a
    # connection move may land) and at most its value away; the plane holds the largest such value / 4.
    for k in range(n_sats):
        i = sats[k]
        v = board[i]
        opp = v * me < 0
        value = v if v > 0 else -v
        if flat[(P_OWN_CONNECTED + opp) * N_CELLS + cells[i]] != 0.0:
            continue
        exact = (P_OWN_EXACT + opp) * N_CELLS
        reach = (P_OWN_REACH + opp) * N_CELLS
        for d in range(8):
            for step in range(value):
                t = _core.RAY[i, d, step]
                if t < 0:
                    break
                if board[t] != 0:
                    continue
                c = cells[t]
                flat[reach + c] = max(flat[reach + c], value / MAX_VALUE)
                if step == value - 1:
                    flat[exact + c] = max(flat[exact + c], value / MAX_VALUE)
    # Own edges (R2.3): red's are rows 0/9, blue's columns 0/9; in blue's transposed
    # frame they become rows, so the plane shows rows iff (red) xor (transposed).
    rows = (colour == 0) != transpose
    base = P_OWN_EDGES * N_CELLS
    for k in range(BOARD_SIZE):
        if rows:
            flat[base + k] = 1.0
            flat[base + LAST * BOARD_SIZE + k] = 1.0
        else:
            flat[base + k * BOARD_SIZE] = 1.0
            flat[base + k * BOARD_SIZE + LAST] = 1.0
    # Constant planes, written as flat loops (numba's 2-D scalar broadcast is slow).
    finished = a[I_FINISHED]
    _fill(flat, P_UNLOCKED, 1.0 if a[I_UNLOCKED] != 0 else 0.0)
    _fill(flat, P_TO_MOVE, 1.0 if a[I_TO_MOVE] == colour else 0.0)
    _fill(flat, P_OWN_FINISHED, 1.0 if finished == colour else 0.0)
    _fill(flat, P_OPP_FINISHED, 1.0 if finished != NOBODY and finished != colour else 0.0)
    _fill(flat, P_GRACE, a[I_GRACE] / GRACE_MOVES)
    _fill(flat, P_LAST_PASS, 1.0 if a[I_PASSES] >= 1 else 0.0)
    _fill(flat, P_PLY, min(1.0, a[I_PLY] / max(1, a[I_MAX_PLIES])))


@njit(cache=True, inline="always")
def _fill(flat: np.ndarray, plane: int, value: float) -> None:
    for k in range(plane * N_CELLS, (plane + 1) * N_CELLS):
        flat[k] = value


def encode_observation(state, colour: Colour | int, canonical: bool = True) -> np.ndarray:
    """`float32[C, 10, 10]` planes of `state` seen by `colour`.

    `canonical=True` (default) gives that colour's canonical view (blue's planes are
    transposed so its start edges lie North and South); `canonical=False` keeps the
    board frame, which matches the board-frame action ids of the PettingZoo env.
    """
    colour = int(Colour(colour))
    out = np.empty(OBS_SHAPE, np.float32)
    encode_into(state._a, colour, bool(canonical and colour == Colour.BLUE), out)
    return out


__all__ = ["OBS_CHANNELS", "OBS_SHAPE", "PLANE_NAMES", "encode_into", "encode_observation"]
