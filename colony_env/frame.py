"""The mover's frame in one place: legal ids, mask bits, observation planes, batch buffers.

Every consumer of "what may the colour to move do, and what does it see" reads it here:
the PettingZoo env (`env.py`), the self-play vector env (`vector.py`), the Gymnasium vector
env (`gym_vector.py`), the single-agent wrapper (`wrappers.py`) and the search kernels
(`agents/_az.py`, `agents/_search.py`). No rule is decided here: the ids are the engine's
(`_core`), the planes are `observation.py`'s; this module only puts them in a frame.

* **Frames.** The board frame is the engine's (docs/rules.md R8). An agent's canonical frame
  (`symmetry.py`) is the board for red and its transpose for blue, so a caller passes
  `transposed` (True: blue's canonical frame). `legal_into` lists the ids of the colour to
  move, pass (R4.3) alone when nothing else is legal and nothing once the game is over, in
  the engine's order (ascending board ids) mapped to the frame: red's ids ascend, blue's
  canonical ids are the images of ascending board ids, so they are not sorted.
* **One pass per position.** `observe_into` writes a colour's planes and, when that colour
  is to move, its legal ids; the components of the board (R3.3), which both need, are
  computed once for the two.
* **Mask bits.** `set_bits` writes or clears the bits of an id list in a mask row, so a
  recycled mask is cleaned in the ~70 places it was set, not over its 16,001 entries.
* **Buffers.** `BufferPool` hands a batch env the buffers of a step and takes them back
  once the caller has let go of every array and view of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np
from numba import njit

from . import _core
from .constants import I_REASON, I_TO_MOVE, N_CELLS
from .observation import encode_given
from .symmetry import TRANSPOSE_ACTIONS

MAX_LEGAL = _core.MAX_LEGAL  # legal ids of one position never exceed this (engine bound)


@njit(cache=True, inline="always")
def to_frame(action: int, transposed: bool) -> int:
    """A board id in the frame (or back: the transpose is its own inverse)."""
    return TRANSPOSE_ACTIONS[action] if transposed else action


@njit(cache=True, inline="always")
def _map_ids(ids: np.ndarray, n: int, transposed: bool) -> None:
    if transposed:
        for j in range(n):
            ids[j] = TRANSPOSE_ACTIONS[ids[j]]


@njit(cache=True)
def legal_into(a: np.ndarray, transposed: bool, out: np.ndarray) -> int:
    """Write the legal ids of the colour to move in packed state `a` into `out` (int16, at least
    `MAX_LEGAL` long), in the board frame or transposed; return how many (R4, R8.4; pass alone
    when nothing else is legal, R4.3; none once the game is over)."""
    n = _core.legal_into(a, out)
    _map_ids(out, n, transposed)
    return n


@njit(cache=True)
def mover_legal_into(a: np.ndarray, out: np.ndarray) -> int:
    """`legal_into` in the canonical frame of the colour to move (blue's transposed)."""
    return legal_into(a, a[I_TO_MOVE] == 1, out)


@njit(cache=True)
def observe_into(
    a: np.ndarray, colour: int, transposed: bool, planes: np.ndarray, ids: np.ndarray, with_legal: bool
) -> int:
    """`colour`'s planes of `a` into `planes[C, 10, 10]` (`observation.encode_into`) and, when
    `with_legal` and `colour` is to move in a live game, its legal ids in the same frame into
    `ids` (as `legal_into`); returns how many ids (0 when none were asked or `colour` may not act).
    """
    label, size, count = _core.components(a[:N_CELLS])
    encode_given(a, colour, transposed, label, size, count, planes)
    if not with_legal or a[I_REASON] != 0 or a[I_TO_MOVE] != colour:
        return 0
    n = _core.legal_given(a, label, size, ids)
    _map_ids(ids, n, transposed)
    return n


@njit(cache=True)
def observe_mover(a: np.ndarray, planes: np.ndarray, ids: np.ndarray) -> int:
    """`observe_into` for the colour to move in its canonical frame (what the networks see)."""
    colour = a[I_TO_MOVE]
    return observe_into(a, colour, colour == 1, planes, ids, True)


@njit(cache=True, inline="always")
def set_bits(row: np.ndarray, ids: np.ndarray, n: int, value: bool) -> None:
    """Set (or clear) the mask bits of the first `n` ids of an id list."""
    for j in range(n):
        row[ids[j]] = value


@njit(cache=True, inline="always")
def is_listed(row: np.ndarray, count: int, action: int) -> bool:
    """Whether `action` is among the first `count` ids of a legal-id row."""
    for j in range(count):
        if row[j] == action:
            return True
    return False


class BufferPool:
    """Recycled batch buffers: a fresh multi-megabyte allocation per step costs page faults worth
    about 15% of a vector-env step, so a step reuses the buffers of an earlier one that the
    caller has let go of.

    `make()` builds one set (a tuple of arrays); `watched` are the positions in it of the arrays
    handed to the caller. A set is free when nothing outside the pool references a watched array
    (no array, view or tensor the caller kept). At most `size` sets are kept; when all are in use
    `take` builds a new one that is not kept, so a caller holding every step's arrays stays correct.
    """

    def __init__(self, make: Callable[[], tuple[np.ndarray, ...]], watched: Sequence[int] = (0,), size: int = 3) -> None:
        self._make = make
        self._watched = tuple(watched)
        self._size = size
        self._sets: list[tuple[np.ndarray, ...]] = []
        # The reference counts of arrays held by nothing but a tuple, measured through the same
        # call: whatever the interpreter's counting conventions are, a free set reads the same.
        self._free = self._refs(tuple(np.empty(0) for _ in range(max(self._watched) + 1)))

    def _refs(self, entry: tuple[np.ndarray, ...]) -> tuple[int, ...]:
        return tuple(sys.getrefcount(entry[i]) for i in self._watched)

    def take(self) -> tuple[tuple[np.ndarray, ...], bool]:
        """(a set of buffers, whether it is recycled: its contents are an earlier step's)."""
        for entry in self._sets:
            if all(n <= f for n, f in zip(self._refs(entry), self._free)):
                return entry, True
        entry = self._make()
        if len(self._sets) < self._size:
            self._sets.append(entry)
        return entry, False


__all__ = [
    "MAX_LEGAL",
    "BufferPool",
    "is_listed",
    "legal_into",
    "mover_legal_into",
    "observe_into",
    "observe_mover",
    "set_bits",
    "to_frame",
]
