"""JSON views of positions for the page, built only from the public engine API.

The page never decides a rule: it draws what these views say (satellites, connections,
colonies with their totals and controller, the score as it stands) and offers exactly
the legal actions listed here, grouped by moving satellite and target cell. Why a click
is illegal is the engine's own message (`colony_env.IllegalActionError`, rule number
included).
"""

from __future__ import annotations

from typing import Any

import colony_env as ce
from colony_env.constants import BOARD_SIZE, DIRECTIONS, MAX_PUSH, MAX_STEP, N_DIRECTIONS
from colony_env.notation import encode_displacement, encode_move

MOVE_NORMAL = "normal"
MOVE_CONNECTION = "connection"
MOVE_DISPLACEMENT = "displacement"


def action_cells(action: int, state: ce.GameState) -> dict[str, Any]:
    """The cells an action touches, read back from its notation: {notation, from, to, push} (flat indices)."""
    text = ce.action_to_str(int(action), state)
    if text == "pass":
        return {"notation": text, "from": None, "to": None, "push": None}
    src, rest = text.split("-", 1)
    land, _, push = rest.partition(">")
    return {
        "notation": text,
        "from": ce.parse_cell(src),
        "to": ce.parse_cell(land),
        "push": ce.parse_cell(push) if push else None,
    }


def score_as_it_stands(state: ce.GameState) -> str:
    """'red', 'blue' or 'draw': who would win (R7) if the game ended on this board now.

    The engine scores only finished games, so this asks it about a copy of the position
    with two passes played, which is over (R9.2) on the same board.
    """
    if state.is_over:
        return "draw" if state.winner is None else str(state.winner)
    ended = ce.GameState.from_dict({**state.to_dict(), "passes": 2})
    return "draw" if ended.winner is None else str(ended.winner)


def position_view(state: ce.GameState) -> dict[str, Any]:
    """Everything the board and the status line show for one position."""
    board = state.board
    conn = ce.connected_mask(state)
    cells = []
    for r, row in enumerate(board):
        for c, v in enumerate(row):
            if v:
                cells.append({"index": r * len(row) + c, "name": ce.cell_name(r * len(row) + c),
                              "colour": "red" if v > 0 else "blue", "value": abs(int(v)),
                              "connected": bool(conn[r, c])})
    size = len(board)
    links = [  # R3.1: orthogonal neighbours of different colours are what connects satellites
        [r * size + c, r2 * size + c2]
        for r in range(size) for c in range(size) for r2, c2 in ((r, c + 1), (r + 1, c))
        if r2 < size and c2 < size and int(board[r, c]) * int(board[r2, c2]) < 0
    ]
    colonies = [
        {"cells": [r * size + c for r, c in col.cells], "red_total": col.red_total, "blue_total": col.blue_total,
         "total": col.total, "controller": None if col.controller is None else str(col.controller),
         "crowned": col.crowned}
        for col in ce.colonies(state)
    ]
    red_ctrl, blue_ctrl = ce.controlled_counts(state)
    red_conn, blue_conn = ce.connected_counts(state)
    winner = state.winner
    return {
        "state": state.to_dict(),
        "cells": cells,
        "links": links,
        "colonies": colonies,
        "controlled": {"red": red_ctrl, "blue": blue_ctrl},
        "connected": {"red": red_conn, "blue": blue_conn},
        "leader": score_as_it_stands(state),
        "over": state.is_over,
        "end_reason": state.end_reason,
        "result": None if not state.is_over else ("draw" if winner is None else str(winner)),
    }


def legal_view(state: ce.GameState) -> dict[str, Any]:
    """The legal actions of the player to move, grouped for clicking.

    {"sources": {from: {to: {"kind", "actions": [{"action", "notation", "push"}]}}}, "pass": id | None}
    A move is a *connection* when the moved satellite ends up connected (R4.1); several
    actions under one target are the push choices of a displacement (R4.2).
    """
    sources: dict[int, dict[int, dict[str, Any]]] = {}
    pass_action = None
    for a in ce.legal_actions(state):
        a = int(a)
        if a == ce.PASS_ACTION:
            pass_action = a
            continue
        cells = action_cells(a, state)
        src, dst = cells["from"], cells["to"]
        if cells["push"] is not None:
            kind = MOVE_DISPLACEMENT
        else:
            after = ce.apply_action(state, a)
            kind = MOVE_CONNECTION if ce.connected_mask(after).flat[dst] else MOVE_NORMAL
        target = sources.setdefault(src, {}).setdefault(dst, {"kind": kind, "actions": []})
        target["actions"].append({"action": a, "notation": cells["notation"], "push": cells["push"]})
    return {"sources": {str(s): {str(t): v for t, v in ts.items()} for s, ts in sources.items()}, "pass": pass_action}


def _direction_to(src: int, dst: int) -> tuple[int, int] | None:
    """(d, k) with dst = src + k * DIRECTIONS[d], or None when dst is not on one of src's 8 rays."""
    (r0, c0), (r1, c1) = divmod(src, BOARD_SIZE), divmod(dst, BOARD_SIZE)
    dr, dc = r1 - r0, c1 - c0
    k = max(abs(dr), abs(dc))
    if k == 0 or (dr and dc and abs(dr) != abs(dc)):
        return None
    return DIRECTIONS.index((dr // k, dc // k)), k


def explain_click(state: ce.GameState, src: int, dst: int | None = None) -> str:
    """Why clicking `src` (and then `dst`) is not a legal action, in the engine's words.

    The explanation is the `IllegalActionError` message of the action the click stands
    for: a move from `src` to `dst`, or, when `dst` holds an opposing satellite exactly
    the mover's value away, the displacements landing there (each push choice).
    """
    if state.is_over:
        return f"the game is over ({state.end_reason}); no action is legal (R8.4)"
    src_name = ce.cell_name(src)
    if dst is None:
        if any(action_cells(int(a), state)["from"] == src for a in ce.legal_actions(state)):
            return f"the satellite on {src_name} has legal actions: click one of its highlighted targets"
        candidates = [encode_move(src, d, 1) for d in range(N_DIRECTIONS)]
    else:
        ray = _direction_to(src, dst)
        if ray is None or ray[1] > MAX_STEP:
            return (f"{ce.cell_name(dst)} is not 1..{MAX_STEP} cells from {src_name} along one of the 8 directions "
                    "(R4.1)")
        d, k = ray
        candidates = [encode_move(src, d, k)]
        occupant = int(state.board.flat[dst])
        mover = int(state.board.flat[src])
        if occupant and mover and (occupant > 0) != (mover > 0) and abs(mover) == k:
            candidates = [encode_displacement(src, d, pd, pk) for pd in range(N_DIRECTIONS)
                          for pk in range(1, MAX_PUSH + 1)]
    reasons: list[str] = []
    for a in candidates:
        try:
            ce.apply_action(state, a)
        except ce.IllegalActionError as e:
            why = str(e).split(": ", 1)[-1]
            if why not in reasons:
                reasons.append(why)
        else:
            if dst is not None:
                return f"{ce.action_to_str(a, state)} is legal"
    if dst is None:
        return reasons[0] if len(reasons) == 1 else f"the satellite on {src_name} has no legal action now (e.g. {reasons[0]})"
    head = f"{src_name}-{ce.cell_name(dst)} is not legal for {state.to_move}: "
    if len(reasons) == 1:
        return head + reasons[0]
    return head + "no push works: " + "; ".join(reasons[:3])
