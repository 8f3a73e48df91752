"""Observation planes: the compiled encoder against a plain reference built from the engine's
public API (R3.1 connected, R3.4 colonies, R7.1 control), and small hand-made positions."""

from __future__ import annotations

import numpy as np

import colony_env as ce
from colony_env import observation as ob
from colony_env.constants import BOARD_SIZE, DIRECTIONS, GRACE_MOVES
from helpers import pos


def reference_planes(state: ce.GameState, colour: ce.Colour) -> np.ndarray:
    """The table in observation.py, written the slow, obvious way (board frame)."""
    out = np.zeros(ob.OBS_SHAPE, np.float32)
    board = state.board.astype(int) * colour.sign  # own > 0
    conn = ce.connected_mask(state)
    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            v = board[r, c]
            if v > 0:
                out[ob.P_OWN + v - 1, r, c] = 1
                out[ob.P_OWN_CONNECTED, r, c] = conn[r, c]
            elif v < 0:
                out[ob.P_OPP - v - 1, r, c] = 1
                out[ob.P_OPP_CONNECTED, r, c] = conn[r, c]
            else:
                for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                    rr, cc = r + dr, c + dc
                    if 0 <= rr < BOARD_SIZE and 0 <= cc < BOARD_SIZE:
                        if board[rr, cc] < 0:
                            out[ob.P_OWN_CONTACT, r, c] = 1
                        elif board[rr, cc] > 0:
                            out[ob.P_OPP_CONTACT, r, c] = 1
            if v != 0:
                out[ob.P_COMPONENT_SIZE, r, c] = 1 / 6  # lone satellites; colonies and pairs below
    label_size = {}
    for col in ce.colonies(state):
        plane = ob.P_NOBODY_CONTROLS if col.controller is None else ob.P_OWN_CONTROLS if col.controller == colour else ob.P_OPP_CONTROLS
        for rc in col.cells:
            out[ob.P_COLONY][rc] = 1
            out[plane][rc] = 1
            out[ob.P_CROWNED][rc] = col.crowned
            label_size[rc] = col.size
    # pairs (components of 2) are connected but not colonies
    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            if (r, c) in label_size:
                out[ob.P_COMPONENT_SIZE, r, c] = label_size[(r, c)] / 6
            elif conn[r, c]:
                out[ob.P_COMPONENT_SIZE, r, c] = 2 / 6
    if colour == ce.RED:
        out[ob.P_OWN_EDGES, [0, 9], :] = 1
    else:
        out[ob.P_OWN_EDGES, :, [0, 9]] = 1
    out[ob.P_UNLOCKED] = state.unlocked
    out[ob.P_TO_MOVE] = state.to_move == colour
    out[ob.P_OWN_FINISHED] = state.finished == colour
    out[ob.P_OPP_FINISHED] = state.finished is not None and state.finished != colour
    out[ob.P_GRACE] = state.grace_left / GRACE_MOVES
    out[ob.P_LAST_PASS] = state.passes >= 1
    out[ob.P_PLY] = state.ply / state.max_plies
    # R4.1 reach: each unconnected satellite of value v lands on empty cells 1..v away along a line, jumping
    for r, c in zip(*np.nonzero(board)):
        if conn[r, c]:
            continue
        value = abs(board[r, c])
        side = 0 if board[r, c] > 0 else 1
        for dr, dc in DIRECTIONS:
            for k in range(1, value + 1):
                rr, cc = r + k * dr, c + k * dc
                if not (0 <= rr < BOARD_SIZE and 0 <= cc < BOARD_SIZE):
                    break
                if board[rr, cc] == 0:
                    out[ob.P_OWN_REACH + side, rr, cc] = max(out[ob.P_OWN_REACH + side, rr, cc], value / 4)
                    if k == value:
                        out[ob.P_OWN_EXACT + side, rr, cc] = max(out[ob.P_OWN_EXACT + side, rr, cc], value / 4)
    return out


def test_encoder_matches_the_reference_over_random_games() -> None:
    rng = np.random.default_rng(0)
    checked = 0
    for g in range(8):
        s = ce.new_game(g)
        while True:
            for colour in ce.Colour:
                np.testing.assert_array_equal(ob.encode_observation(s, colour, canonical=False), reference_planes(s, colour))
            checked += 1
            if s.is_over:
                break
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    assert checked > 500


def test_reach_planes_cover_every_legal_move() -> None:
    """R4.1 against the engine: every legal move of the player to move lands on a cell of its reach plane with at
    least the moving satellite's value, and every connection move (landing next to an opposing satellite, k == v)
    on a cell of its exact-reach plane (the reference above checks both colours' planes cell by cell)."""
    rng = np.random.default_rng(1)
    checked = connections = 0
    for g in range(6):
        s = ce.new_game(100 + g)
        while not s.is_over:
            planes = ob.encode_observation(s, s.to_move, canonical=False)
            board = s.board.astype(int)
            for a in ce.legal_actions(s):
                if a >= 3200:  # displacements and the pass (R4.2, R4.3) are not moves
                    continue
                src, d, k = divmod(int(a), 32)[0], int(a) % 32 // 4, int(a) % 4 + 1
                (r, c), (dr, dc) = divmod(src, BOARD_SIZE), DIRECTIONS[d]
                t = (r + k * dr, c + k * dc)
                value = abs(board[r, c])
                assert planes[ob.P_OWN_REACH][t] >= value / 4
                near = [(t[0] + u, t[1] + w) for u, w in ((-1, 0), (1, 0), (0, -1), (0, 1))]
                touches = any(0 <= y < BOARD_SIZE and 0 <= x < BOARD_SIZE and board[y, x] * board[r, c] < 0
                              for y, x in near)
                if touches:
                    assert k == value and planes[ob.P_OWN_EXACT][t] >= value / 4
                    connections += 1
                checked += 1
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    assert checked > 5000 and connections > 20


def test_r10_position_planes() -> None:
    """R10: r2 (5,5), b3 (5,6), r1 (4,6) form a colony of 3; red's 2 + 1 equals blue's 3, so
    nobody controls it (R7.1); b1 (6,6) and r4 (6,2) are unconnected (R3.1)."""
    s = pos(
        """
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . r1 . . .
        . . . . . r2 b3 . . .
        . . r4 . . . b1 . . .
        """
    )
    red = ob.encode_observation(s, ce.RED, canonical=False)
    blue = ob.encode_observation(s, ce.BLUE, canonical=False)
    colony = [(4, 6), (5, 5), (5, 6)]
    for rc in colony:
        assert red[ob.P_COLONY][rc] == 1 and red[ob.P_NOBODY_CONTROLS][rc] == 1
        assert red[ob.P_COMPONENT_SIZE][rc] == np.float32(3 / 6)
    assert red[ob.P_OWN + 3, 6, 2] == 1 and blue[ob.P_OPP + 3, 6, 2] == 1  # r4 seen by both
    assert red[ob.P_OWN_CONNECTED, 5, 5] == 1 and red[ob.P_OWN_CONNECTED, 6, 2] == 0
    assert blue[ob.P_OWN_CONNECTED, 5, 6] == 1 and blue[ob.P_OWN_CONNECTED, 6, 6] == 0
    assert red[ob.P_OWN_CONTACT, 7, 6] == 1  # below b1: a red satellite there would connect
    assert red[ob.P_TO_MOVE].all() and not blue[ob.P_TO_MOVE].any()
    assert red[ob.P_UNLOCKED].all()


def test_control_and_crown_planes() -> None:
    """R7.1 control by strictly greater total; R3.4 a colony of 6 is crowned."""
    s = pos(
        """
        r4 b1 r1 . . . . . . .
        b1 . b2 . . . . . . .
        . . . . . . . . . .
        . . . . . b4 r1 b3 . .
        . . . . . r2 . r1 . .
        """,
        to_move="blue",
        finished=None,
    )
    red = ob.encode_observation(s, ce.RED, canonical=False)
    # colony 1: r4 b1 r1 b1 b2 (size 5), red 5 vs blue 4 -> red
    assert red[ob.P_OWN_CONTROLS, 0, 0] == 1 and red[ob.P_OPP_CONTROLS, 0, 0] == 0
    # colony 2: b4 r1 b3 r2 r1 (size 5), blue 7 vs red 4 -> blue
    assert red[ob.P_OPP_CONTROLS, 3, 5] == 1
    assert not red[ob.P_CROWNED].any()
    crowned = pos(
        """
        r4 b1 r1 . . . . . . .
        b1 . b2 . . . . . . .
        r1 . . . . . . . . .
        """
    )
    planes = ob.encode_observation(crowned, ce.BLUE, canonical=False)
    for rc in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0)]:
        assert planes[ob.P_CROWNED][rc] == 1 and planes[ob.P_COMPONENT_SIZE][rc] == 1.0


def test_grace_and_pass_planes() -> None:
    s = ce.new_game(0)
    planes = ob.encode_observation(s, ce.RED)
    assert not planes[ob.P_GRACE].any() and not planes[ob.P_LAST_PASS].any() and not planes[ob.P_OPP_FINISHED].any()
    assert planes[ob.P_PLY].max() == 0


def test_canonical_blue_view_is_the_transpose() -> None:
    s = ce.new_game(3)
    board_frame = ob.encode_observation(s, ce.BLUE, canonical=False)
    np.testing.assert_array_equal(ob.encode_observation(s, ce.BLUE, canonical=True), board_frame.transpose(0, 2, 1))
    np.testing.assert_array_equal(ob.encode_observation(s, ce.RED, canonical=True), ob.encode_observation(s, ce.RED, canonical=False))


def test_plane_names_match_the_count() -> None:
    assert len(ob.PLANE_NAMES) == ob.OBS_CHANNELS == 30
