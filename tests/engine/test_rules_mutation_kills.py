"""Hand-written positions for rules that single-point mutations of the engine got past
(issue 15, docs/mutation_testing.md): each rule has a case that must be legal (or won
by one colour) and a twin that must not, differing in the one detail the rule is about.
The later ones pin contracts the second run found unchecked: the kernels' output formats, the
pass check's early stop (R4.3), and the public API's validation, with R9.1 errors compared whole.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import act, assert_illegal, assert_legal, pos

import colony_env as ce
from colony_env import _core
from colony_env.constants import N_CELLS, SATELLITE_VALUES, STATE_DTYPE, STATE_LEN
from colony_env.engine import setup_game

# --- R4.2.2: the landing cell must be king-adjacent to a *connected* satellite of the mover.
# The colony b3 f5 - r2 g5 - b2 h5 sits East of the landing cell e5 (b1, unconnected);
# red's only satellite next to e5 is r1 on d6, diagonal to it. r4 on e1 lands 4 North on e5.
R4_2_2 = """
.
.
.
.
.  .  .  r1 .  .  .  .  .  .
.  .  .  .  b1 b3 r2 b2 .  .
.
.
.
.  .  .  .  r4 .  .  .  .  .
"""


def test_r4_2_2_an_unconnected_own_satellite_next_to_the_landing_cell_does_not_count():
    s = pos(R4_2_2)
    assert not ce.connected_mask(s)[4, 3]  # r1 on d6 is not connected
    assert_illegal(s, act(s, "e1-e5>c5"), "king-adjacent", "R4.2.2")
    assert not any(">" in ce.action_to_str(int(a), s) for a in ce.legal_actions(s))


def test_r4_2_2_the_same_satellite_once_connected_allows_the_displacement():
    # b4 on c6 connects r1 on d6 (a pair, not a colony); e5 is now next to a connected red.
    s = pos(R4_2_2.replace(".  .  .  r1", ".  .  b4 r1"))
    assert ce.connected_mask(s)[4, 3]
    after = assert_legal(s, act(s, "e1-e5>c5"))
    assert after.board[5, 4] == 4 and after.board[5, 2] == -1 and after.board[9, 4] == 0


# --- R4.2.4: with S on X and its start cell s empty, no satellite of the mover touches Y.
# r3 on b4 lands exactly 3 East on e4 (b1, unconnected) next to the colony r2 f5 - b3 f4 - r1 f3;
# b1 is pushed 2 West, jumping d4, onto c4: the cell right next to b4, which r3 has just left.
R4_2_4 = """
.
.
.
.
.
.  .  .  .  .  r2 .  .  .  .
.  r3 .  .  b1 b3 .  .  .  .
.  .  .  .  .  r1 .  .  .  .
"""


def test_r4_2_4_the_pushed_satellite_may_land_next_to_the_cell_the_mover_left():
    s = pos(R4_2_4)
    after = assert_legal(s, act(s, "b4-e4>c4"))
    assert after.board[6, 2] == -1 and after.board[6, 1] == 0
    assert not ce.connected_mask(after)[6, 2]  # R4.2.4 holds in the result: c4 touches no red


def test_r4_2_4_but_not_next_to_another_satellite_of_the_mover():
    s = pos(R4_2_4.replace(".  .  .  .  .  r2", ".  .  r4 .  .  r2"))  # r4 on c5 guards c4
    assert s.board[5, 2] == 4
    assert_illegal(s, act(s, "b4-e4>c4"), "R4.2.4")
    assert_legal(s, act(s, "b4-e4>g2"))  # the same landing, pushed elsewhere


# --- R7.3: the tiebreak total is the colony's total of *both* colours.
# Red controls r4 b1 r2 (red 6 v blue 1, total 7); blue controls r2 b4 r1 b1 (blue 5 v red 3,
# total 8). One colony each; the lowest total, 7, is red's. (Ranking by the controller's own
# satellites instead, 6 v 5, would name blue: the two readings disagree here.)
R7_3 = """
r4 b1 r2
.
r2 b4 r1 b1
"""


def _over(diagram: str) -> ce.GameState:
    return pos(diagram, passes=2)  # R6.2.3: two passes end the game, so it is scored


def _swap(diagram: str) -> str:
    return diagram.replace("r", "x").replace("b", "r").replace("x", "b")


def test_r7_3_the_tiebreak_uses_the_colony_total_of_both_colours():
    s = _over(R7_3)
    assert ce.controlled_counts(s) == (1, 1)
    assert sorted((c.total, c.red_total, c.blue_total) for c in ce.colonies(s)) == [(7, 6, 1), (8, 3, 5)]
    assert str(s.winner) == "red" and s.rewards() == (1.0, -1.0)


def test_r7_3_the_same_positions_with_colours_swapped_go_to_blue():
    s = _over(_swap(R7_3))
    assert ce.controlled_counts(s) == (1, 1)
    assert str(s.winner) == "blue" and s.rewards() == (-1.0, 1.0)


# --- R8.4: the mask's format is part of the contract (mutation: the mask built as floats).
def test_r8_4_mask_is_bool_and_ids_are_sorted_int64():
    s = pos(R4_2_4)
    mask = ce.legal_action_mask(s)
    assert mask.dtype == bool and mask.shape == (ce.N_ACTIONS,)
    ids = ce.legal_actions(s)
    assert ids.dtype.kind == "i" and ids.dtype.itemsize == 8 and list(ids) == sorted(ids)
    assert list(ids) == list(mask.nonzero()[0])


# --- R4.2.3: the corner cell a10 (flat index 0) is on the board like any other
# (mutation: "off the board" tested as index <= 0). r4 on c4 lands 4 North on c8 (b1) next to
# the colony r2 d9 - b3 d8 - r1 d7 and pushes b1 2 North-West, jumping b9, into the corner.
CORNER = """
.
.  .  .  r2
.  .  b1 b3
.  .  .  r1
.
.
.  .  r4
"""


def test_r4_2_3_a_push_may_end_in_the_corner_cell():
    s = pos(CORNER)
    after = assert_legal(s, act(s, "c4-c8>a10"))
    assert after.board[0, 0] == -1 and after.board[2, 2] == 4


def test_r4_2_4_the_corner_cell_guarded_by_the_mover_is_refused():
    s = pos(CORNER.replace(".\n.  .  .  r2", ".  r3\n.  .  .  r2", 1))  # r3 on b10 touches a10
    assert s.board[0, 1] == 3
    assert_illegal(s, act(s, "c4-c8>a10"), "R4.2.4")


# --- R4.2.4 with the mover's satellite on the corner cell a10 (mutation: orthogonal
# neighbours of Y tested as index > 0, skipping cell 0). r4 on b4 lands on b8 (b1) next to
# the colony r2 c9 - b3 c8 - r3 c7 and pushes b1 2 North onto b10, beside a10.
CORNER_GUARD = """
r1
.  .  r2
.  b1 b3
.  .  r3
.
.
.  r4
"""


def test_r4_2_4_a_satellite_of_the_mover_on_the_corner_cell_guards_its_neighbour():
    s = pos(CORNER_GUARD)
    assert_illegal(s, act(s, "b4-b8>b10"), "R4.2.4")


def test_r4_2_4_without_it_the_same_push_is_legal():
    s = pos(CORNER_GUARD.replace("r1\n", ".\n", 1))
    after = assert_legal(s, act(s, "b4-b8>b10"))
    assert after.board[0, 1] == -1


# --- R4.2: the landing cell may be the corner a10 (mutation: "off the board" tested as
# index <= 0). r4 on a6 lands exactly 4 North on a10 (b1, unconnected) beside the colony
# b3 b10 - r2 b9 - b2 b8, with r2 king-adjacent to a10.
CORNER_LANDING = """
b1 b3
.  r2
.  b2
.
r4
"""


def test_r4_2_a_displacement_may_land_on_the_corner_cell():
    s = pos(CORNER_LANDING)
    after = assert_legal(s, act(s, "a6-a10>c8"))
    assert after.board[0, 0] == 4 and after.board[2, 2] == -1


def test_r4_2_3_from_the_corner_cell_a_push_off_the_board_is_refused():
    s = pos(CORNER_LANDING)
    assert_illegal(s, ce.notation.encode_displacement(40, 0, 7, 1), "off the board", "R4.2.3")  # a6 N, push NW 1


# --- Cell a10 (flat index 0) in R4.1 and R5.1 (mutations: bounds tested as index <= 0).
def test_r4_1_a_move_may_end_on_the_corner_cell():
    s = pos(".  .  r2\n.\n.  .  .  .  .  .  .  .  .  b3")
    assert_legal(s, act(s, "c10-a10"))


def test_r5_1_a_connected_satellite_on_the_corner_cell_may_not_be_touched_by_its_colleague():
    # r1 a10 is connected (b1 a9); r2 b8 jumps 2 North onto b10, touching b2 c10 and r1 a10.
    corner = "r1 .  b2\nb1\n.  r2"
    s = pos(corner)
    assert_illegal(s, act(s, "b8-b10"), "R5.1")
    free = pos(corner.replace("b1", ". "))  # r1 unconnected: the same connection move is legal
    assert_legal(free, act(free, "b8-b10"))


# --- R5.2 / R5.3 when several opposing neighbours of the arrival cell share a component: the
# component counts once (mutations in _join's de-duplication of neighbouring components).
def test_r5_3_two_neighbours_in_the_first_component_count_once():
    # c8 is reached by r2 (c6, 2 North); its neighbours c9 and b8 belong to one colony
    # (b1 c9 - r1 b9 - b2 b8, the first component in row-major order) and d8 is a lone b3: 1 + 3 + 1 = 5.
    s = pos(".\n.  r1 b1\n.  b2 .  b3\n.\n.  .  r2")
    after = assert_legal(s, act(s, "c6-c8"))
    assert sorted(c.size for c in ce.colonies(after)) == [5]


def test_r5_3_the_third_and_fourth_neighbours_in_one_component_count_once():
    # e6's neighbours: lone b1 (e7) and b3 (f6), and b2 (d6) + b4 (e5) joined by r1 (d5): 1 + 1 + 1 + 3 = 6.
    s = pos(".\n.\n.\n.  .  .  .  b1\n.  .  .  b2 .  b3\n.  .  .  r1 b4\n.\n.\n.  .  .  .  r4")
    after = assert_legal(s, act(s, "e2-e6"))
    assert [c.size for c in ce.colonies(after)] == [6]


def test_r5_2_a_second_colony_behind_a_repeated_neighbour_is_still_seen():
    # e6's North and East neighbours are one colony (b1 e7 - r1 f7 - b2 f6); its South neighbour
    # b3 (e5) heads another (b3 - r2 e4 - b4 e3): r4 from a6 would merge them.
    board = ".\n.\n.\n.  .  .  .  b1 r1\nr4 .  .  .  .  b2\n.  .  .  .  b3\n.  .  .  .  r2\n.  .  .  .  b4"
    s = pos(board)
    assert_illegal(s, act(s, "a6-e6"), "R5.2")
    pair = pos(board.replace("\n.  .  .  .  b4", ""))  # the South group is only a pair: 1 + 3 + 2 = 6
    assert_legal(pair, act(pair, "a6-e6"))


# --- Cell a10 (index 0) in _join and the landing check (mutations: index <= 0 skipped).
def test_r5_2_a_colony_on_the_corner_cell_counts():
    # b10 touches the colony b1 a10 - r1 a9 - b3 a8 and the colony b2 c10 - r2 c9 - b4 c8.
    board = "b1 .  b2\nr1 .  r2\nb3 .  b4\n.  r3"
    s = pos(board)
    assert_illegal(s, act(s, "b7-b10"), "R5.2")
    pair = pos(board.replace("b3 .  b4", "b3"))  # c10-c9 only a pair: 1 + 3 + 2 = 6
    assert_legal(pair, act(pair, "b7-b10"))


def test_r5_1_a_newly_connected_satellite_beside_its_connected_colleague_on_the_corner():
    # r2 lands on c10 and connects b2 (b10), whose neighbour b1 on a10 is connected (r1 a9).
    board = "b1 b2\nr1\n.  .  r2"
    s = pos(board)
    assert_illegal(s, act(s, "c8-c10"), "R5.1")
    free = pos(board.replace("r1", ". "))  # b1 unconnected: legal
    assert_legal(free, act(free, "c8-c10"))


def test_r4_2_2_a_connected_satellite_of_the_mover_on_the_corner_cell_counts():
    # r1 on a10 (connected to b2 b10 and b3 a9) is the only red king-adjacent to the landing cell b9.
    s = pos("r1 b2\nb3 b1\n.\n.\n.\n.  r4")
    after = assert_legal(s, act(s, "b5-b9>c8"))
    assert after.board[1, 1] == 4 and after.board[2, 2] == -1


# --- R8: the two ends of the action space (mutations of action_code's range check).
# Id 0 is the move (a10, North, 1): an id like any other, never legal because it leaves the
# board (R4.1), and the error says so rather than "outside the action space".
def test_r8_id_0_is_a_move_and_refused_as_off_the_board():
    s = pos("r1\n.\n.\n.\n.\n.\n.\n.\n.\n.  .  .  .  .  .  .  .  .  b1")
    assert_illegal(s, 0, "off the board", "R4.1")


def test_r8_the_kernel_refuses_ids_outside_the_action_space():
    # Compiled agents call the kernel without the engine's range check. Read as a move, -1 would
    # wrap around to j1 North-West 4 (legal for r4 on j1: f5 is empty), and 16001 to a pass-like id.
    s = pos("r1\n.\n.\n.\n.\n.\n.\n.\n.\nb1 .  .  .  .  .  .  .  .  r4")
    assert ce.is_legal(s, act(s, "j1-f5"))
    a = s.to_array()
    assert _core.action_code(a, -1) == _core.E_RANGE
    assert _core.action_code(a, ce.N_ACTIONS) == _core.E_RANGE
    assert not ce.is_legal(s, -1) and not ce.is_legal(s, ce.N_ACTIONS)


# --- R4.3 while connections are still locked (mutation: the pass check generating every
# move instead of stopping at the first). r1 on a10 and b1 on j1 hold all four edges.
def test_r4_3_pass_is_illegal_while_locked_if_a_move_exists():
    s = pos("r1\n.\n.\n.\n.\n.\n.\n.\n.\n.  .  .  .  .  .  .  .  .  b1", unlocked=False)
    assert len(ce.legal_actions(s)) > 1 and ce.PASS_ACTION not in ce.legal_actions(s)
    assert_illegal(s, ce.PASS_ACTION, "R4.3")


def test_r4_3_pass_is_legal_while_locked_if_nothing_else_is():
    s = pos("r1\nb2\n.\n.\n.\n.\n.\n.\n.\n.  .  .  .  .  .  .  .  .  b1", unlocked=False)  # r1 connected (R3.2)
    assert list(ce.legal_actions(s)) == [ce.PASS_ACTION]
    after = assert_legal(s, ce.PASS_ACTION)
    assert after.passes == 1 and str(after.to_move) == "blue"


# --- R4.3 when a displacement is legal (mutations of the pass check's early stop). r1 on a10
# can only displace b1 (b9, unconnected) next to the colony b2 c9 - r2 c10 - b3 d10: its moves to
# b10 and a9 are connection moves that break R5.1 (r1 beside the connected r2; b1, newly
# connected, beside the connected b2).
ONLY_DISPLACEMENT = """
r1 .  r2 b3
.  b1 b2
"""


def test_r4_3_pass_is_illegal_when_only_a_displacement_is_legal():
    s = pos(ONLY_DISPLACEMENT)
    assert_illegal(s, act(s, "a10-b10"), "R5.1")
    assert_illegal(s, act(s, "a10-a9"), "R5.1")
    legal = ce.legal_actions(s)
    assert len(legal) > 0 and all(">" in ce.action_to_str(int(a), s) for a in legal)
    assert_legal(s, act(s, "a10-b9>a10"))
    assert_illegal(s, ce.PASS_ACTION, "R4.3")


def test_r4_3_pass_is_illegal_when_a_move_and_a_displacement_are_legal():
    s = pos(ONLY_DISPLACEMENT + ".\n.\n.\n.\n.\n.\n.\n.  .  .  .  .  .  .  .  .  r1")  # r1 on j1 adds moves
    assert ce.is_legal(s, act(s, "j1-i1")) and ce.is_legal(s, act(s, "a10-b9>a10"))
    assert_illegal(s, ce.PASS_ACTION, "R4.3")


# --- R3.4: the kernel's colony table carries each colony's size (mutation: the size written
# into the red-total column, which then overwrites it). The engine counts a colony's cells
# itself, but compiled code (the search agent's crown bonus) reads the size from the table.
def test_r3_4_the_colony_table_gives_each_colony_its_size():
    s = pos("r1 b1 r1 b1 r2 b2\n.\nr4 b1 r2")  # a crowned colony of 6 and a colony of 3
    cols = ce.colonies(s)
    assert [(c.size, c.crowned) for c in cols] == [(6, True), (3, False)]
    table = _core.colony_table(s.to_array()[:N_CELLS])
    assert [[int(v) for v in row[1:]] for row in table] == [[6, 4, 4, -1], [3, 6, 1, 0]]


# --- R3.1: the connected mask's format is part of the contract (mutation: built as floats).
def test_r3_1_connected_mask_is_a_bool_board():
    s = pos("r1 b1\n.  .  r2")
    mask = ce.connected_mask(s)
    assert mask.dtype == bool and mask.shape == (10, 10)
    assert list(zip(*mask.nonzero())) == [(0, 0), (0, 1)]  # r2 on c8 touches nothing
    assert s.board[mask].tolist() == [1, -1]


# --- engine.py: what the public constructors accept, and what their errors say (R9.1 asks for
# "an error naming the field"). Messages are compared whole, so a changed word or number fails.
def _error(make) -> str:
    with pytest.raises(ValueError) as info:
        make()
    return str(info.value)


def test_r9_packed_states_are_checked_and_converted():
    s = pos("r1 b1\n.  .  r2")
    assert ce.GameState.from_array(s.to_array().astype(np.int64)) == s  # any integer vector is converted
    assert (
        _error(lambda: ce.GameState(np.zeros(STATE_LEN + 1, STATE_DTYPE)))
        == "packed state must be int32[108], got int32[109]"
    )
    assert (
        _error(lambda: ce.GameState(np.zeros(STATE_LEN, np.int64))) == "packed state must be int32[108], got int64[108]"
    )
    assert repr(s) == "<GameState ply=0 red to move>" and repr(pos("r1", passes=2)) == "<GameState ply=0 over:passes>"


def test_r6_2_4_max_plies_may_be_1_or_the_int32_limit_but_not_a_bool():
    assert ce.new_game(0, max_plies=1).max_plies == 1
    assert ce.new_game(0, max_plies=2**31 - 1).max_plies == 2**31 - 1  # the int32 counters' limit
    assert (
        _error(lambda: ce.new_game(0, max_plies=2**31)) == "max_plies must be an int in 1..2147483647, got 2147483648"
    )
    assert _error(lambda: ce.new_game(0, max_plies=True)) == "max_plies must be an int in 1..2147483647, got True"


def test_r2_2_setup_orders_must_be_permutations_of_the_twelve_values():
    values = list(SATELLITE_VALUES)
    assert setup_game(values[::-1], values).board[0, 2] == 4  # red's first start cell is c10 (R2.3)
    assert _error(lambda: setup_game(values, [1] * 12)) == (
        "blue_values must be an ordering of [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4] (R2.2), got [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"
    )
    assert _error(lambda: setup_game("abc", values)).startswith("red_values must be an ordering of [1, 1, 1, 2")
    assert _error(lambda: setup_game([2] + values[1:], values)).startswith("red_values must be")


def test_r9_1_a_state_must_be_a_dict():
    assert _error(lambda: ce.GameState.from_dict([])) == "a state must be a dict (R9), got list"


R9_1_ERRORS = [
    # R5.1 with values whose product is 1, and on the last column and the last two rows
    ("b1 r1 r1 b1", "field 'board': connected satellites of the same colour touch at (0, 1) and (0, 2) (R5.1)"),
    (
        ".  .  .  .  .  .  .  b1 r1 r1\n.  .  .  .  .  .  .  .  .  b1",
        "field 'board': connected satellites of the same colour touch at (0, 8) and (0, 9) (R5.1)",
    ),
    (
        ".\n.\n.\n.\n.\n.\n.\n.\n.  .  b1 r2\n.  .  .  r1 b1",
        "field 'board': connected satellites of the same colour touch at (8, 3) and (9, 3) (R5.1)",
    ),
    # the value count for values 3 and 4 too
    ("r4 .  r4 .  r4 .  r4", "field 'board': red has 4 satellites of value 4, at most 3 allowed"),
    ("b3 .  b3 .  b3 .  b3", "field 'board': blue has 4 satellites of value 3, at most 3 allowed"),
]


@pytest.mark.parametrize("diagram,message", R9_1_ERRORS)
def test_r9_1_invalid_boards_are_rejected_with_the_exact_reason(diagram, message):
    assert _error(lambda: pos(diagram)) == message


def test_r9_1_a_board_row_of_the_wrong_length_is_rejected():
    d = pos("r1").to_dict()
    d["board"][0] += ".."
    assert _error(lambda: ce.GameState.from_dict(d)) == (
        "field 'board' row 0 must be a string of 20 chars, got 'r1....................'"
    )


def test_r8_ids_outside_the_action_space_are_refused_by_the_engine():
    s = pos("r1")
    assert _error(lambda: ce.apply_action(s, ce.N_ACTIONS)) == "action 16001 is outside the action space 0..16000 (R8)"
    assert _error(lambda: ce.apply_action(s, -1)) == "action -1 is outside the action space 0..16000 (R8)"
    assert _error(lambda: ce.apply_action(s, "x")) == "action must be an integer id in 0..16000 (R8), got 'x'"


R9_1_FIELD_ERRORS = [
    ({"to_move": "green"}, "field 'to_move' must be 'red' or 'blue', got 'green'"),
    ({"finished": "purple"}, "field 'finished' must be null, 'red' or 'blue', got 'purple'"),
    (
        {"unlocked": False},
        "field 'unlocked' is false but an edge is empty; the flag is set as soon as one is (R3.5)",
    ),
]


@pytest.mark.parametrize("change,message", R9_1_FIELD_ERRORS)
def test_r9_1_invalid_fields_are_rejected_with_the_exact_reason(change, message):
    d = dict(pos("r1").to_dict(), **change)
    assert _error(lambda: ce.GameState.from_dict(d)) == message


# R6.3 in a loaded state: "finished" needs all 12 satellites of that colour on the board *and*
# connected; and in a game that goes on, a colour with all 12 connected must be marked finished.
TWELVE_BLUE_ONE_CONNECTED = "b1 r1\n.\nb1 .  b1 .  b2 .  b2 .  b2\n.\nb3 .  b3 .  b3 .  b4 .  b4\n.\nb4"
TWELVE_RED_CONNECTED = """
.
r1 b1 r1 b1 r1 b1
.
r2 b2 r2 b2 r2 b2
.
r3 b3 r3 b3 r3 b3
.
.  r4 b4 r4
.  .  r4
"""


def test_r6_3_a_loaded_finished_player_has_all_twelve_connected():
    s = pos(TWELVE_BLUE_ONE_CONNECTED)
    assert ce.connected_counts(s) == (1, 1) and int((s.board < 0).sum()) == 12
    assert _error(lambda: pos(TWELVE_BLUE_ONE_CONNECTED, finished="blue")) == (
        "field 'finished' is 'blue' but blue has 1 of 12 satellites connected; finished needs all 12 (R6.3)"
    )


def test_r6_3_a_loaded_game_with_twelve_connected_names_the_finished_player():
    s = pos(TWELVE_RED_CONNECTED, to_move="blue", finished="red", grace_left=3)
    assert ce.connected_counts(s) == (12, 10) and not s.is_over
    assert _error(lambda: pos(TWELVE_RED_CONNECTED)) == (
        "field 'finished' is null but red has all 12 satellites connected, so red is finished (R6.3)"
    )
