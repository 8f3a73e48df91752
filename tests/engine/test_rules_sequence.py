"""R6 turn sequence and end of the game, and R7 scoring, on hand-written positions."""

from __future__ import annotations

import pytest

import colony_env as ce
from helpers import act, assert_illegal, assert_legal, pos

# 12 red and 10 blue satellites, all connected (22 in all): three crowned rows and a T.
ALL_CONNECTED = """
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


def test_r6_3_player_finishes_by_own_move_and_opponent_gets_three_grace_moves():
    # Red's last free satellite, r4 on g2, lands exactly 4 West on c2 under b4 (c3).
    s = pos(ALL_CONNECTED.replace(".  .  r4", ".  .  .  .  .  .  r4"))
    assert ce.connected_counts(s) == (11, 10)
    s = assert_legal(s, act(s, "g2-c2"))
    assert ce.connected_counts(s) == (12, 10)
    assert not s.is_over
    assert str(s.finished) == "red" and str(s.to_move) == "blue" and s.grace_left == 3


def test_r6_3_player_finished_by_the_opponents_move_and_the_mover_moves_again():
    # Two plus shapes and a T hold 11 red; blue's b2 (f1) moves 2 East to h1 and connects red's 12th (h2).
    board = """
    .
    .  .  r1 .  .  .  .  r2 .  .
    .  r1 b1 r1 .  .  r2 b2 r3 .
    .  .  r2 .  .  .  .  r3 .  .
    .
    .  .  r3 .
    .  r4 b3 .
    .  .  r4 .
    .  .  .  .  .  .  .  r4 .  .
    .  .  .  .  .  b2 .  .  .  .
    """
    s = pos(board, to_move="blue")
    assert ce.connected_counts(s) == (11, 3)
    s = assert_legal(s, act(s, "f1-h1"))
    assert ce.connected_counts(s) == (12, 4)
    assert str(s.finished) == "red"
    assert str(s.to_move) == "blue" and s.grace_left == 3  # blue just moved and moves again


def test_r6_2_1_twenty_three_connected_ends_at_once_even_when_a_player_just_finished():
    # 11 + 11 connected; red's r4 on j3 lands 4 West on f3 and connects its 12th: 23 in all.
    board = """
    .
    r1 b1 r1 b1 r1 b1
    .
    r2 b2 r2 b2 r2 b2
    .
    r3 b3 r3 b3 r3 b3
    .
    r4 b4 .  r4 b4 .  .  .  .  r4
    """
    s = pos(board)
    assert ce.connected_counts(s) == (11, 11)
    s = assert_legal(s, act(s, "j3-f3"))
    assert s.is_over and s.end_reason == "connected23"
    assert s.finished is None  # R6.2: an ending action changes nothing else
    assert str(s.to_move) == "red"
    assert len(ce.legal_actions(s)) == 0 and not ce.legal_action_mask(s).any()


def test_r6_2_2_exactly_three_grace_moves():
    board = ALL_CONNECTED + ".  .  .  .  .  .  .  .  .  b4"
    s = pos(board, to_move="blue", finished="red", grace_left=3)
    for grace_left, move in ((2, "j1-i1"), (1, "i1-j1"), (0, "j1-i1")):
        assert not s.is_over and str(s.to_move) == "blue"
        s = assert_legal(s, act(s, move))
        assert s.grace_left == grace_left
    assert s.is_over and s.end_reason == "grace"
    assert str(s.to_move) == "blue" and str(s.finished) == "red"
    assert_illegal(s, act(s, "i1-j1"), "game is over", "grace")


def test_r6_2_2_a_pass_during_grace_ends_the_game():
    s = pos(ALL_CONNECTED, to_move="blue", finished="red", grace_left=2)
    assert list(ce.legal_actions(s)) == [ce.PASS_ACTION]  # every blue satellite is connected
    s = assert_legal(s, ce.PASS_ACTION)
    assert s.is_over and s.end_reason == "grace" and s.grace_left == 1 and s.passes == 1


def test_r6_2_3_two_passes_end_the_game():
    s = pos(". . . . . r2 b3")
    s = assert_legal(s, ce.PASS_ACTION)
    assert not s.is_over and s.passes == 1
    s = assert_legal(s, ce.PASS_ACTION)
    assert s.is_over and s.end_reason == "passes" and s.passes == 2 and s.ply == 2
    assert str(s.to_move) == "blue"


def test_r6_1_any_other_action_resets_the_pass_count():
    s = pos(". . . . . r2 b3\n.\n.\n.\n. . . . . . . . . b1")
    s = assert_legal(s, ce.PASS_ACTION)  # red is stuck
    s = assert_legal(s, act(s, "j6-j7"))  # blue moves
    assert s.passes == 0 and not s.is_over


def test_r6_2_4_ply_limit_is_a_scored_truncation():
    s = ce.new_game(3, max_plies=5)
    for _ in range(5):
        assert not s.is_over
        s = ce.apply_action(s, int(ce.legal_actions(s)[0]))
    assert s.is_over and s.end_reason == "ply_limit" and s.is_truncated and s.ply == 5
    assert s.rewards() == (0.0, 0.0) and s.winner is None  # no colonies: a draw (R7.3)


def test_r6_4_players_alternate():
    s = ce.new_game(0)
    assert str(s.to_move) == "red"  # R2.1
    s = ce.apply_action(s, int(ce.legal_actions(s)[0]))
    assert str(s.to_move) == "blue"
    s = ce.apply_action(s, int(ce.legal_actions(s)[0]))
    assert str(s.to_move) == "red" and s.ply == 2


# --- R7 scoring -------------------------------------------------------------------------------
def over(diagram: str) -> ce.GameState:
    """A finished game on `diagram` (ended by two passes)."""
    s = pos(diagram, passes=2)
    assert s.is_over and s.end_reason == "passes"
    return s


def test_r7_1_controller_has_the_strictly_greater_total():
    s = over(". r4 b3 r1")  # red 5, blue 3
    (c,) = ce.colonies(s)
    assert (c.red_total, c.blue_total, c.total, str(c.controller)) == (5, 3, 8, "red")
    tie = over(". r2 b3 r1")  # 3 v 3: nobody
    assert ce.colonies(tie)[0].controller is None


def test_r7_2_more_colonies_wins():
    s = over(
        """
        r4 b1 r1
        .
        r4 b1 r1
        .
        b4 r1 b1
        """
    )
    assert ce.controlled_counts(s) == (2, 1)
    assert str(s.winner) == "red" and s.rewards() == (1.0, -1.0)


def test_r7_3_tiebreak_lowest_controlled_total_wins():
    # red controls a colony of total 8, blue one of total 7: equal counts, blue holds the lowest.
    s = over("r4 b1 r3\n.\nb4 r1 b2")
    assert ce.controlled_counts(s) == (1, 1)
    assert str(s.winner) == "blue" and s.rewards() == (-1.0, 1.0)


def test_r7_3_uncontrolled_colonies_do_not_count_for_the_tiebreak():
    # An uncontrolled colony of total 6 (r2 b3 r1 b... 3 v 3) is lower than both controlled ones.
    s = over("r4 b1 r3\n.\nb4 r1 b2\n.\nr2 b3 r1")
    assert ce.controlled_counts(s) == (1, 1)
    assert str(s.winner) == "blue"


def test_r7_3_equal_lowest_totals_is_a_draw():
    s = over("r4 b1 r2\n.\nb4 r1 b2")  # both controlled colonies total 7
    assert ce.controlled_counts(s) == (1, 1)
    assert s.winner is None and s.rewards() == (0.0, 0.0)


def test_r7_3_no_controlled_colony_is_a_draw():
    s = over("r2 b3 r1")
    assert s.winner is None and s.rewards() == (0.0, 0.0)


def test_r7_4_no_reward_before_the_end():
    s = ce.new_game(0)
    assert s.rewards() == (0.0, 0.0) and s.winner is None and not s.is_over


@pytest.mark.parametrize("seed", range(5))
def test_r7_winner_is_symmetric_under_colour_swap(seed):
    """Swapping the colours of every satellite swaps the winner (R7 treats colours alike)."""
    from helpers import random_final_state

    s = random_final_state(seed)
    d = s.to_dict()
    swap = {"r": "b", "b": "r"}
    d["board"] = ["".join(swap.get(ch, ch) for ch in row) for row in d["board"]]
    d["to_move"] = "blue" if d["to_move"] == "red" else "red"
    if d["finished"]:
        d["finished"] = "blue" if d["finished"] == "red" else "red"
    swapped = ce.GameState.from_dict(d)
    assert swapped.is_over
    if s.winner is None:
        assert swapped.winner is None
    else:
        assert swapped.winner == s.winner.opponent
