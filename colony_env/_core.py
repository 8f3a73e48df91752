"""The compiled hot path of the rules engine: legality, apply, connectivity, scoring.

Everything here works on the packed state vector described in `constants.py`
(board cells then scalar fields) and is compiled by numba with an on-disk cache
(`cache=True`), so the first process pays the compile once and later processes load
machine code. Each rule is written once, in one function, and cited by number:

* `_action_code` decides the legality of one action and says why it is illegal;
  `_generate` enumerates the legal set by calling the same per-action checks.
* `_apply_unchecked` performs an action and the turn sequence R6.
* `_end_reason` is R6.2/R9.2, `_winner` is R7.

Board values: red satellites are +v, blue -v, empty 0; "mover sign" `me` is +1/-1,
so `board[i] * me > 0` means "the mover's satellite" and `< 0` "the opponent's".
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .constants import (
    BOARD_SIZE,
    CONNECTED_TO_END,
    DIRECTIONS,
    DISPLACEMENT_BASE,
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
    MAX_PUSH,
    MAX_STEP,
    MIN_COLONY,
    MOVES_PER_CELL,
    N_ACTIONS,
    N_CELLS,
    N_DIRECTIONS,
    N_SATELLITES,
    NOBODY,
    PASS_ACTION,
    PASSES_TO_END,
)

# ---------------------------------------------------------------------------------
# Static tables, built once at import and frozen into the compiled code.


def _build_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ray = np.full((N_CELLS, N_DIRECTIONS, MAX_STEP), -1, np.int64)
    orth = np.full((N_CELLS, 4), -1, np.int64)
    king = np.full((N_CELLS, 8), -1, np.int64)
    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            s = r * BOARD_SIZE + c
            for d, (dr, dc) in enumerate(DIRECTIONS):
                for k in range(1, MAX_STEP + 1):
                    rr, cc = r + k * dr, c + k * dc
                    if 0 <= rr < BOARD_SIZE and 0 <= cc < BOARD_SIZE:
                        ray[s, d, k - 1] = rr * BOARD_SIZE + cc
                king[s, d] = ray[s, d, 0]
            for j, d in enumerate((0, 2, 4, 6)):
                orth[s, j] = ray[s, d, 0]
    edges = np.empty((4, BOARD_SIZE), np.int64)
    last = BOARD_SIZE - 1
    for i in range(BOARD_SIZE):
        edges[0, i] = i  # North, row 0
        edges[1, i] = last * BOARD_SIZE + i  # South, row 9
        edges[2, i] = i * BOARD_SIZE  # West, column 0
        edges[3, i] = i * BOARD_SIZE + last  # East, column 9
    return ray, orth, king, edges


RAY, ORTH, KING, EDGES = _build_tables()

# ---------------------------------------------------------------------------------
# Why-illegal codes. `engine.py` turns them into messages; 0 means legal.
OK = 0
E_GAME_OVER = 1
E_RANGE = 2
E_PASS = 3
E_EMPTY = 4
E_NOT_YOURS = 5
E_SAT_LOCKED = 6
E_OFF_BOARD = 7
E_OCCUPIED = 8
E_TOO_FAR = 9
E_CONNECTIONS_LOCKED = 10
E_CONNECT_DISTANCE = 11
E_R51_MOVER = 12
E_R51_OPPONENT = 13
E_R52 = 14
E_R53 = 15
E_LAND_OFF_BOARD = 16
E_LAND_NOT_OPPONENT = 17
E_LAND_CONNECTED = 18
E_NOT_NEAR_OWN = 19
E_PUSH_OFF_BOARD = 20
E_PUSH_OCCUPIED = 21
E_PUSH_CONNECTS = 22
E_NOT_CONNECTED = 23
E_NO_COLONY = 24
# Not an error: a connection move that passed R4.1; the invariants R5 (`_join`) decide.
CHECK_R5 = -1

# Upper bound on legal actions: 12 satellites x (32 moves + 128 displacements) + pass.
MAX_LEGAL = N_SATELLITES * (MOVES_PER_CELL + N_DIRECTIONS * N_DIRECTIONS * MAX_PUSH) + 1


# ---------------------------------------------------------------------------------
# R3: connections and components


@njit(cache=True, inline="always")
def _is_connected(board: np.ndarray, i: int) -> bool:
    """R3.1: a satellite is connected iff an orthogonal neighbour has the other colour."""
    v = board[i]
    if v == 0:
        return False
    for j in range(4):
        n = ORTH[i, j]
        if n >= 0 and board[n] * v < 0:
            return True
    return False


@njit(cache=True)
def connected_cells(board: np.ndarray) -> np.ndarray:
    """Bool per cell: holds a connected satellite (R3.1).

    Contact is symmetric, so each satellite looks only East and South (ORTH slots 1
    and 2) and marks both ends of a contact: half the lookups of asking every cell.
    """
    conn = np.zeros(N_CELLS, np.bool_)
    for i in range(N_CELLS):
        v = board[i]
        if v == 0:
            continue
        for j in (1, 2):
            n = ORTH[i, j]
            if n >= 0 and board[n] * v < 0:
                conn[i] = True
                conn[n] = True
    return conn


@njit(cache=True)
def components(board: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """R3.3: label every satellite with its component; returns (label, size, count).

    Components grow only through orthogonal contacts of *different* colours, so a
    lone satellite is a component of size 1. Empty cells are labelled -1.
    """
    label = np.full(N_CELLS, -1, np.int64)
    size = np.zeros(N_CELLS, np.int64)
    stack = np.empty(N_CELLS, np.int64)
    count = 0
    for i in range(N_CELLS):
        if board[i] == 0 or label[i] >= 0:
            continue
        label[i] = count
        stack[0] = i
        top = 1
        members = 0
        while top > 0:
            top -= 1
            x = stack[top]
            members += 1
            for j in range(4):
                n = ORTH[x, j]
                if n >= 0 and label[n] < 0 and board[n] * board[x] < 0:
                    label[n] = count
                    stack[top] = n
                    top += 1
        size[count] = members
        count += 1
    return label, size, count


@njit(cache=True, inline="always")
def _contact(board: np.ndarray, me: int) -> np.ndarray:
    """Bool per cell: orthogonally adjacent to an opposing satellite (of sign -me).

    A mover's satellite on such a cell is connected (R3.1); a satellite arriving there
    makes a connection move (R4.1).
    """
    touch = np.zeros(N_CELLS, np.bool_)
    for i in range(N_CELLS):
        if board[i] * me < 0:
            for j in range(4):
                n = ORTH[i, j]
                if n >= 0:
                    touch[n] = True
    return touch


@njit(cache=True)
def _any_edge_empty(board: np.ndarray) -> bool:
    """R3.5 / R1.3: some whole edge line (corners included) holds no satellite."""
    for e in range(4):
        empty = True
        for i in range(BOARD_SIZE):
            if board[EDGES[e, i]] != 0:
                empty = False
                break
        if empty:
            return True
    return False


# ---------------------------------------------------------------------------------
# R4/R5: legality of one action


@njit(cache=True, inline="always")
def _join(
    board: np.ndarray, me: int, conn: np.ndarray, label: np.ndarray, size: np.ndarray, x: int
) -> tuple[int, int, int]:
    """Put a satellite of sign `me` on empty cell `x`; check the invariants R5.

    Returns (code, opposing neighbours, colonies joined). Valid because the board
    before the action satisfies R5 and the only new different-colour contacts are
    those of `x`: the new component is `x` plus the components of its opposing
    orthogonal neighbours. The cell the satellite left held an unconnected satellite
    (R3.2), so leaving it changes no other connection; likewise a pushed satellite
    is unconnected before and after (R4.2.4). Two orthogonal neighbours of `x` are
    never orthogonal neighbours of each other, so a newly connected neighbour only
    needs checking against satellites connected before.
    """
    seen0 = -1
    seen1 = -1
    seen2 = -1
    total = 1
    n_opp = 0
    n_col = 0
    for j in range(4):
        n = ORTH[x, j]
        if n < 0 or board[n] * me >= 0:
            continue
        n_opp += 1
        lab = label[n]
        if lab == seen0 or lab == seen1 or lab == seen2:
            continue
        if seen0 < 0:
            seen0 = lab
        elif seen1 < 0:
            seen1 = lab
        else:
            seen2 = lab
        total += size[lab]
        if size[lab] >= MIN_COLONY:
            n_col += 1
    for j in range(4):
        n = ORTH[x, j]
        if n < 0:
            continue
        b = board[n]
        if b * me > 0 and conn[n]:
            return E_R51_MOVER, n_opp, n_col  # R5.1: the mover touches its own connected
        if b * me < 0 and not conn[n]:
            for jj in range(4):
                m = ORTH[n, jj]
                if m >= 0 and board[m] * b > 0 and conn[m]:
                    return E_R51_OPPONENT, n_opp, n_col  # R5.1: a newly connected neighbour
    # Two colonies hold >= 6 satellites, so a merge always breaks R5.3 too; R5.2 is
    # checked first because it is the more telling reason.
    if n_col > 1:
        return E_R52, n_opp, n_col
    if total > MAX_COMPONENT:
        return E_R53, n_opp, n_col
    return OK, n_opp, n_col


@njit(cache=True, inline="always")
def _move_code(board: np.ndarray, me: int, unlocked: bool, touch: np.ndarray, s: int, d: int, k: int) -> int:
    """R4.1 for an unconnected satellite of the mover on `s` moving `k` cells along `d`.

    Returns CHECK_R5 for a connection move that is legal but for the invariants, so
    that callers compute connectivity and components only when they are needed.
    `touch` is `_contact(board, me)`; the satellite leaving `s` is the mover's own, so
    it changes no contact with the opponent.
    """
    t = RAY[s, d, k - 1]
    if t < 0:
        return E_OFF_BOARD
    return _move_code_to(board, unlocked, touch[t], s, t, k)


@njit(cache=True, inline="always")
def _move_code_to(board: np.ndarray, unlocked: bool, touched: bool, s: int, t: int, k: int) -> int:
    """`_move_code` for the target cell `t` on the board, `k` cells from `s`; `touched`: `t` is
    orthogonally adjacent to an opposing satellite (`_touches_opponent`)."""
    if board[t] != 0:
        return E_OCCUPIED
    if not touched:  # normal move
        return OK if k <= abs(board[s]) else E_TOO_FAR
    if not unlocked:  # connection move
        return E_CONNECTIONS_LOCKED
    if k != abs(board[s]):
        return E_CONNECT_DISTANCE
    return CHECK_R5


@njit(cache=True, inline="always")
def _touches_opponent(board: np.ndarray, me: int, t: int) -> bool:
    """Cell `t` is orthogonally adjacent to a satellite of sign -me (one entry of `_contact`)."""
    for j in range(4):
        n = ORTH[t, j]
        if n >= 0 and board[n] * me < 0:
            return True
    return False


@njit(cache=True, inline="always")
def _landing_code(
    board: np.ndarray,
    me: int,
    unlocked: bool,
    conn: np.ndarray,
    label: np.ndarray,
    size: np.ndarray,
    s: int,
    d: int,
) -> int:
    """R4.2 conditions that do not depend on the push, for an unconnected satellite of the
    mover on `s` landing exactly `v` cells along `d`: 1, 2, 5 and 6.

    Conditions 5 and 6 may be judged before the push is known: a legal push leaves the
    pushed satellite unconnected (condition 4), so it touches nothing and the landing
    cell's neighbours are the same as before the action.
    """
    v = abs(board[s])
    x = RAY[s, d, v - 1]
    if x < 0:
        return E_LAND_OFF_BOARD
    if board[x] * me >= 0:
        return E_LAND_NOT_OPPONENT
    if conn[x]:
        return E_LAND_CONNECTED
    if not unlocked:  # R4.2.1
        return E_CONNECTIONS_LOCKED
    near = False  # R4.2.2
    for j in range(8):
        n = KING[x, j]
        if n >= 0 and board[n] * me > 0 and conn[n]:
            near = True
            break
    if not near:
        return E_NOT_NEAR_OWN
    code, n_opp, n_col = _join(board, me, conn, label, size, x)
    if n_opp == 0:  # R4.2.5
        return E_NOT_CONNECTED
    if n_col == 0:
        return E_NO_COLONY
    return code  # R4.2.6 -> R5


@njit(cache=True, inline="always")
def _push_code(board: np.ndarray, me: int, s: int, x: int, pd: int, pk: int) -> int:
    """R4.2 conditions 3 and 4: the push from the landing cell `x`, with the mover on `x`
    and its start cell `s` empty."""
    y = RAY[x, pd, pk - 1]  # R4.2.3
    if y < 0:
        return E_PUSH_OFF_BOARD
    if board[y] != 0 and y != s:
        return E_PUSH_OCCUPIED
    for j in range(4):  # R4.2.4: no mover satellite touches y
        n = ORTH[y, j]
        if n == x or (n >= 0 and n != s and board[n] * me > 0):
            return E_PUSH_CONNECTS
    return OK


@njit(cache=True, inline="always")
def _displacement_code(
    board: np.ndarray,
    me: int,
    unlocked: bool,
    conn: np.ndarray,
    label: np.ndarray,
    size: np.ndarray,
    s: int,
    d: int,
    pd: int,
    pk: int,
) -> int:
    """R4.2 for an unconnected satellite of the mover on `s`: landing, then push."""
    code = _landing_code(board, me, unlocked, conn, label, size, s, d)
    if code != OK:
        return code
    return _push_code(board, me, s, RAY[s, d, abs(board[s]) - 1], pd, pk)


@njit(cache=True, inline="always")
def _generate_moves(
    board: np.ndarray,
    me: int,
    unlocked: bool,
    touch: np.ndarray,
    conn: np.ndarray,
    label: np.ndarray,
    size: np.ndarray,
    out: np.ndarray,
    stop_at_first: bool,
) -> int:
    """Legal moves (R4.1), ids 32*s + 4*d + k-1 ascending with (s, d, k). A move longer
    than the value is never legal (normal moves go at most `v`, connection moves exactly `v`)."""
    n = 0
    for s in range(N_CELLS):
        if board[s] * me <= 0 or touch[s]:  # not the mover's, or connected (R3.2)
            continue
        v = abs(board[s])
        for d in range(N_DIRECTIONS):
            for k in range(1, v + 1):
                t = RAY[s, d, k - 1]
                if t < 0:
                    break
                code = _move_code(board, me, unlocked, touch, s, d, k)
                if code == CHECK_R5:
                    code = _join(board, me, conn, label, size, t)[0]
                if code == OK:
                    out[n] = MOVES_PER_CELL * s + MAX_STEP * d + (k - 1)
                    n += 1
                    if stop_at_first:
                        return n
    return n


@njit(cache=True)
def _generate(a: np.ndarray, out: np.ndarray, stop_at_first: bool) -> int:
    """Write the legal non-pass actions (ascending ids) into `out`; return how many.

    Calls the same per-action checks as `action_code`. While connections are locked
    (R3.5) every legal action is a normal move, so that common case skips the components
    (`_generate_given` does not read them then).
    """
    if a[I_REASON] != 0:
        return 0
    if a[I_UNLOCKED] == 0:
        no_int = np.empty(0, np.int64)
        return _generate_given(a, no_int, no_int, out, stop_at_first)
    label, size, _ = components(a[:N_CELLS])
    return _generate_given(a, label, size, out, stop_at_first)


@njit(cache=True)
def _generate_given(a: np.ndarray, label: np.ndarray, size: np.ndarray, out: np.ndarray, stop_at_first: bool) -> int:
    """`_generate` with the components of `a`'s board already known (`components`' label and
    size; read only once connections are unlocked), for a caller that needs them anyway (the
    observation planes, `frame.py`).

    While connections are locked (R3.5) every legal action is a normal move, so that case
    is compiled separately with `unlocked=False` and skips connectivity. Displacements are
    tried only with an unconnected opposing satellite exactly `v` cells away (R4.2).
    """
    if a[I_REASON] != 0:
        return 0
    board = a[:N_CELLS]
    me = 1 if a[I_TO_MOVE] == 0 else -1
    touch = _contact(board, me)
    if a[I_UNLOCKED] == 0:
        return _generate_moves(board, me, False, touch, np.empty(0, np.bool_), label, size, out, stop_at_first)
    conn = connected_cells(board)
    n = _generate_moves(board, me, True, touch, conn, label, size, out, stop_at_first)
    if stop_at_first and n > 0:
        return n
    for s in range(N_CELLS):  # ids ascend with (s, d, pd, pk)
        if board[s] * me <= 0 or conn[s]:
            continue
        v = abs(board[s])
        for d in range(N_DIRECTIONS):
            x = RAY[s, d, v - 1]
            if x < 0 or board[x] * me >= 0 or conn[x]:
                continue
            if _landing_code(board, me, True, conn, label, size, s, d) != OK:
                continue  # judged once for all 16 pushes
            for pd in range(N_DIRECTIONS):
                for pk in range(1, MAX_PUSH + 1):
                    if _push_code(board, me, s, x, pd, pk) == OK:
                        out[n] = DISPLACEMENT_BASE + 2 * (N_DIRECTIONS * (N_DIRECTIONS * s + d) + pd) + pk - 1
                        n += 1
                        if stop_at_first:
                            return n
    return n


@njit(cache=True, inline="always")
def legal_into(a: np.ndarray, out: np.ndarray) -> int:
    """Write the legal action ids (ascending, R4, R8.4) into `out`; return how many. Pass
    (R4.3) only when nothing else is legal; none once the game is over."""
    n = _generate(a, out, False)
    if n == 0 and a[I_REASON] == 0:
        out[0] = PASS_ACTION
        n = 1
    return n


@njit(cache=True)
def legal_first_into(a: np.ndarray, out: np.ndarray, first_only: bool) -> int:
    """`legal_into`, or with `first_only` just the first legal id (a pass when nothing else is legal,
    R4.3): for callers that only ask whether the mover has a move."""
    n = _generate(a, out, first_only)
    if n == 0 and a[I_REASON] == 0:
        out[0] = PASS_ACTION
        n = 1
    return n


@njit(cache=True, inline="always")
def legal_given(a: np.ndarray, label: np.ndarray, size: np.ndarray, out: np.ndarray) -> int:
    """`legal_into` with the components of `a`'s board already known (see `_generate_given`)."""
    n = _generate_given(a, label, size, out, False)
    if n == 0 and a[I_REASON] == 0:
        out[0] = PASS_ACTION
        n = 1
    return n


@njit(cache=True)
def legal_ids(a: np.ndarray) -> np.ndarray:
    """Sorted legal action ids (R4, R8.4); pass (R4.3) only when nothing else is legal."""
    buf = np.empty(MAX_LEGAL, np.int16)
    n = legal_into(a, buf)
    return buf[:n].astype(np.int64)


@njit(cache=True)
def legal_mask(a: np.ndarray) -> np.ndarray:
    """Bool mask over the 16001 actions (R8.4)."""
    mask = np.zeros(N_ACTIONS, np.bool_)
    ids = legal_ids(a)
    for i in range(ids.shape[0]):
        mask[ids[i]] = True
    return mask


@njit(cache=True)
def decode(action: int) -> tuple[int, int, int, int, int]:
    """R8: action id -> (kind, s, d, k_or_pd, pk); kind 0 move, 1 displacement, 2 pass."""
    if action < DISPLACEMENT_BASE:
        s = action // MOVES_PER_CELL
        rem = action % MOVES_PER_CELL
        return 0, s, rem // MAX_STEP, rem % MAX_STEP + 1, 0
    if action < PASS_ACTION:
        rel = action - DISPLACEMENT_BASE
        pk = rel % MAX_PUSH + 1
        rel //= MAX_PUSH
        pd = rel % N_DIRECTIONS
        rel //= N_DIRECTIONS
        return 1, rel // N_DIRECTIONS, rel % N_DIRECTIONS, pd, pk
    return 2, 0, 0, 0, 0


@njit(cache=True)
def action_code(a: np.ndarray, action: int) -> int:
    """Why `action` is illegal in state `a` (a code above), or OK."""
    if a[I_REASON] != 0:
        return E_GAME_OVER
    if action < 0 or action >= N_ACTIONS:
        return E_RANGE
    if action == PASS_ACTION:  # R4.3
        # The full list, not `stop_at_first=True`: numba compiles a call with a constant argument as a
        # specialisation of its own, and a second `_generate` costs 16 s on a cold cache (docs/engine.md,
        # "First run"); a pass is rare, so the longer check costs nothing that matters.
        buf = np.empty(MAX_LEGAL, np.int16)
        return OK if _generate(a, buf, False) == 0 else E_PASS
    board = a[:N_CELLS]
    me = 1 if a[I_TO_MOVE] == 0 else -1
    kind, s, d, x, pk = decode(action)
    if board[s] == 0:
        return E_EMPTY
    if board[s] * me < 0:
        return E_NOT_YOURS
    if _is_connected(board, s):  # R3.2
        return E_SAT_LOCKED
    unlocked = a[I_UNLOCKED] != 0
    if kind == 0:
        t = RAY[s, d, x - 1]
        if t < 0:
            return E_OFF_BOARD
        code = _move_code_to(board, unlocked, _touches_opponent(board, me, t), s, t, x)
        if code != CHECK_R5:
            return code
    conn = connected_cells(board)
    label, size, _ = components(board)
    if kind == 0:
        return _join(board, me, conn, label, size, RAY[s, d, x - 1])[0]
    return _displacement_code(board, me, unlocked, conn, label, size, s, d, x, pk)


# ---------------------------------------------------------------------------------
# R6: turn sequence and end of the game


@njit(cache=True)
def tally(board: np.ndarray) -> tuple[int, int, int, int]:
    """(red on board, red connected, blue on board, blue connected) in one pass."""
    red = red_linked = blue = blue_linked = 0
    for i in range(N_CELLS):
        v = board[i]
        if v == 0:
            continue
        linked = _is_connected(board, i)
        if v > 0:
            red += 1
            red_linked += linked
        else:
            blue += 1
            blue_linked += linked
    return red, red_linked, blue, blue_linked


@njit(cache=True)
def end_reason(a: np.ndarray, linked: int) -> int:
    """R6.2 / R9.2: 0 if the game goes on, else 1 + index of the first end reason that holds.

    The same test serves after an action (R6.2) and for a loaded state (R9.2): the
    `finished` field is set before an action iff that action is a grace move, and
    `passes >= 1` right after an action iff the action was a pass. `linked` is the
    number of connected satellites of both colours.
    """
    if linked >= CONNECTED_TO_END:
        return 1
    if a[I_FINISHED] != NOBODY and (a[I_GRACE] == 0 or a[I_PASSES] >= 1):
        return 2
    if a[I_PASSES] >= PASSES_TO_END:
        return 3
    if a[I_PLY] >= a[I_MAX_PLIES]:
        return 4
    return 0


@njit(cache=True)
def apply_unchecked(a: np.ndarray, action: int) -> np.ndarray:
    """Perform a legal action and the turn sequence R6 on a copy of `a`."""
    new = a.copy()
    board = new[:N_CELLS]
    if action != PASS_ACTION:
        kind, s, d, x, pk = decode(action)
        if kind == 0:
            t = RAY[s, d, x - 1]
            board[t] = board[s]
            board[s] = 0
        else:
            land = RAY[s, d, abs(board[s]) - 1]
            y = RAY[land, x, pk - 1]
            pushed = board[land]
            board[land] = board[s]
            board[s] = 0  # before the push: the push may land on s (R4.2.3)
            board[y] = pushed
    # R6.1 bookkeeping
    if new[I_UNLOCKED] == 0 and _any_edge_empty(board):
        new[I_UNLOCKED] = 1
    new[I_PLY] += 1
    new[I_PASSES] = new[I_PASSES] + 1 if action == PASS_ACTION else 0
    if new[I_FINISHED] != NOBODY:
        new[I_GRACE] -= 1
    # R6.2: an ending action changes nothing else
    red, red_linked, blue, blue_linked = tally(board)
    reason = end_reason(new, red_linked + blue_linked)
    if reason != 0:
        new[I_REASON] = reason
        return new
    if new[I_FINISHED] == NOBODY:  # R6.3 (both at once would be 24 connected: ended above)
        if red == N_SATELLITES and red_linked == N_SATELLITES:
            finished = 0
        elif blue == N_SATELLITES and blue_linked == N_SATELLITES:
            finished = 1
        else:
            new[I_TO_MOVE] = 1 - new[I_TO_MOVE]  # R6.4
            return new
        new[I_FINISHED] = finished
        new[I_GRACE] = GRACE_MOVES
        new[I_TO_MOVE] = 1 - finished
    # else R6.4: the grace player (already to move) moves again
    return new


@njit(cache=True)
def apply_into(a: np.ndarray, action: int, out: np.ndarray) -> int:
    """Write the state after `action` into `out` if it is legal; return the legality code.

    Writing into a caller's buffer instead of returning a new array saves the cost of
    handing a fresh array back to Python, a large share of one call.
    """
    code = action_code(a, action)
    if code == OK:
        out[:] = apply_unchecked(a, action)
    return code


# ---------------------------------------------------------------------------------
# R7: scoring


@njit(cache=True)
def component_sums(board: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """`components` (R3.3) with each component's red and blue value totals (R7.1):
    (label, size, red, blue, count)."""
    label, size, count = components(board)
    red = np.zeros(count, np.int64)
    blue = np.zeros(count, np.int64)
    for i in range(N_CELLS):
        if board[i] > 0:
            red[label[i]] += board[i]
        elif board[i] < 0:
            blue[label[i]] -= board[i]
    return label, size, red, blue, count


@njit(cache=True, inline="always")
def _colony_row(table: np.ndarray, row: int, label: int, size: int, red: int, blue: int) -> None:
    """Write one colony's row (R3.4, R7.1: the colour with the larger total controls it)."""
    ctrl = NOBODY
    if red > blue:
        ctrl = 0
    elif blue > red:
        ctrl = 1
    table[row, 0] = label
    table[row, 1] = size
    table[row, 2] = red
    table[row, 3] = blue
    table[row, 4] = ctrl


@njit(cache=True)
def colony_table(board: np.ndarray) -> np.ndarray:
    """One row per colony (R3.4): [label, size, red total, blue total, controller].

    Controller (R7.1): 0 red, 1 blue, -1 nobody (equal totals). Rows follow the
    component labels, i.e. the order of each colony's first cell.
    """
    _, size, red, blue, count = component_sums(board)
    return colony_table_of_sums(size, red, blue, count)


@njit(cache=True)
def colony_table_of_sums(size: np.ndarray, red: np.ndarray, blue: np.ndarray, count: int) -> np.ndarray:
    """`colony_table` from the board's `component_sums` (for callers that hold them already)."""
    n = 0
    for c in range(count):
        if size[c] >= MIN_COLONY:
            n += 1
    table = np.empty((n, 5), np.int64)
    row = 0
    for c in range(count):
        if size[c] >= MIN_COLONY:
            _colony_row(table, row, c, size[c], red[c], blue[c])
            row += 1
    return table


@njit(cache=True)
def colony_table_after_join(
    board: np.ndarray, label: np.ndarray, size: np.ndarray, red: np.ndarray, blue: np.ndarray, count: int,
    x: int, value: int,
) -> np.ndarray:
    """The colony table after a legal action puts a satellite of signed `value` on cell `x`,
    from `board`'s `component_sums`, without searching the new board's components.

    Valid for every legal move and displacement (not a pass): the satellite leaves a cell
    where it was unconnected (R3.2) and a pushed satellite is unconnected before and after
    (R4.2.4), so neither is in a component with anyone; the only new contacts are those of
    `x`, so the new component is `x` plus the components of its opposing orthogonal
    neighbours (the reasoning of `_join`, R5) and every other component stays as it was.
    Same rows as `colony_table` of the new board, but in another order: the joined
    colony comes last, labelled with the smallest label it absorbed (`count` if none).
    """
    j0 = -1
    j1 = -1
    j2 = -1
    j3 = -1
    new_size = 1
    new_red = value if value > 0 else 0
    new_blue = -value if value < 0 else 0
    new_label = count
    for j in range(4):
        n = ORTH[x, j]
        if n < 0 or board[n] * value >= 0:
            continue
        lab = label[n]
        if lab == j0 or lab == j1 or lab == j2:
            continue
        if j0 < 0:
            j0 = lab
        elif j1 < 0:
            j1 = lab
        elif j2 < 0:
            j2 = lab
        else:
            j3 = lab
        new_size += size[lab]
        new_red += red[lab]
        new_blue += blue[lab]
        new_label = min(new_label, lab)
    n_rows = 1 if new_size >= MIN_COLONY else 0
    for c in range(count):
        if size[c] >= MIN_COLONY and c != j0 and c != j1 and c != j2 and c != j3:
            n_rows += 1
    table = np.empty((n_rows, 5), np.int64)
    row = 0
    for c in range(count):
        if size[c] >= MIN_COLONY and c != j0 and c != j1 and c != j2 and c != j3:
            _colony_row(table, row, c, size[c], red[c], blue[c])
            row += 1
    if new_size >= MIN_COLONY:
        _colony_row(table, row, new_label, new_size, new_red, new_blue)
    return table


@njit(cache=True)
def winner(board: np.ndarray) -> int:
    """R7.2-R7.3: 0 red wins, 1 blue wins, -1 draw."""
    return winner_of_table(colony_table(board))


@njit(cache=True)
def winner_of_table(table: np.ndarray) -> int:
    """`winner` from the board's `colony_table` (for callers that already hold it: one colony search, not two)."""
    counts = np.zeros(2, np.int64)
    lowest = np.full(2, 1 << 30, np.int64)
    for row in range(table.shape[0]):
        ctrl = table[row, 4]
        if ctrl == NOBODY:
            continue
        counts[ctrl] += 1
        total = table[row, 2] + table[row, 3]
        if total < lowest[ctrl]:
            lowest[ctrl] = total
    if counts[0] != counts[1]:
        return 0 if counts[0] > counts[1] else 1
    if lowest[0] == lowest[1]:  # both hold the lowest total, or nobody controls anything
        return NOBODY
    return 0 if lowest[0] < lowest[1] else 1


# ---------------------------------------------------------------------------------
# Whole random games inside compiled code (MCTS rollouts, benchmarks)


@njit(cache=True)
def random_playout(a: np.ndarray, seed: int) -> np.ndarray:
    """Play uniformly random legal actions from `a` to the end; return the final state."""
    np.random.seed(seed)
    buf = np.empty(MAX_LEGAL, np.int16)
    cur = a
    while cur[I_REASON] == 0:
        n = _generate(cur, buf, False)
        action = PASS_ACTION if n == 0 else buf[np.random.randint(n)]
        cur = apply_unchecked(cur, action)
    return cur
