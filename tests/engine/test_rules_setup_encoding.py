"""R2 setup, R8 action encoding and notation, R9 state format."""

from __future__ import annotations

import json

import numpy as np
import pytest

import colony_env as ce
from colony_env.constants import BLUE_START_CELLS, RED_START_CELLS, SATELLITE_VALUES
from colony_env.notation import decode_action, encode_displacement, encode_move
from helpers import pos, rows_from_diagram
from helpers import random_game


# --- R2 ----------------------------------------------------------------------------------------
def _inward(r: int, c: int) -> tuple[int, int]:
    return (1 if r == 0 else 8 if r == 9 else r, 1 if c == 0 else 8 if c == 9 else c)


@pytest.mark.parametrize("seed", range(20))
def test_r2_setup_places_each_value_on_its_start_cells(seed):
    s = ce.new_game(seed)
    board = s.board
    for sign, cells in ((1, RED_START_CELLS), (-1, BLUE_START_CELLS)):
        values = []
        for r, c in cells:
            v_edge, v_in = int(board[r, c]) * sign, int(board[_inward(r, c)]) * sign
            assert (v_edge == 0) != (v_in == 0), "exactly one of the edge cell and its inner cell is used"
            v = v_edge or v_in
            assert (v in (3, 4)) == (v_edge != 0)  # R2.4: 1s and 2s shifted inward
            values.append(v)
        assert sorted(values) == sorted(SATELLITE_VALUES)  # R2.2
    assert int(np.count_nonzero(board)) == 24
    assert str(s.to_move) == "red" and s.ply == 0 and s.passes == 0 and s.finished is None  # R2.1


@pytest.mark.parametrize("seed", range(50))
def test_r2_5_no_contact_at_setup_and_unlock_iff_an_edge_is_empty(seed):
    s = ce.new_game(seed)
    assert ce.connected_counts(s) == (0, 0)
    b = s.board
    edge_empty = not b[0].any() or not b[9].any() or not b[:, 0].any() or not b[:, 9].any()
    assert s.unlocked == edge_empty  # R3.5 after setup


def test_r2_4_seeded_and_reproducible():
    assert ce.new_game(7) == ce.new_game(7)
    assert ce.new_game(7) != ce.new_game(8)
    g = np.random.default_rng(7)
    assert ce.new_game(g) == ce.new_game(7)  # a Generator is accepted as the source
    assert ce.new_game(np.random.SeedSequence([7, 1])) == ce.new_game(np.random.default_rng([7, 1]))


@pytest.mark.parametrize("seed", [-1, "a", True, 1.5, [1, 2]])
def test_r2_4_a_seed_that_is_not_one_says_what_is_allowed(seed):
    """NumPy's own errors ("expected non-negative integer", a TypeError about SeedSequence) did not say it,
    and True was taken as the seed 1."""
    with pytest.raises(ValueError, match=r"seed must be an int >= 0, a numpy Generator or None, got "):
        ce.new_game(seed)
    with pytest.raises(ValueError, match=r"seed must be an int >= 0"):
        ce.env().reset(seed=seed)


@pytest.mark.parametrize("action", [True, np.bool_(False)])
def test_r8_a_boolean_is_not_an_action_id(action):
    """`operator.index(True)` is 1: a mask entry passed by mistake was played as action 1 or 0."""
    s = ce.new_game(0)
    with pytest.raises(ce.IllegalActionError, match=r"action must be an integer id in 0\.\.16000 \(R8\), got "):
        ce.apply_action(s, action)
    with pytest.raises(ce.IllegalActionError, match="must be an integer id"):
        ce.is_legal(s, action)
    assert s == ce.new_game(0)


def test_r8_notation_that_is_not_a_string_is_a_value_error():
    with pytest.raises(ValueError, match="cannot read None: a move is a string such as 'd10-d7'"):
        ce.parse_action(None)


def test_r11_3_setup_is_a_uniform_permutation():
    """Each value lands on each start cell about 1/4 of the time (3 of 12 values each)."""
    n = 4000
    counts = np.zeros((12, 5))
    for seed in range(n):
        b = ce.new_game(seed).board
        for i, (r, c) in enumerate(RED_START_CELLS):
            counts[i, abs(int(b[r, c])) or abs(int(b[_inward(r, c)]))] += 1
    freq = counts[:, 1:] / n
    assert np.all(np.abs(freq - 0.25) < 0.035), freq  # > 5 standard deviations of slack


def test_r2_5_some_setups_start_unlocked():
    # An edge starts empty when its 6 start cells all draw 1s and 2s: 4 / C(12, 6) = 1 in 231.
    unlocked = [seed for seed in range(3000) if ce.new_game(seed).unlocked]
    assert 3 <= len(unlocked) <= 40
    s = ce.new_game(unlocked[0])
    b = s.board
    assert not b[0].any() or not b[9].any() or not b[:, 0].any() or not b[:, 9].any()


def test_new_game_rejects_bad_max_plies():
    with pytest.raises(ValueError, match="max_plies"):
        ce.new_game(0, max_plies=0)


# --- R8 ----------------------------------------------------------------------------------------
def test_r8_encode_decode_round_trip_for_every_id():
    for a in range(ce.N_ACTIONS):
        dec = decode_action(a)
        if dec[0] == "move":
            assert encode_move(*dec[1:]) == a and a < 3200
        elif dec[0] == "displacement":
            assert encode_displacement(*dec[1:]) == a and 3200 <= a < 16000
        else:
            assert a == ce.PASS_ACTION == 16000


def test_r8_formulas():
    assert encode_move(0, 0, 1) == 0 and encode_move(99, 7, 4) == 3199
    assert encode_move(55, 3, 2) == 32 * 55 + 4 * 3 + 1
    assert encode_displacement(0, 0, 0, 1) == 3200 and encode_displacement(99, 7, 7, 2) == 15999
    assert encode_displacement(62, 2, 3, 1) == 11174  # R10
    with pytest.raises(ValueError):
        encode_move(0, 8, 1)
    with pytest.raises(ValueError):
        decode_action(16001)


def test_r1_2_cell_names():
    assert ce.cell_name(90) == "a1" and ce.cell_name(0) == "a10" and ce.cell_name(9) == "j10"
    assert ce.parse_cell("a1") == 90 and ce.parse_cell("J10") == 9
    for bad in ("k1", "a11", "a0", "", "e"):
        with pytest.raises(ValueError, match="not a cell"):
            ce.parse_cell(bad)


@pytest.mark.parametrize("seed", range(4))
def test_notation_round_trips_every_legal_action(seed):
    for s in random_game(seed)[::7]:
        for a in ce.legal_actions(s):
            text = ce.action_to_str(int(a), s)
            assert ce.parse_action(text, s) == a, text


def test_notation_examples_and_errors():
    s = ce.new_game(0)
    assert ce.action_to_str(ce.PASS_ACTION) == "pass" and ce.parse_action("PASS") == ce.PASS_ACTION
    assert ce.action_to_str(encode_move(ce.parse_cell("d10"), 4, 3)) == "d10-d7"
    for bad in ("d10d7", "d10-d5", "d10-e8", "c4-g4>g7", "hello"):
        with pytest.raises(ValueError):
            ce.parse_action(bad, s)


# --- R9 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_r9_round_trip_through_json(seed):
    for s in random_game(seed)[::5]:
        d = json.loads(json.dumps(s.to_dict()))
        t = ce.GameState.from_dict(d)
        assert t == s and t.end_reason == s.end_reason and t.to_dict() == d


def test_r9_format_fields():
    d = ce.new_game(0).to_dict()
    assert set(d) == {"board", "to_move", "unlocked", "finished", "grace_left", "ply", "passes", "max_plies"}
    assert len(d["board"]) == 10 and all(len(row) == 20 for row in d["board"])
    assert d["to_move"] == "red" and d["finished"] is None
    extra = dict(d, comment="extra keys are allowed")
    assert ce.GameState.from_dict(extra) == ce.new_game(0)


def _valid() -> dict:
    return pos(". . . . . r2 b3").to_dict()


MALFORMED = [
    ("board", lambda d: d.update(board=d["board"][:9]), "field 'board'"),
    ("board row", lambda d: d["board"].__setitem__(0, "...."), "row 0"),
    ("piece code", lambda d: d["board"].__setitem__(0, "x1" + d["board"][0][2:]), "unknown piece code 'x1'"),
    ("piece value", lambda d: d["board"].__setitem__(0, "r5" + d["board"][0][2:]), "unknown piece code 'r5'"),
    ("too many of a value", lambda d: d.update(board=rows_from_diagram("r1 . r1 . r1 . r1")), "value 1, at most 3"),
    ("too many satellites", lambda d: d.update(board=rows_from_diagram("\n".join(["r1 . r2 . r3 . r4"] * 4))), "at most 12"),
    ("R5.1", lambda d: d.update(board=rows_from_diagram("r1 b1\nr2 b2")), "R5.1"),
    ("R5.3", lambda d: d.update(board=rows_from_diagram("r1 b1 r1 b1 r2 b2 r2")), "R5.3"),
    ("to_move", lambda d: d.update(to_move="green"), "'to_move'"),
    ("unlocked type", lambda d: d.update(unlocked="yes"), "'unlocked'"),
    ("unlocked false with empty edge", lambda d: d.update(unlocked=False), "R3.5"),
    ("finished value", lambda d: d.update(finished="purple"), "'finished'"),
    ("finished without 12 connected", lambda d: d.update(finished="red", to_move="blue"), "'finished'"),
    ("grace range", lambda d: d.update(grace_left=4), "'grace_left'"),
    ("grace without finished", lambda d: d.update(grace_left=2), "'grace_left'"),
    ("ply type", lambda d: d.update(ply="3"), "'ply'"),
    ("ply negative", lambda d: d.update(ply=-1), "'ply'"),
    ("ply beyond limit", lambda d: d.update(ply=401), "'ply'"),
    ("passes", lambda d: d.update(passes=3), "'passes'"),
    ("max_plies", lambda d: d.update(max_plies=0), "'max_plies'"),
    ("bool as int", lambda d: d.update(ply=True), "'ply'"),
    ("missing field", lambda d: d.pop("passes"), "missing field"),
]


@pytest.mark.parametrize("name,mutate,fragment", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_r9_1_malformed_states_are_rejected_naming_the_field(name, mutate, fragment):
    d = _valid()
    mutate(d)
    with pytest.raises(ValueError, match=None) as info:
        ce.GameState.from_dict(d)
    assert fragment in str(info.value), str(info.value)


def test_r9_1_finished_player_cannot_be_to_move():
    from test_rules_sequence import ALL_CONNECTED

    with pytest.raises(ValueError, match="never moves"):
        pos(ALL_CONNECTED, to_move="red", finished="red", grace_left=3)


def test_r9_1_non_dict_is_rejected():
    with pytest.raises(ValueError, match="must be a dict"):
        ce.GameState.from_dict(["board"])


def test_r9_2_over_and_reason_follow_from_the_fields():
    base = ". . . . . r2 b3"
    assert not pos(base).is_over
    assert pos(base, passes=2).end_reason == "passes"
    assert pos(base, ply=400).end_reason == "ply_limit"
    assert pos(base, passes=2, ply=400).end_reason == "passes"  # first reason of R6.2 that holds
    from test_rules_sequence import ALL_CONNECTED

    assert pos(ALL_CONNECTED, to_move="blue", finished="red", grace_left=0).end_reason == "grace"
    assert pos(ALL_CONNECTED, to_move="blue", finished="red", grace_left=2, passes=1).end_reason == "grace"
    assert not pos(ALL_CONNECTED, to_move="blue", finished="red", grace_left=2).is_over


def test_state_is_immutable_and_hashable():
    s = ce.new_game(0)
    with pytest.raises(ValueError):
        s.board[0, 0] = 1
    assert hash(s) == hash(ce.new_game(0)) and len({s, ce.new_game(0)}) == 1
    import pickle

    assert pickle.loads(pickle.dumps(s)) == s
    assert ce.GameState.from_array(s.to_array()) == s
    assert "red to move" in repr(s) and "a  b  c" in str(s)


@pytest.mark.parametrize(
    "field,value,fragment",
    [
        ("board", lambda d: np.array(d["board"]), "field 'board' must be a list of 10 strings"),
        ("board", lambda d: [np.array(list(d["board"][0]))] + d["board"][1:], "field 'board' row 0 must be a string"),
        ("ply", lambda d: np.arange(30), "field 'ply' must be an int"),
        ("to_move", lambda d: np.array(["red"] * 40), "field 'to_move' must be"),
        ("unlocked", lambda d: np.zeros((8, 8)), "field 'unlocked' must be true or false"),
    ],
)
def test_r9_1_numpy_values_get_a_one_line_message(field, value, fragment):
    """Issue 32 item 9: a NumPy array's repr spans lines; the message stays one line (R9.1)."""
    d = ce.new_game(0).to_dict()
    d[field] = value(d)
    with pytest.raises(ValueError) as info:
        ce.GameState.from_dict(d)
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)
    assert len(str(info.value)) < 200
