"""The public rules engine: an immutable `GameState` and pure functions over it.

This is the one place that decides legality (docs/rules.md R4-R5), the turn sequence
(R6), scoring (R7) and the state format (R9); the PettingZoo env, the vector env, the
agents and the trainer all call it. The compiled kernels live in `_core.py`; this
module adds the Python-facing types, validation and error messages.

    >>> import colony_env as ce
    >>> s = ce.new_game(seed=0)
    >>> a = ce.legal_actions(s)[0]
    >>> s2 = ce.apply_action(s, a)      # `s` is unchanged
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from .constants import (
    BLUE_START_CELLS,
    BOARD_SIZE,
    COPIES_PER_VALUE,
    DEFAULT_MAX_PLIES,
    END_REASONS,
    GRACE_MOVES,
    I_FINISHED,
    I_GRACE,
    I_MAX_PLIES,
    I_PASSES,
    I_PLY,
    I_REASON,
    I_TO_MOVE,
    I_UNLOCKED,
    MAX_COMPONENT,
    MAX_PLIES_LIMIT,
    MAX_VALUE,
    N_ACTIONS,
    N_CELLS,
    N_SATELLITES,
    NOBODY,
    PASS_ACTION,
    PASSES_TO_END,
    RED_START_CELLS,
    SATELLITE_VALUES,
    SHIFTED_VALUES,
    STATE_DTYPE,
    STATE_LEN,
    Colour,
)
from .notation import board_text, explain_illegal  # notation needs no engine import: one direction only


class IllegalActionError(ValueError):
    """An action that docs/rules.md does not allow in the given state; the state is unchanged."""


class GameState:
    """One Colony position (R9), immutable.

    Internally a single int32 vector (`constants.py` documents the layout) so that one
    array crosses into the compiled kernels. Read it through the properties; never
    write to `board` (it is a read-only view).
    """

    __slots__ = ("_a",)

    def __init__(self, packed: np.ndarray) -> None:
        if packed.shape != (STATE_LEN,) or packed.dtype != STATE_DTYPE:
            raise ValueError(f"packed state must be {STATE_DTYPE.__name__}[{STATE_LEN}], got {packed.dtype}{list(packed.shape)}")
        self._a = packed

    # --- fields of R9 ---------------------------------------------------------------
    @property
    def board(self) -> np.ndarray:
        """10x10 int8 view, row 0 North: red satellites +v, blue -v, empty 0."""
        view = self._a[:N_CELLS].astype(np.int8).reshape(BOARD_SIZE, BOARD_SIZE)
        view.flags.writeable = False
        return view

    @property
    def to_move(self) -> Colour:
        """The colour to move (after a game-ending action: the colour that ended it, R6.2)."""
        return Colour(int(self._a[I_TO_MOVE]))

    @property
    def unlocked(self) -> bool:
        """R3.5 connections-unlocked flag."""
        return bool(self._a[I_UNLOCKED])

    @property
    def finished(self) -> Colour | None:
        """The colour that has all 12 satellites connected and stopped moving (R6.3)."""
        f = int(self._a[I_FINISHED])
        return None if f == NOBODY else Colour(f)

    @property
    def grace_left(self) -> int:
        return int(self._a[I_GRACE])

    @property
    def ply(self) -> int:
        return int(self._a[I_PLY])

    @property
    def passes(self) -> int:
        """Consecutive passes just played (R6.1)."""
        return int(self._a[I_PASSES])

    @property
    def max_plies(self) -> int:
        return int(self._a[I_MAX_PLIES])

    # --- derived ------------------------------------------------------------------
    @property
    def is_over(self) -> bool:
        return bool(self._a[I_REASON])

    @property
    def end_reason(self) -> str | None:
        """`connected23`, `grace`, `passes` or `ply_limit` (R6.2), None while the game goes on."""
        r = int(self._a[I_REASON])
        return END_REASONS[r - 1] if r else None

    @property
    def is_truncated(self) -> bool:
        """The game ended only because of the ply limit (an env truncation, R6.2.4)."""
        return self.end_reason == "ply_limit"

    @property
    def winner(self) -> Colour | None:
        """The winning colour once the game is over (R7); None for a draw or an ongoing game."""
        if not self.is_over:
            return None
        w = int(_core.winner(self._a[:N_CELLS]))
        return None if w == NOBODY else Colour(w)

    def rewards(self) -> tuple[float, float]:
        """(red, blue) rewards: +1/-1/0 at the end, zeros before (R7.4)."""
        if not self.is_over:
            return (0.0, 0.0)
        w = self.winner
        if w is None:
            return (0.0, 0.0)
        return (1.0, -1.0) if w == Colour.RED else (-1.0, 1.0)

    # --- conversions --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of R9."""
        rows = []
        for r in range(BOARD_SIZE):
            cells = []
            for c in range(BOARD_SIZE):
                v = int(self._a[r * BOARD_SIZE + c])
                cells.append(".." if v == 0 else ("r" if v > 0 else "b") + str(abs(v)))
            rows.append("".join(cells))
        f = self.finished
        return {
            "board": rows,
            "to_move": str(self.to_move),
            "unlocked": self.unlocked,
            "finished": None if f is None else str(f),
            "grace_left": self.grace_left,
            "ply": self.ply,
            "passes": self.passes,
            "max_plies": self.max_plies,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GameState":
        """Parse and validate an R9 object; `ValueError` names the offending field."""
        return _state_from_dict(d)

    def to_array(self) -> np.ndarray:
        """A copy of the packed int32 vector (for batching states in compiled code)."""
        return self._a.copy()

    @classmethod
    def from_array(cls, packed: np.ndarray) -> "GameState":
        """Wrap a packed vector produced by `to_array` or a kernel (no validation)."""
        return cls(np.ascontiguousarray(packed, dtype=STATE_DTYPE).copy())

    # --- python protocol ----------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, GameState) and np.array_equal(self._a, other._a)

    def __hash__(self) -> int:
        return hash(self._a.tobytes())

    def __repr__(self) -> str:
        status = f"over:{self.end_reason}" if self.is_over else f"{self.to_move} to move"
        return f"<GameState ply={self.ply} {status}>"

    def __str__(self) -> str:
        return board_text(self)

    def __getstate__(self) -> np.ndarray:
        return self._a

    def __setstate__(self, packed: np.ndarray) -> None:
        self._a = packed


def _wrap(packed: np.ndarray) -> GameState:
    """Fast constructor for kernel output (already the right dtype and shape)."""
    s = GameState.__new__(GameState)
    s._a = packed
    return s


# --- R2 setup ---------------------------------------------------------------------
def check_max_plies(max_plies: Any, minimum: int = 1) -> int:
    """`max_plies` as an int, or a one-line `ValueError` saying what is allowed.

    The ply counters live in the int32 state, so the limit is at most `MAX_PLIES_LIMIT`;
    every constructor that takes a ply limit (engine, envs, CLIs) checks it here.
    """
    if isinstance(max_plies, bool) or not isinstance(max_plies, (int, np.integer)) or not minimum <= max_plies <= MAX_PLIES_LIMIT:
        raise ValueError(f"max_plies must be an int in {minimum}..{MAX_PLIES_LIMIT}, got {_one_line(max_plies, 40)}")
    return int(max_plies)


def _setup_cells(start: tuple[tuple[int, int], ...], values: np.ndarray, sign: int, board: np.ndarray) -> None:
    for (r, c), v in zip(start, values):
        if v in SHIFTED_VALUES:  # R2.4: one cell inward, away from the edge
            r = 1 if r == 0 else BOARD_SIZE - 2 if r == BOARD_SIZE - 1 else r
            c = 1 if c == 0 else BOARD_SIZE - 2 if c == BOARD_SIZE - 1 else c
        board[r * BOARD_SIZE + c] = sign * int(v)


def new_game(seed: int | np.random.Generator | None = None, max_plies: int = DEFAULT_MAX_PLIES) -> GameState:
    """A fresh game (R2): each colour's 12 values in a seeded uniform order on its start cells.

    The generator draws red's permutation, then blue's. Red is to move (R2.1).
    """
    max_plies = check_max_plies(max_plies)
    check_seed(seed)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    values = np.array(SATELLITE_VALUES)
    red = rng.permutation(values)
    return setup_game(red, rng.permutation(values), max_plies)


def check_seed(seed: Any) -> None:
    """`ValueError` in one line unless `seed` is None, an int >= 0, or a numpy Generator or SeedSequence
    (what `numpy.random.default_rng` takes for a game's setup; its own errors do not say what is allowed)."""
    if not (seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence))
            or (isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and seed >= 0)):
        raise ValueError(f"seed must be an int >= 0, a numpy Generator or None, got {_one_line(seed, 40)}")


def setup_game(red_values: Any, blue_values: Any, max_plies: int = DEFAULT_MAX_PLIES) -> GameState:
    """The R2 setup with given value orders along each colour's start cells (`new_game` draws
    them at random; the OpenSpiel game deals them as chance outcomes). Each order must be a
    permutation of the 12 values of R2.2, or a `ValueError` says so."""
    max_plies = check_max_plies(max_plies)
    orders = []
    for name, order in (("red_values", red_values), ("blue_values", blue_values)):
        try:
            vals = [int(v) for v in order]
        except (TypeError, ValueError):
            vals = None
        if vals is None or sorted(vals) != sorted(SATELLITE_VALUES):
            raise ValueError(f"{name} must be an ordering of {list(SATELLITE_VALUES)} (R2.2), got {_one_line(order)}")
        orders.append(vals)
    a = np.zeros(STATE_LEN, STATE_DTYPE)
    _setup_cells(RED_START_CELLS, orders[0], 1, a)
    _setup_cells(BLUE_START_CELLS, orders[1], -1, a)
    a[I_FINISHED] = NOBODY
    a[I_MAX_PLIES] = max_plies
    a[I_UNLOCKED] = int(_core._any_edge_empty(a[:N_CELLS]))  # R2.5: an edge may start empty
    return _wrap(a)


# --- legality and actions -----------------------------------------------------------
def legal_actions(state: GameState) -> np.ndarray:
    """Sorted int64 ids of the legal actions (R4, R8); empty once the game is over."""
    return _core.legal_ids(state._a)


def legal_action_mask(state: GameState) -> np.ndarray:
    """Bool mask of shape (16001,) marking exactly the legal actions (R8.4)."""
    return _core.legal_mask(state._a)


def is_legal(state: GameState, action: int) -> bool:
    """Whether `action` is legal, without building the whole legal set (False outside 0..16000)."""
    a = _as_action(action)
    return 0 <= a < N_ACTIONS and _core.action_code(state._a, a) == _core.OK


def _as_action(action: Any) -> int:
    if isinstance(action, (bool, np.bool_)):  # operator.index(True) is 1: a mask entry, not an action id
        raise IllegalActionError(f"action must be an integer id in 0..{N_ACTIONS - 1} (R8), got {action!r}")
    try:
        return operator.index(action)
    except TypeError:
        raise IllegalActionError(f"action must be an integer id in 0..{N_ACTIONS - 1} (R8), got {_one_line(action, 40)}") from None


def apply_action(state: GameState, action: int) -> GameState:
    """The state after `action` (R6); `state` itself is never changed.

    Raises `IllegalActionError` naming the action (id and notation) and the rule it breaks.
    """
    a = _as_action(action)
    if not 0 <= a < N_ACTIONS:
        raise IllegalActionError(f"action {a} is outside the action space 0..{N_ACTIONS - 1} (R8)")
    new = np.empty(STATE_LEN, STATE_DTYPE)
    code = _core.apply_into(state._a, a, new)
    if code:
        raise IllegalActionError(explain_illegal(state, a, code))
    return _wrap(new)


# --- analysis ------------------------------------------------------------------------
@dataclass(frozen=True)
class Colony:
    """A component of 3-6 satellites (R3.4) with its totals and controller (R7.1)."""

    cells: tuple[tuple[int, int], ...]
    red_total: int
    blue_total: int
    controller: Colour | None

    @property
    def size(self) -> int:
        return len(self.cells)

    @property
    def total(self) -> int:
        """All satellite values in the colony, both colours (the R7.3 tiebreak key)."""
        return self.red_total + self.blue_total

    @property
    def crowned(self) -> bool:
        return self.size == MAX_COMPONENT


def colonies(state: GameState) -> list[Colony]:
    """Every colony on the board, ordered by its first cell (row-major)."""
    board = state._a[:N_CELLS]
    label = _core.components(board)[0]
    out = []
    for lab, _size, red, blue, ctrl in _core.colony_table(board):
        cells = tuple(divmod(int(i), BOARD_SIZE) for i in np.flatnonzero(label == lab))
        out.append(Colony(cells, int(red), int(blue), None if ctrl == NOBODY else Colour(int(ctrl))))
    return out


def controlled_counts(state: GameState) -> tuple[int, int]:
    """(red, blue) number of controlled colonies (R7.2)."""
    counts = [0, 0]
    for col in colonies(state):
        if col.controller is not None:
            counts[col.controller] += 1
    return counts[0], counts[1]


def connected_mask(state: GameState) -> np.ndarray:
    """10x10 bool: which satellites are connected (R3.1)."""
    return _core.connected_cells(state._a[:N_CELLS]).reshape(BOARD_SIZE, BOARD_SIZE)


def connected_counts(state: GameState) -> tuple[int, int]:
    """(red, blue) number of connected satellites."""
    t = _core.tally(state._a[:N_CELLS])
    return int(t[1]), int(t[3])


# --- R9 parsing ----------------------------------------------------------------------
_PIECE_CODES = {f"{p}{v}": s * v for p, s in (("r", 1), ("b", -1)) for v in range(1, MAX_VALUE + 1)}
_COLOURS = {str(c): c for c in Colour}


def _one_line(value: Any, width: int = 80) -> str:
    """`repr(value)` on one line, cut to `width` characters (R9.1: messages are one line; a
    NumPy array's repr spans several)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _int_field(d: dict[str, Any], key: str, low: int, high: int) -> int:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"field {key!r} must be an int, got {_one_line(v, 40)}")
    if not low <= v <= high:  # also keeps every value inside the int32 state
        raise ValueError(f"field {key!r} must be in {low}..{high}, got {_one_line(v, 40)}")
    return int(v)


def _colour_field(d: dict[str, Any], key: str, allowed: str) -> Colour | None:
    v = d[key]
    if v is None and "null" in allowed:
        return None
    if not isinstance(v, str) or v not in _COLOURS:  # isinstance first: a list is unhashable
        raise ValueError(f"field {key!r} must be {allowed}, got {_one_line(v, 40)}")
    return _COLOURS[v]


def _state_from_dict(d: dict[str, Any]) -> GameState:
    if not isinstance(d, dict):
        raise ValueError(f"a state must be a dict (R9), got {type(d).__name__}")
    required = ("board", "to_move", "unlocked", "finished", "grace_left", "ply", "passes", "max_plies")
    missing = [k for k in required if k not in d]
    if missing:
        raise ValueError(f"state is missing field(s) {missing} (R9 needs {list(required)})")
    a = np.zeros(STATE_LEN, STATE_DTYPE)
    rows = d["board"]
    if not isinstance(rows, (list, tuple)) or len(rows) != BOARD_SIZE:
        raise ValueError(f"field 'board' must be a list of {BOARD_SIZE} strings, got {_one_line(rows)}")
    for r, row in enumerate(rows):
        if not isinstance(row, str) or len(row) != 2 * BOARD_SIZE:
            raise ValueError(f"field 'board' row {r} must be a string of {2 * BOARD_SIZE} chars, got {_one_line(row)}")
        for c in range(BOARD_SIZE):
            code = row[2 * c : 2 * c + 2]
            if code == "..":
                continue
            if code not in _PIECE_CODES:
                raise ValueError(f"field 'board' row {r} column {c}: unknown piece code {code!r} (allowed: '..', r1..r4, b1..b4)")
            a[r * BOARD_SIZE + c] = _PIECE_CODES[code]
    board = a[:N_CELLS]
    for colour in Colour:  # R9.1 piece counts
        mine = board[board * colour.sign > 0] * colour.sign
        if mine.size > N_SATELLITES:
            raise ValueError(f"field 'board': {colour} has {mine.size} satellites, at most {N_SATELLITES} allowed")
        for v in range(1, MAX_VALUE + 1):
            if int(np.sum(mine == v)) > COPIES_PER_VALUE:
                raise ValueError(f"field 'board': {colour} has {int(np.sum(mine == v))} satellites of value {v}, at most {COPIES_PER_VALUE} allowed")
    conn = _core.connected_cells(board)
    for i in range(N_CELLS):  # R5.1
        r, c = divmod(i, BOARD_SIZE)
        for j in (i + 1 if c < BOARD_SIZE - 1 else -1, i + BOARD_SIZE if r < BOARD_SIZE - 1 else -1):
            if j >= 0 and conn[i] and conn[j] and board[i] * board[j] > 0:
                raise ValueError(f"field 'board': connected satellites of the same colour touch at {divmod(i, 10)} and {divmod(j, 10)} (R5.1)")
    _label, size, count = _core.components(board)
    if count and int(size[:count].max()) > MAX_COMPONENT:  # R5.3
        raise ValueError(f"field 'board': a component has {int(size[:count].max())} satellites, at most {MAX_COMPONENT} allowed (R5.3)")

    to_move = _colour_field(d, "to_move", "'red' or 'blue'")
    a[I_TO_MOVE] = int(to_move)
    if not isinstance(d["unlocked"], bool):
        raise ValueError(f"field 'unlocked' must be true or false, got {_one_line(d['unlocked'], 40)}")
    if not d["unlocked"] and _core._any_edge_empty(board):
        raise ValueError("field 'unlocked' is false but an edge is empty; the flag is set as soon as one is (R3.5)")
    a[I_UNLOCKED] = int(d["unlocked"])
    fin = _colour_field(d, "finished", "null, 'red' or 'blue'")
    grace = _int_field(d, "grace_left", 0, GRACE_MOVES)
    if fin is None:
        a[I_FINISHED] = NOBODY
        if grace != 0:
            raise ValueError(f"field 'grace_left' must be 0 while nobody is finished, got {grace}")
    else:
        colour = fin
        tally = _core.tally(board)
        on_board, linked = tally[2 * colour], tally[2 * colour + 1]
        if on_board != N_SATELLITES or linked != N_SATELLITES:
            raise ValueError(f"field 'finished' is '{fin}' but {fin} has {linked} of {on_board} satellites connected; finished needs all {N_SATELLITES} (R6.3)")
        if to_move == colour:
            raise ValueError(f"field 'to_move' is '{fin}', but a finished player never moves (R6.3)")
        a[I_FINISHED] = int(colour)
    a[I_GRACE] = grace
    a[I_MAX_PLIES] = _int_field(d, "max_plies", 1, MAX_PLIES_LIMIT)
    a[I_PLY] = _int_field(d, "ply", 0, int(a[I_MAX_PLIES]))
    a[I_PASSES] = _int_field(d, "passes", 0, PASSES_TO_END)
    t = _core.tally(board)
    a[I_REASON] = _core.end_reason(a, t[1] + t[3])  # R9.2
    if fin is None and not a[I_REASON]:
        # R6.3: in a game that goes on, a colour with all 12 connected is finished. Such a
        # state is unreachable, and play from it would disagree with its own round trip.
        for colour in Colour:
            if t[2 * colour] == N_SATELLITES and t[2 * colour + 1] == N_SATELLITES:
                raise ValueError(f"field 'finished' is null but {colour} has all {N_SATELLITES} satellites connected, so {colour} is finished (R6.3)")
    return _wrap(a)


__all__ = [
    "Colony",
    "GameState",
    "IllegalActionError",
    "PASS_ACTION",
    "apply_action",
    "check_max_plies",
    "colonies",
    "connected_counts",
    "connected_mask",
    "controlled_counts",
    "is_legal",
    "legal_action_mask",
    "legal_actions",
    "new_game",
    "setup_game",
]
