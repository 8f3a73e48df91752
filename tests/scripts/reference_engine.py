"""A slow, plain-Python reference implementation of the Colony rules (docs/rules.md R1-R9).

Why it exists: the compiled engine (`colony_env`) checks each rule incrementally and
the mask, the per-action check and the apply step share those checks, so a wrong rule
inside them agrees with itself. This module is a second, independent reading of the
rule text, written for obviousness rather than speed: to judge an action it builds the
whole board after the action and checks each condition on it, literally as worded. The
differential test (`test_differential.py`, `differential.py`) compares the two,
position by position (OpenSpiel's practice of comparing two implementations).

It imports nothing from `colony_env`: states cross the boundary as R9 dicts
(`GameState.to_dict` / `from_dict`) and actions as R8 ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

# --- R1 board ---------------------------------------------------------------------------
SIZE = 10
CELLS = SIZE * SIZE
# R1.4 directions, clockwise from North, as (dr, dc).
DIRS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))
ORTHOGONAL = (DIRS[0], DIRS[2], DIRS[4], DIRS[6])  # R1.5 sharing a side

# --- R2 satellites -----------------------------------------------------------------------
VALUES = (1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4)
RED_START = [(0, c) for c in range(2, 8)] + [(9, c) for c in range(2, 8)]
BLUE_START = [(r, 0) for r in range(2, 8)] + [(r, 9) for r in range(2, 8)]
SIGN = {"red": 1, "blue": -1}
OTHER = {"red": "blue", "blue": "red"}

# --- R3-R7 numbers -------------------------------------------------------------------------
COLONY_MIN = 3
COLONY_MAX = 6
MAX_MOVE = 4
MAX_PUSH = 2
GRACE = 3
CONNECTED_TO_END = 23
PASSES_TO_END = 2

# --- R8 encoding -----------------------------------------------------------------------------
DISPLACEMENT_BASE = 3200
PASS = 16000
N_ACTIONS = 16001


def move_id(s: int, d: int, k: int) -> int:
    """R8.1."""
    return 32 * s + 4 * d + (k - 1)


def displacement_id(s: int, d: int, pd: int, pk: int) -> int:
    """R8.2."""
    return DISPLACEMENT_BASE + 2 * (8 * (8 * s + d) + pd) + (pk - 1)


def decode(a: int) -> tuple[str, tuple[int, ...]]:
    """R8 id -> ("move", (s, d, k)) | ("displacement", (s, d, pd, pk)) | ("pass", ())."""
    if not 0 <= a < N_ACTIONS:
        raise ValueError(f"action {a} outside 0..{N_ACTIONS - 1}")
    if a == PASS:
        return "pass", ()
    if a < DISPLACEMENT_BASE:
        return "move", (a // 32, (a % 32) // 4, a % 4 + 1)
    rel = a - DISPLACEMENT_BASE
    pk = rel % 2 + 1
    rel //= 2
    pd = rel % 8
    rel //= 8
    return "displacement", (rel // 8, rel % 8, pd, pk)


# --- geometry -----------------------------------------------------------------------------------
def _walk(i: int, dr: int, dc: int, k: int) -> int | None:
    r, c = divmod(i, SIZE)
    r, c = r + k * dr, c + k * dc
    return r * SIZE + c if 0 <= r < SIZE and 0 <= c < SIZE else None


# Static tables built once at import: _STEPS[i][d][k] is the cell k steps from i along DIRS[d].
_STEPS = [[[_walk(i, dr, dc, k) for k in range(MAX_MOVE + 1)] for dr, dc in DIRS] for i in range(CELLS)]
_ORTH = [[n for dr, dc in ORTHOGONAL if (n := _walk(i, dr, dc, 1)) is not None] for i in range(CELLS)]
_KING = [[n for dr, dc in DIRS if (n := _walk(i, dr, dc, 1)) is not None] for i in range(CELLS)]


def step(i: int, d: int, k: int = 1) -> int | None:
    """The cell `k` (<= 4) steps from `i` in direction `d` (R1.4), or None off the board."""
    return _STEPS[i][d][k]


def orthogonal_neighbours(i: int) -> list[int]:
    return _ORTH[i]


def king_neighbours(i: int) -> list[int]:
    return _KING[i]


def edges() -> list[list[int]]:
    """R1.3: North row 0, South row 9, West column 0, East column 9 (corners in two)."""
    last = SIZE - 1
    return [
        [c for c in range(SIZE)],
        [last * SIZE + c for c in range(SIZE)],
        [r * SIZE for r in range(SIZE)],
        [r * SIZE + last for r in range(SIZE)],
    ]


# --- R3 connections and components ---------------------------------------------------------------
Board = tuple[int, ...]  # 100 cells, row-major: red +v, blue -v, empty 0


def colour_of(v: int) -> str | None:
    return None if v == 0 else ("red" if v > 0 else "blue")


def is_connected(board: Board, i: int) -> bool:
    """R3.1: orthogonally adjacent to at least one satellite of the other colour."""
    v = board[i]
    return v != 0 and any(board[n] * v < 0 for n in orthogonal_neighbours(i))


def components(board: Board) -> list[set[int]]:
    """R3.3: maximal sets linked through orthogonal adjacencies of different colours."""
    seen: set[int] = set()
    out = []
    for i in range(CELLS):
        if board[i] == 0 or i in seen:
            continue
        comp = {i}
        todo = [i]
        while todo:
            x = todo.pop()
            for n in orthogonal_neighbours(x):
                if n not in comp and board[n] * board[x] < 0:
                    comp.add(n)
                    todo.append(n)
        seen |= comp
        out.append(comp)
    return out


def colonies(board: Board) -> list[set[int]]:
    """R3.4: components of 3 or more satellites."""
    return [c for c in components(board) if len(c) >= COLONY_MIN]


def any_edge_empty(board: Board) -> bool:
    """R3.5 / R1.3."""
    return any(all(board[i] == 0 for i in edge) for edge in edges())


def invariants_hold(before: Board, after: Board, origin: dict[int, int]) -> bool:
    """R5 on the board after a connection move or a displacement.

    `origin` maps each occupied cell of `after` to the cell its satellite held in `before`
    (so that "satellites of two different colonies of B" can be followed across the move).
    """
    for i in range(CELLS):  # R5.1
        for n in orthogonal_neighbours(i):
            if after[i] * after[n] > 0 and is_connected(after, i) and is_connected(after, n):
                return False
    colony_of = {}
    for idx, col in enumerate(colonies(before)):
        for i in col:
            colony_of[i] = idx
    for comp in components(after):
        if len(comp) > COLONY_MAX:  # R5.3
            return False
        held = {colony_of[origin[i]] for i in comp if origin[i] in colony_of}
        if len(held) > 1:  # R5.2
            return False
    return True


# --- R7 scoring -----------------------------------------------------------------------------
def colony_totals(board: Board) -> list[tuple[frozenset[int], int, int, str | None]]:
    """(cells, red total, blue total, controller) per colony (R7.1)."""
    out = []
    for col in colonies(board):
        red = sum(board[i] for i in col if board[i] > 0)
        blue = sum(-board[i] for i in col if board[i] < 0)
        ctrl = "red" if red > blue else "blue" if blue > red else None
        out.append((frozenset(col), red, blue, ctrl))
    return out


def winner(board: Board) -> str | None:
    """R7.2-R7.3: the winning colour, or None for a draw."""
    table = colony_totals(board)
    counts = {"red": 0, "blue": 0}
    for _cells, _red, _blue, ctrl in table:
        if ctrl is not None:
            counts[ctrl] += 1
    if counts["red"] != counts["blue"]:
        return "red" if counts["red"] > counts["blue"] else "blue"
    controlled = [(red + blue, ctrl) for _cells, red, blue, ctrl in table if ctrl is not None]
    if not controlled:
        return None
    lowest = min(total for total, _ctrl in controlled)
    holders = {ctrl for total, ctrl in controlled if total == lowest}
    return holders.pop() if len(holders) == 1 else None


# --- state ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RefState:
    """The fields of R9, plus the end reason (R6.2 / R9.2)."""

    board: Board
    to_move: str
    unlocked: bool
    finished: str | None
    grace_left: int
    ply: int
    passes: int
    max_plies: int
    end_reason: str | None

    @property
    def is_over(self) -> bool:
        return self.end_reason is not None

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for r in range(SIZE):
            cells = []
            for c in range(SIZE):
                v = self.board[r * SIZE + c]
                cells.append(".." if v == 0 else f"{'r' if v > 0 else 'b'}{abs(v)}")
            rows.append("".join(cells))
        return {
            "board": rows,
            "to_move": self.to_move,
            "unlocked": self.unlocked,
            "finished": self.finished,
            "grace_left": self.grace_left,
            "ply": self.ply,
            "passes": self.passes,
            "max_plies": self.max_plies,
        }


def connected_count(board: Board) -> int:
    return sum(is_connected(board, i) for i in range(CELLS))


def end_reason_of_fields(
    board: Board, finished: str | None, grace_left: int, passes: int, ply: int, max_plies: int
) -> str | None:
    """R9.2: whether a stored position is over, and the first reason of R6.2 that holds."""
    if connected_count(board) >= CONNECTED_TO_END:
        return "connected23"
    if finished is not None and (grace_left == 0 or passes >= 1):
        return "grace"
    if passes >= PASSES_TO_END:
        return "passes"
    if ply >= max_plies:
        return "ply_limit"
    return None


def from_dict(d: dict[str, Any]) -> RefState:
    """Parse an R9 object (trusted: it comes from the engine under test)."""
    board = []
    for row in d["board"]:
        for c in range(SIZE):
            code = row[2 * c : 2 * c + 2]
            board.append(0 if code == ".." else SIGN["red" if code[0] == "r" else "blue"] * int(code[1]))
    b = tuple(board)
    reason = end_reason_of_fields(b, d["finished"], d["grace_left"], d["passes"], d["ply"], d["max_plies"])
    return RefState(
        b, d["to_move"], d["unlocked"], d["finished"], d["grace_left"], d["ply"], d["passes"], d["max_plies"], reason
    )


def new_game(seed: int, max_plies: int = 400) -> RefState:
    """R2 setup. The engine documents its draw order (red's permutation, then blue's, from
    `numpy.random.default_rng(seed)`), so the same seed gives the same game here."""
    rng = np.random.default_rng(seed)
    board = [0] * CELLS
    for start, sign in ((RED_START, 1), (BLUE_START, -1)):
        for (r, c), v in zip(start, rng.permutation(np.array(VALUES))):
            v = int(v)
            if v in (1, 2):  # R2.4: one cell inward
                r = 1 if r == 0 else 8 if r == 9 else r
                c = 1 if c == 0 else 8 if c == 9 else c
            board[r * SIZE + c] = sign * v
    b = tuple(board)
    return RefState(b, "red", any_edge_empty(b), None, 0, 0, 0, max_plies, None)


# --- R4 legality ------------------------------------------------------------------------------
def _movable(state: RefState, s: int) -> bool:
    """R4 preamble: the game goes on, `s` holds a satellite of the player to move, and it is
    unconnected (R3.2)."""
    v = state.board[s]
    return not state.is_over and v * SIGN[state.to_move] > 0 and not is_connected(state.board, s)


def is_legal(state: RefState, a: int) -> bool:
    """Whether action id `a` is legal in `state` (R4, R8.4)."""
    kind, args = decode(a)
    if state.is_over:
        return False
    if kind == "pass":  # R4.3
        return not any(True for _ in _non_pass_legal(state))
    if not _movable(state, args[0]):
        return False
    return _move_legal(state, *args) if kind == "move" else _displacement_legal(state, *args)


def _move_legal(state: RefState, s: int, d: int, k: int) -> bool:
    """R4.1."""
    b = state.board
    v = abs(b[s])
    t = step(s, d, k)
    if t is None or b[t] != 0:
        return False
    after = list(b)
    after[t], after[s] = b[s], 0
    after_t = tuple(after)
    if not is_connected(after_t, t):  # normal move
        return k <= v
    if not state.unlocked or k != v:  # connection move
        return False
    origin = {i: i for i in range(CELLS) if after_t[i] != 0}
    origin[t] = s
    return invariants_hold(b, after_t, origin)


def _displacement_legal(state: RefState, s: int, d: int, pd: int, pk: int) -> bool:
    """R4.2, condition by condition."""
    b = state.board
    me = SIGN[state.to_move]
    v = abs(b[s])
    x = step(s, d, v)  # exactly v cells
    if x is None or b[x] * me >= 0 or is_connected(b, x):
        return False  # X must hold an unconnected opposing satellite E
    if not state.unlocked:  # 1
        return False
    if not any(b[n] * me > 0 and is_connected(b, n) for n in king_neighbours(x)):  # 2
        return False
    y = step(x, pd, pk)
    left = list(b)
    left[s] = 0
    if y is None or left[y] != 0:  # 3: on the board and empty once S has left s
        return False
    after = list(left)
    after[x], after[y] = b[s], b[x]
    after_t = tuple(after)
    if is_connected(after_t, y):  # 4
        return False
    if not is_connected(after_t, x):  # 5: S at X is connected ...
        return False
    origin = {i: i for i in range(CELLS) if after_t[i] != 0}
    origin[x], origin[y] = s, x
    in_colony = set().union(*colonies(b))
    comp_x = next(c for c in components(after_t) if x in c)
    if not any(origin[i] in in_colony for i in comp_x):  # ... and extends an existing colony
        return False
    return invariants_hold(b, after_t, origin)  # 6


def _candidates(state: RefState) -> Iterator[int]:
    """Every move and displacement id whose source cell holds a satellite of the player to
    move; any other non-pass id is illegal by R4's preamble."""
    me = SIGN[state.to_move]
    for s in range(CELLS):
        if state.board[s] * me > 0:
            for d in range(8):
                for k in range(1, MAX_MOVE + 1):
                    yield move_id(s, d, k)
                for pd in range(8):
                    for pk in range(1, MAX_PUSH + 1):
                        yield displacement_id(s, d, pd, pk)


def _non_pass_legal(state: RefState) -> Iterator[int]:
    """Legal moves and displacements (any order)."""
    if state.is_over:
        return
    me = SIGN[state.to_move]
    for s in range(CELLS):
        if state.board[s] * me <= 0 or not _movable(state, s):
            continue
        for d in range(8):
            for k in range(1, MAX_MOVE + 1):
                if _move_legal(state, s, d, k):
                    yield move_id(s, d, k)
        for d in range(8):
            for pd in range(8):
                for pk in range(1, MAX_PUSH + 1):
                    if _displacement_legal(state, s, d, pd, pk):
                        yield displacement_id(s, d, pd, pk)


def legal_actions(state: RefState) -> list[int]:
    """Sorted legal ids; pass only when nothing else is legal; none once the game is over."""
    if state.is_over:
        return []
    ids = sorted(_non_pass_legal(state))
    return ids or [PASS]


def illegal_candidates(state: RefState, legal: list[int]) -> list[int]:
    """Near misses: ids of the mover's own satellites that are not in `legal` (for spot checks)."""
    legal = set(legal)
    return [a for a in _candidates(state) if a not in legal]


# --- R6 apply ----------------------------------------------------------------------------------
def apply(state: RefState, a: int) -> RefState:
    """The state after legal action `a` (R4 effects, then R6)."""
    if not is_legal(state, a):
        raise ValueError(f"reference: action {a} is illegal")
    kind, args = decode(a)
    board = list(state.board)
    if kind == "move":
        s, d, k = args
        t = step(s, d, k)
        board[t], board[s] = board[s], 0
    elif kind == "displacement":
        s, d, pd, pk = args
        x = step(s, d, abs(board[s]))
        y = step(x, pd, pk)
        sat, pushed = board[s], board[x]
        board[s] = 0
        board[x] = sat
        board[y] = pushed
    b = tuple(board)
    mover = state.to_move
    # R6.1
    grace_move = state.finished is not None
    unlocked = state.unlocked or any_edge_empty(b)
    ply = state.ply + 1
    passes = state.passes + 1 if kind == "pass" else 0
    grace_left = state.grace_left - 1 if grace_move else state.grace_left
    nxt = RefState(b, mover, unlocked, state.finished, grace_left, ply, passes, state.max_plies, None)
    # R6.2, in order
    reason = None
    if connected_count(b) >= CONNECTED_TO_END:
        reason = "connected23"
    elif grace_move and (grace_left == 0 or kind == "pass"):
        reason = "grace"
    elif passes == PASSES_TO_END:
        reason = "passes"
    elif ply >= state.max_plies:
        reason = "ply_limit"
    if reason is not None:
        return replace(nxt, end_reason=reason)  # nothing else changes, `mover` stays to move
    # R6.3
    if state.finished is None:
        for colour in ("red", "blue"):
            mine = [i for i in range(CELLS) if b[i] * SIGN[colour] > 0]
            if len(mine) == len(VALUES) and all(is_connected(b, i) for i in mine):
                return replace(nxt, finished=colour, grace_left=GRACE, to_move=OTHER[colour])
        return replace(nxt, to_move=OTHER[mover])  # R6.4
    return nxt  # R6.4: the grace player moves again


def classify(state: RefState, a: int) -> str:
    """The kind of legal action `a`: pass, displacement, connection (move) or normal (move).
    The biased game driver samples the rare kinds on purpose."""
    kind, args = decode(a)
    if kind != "move":
        return kind
    s, d, k = args
    t = step(s, d, k)
    me = SIGN[state.to_move]
    return "connection" if any(state.board[n] * me < 0 for n in orthogonal_neighbours(t)) else "normal"
