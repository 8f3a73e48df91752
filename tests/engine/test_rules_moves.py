"""R3-R5: connections, moves, displacements, pass and the invariants, on hand-written positions."""

from __future__ import annotations

import colony_env as ce
from helpers import act, assert_illegal, assert_legal, legal_strs, pos

# R10's example: r2 f5, b3 g5, r1 g6 form a colony of 3; b1 on g4 is unconnected;
# red's r4 on c4 may land on g4 (exactly 4 East) and push b1.
R10 = """
.
.
.
.
.  .  .  .  .  .  r1 .  .  .
.  .  .  .  .  r2 b3 .  .  .
.  .  r4 .  .  .  b1 .  .  .
"""


# --- R3 ---------------------------------------------------------------------------------
def test_r3_1_connected_is_orthogonal_contact_of_different_colours():
    s = pos(R10)
    conn = ce.connected_mask(s)
    assert conn[5, 5] and conn[5, 6] and conn[4, 6]
    assert not conn[6, 6]  # b1 touches only its own colour
    assert not conn[6, 2]
    # diagonal contact does not connect
    assert not ce.connected_mask(pos(". . .\n. r2 .\n. . b3"))[1, 1]


def test_r3_3_r3_4_components_and_colonies():
    s = pos(R10)
    cols = ce.colonies(s)
    assert len(cols) == 1
    assert set(cols[0].cells) == {(4, 6), (5, 5), (5, 6)}
    assert not cols[0].crowned
    # a pair is a component but not a colony
    assert ce.colonies(pos(". r2 b3")) == []
    crowned = pos("r1 b1 r1 b1 r1 b1")
    assert ce.colonies(crowned)[0].crowned and ce.colonies(crowned)[0].size == 6


def test_r3_2_connected_satellites_never_move():
    s = pos(R10)
    assert_illegal(s, act(s, "f5-f6"), "connected", "R3.2")
    assert not any(t.startswith("f5-") for t in legal_strs(s))


def test_r4_only_the_movers_satellites_move():
    s = pos(R10)
    assert_illegal(s, act(s, "g4-g3"), "opposing", "red is to move")
    assert_illegal(s, act(s, "a1-a2"), "a1 is empty")


def test_r3_5_unlock_flag_set_when_an_edge_empties_and_never_cleared():
    # r3 on f10 is the only satellite on the North edge; r4 on j1 holds South and East, b3 on a5 West.
    s = pos(
        """
        .  .  .  .  .  r3 .  .  .  .
        .
        .
        .
        .
        b3
        .
        .
        .
        .  .  .  .  .  .  .  .  .  r4
        """,
        unlocked=False,
    )
    assert not s.unlocked
    s = assert_legal(s, act(s, "f10-f9"))
    assert s.unlocked  # North edge is empty
    s = assert_legal(s, act(s, "a5-b5"))
    s = assert_legal(s, act(s, "f9-f10"))  # the edge is occupied again
    assert s.unlocked


def test_r3_5_and_r11_5_the_action_that_empties_an_edge_cannot_connect():
    board = """
        .  .  .  .  .  r2 .  .  .  .
        .
        .  .  .  .  .  .  b3 .  .  .
        .
        .
        b3
        .
        .
        .
        .  .  .  .  .  .  .  .  .  r4
        """
    s = pos(board, unlocked=False)
    assert_illegal(s, act(s, "f10-f8"), "connections are still locked", "R3.5")
    assert "f10-f9" in legal_strs(s)  # the normal move that empties the edge is fine
    unlocked = pos(board, unlocked=True)
    assert_legal(unlocked, act(unlocked, "f10-f8"))


# --- R4.1 moves ---------------------------------------------------------------------------
MOVES = """
.
.
.  .  .  .  .  r1 .  .  .  .
.  .  .  .  .  r2 .  .  .  .
.
.  .  .  .  .  .  .  .  .  .
.  .  .  .  .  b3 .  .  .  .
"""


def test_r4_1_normal_move_goes_at_most_its_value():
    s = pos(MOVES)
    assert_legal(s, act(s, "f7-g7"))  # k=1
    assert_legal(s, act(s, "f7-h7"))  # k=2 == v
    assert_illegal(s, act(s, "f7-i7"), "at most", "R4.1")  # k=3 > v=2


def test_r4_1_satellites_jump_but_never_land_on_a_satellite():
    s = pos(MOVES)
    assert_legal(s, act(s, "f7-f9"))  # jumps over r1 on f8
    assert_illegal(s, act(s, "f7-f8"), "occupied", "R4.1")


def test_r4_1_target_must_be_on_the_board():
    s = pos(". . . . . . . . . r2")
    off = ce.notation.encode_move(9, 2, 1)  # East from j10
    assert_illegal(s, off, "off the board", "R4.1")


def test_r4_1_connection_move_needs_exactly_its_value():
    s = pos(MOVES)
    assert_legal(s, act(s, "f7-f5"))  # k=2 == v lands next to b3 on f4
    s3 = pos(MOVES.replace("r2", "r3"))
    assert_illegal(s3, act(s3, "f7-f5"), "exactly", "R4.1")  # k=2 < v=3
    assert "f7-f5" not in legal_strs(s3) and "f7-f6" in legal_strs(s3)


def test_r4_1_connection_move_needs_connections_unlocked():
    locked = MOVES + ".\n.\n. . . . . . . . . r4"
    locked = "r3\n" + "\n".join(locked.strip("\n").splitlines()[1:])
    s = pos(locked, unlocked=False)
    assert_illegal(s, act(s, "f7-f5"), "locked", "R3.5")
    assert_legal(s, act(s, "f7-f6"))  # a normal move is still fine


# --- R5 invariants through connection moves -------------------------------------------------
def test_r5_1_mover_may_not_touch_its_own_connected_satellite():
    # r1 on e6 moving to e5 would connect to b2 on e4 while touching the connected r2 on f5.
    board = """
    .
    .
    .
    .
    .  .  .  .  r1 .  .  .  .  .
    .  .  .  .  .  r2 b3 .  .  .
    .  .  .  .  b2 .  .  .  .  .
    """
    s = pos(board)
    assert_illegal(s, act(s, "e6-e5"), "R5.1")
    free = pos(board.replace("b3", ". "))  # r2 unconnected: the same move is fine
    assert_legal(free, act(free, "e6-e5"))


def test_r5_1_a_newly_connected_opponent_may_not_touch_its_connected_colleague():
    # r1 on g2 moving to g3 connects b1 on g4, which touches the connected b3 on g5.
    board = """
    .
    .
    .
    .
    .
    .  .  .  .  .  r2 b3 .  .  .
    .  .  .  .  .  .  b1 .  .  .
    .
    .  .  .  .  .  .  r1 .  .  .
    """
    s = pos(board)
    assert_illegal(s, act(s, "g2-g3"), "R5.1")
    apart = pos(  # b1 on h4 does not touch b3: r1 h2-h3 connects it legally
        """
    .
    .
    .
    .
    .
    .  .  .  .  .  r2 b3 .  .  .
    .  .  .  .  .  .  .  b1 .  .
    .
    .  .  .  .  .  .  .  r1 .  .
    """
    )
    after = assert_legal(apart, act(apart, "h2-h3"))
    assert ce.connected_mask(after)[6, 7]


def test_r5_2_two_colonies_never_merge():
    # Two colonies (sizes 3 and 3); r2 on b6 moving 2 East lands on d6 between b3 (d7) and b3 (d5).
    # Two colonies hold >= 6 satellites, so a merge always breaks R5.3 as well: the engine
    # reports the more specific R5.2.
    board = """
    .
    .
    .  .  .  r1 .  .  .  .  .  .
    .  .  r1 b3 .  .  .  .  .  .
    .  r2 .  .  .  .  .  .  .  .
    .  .  .  b3 r2 .  .  .  .  .
    .  .  .  r3 .  .  .  .  .  .
    """
    s = pos(board)
    assert len(ce.colonies(s)) == 2
    assert_illegal(s, act(s, "b6-d6"), "merge two colonies", "R5.2")
    one = pos(board.replace(".  .  .  b3 r2", ".  .  .  b3 . ").replace(".  .  .  r3 .  .", ".  .  .  .  .  ."))
    assert len(ce.colonies(one)) == 1
    assert_legal(one, act(one, "b6-d6"))  # colony + a singleton: allowed


def test_r5_3_no_component_above_six():
    # A colony of 5 along row 2; r3 on f4 moving 3 North lands on f7 touching the colony's b on f8
    # and a lone b1 on f6: 5 + 1 + 1 = 7.
    board = """
    .
    .
    .  .  r1 b1 r1 b2 r2 .  .  .
    .
    .  .  .  .  .  b1 .  .  .  .
    .
    .  .  .  .  .  r3 .  .  .  .
    """
    s = pos(board)
    assert_illegal(s, act(s, "f4-f7"), "more than 6", "R5.3")
    four = pos(board.replace("r2 .  .  .", ".  .  .  ."))  # colony of 4: 4 + 1 + 1 = 6, crowned
    after = assert_legal(four, act(four, "f4-f7"))
    assert any(c.crowned for c in ce.colonies(after))


# --- R4.2 displacements ---------------------------------------------------------------------
def test_r10_worked_example():
    s = pos(R10)
    a = act(s, "c4-g4>h3")
    assert a == 11174  # docs/rules.md R10
    after = assert_legal(s, a)
    assert after.board[6, 6] == 4 and after.board[7, 7] == -1 and after.board[6, 2] == 0
    assert [c.size for c in ce.colonies(after)] == [4]
    pushes = {t.split(">")[1] for t in legal_strs(s) if t.startswith("c4-g4>")}
    # R10 names h3 (SE 1), g2 (S 2), e4 (W 2), e6 (NW 2, jumping f5) as legal, f4 and g5 as illegal.
    assert {"h3", "g2", "e4", "e6"} <= pushes
    assert pushes == {"h5", "i6", "i4", "h3", "i2", "g2", "f3", "e2", "e4", "e6"}
    assert_illegal(s, act(s, "c4-g4>f4"), "R4.2.4")
    assert_illegal(s, act(s, "c4-g4>g5"), "occupied", "R4.2.3")


def test_r4_2_1_displacement_needs_connections_unlocked():
    # r3 on a10 holds North and West, b4 on j1 South and East: every edge is occupied.
    s = pos(R10.replace("\n.\n", "\nr3\n", 1) + ".\n.\n. . . . . . . . . b4", unlocked=False)
    assert_illegal(s, act(s, "c4-g4>h3"), "locked", "R3.5")


def test_r4_2_2_landing_cell_must_be_next_to_a_connected_own_satellite():
    # The colony b3 g5 - r1 g6 - b g7: red's only connected satellite (g6) is two rows from g4.
    board = """
    .
    .
    .
    .  .  .  .  .  .  b2 .  .  .
    .  .  .  .  .  .  r1 .  .  .
    .  .  .  .  .  .  b3 .  .  .
    .  .  r4 .  .  .  b1 .  .  .
    """
    s = pos(board)
    assert_illegal(s, act(s, "c4-g4>h3"), "king-adjacent", "R4.2.2")
    near = pos(board.replace(".  .  .  .  .  .  b3", ".  .  .  .  .  r2 b3"))
    assert_legal(near, act(near, "c4-g4>h3"))


def test_r4_2_3_push_target_on_board_empty_or_the_movers_start():
    # R10 shifted two cells South-East: landing on i2, a push SE 2 leaves the board.
    shifted = """
    .
    .
    .
    .
    .
    .
    .  .  .  .  .  .  .  .  r1 .
    .  .  .  .  .  .  .  r2 b3 .
    .  .  .  .  r4 .  .  .  b1 .
    """
    s = pos(shifted)
    assert_illegal(s, ce.notation.encode_displacement(84, 2, 3, 2), "off the board", "R4.2.3")
    assert_legal(s, act(s, "e2-i2>j1"))
    blocked = pos(R10.replace("b1 .  .  .", "b1 .  .  .\n.  .  .  .  .  .  .  b2 .  ."))
    assert_illegal(blocked, act(blocked, "c4-g4>h3"), "occupied", "R4.2.3")
    # pk == 2 may jump an occupied cell, and the push may land where the mover started
    back = pos(R10.replace("r4 .  .  .  b1", ".  .  r2 .  b1"))
    assert_legal(back, act(back, "e4-g4>e4"))


def test_r4_2_4_pushed_satellite_must_stay_unconnected():
    s = pos(R10)
    assert_illegal(s, act(s, "c4-g4>f4"), "R4.2.4")  # next to the mover on g4 and to r2 on f5
    guarded = pos(R10 + ".\n.\n.  .  .  .  r3 .  .  .  .  .")  # r3 on e1 guards e2
    assert_illegal(guarded, act(guarded, "c4-g4>e2"), "R4.2.4")
    assert_legal(guarded, act(guarded, "c4-g4>h3"))


def test_r4_2_5_mover_must_connect_on_the_landing_cell():
    # r2 on f5 is connected through b3 on f6 (colony b3-r2 ... r1 f7); g4 has no blue neighbour once b1 leaves.
    board = """
    .
    .
    .
    .  .  .  .  .  r1 .  .  .  .
    .  .  .  .  .  b3 .  .  .  .
    .  .  .  .  .  r2 .  .  .  .
    .  .  r4 .  .  .  b1 .  .  .
    """
    s = pos(board)
    assert [c.size for c in ce.colonies(s)] == [3]
    assert_illegal(s, act(s, "c4-g4>h3"), "not be connected", "R4.2.5")


def test_r4_2_5_displacement_must_extend_an_existing_colony():
    pair = pos(R10.replace("r1", ". "))  # r2-b3 is only a pair
    assert_illegal(pair, act(pair, "c4-g4>h3"), "extend an existing colony", "R4.2.5")


def test_r4_2_6_displacement_respects_r5_3():
    # Colony of 5 (r2 f5, b3 g5, r1 g6, b f6, r f7) plus a lone blue on h4: 5 + 1 + 1 = 7.
    board = """
    .
    .
    .
    .  .  .  .  .  r3 .  .  .  .
    .  .  .  .  .  b2 r1 .  .  .
    .  .  .  .  .  r2 b3 .  .  .
    .  .  r4 .  .  .  b1 b4 .  .
    """
    s = pos(board)
    assert [c.size for c in ce.colonies(s)] == [5]
    assert_illegal(s, act(s, "c4-g4>h3"), "R5.3")
    four = pos(board.replace("r3", ". "))
    assert_legal(four, act(four, "c4-g4>h3"))


def test_r4_2_6_displacement_respects_r5_1():
    # b2 on g3 touches b1 (g4) and becomes connected by the mover; it touches the connected b4 on h3.
    board = R10 + ".  .  .  .  .  .  b2 b4 .  .\n.  .  .  .  .  .  .  r3 .  ."
    s = pos(board)
    assert_illegal(s, act(s, "c4-g4>i6"), "R5.1")
    free = pos(R10 + ".  .  .  .  .  .  b2 .  .  .")
    assert_legal(free, act(free, "c4-g4>i6"))


def test_r4_2_landing_cell_must_hold_an_unconnected_opponent():
    # A free r3 on d6: exactly 3 cells SE is g3 (empty), 3 cells E is g6 (own r1).
    free = pos(R10.replace(".  .  .  .  .  .  r1", ".  .  .  r3 .  .  r1"))
    assert_illegal(free, ce.notation.encode_displacement(43, 3, 3, 1), "holds no opposing satellite", "R4.2")
    assert_illegal(free, ce.notation.encode_displacement(43, 2, 2, 2), "holds no opposing satellite", "R4.2")
    # A free r1 on h6: exactly 1 cell SW is g5, the connected b3.
    s = pos(R10.replace("r1 .  .  .", "r1 r1 .  ."))
    assert_illegal(s, ce.notation.encode_displacement(47, 5, 5, 1), "connected and cannot be pushed", "R4.2")


# --- R4.3 pass ------------------------------------------------------------------------------
def test_r4_3_pass_only_when_nothing_else_is_legal():
    stuck = pos(". . . . . r2 b3")  # both satellites connected: nobody can move
    assert list(ce.legal_actions(stuck)) == [ce.PASS_ACTION]
    s = assert_legal(stuck, ce.PASS_ACTION)
    assert s.passes == 1 and str(s.to_move) == "blue"
    free = pos(MOVES)
    assert_illegal(free, ce.PASS_ACTION, "R4.3")
