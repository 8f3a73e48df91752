"""Human notation (R1.2) for cells and actions, both directions, and a plain text board.

Notation:
* cell: file letter `a..j` then rank `1..10` (`a1` South-West, `a10` North-West);
* move: `from-to`, e.g. `d10-d7`;
* displacement: `from-landing>push`, e.g. `c4-g4>h3`: the satellite on c4 lands on g4
  and the opposing satellite that stood there is pushed to h3;
* `pass`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import _core
from .constants import (
    BOARD_SIZE,
    DIRECTION_NAMES,
    DIRECTIONS,
    DISPLACEMENT_BASE,
    FILES,
    MAX_PUSH,
    MAX_STEP,
    MOVES_PER_CELL,
    N_ACTIONS,
    N_CELLS,
    N_DIRECTIONS,
    PASS_ACTION,
)

if TYPE_CHECKING:
    from .engine import GameState


def cell_name(index: int) -> str:
    """Flat index (R1.1) -> `e4`-style name (R1.2)."""
    r, c = divmod(index, BOARD_SIZE)
    return f"{FILES[c]}{BOARD_SIZE - r}"


_CELL_RE = re.compile(r"([a-j])(10|[1-9])")


def parse_cell(name: str) -> int:
    """`e4`-style name -> flat index; ValueError if it is not a cell of the board."""
    m = _CELL_RE.fullmatch(name.strip().lower())
    if not m:
        raise ValueError(f"{name!r} is not a cell: use a file a..j and a rank 1..10, e.g. 'e4'")
    return (BOARD_SIZE - int(m.group(2))) * BOARD_SIZE + FILES.index(m.group(1))


def encode_move(s: int, d: int, k: int) -> int:
    """R8.1."""
    if not (0 <= s < N_CELLS and 0 <= d < N_DIRECTIONS and 1 <= k <= MAX_STEP):
        raise ValueError(f"move needs 0<=s<{N_CELLS}, 0<=d<{N_DIRECTIONS}, 1<=k<={MAX_STEP}; got {(s, d, k)}")
    return MOVES_PER_CELL * s + MAX_STEP * d + (k - 1)


def encode_displacement(s: int, d: int, pd: int, pk: int) -> int:
    """R8.2."""
    if not (0 <= s < N_CELLS and 0 <= d < N_DIRECTIONS and 0 <= pd < N_DIRECTIONS and 1 <= pk <= MAX_PUSH):
        raise ValueError(f"displacement needs 0<=s<{N_CELLS}, 0<=d,pd<{N_DIRECTIONS}, 1<=pk<={MAX_PUSH}; got {(s, d, pd, pk)}")
    return DISPLACEMENT_BASE + MAX_PUSH * (N_DIRECTIONS * (N_DIRECTIONS * s + d) + pd) + (pk - 1)


def decode_action(action: int) -> tuple:
    """R8 id -> ('move', s, d, k) | ('displacement', s, d, pd, pk) | ('pass',)."""
    if not 0 <= action < N_ACTIONS:
        raise ValueError(f"action {action} is outside 0..{N_ACTIONS - 1}")
    kind, s, d, x, pk = (int(v) for v in _core.decode(action))
    if kind == 0:
        return ("move", s, d, x)
    if kind == 1:
        return ("displacement", s, d, x, pk)
    return ("pass",)


def _step(s: int, d: int, k: int) -> int | None:
    t = int(_core.RAY[s, d, k - 1])
    return None if t < 0 else t


def _direction_between(a: int, b: int, max_k: int) -> tuple[int, int] | None:
    """(d, k) such that b = a + k*dir(d) with 1 <= k <= max_k, or None."""
    ra, ca = divmod(a, BOARD_SIZE)
    rb, cb = divmod(b, BOARD_SIZE)
    dr, dc = rb - ra, cb - ca
    k = max(abs(dr), abs(dc))
    if k == 0 or k > max_k or (dr != 0 and dc != 0 and abs(dr) != abs(dc)):
        return None
    return DIRECTIONS.index((dr // k, dc // k)), k


def action_to_str(action: int, state: "GameState | None" = None) -> str:
    """Human notation of an action id. A displacement's landing cell depends on the
    moving satellite's value, so it needs the state; without one it is written
    `c4-NE*v>SE1` (direction names)."""
    dec = decode_action(action)
    if dec[0] == "pass":
        return "pass"
    if dec[0] == "move":
        _, s, d, k = dec
        t = _step(s, d, k)
        return f"{cell_name(s)}-{cell_name(t) if t is not None else DIRECTION_NAMES[d] + str(k) + '(off board)'}"
    _, s, d, pd, pk = dec
    v = abs(int(state.board.flat[s])) if state is not None else 0
    land = _step(s, d, v) if v else None
    if land is None:
        return f"{cell_name(s)}-{DIRECTION_NAMES[d]}*v>{DIRECTION_NAMES[pd]}{pk}"
    push = _step(land, pd, pk)
    return f"{cell_name(s)}-{cell_name(land)}>{cell_name(push) if push is not None else DIRECTION_NAMES[pd] + str(pk) + '(off board)'}"


_ACTION_RE = re.compile(r"([a-j](?:10|[1-9]))-([a-j](?:10|[1-9]))(?:>([a-j](?:10|[1-9])))?")


def parse_action(text: str, state: "GameState | None" = None) -> int:
    """Human notation -> action id. `state` is needed for displacements (the landing
    distance must equal the mover's value, R4.2). Raises ValueError explaining the format."""
    if not isinstance(text, str):
        raise ValueError(f"cannot read {text!r}: a move is a string such as 'd10-d7', 'c4-g4>h3' or 'pass'")
    t = text.strip().lower().replace(" ", "")
    if t == "pass":
        return PASS_ACTION
    m = _ACTION_RE.fullmatch(t)
    if not m:
        raise ValueError(f"cannot read {text!r}: write a move as 'd10-d7', a displacement as 'c4-g4>h3', or 'pass'")
    s, to = parse_cell(m.group(1)), parse_cell(m.group(2))
    dk = _direction_between(s, to, MAX_STEP)
    if dk is None:
        raise ValueError(f"{text!r}: {m.group(2)} is not 1..{MAX_STEP} cells from {m.group(1)} along one of the 8 directions")
    d, k = dk
    if m.group(3) is None:
        return encode_move(s, d, k)
    push = _direction_between(to, parse_cell(m.group(3)), MAX_PUSH)
    if push is None:
        raise ValueError(f"{text!r}: a push goes 1..{MAX_PUSH} cells from {m.group(2)} along one of the 8 directions")
    if state is not None:
        v = abs(int(state.board.flat[s]))
        if v and v != k:
            raise ValueError(f"{text!r}: a displacement lands exactly {v} cells away (the satellite's value), not {k} (R4.2)")
    return encode_displacement(s, d, push[0], push[1])


# --- explanations of illegal actions --------------------------------------------------
_WHY = {
    _core.E_GAME_OVER: "the game is over; no action is legal (R8.4)",
    _core.E_RANGE: "it is outside the action space 0..16000 (R8)",
    _core.E_PASS: "pass is legal only when no other action is (R4.3)",
    _core.E_EMPTY: "{src} is empty: there is no satellite there to move (R4)",
    _core.E_NOT_YOURS: "{src} holds an opposing satellite; {mover} is to move (R4)",
    _core.E_SAT_LOCKED: "the satellite on {src} is connected, and connected satellites never move (R3.2)",
    _core.E_OFF_BOARD: "the target is off the board (R4.1)",
    _core.E_OCCUPIED: "the target cell is occupied; satellites may jump but not land on a satellite (R4.1)",
    _core.E_TOO_FAR: "a normal move goes at most the satellite's value ({v}) cells (R4.1)",
    _core.E_CONNECTIONS_LOCKED: "connections are still locked: no edge has been empty yet (R3.5)",
    _core.E_CONNECT_DISTANCE: "a connection move must go exactly the satellite's value ({v}) cells (R4.1)",
    _core.E_R51_MOVER: "it would put the moving satellite, connected, next to a connected satellite of its own colour (R5.1)",
    _core.E_R51_OPPONENT: "it would connect an opposing satellite next to a connected satellite of its colour (R5.1)",
    _core.E_R52: "it would merge two colonies (R5.2)",
    _core.E_R53: "the resulting group would have more than 6 satellites (R5.3)",
    _core.E_LAND_OFF_BOARD: "the landing cell, exactly {v} cells away, is off the board (R4.2)",
    _core.E_LAND_NOT_OPPONENT: "the landing cell, exactly {v} cells away, holds no opposing satellite (R4.2)",
    _core.E_LAND_CONNECTED: "the opposing satellite on the landing cell is connected and cannot be pushed (R4.2)",
    _core.E_NOT_NEAR_OWN: "the landing cell is not king-adjacent to a connected satellite of the mover (R4.2.2)",
    _core.E_PUSH_OFF_BOARD: "the push goes off the board (R4.2.3)",
    _core.E_PUSH_OCCUPIED: "the push target is occupied (R4.2.3)",
    _core.E_PUSH_CONNECTS: "the pushed satellite would touch a satellite of the mover and be connected (R4.2.4)",
    _core.E_NOT_CONNECTED: "the satellite would not be connected on the landing cell (R4.2.5)",
    _core.E_NO_COLONY: "it would not extend an existing colony (R4.2.5)",
}


def explain_illegal(state: "GameState", action: int, code: int) -> str:
    """One line: the action (id and notation) and why `state` does not allow it."""
    try:
        name = action_to_str(action, state)
    except ValueError:
        name = "?"
    dec = decode_action(action) if 0 <= action < N_ACTIONS else ("?",)
    src = cell_name(dec[1]) if dec[0] in ("move", "displacement") else "-"
    v = abs(int(state.board.flat[dec[1]])) if dec[0] in ("move", "displacement") else 0
    why = _WHY.get(code, f"rule check failed (code {code})").format(src=src, mover=state.to_move, v=v)
    if code == _core.E_GAME_OVER:
        why = f"the game is over ({state.end_reason}); no action is legal (R8.4)"
    return f"illegal action {action} ({name}) for {state.to_move}: {why}"


def board_text(state: "GameState") -> str:
    """The board with coordinates: `r3`/`b2` satellites, `R3`/`B2` when connected."""
    # the kernel directly, not engine.connected_mask: the engine imports this module (no cycle)
    conn = _core.connected_cells(state._a[:N_CELLS]).reshape(BOARD_SIZE, BOARD_SIZE)
    board = state.board
    lines = []
    for r in range(BOARD_SIZE):
        cells = []
        for c in range(BOARD_SIZE):
            v = int(board[r, c])
            if v == 0:
                cells.append(" .")
            else:
                p = "r" if v > 0 else "b"
                cells.append((p.upper() if conn[r, c] else p) + str(abs(v)))
        lines.append(f"{BOARD_SIZE - r:>2} " + " ".join(cells))
    lines.append("    " + "  ".join(FILES))
    winner = state.winner  # Colour.RED is 0, so `state.winner or 'draw'` would call red's wins draws
    status = f"over ({state.end_reason}), winner: {winner if winner is not None else 'draw'}" if state.is_over else f"{state.to_move} to move"
    extra = f"ply {state.ply}/{state.max_plies}, unlocked={state.unlocked}"
    if state.finished is not None:
        extra += f", {state.finished} finished, grace left {state.grace_left}"
    lines.append(f"{status}; {extra}")
    return "\n".join(lines)
