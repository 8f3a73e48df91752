"""Fuzzing the engine's input boundary (issue 13, items 6-7): `GameState.from_dict` over mutated
valid R9 dicts, and out-of-range integers everywhere an int enters the int32 state.

The contract (R9.1): a dict is either rejected with a `ValueError` that names the offending
field, or accepted as a state that satisfies R9.1, round-trips exactly, and keeps
round-tripping through any play from it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colony_env as ce
from colony_env import _core
from colony_env.constants import COPIES_PER_VALUE, GRACE_MOVES, MAX_COMPONENT, MAX_PLIES_LIMIT, N_SATELLITES, PASSES_TO_END
from helpers import rows_from_diagram
from helpers import random_game

FIELDS = ("board", "to_move", "unlocked", "finished", "grace_left", "ply", "passes", "max_plies")
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A pool of real positions from a few random games, endings and grace phases included.
_POOL: list[dict[str, Any]] = [s.to_dict() for seed in (1, 2, 3, 4) for s in random_game(seed)[::3] + random_game(seed)[-4:]]
assert any(d["finished"] is not None for d in _POOL), "the pool should hold a grace phase"

_WEIRD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-1, 0, 1, 2, 3, 4, 400, 2**31 - 1, 2**31, 2**32, 2**63, -(2**31) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=24),
    st.sampled_from(["red", "blue", "Red", "", "..", "r1", "green"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(np.int64(2**40)),
    st.just(np.int32(5)),
    st.just(["red"]),
)
_CODES = st.sampled_from(["..", "r1", "r2", "r3", "r4", "b1", "b2", "b3", "b4", "r5", "x1", "b0", " .", "R1"])


@st.composite
def mutated_dicts(draw: st.DrawFn) -> dict[str, Any]:
    d = copy.deepcopy(draw(st.sampled_from(_POOL)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["field", "field", "cell", "row", "delete", "flip", "finish", "extra"]))
        key = draw(st.sampled_from(FIELDS))
        if kind == "field":
            d[key] = draw(_WEIRD)
        elif kind == "cell" and isinstance(d.get("board"), list) and d["board"] and all(isinstance(r, str) for r in d["board"]):
            r, c = draw(st.integers(0, len(d["board"]) - 1)), draw(st.integers(0, 9))
            row = d["board"][r]
            d["board"][r] = row[: 2 * c] + draw(_CODES) + row[2 * c + 2 :]
        elif kind == "row" and isinstance(d.get("board"), list) and d["board"]:
            d["board"][draw(st.integers(0, len(d["board"]) - 1))] = draw(st.one_of(st.text(max_size=22), _WEIRD))
        elif kind == "delete":
            d.pop(key, None)
        elif kind == "flip":
            cur = d.get("to_move")  # an earlier mutation may have made it a list (unhashable)
            d["to_move"] = {"red": "blue", "blue": "red"}.get(cur, "red") if isinstance(cur, str) else "red"
        elif kind == "finish":
            d["finished"] = draw(st.sampled_from([None, "red", "blue"]))
            d["grace_left"] = draw(st.integers(0, GRACE_MOVES))
        else:
            d[draw(st.text(max_size=5))] = draw(_WEIRD)  # extra keys are allowed (R9)
    return d


def _satisfies_r9_1(s: ce.GameState) -> None:
    b = s.board
    for sign in (1, -1):
        vals = b[b * sign > 0] * sign
        assert vals.size <= N_SATELLITES
        assert all(np.sum(vals == v) <= COPIES_PER_VALUE for v in range(1, 5))
    conn = ce.connected_mask(s)
    assert not ((b[:, :-1] * b[:, 1:] > 0) & conn[:, :-1] & conn[:, 1:]).any(), "R5.1"
    assert not ((b[:-1, :] * b[1:, :] > 0) & conn[:-1, :] & conn[1:, :]).any(), "R5.1"
    _label, size, count = _core.components(b.ravel().astype(np.int32))
    assert count == 0 or size[:count].max() <= MAX_COMPONENT, "R5.3"
    assert 0 <= s.grace_left <= GRACE_MOVES and 0 <= s.passes <= PASSES_TO_END
    assert 1 <= s.max_plies <= MAX_PLIES_LIMIT and 0 <= s.ply <= s.max_plies


def _round_trips(s: ce.GameState) -> None:
    again = ce.GameState.from_dict(s.to_dict())
    assert again == s and again.to_dict() == s.to_dict() and again.is_over == s.is_over


@FUZZ
@given(d=mutated_dicts(), seed=st.integers(0, 2**32 - 1))
def test_from_dict_rejects_with_a_named_field_or_accepts_a_valid_state(d: dict[str, Any], seed: int) -> None:
    try:
        s = ce.GameState.from_dict(d)
    except ValueError as e:
        message = str(e)
        assert any(f"'{f}'" in message for f in FIELDS) or "missing field" in message, message
        assert "\n" not in message and len(message) < 400, message
        return
    _satisfies_r9_1(s)
    expected = {k: (list(d[k]) if k == "board" else d[k]) for k in FIELDS}
    assert s.to_dict() == expected  # nothing dropped or changed on the way in
    _round_trips(s)
    rng = np.random.default_rng(seed)
    for _ in range(40):  # play from it: every reached state is valid and round-trips
        if s.is_over:
            assert not ce.legal_action_mask(s).any()
            break
        ids = ce.legal_actions(s)
        assert len(ids) > 0, "a game that is not over always has an action (at least a pass)"
        s = ce.apply_action(s, int(ids[rng.integers(len(ids))]))
        _satisfies_r9_1(s)
        _round_trips(s)


@pytest.mark.parametrize("bad", [None, "state", 5, [1, 2], ("board",)])
def test_from_dict_of_a_non_dict_is_a_value_error(bad: Any) -> None:
    with pytest.raises(ValueError, match="a state must be a dict"):
        ce.GameState.from_dict(bad)


# --- regressions found by the fuzzing round ------------------------------------------------
_TWELVE_RED = """
r1 b1 r1 .  r2 b1 r2
.
r1 b2 r2 .  r3 b2 r3
.
r3 b3 r4 .  r4 b3 r4
"""  # all 12 red satellites connected (R3.1) in six 3-colonies; 18 connected in all (< 23)


def test_twelve_connected_while_nobody_is_finished_is_rejected() -> None:
    """R6.3: a colour with all 12 connected in a game that is not over is finished; `finished:
    null` contradicts it (a pass from such a state used to give a state whose round trip was
    over by `grace`)."""
    base = {"board": rows_from_diagram(_TWELVE_RED), "to_move": "blue", "unlocked": True, "finished": None,
            "grace_left": 0, "ply": 10, "passes": 0, "max_plies": 400}  # fmt: skip
    with pytest.raises(ValueError, match=r"field 'finished' is null but red has all 12"):
        ce.GameState.from_dict(base)
    finished = ce.GameState.from_dict({**base, "finished": "red", "grace_left": 3})
    _round_trips(ce.apply_action(finished, ce.PASS_ACTION))
    over = ce.GameState.from_dict({**base, "ply": 400})  # already over: nothing more happens, so it is fine
    assert over.is_over and over.end_reason == "ply_limit"


@pytest.mark.parametrize("field", ["to_move", "finished"])
@pytest.mark.parametrize("value", [["red"], {"red": 1}, 3, 1.5])
def test_unhashable_or_wrong_type_colours_name_the_field(field: str, value: Any) -> None:
    d = ce.new_game(seed=0).to_dict()
    with pytest.raises(ValueError, match=f"field '{field}'"):
        ce.GameState.from_dict({**d, field: value})


@pytest.mark.parametrize("field", ["max_plies", "ply", "passes", "grace_left"])
@pytest.mark.parametrize("value", [2**31, 2**63, 2**100, -(2**63), np.uint64(2**63)])
def test_huge_ints_are_range_errors_naming_the_field(field: str, value: Any) -> None:
    d = ce.new_game(seed=0).to_dict()
    with pytest.raises(ValueError, match=f"field '{field}' must be in"):
        ce.GameState.from_dict({**d, field: value})


def test_the_largest_int32_ply_limit_works() -> None:
    d = {**ce.new_game(seed=0).to_dict(), "max_plies": MAX_PLIES_LIMIT, "ply": MAX_PLIES_LIMIT - 1}
    s = ce.GameState.from_dict(d)
    after = ce.apply_action(s, int(ce.legal_actions(s)[0]))
    assert after.is_over and after.end_reason == "ply_limit" and after.ply == MAX_PLIES_LIMIT
    _round_trips(after)


@pytest.mark.parametrize("value", [2**31, 2**63, 2**100, 0, -1, True, 1.0, "400", None])
def test_new_game_max_plies_out_of_range_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match=r"max_plies must be an int in 1\.\.2147483647"):
        ce.new_game(seed=0, max_plies=value)
    ce.new_game(seed=0, max_plies=MAX_PLIES_LIMIT)  # the largest allowed


@pytest.mark.parametrize("action", [2**31, 2**63, 2**64, -(2**63) - 1, -1, 16001, np.uint64(2**63)])
def test_is_legal_answers_false_for_any_out_of_range_id(action: Any) -> None:
    s = ce.new_game(seed=0)
    assert ce.is_legal(s, action) is False
    with pytest.raises(ce.IllegalActionError, match="outside the action space"):
        ce.apply_action(s, action)


@pytest.mark.parametrize("maker", ["raw_env", "env", "vector", "gymnasium"])
def test_every_env_refuses_a_ply_limit_beyond_int32_with_a_value_error(maker: str) -> None:
    """Issue 13 item 6: `max_plies=2**31` was an OverflowError in each of these."""
    from colony_env.vector import ColonyVectorEnv
    from colony_env.wrappers import ColonySingleAgentEnv

    makers = {
        "raw_env": lambda: ce.raw_env(max_plies=2**31).reset(seed=0),
        "env": lambda: ce.env(max_plies=2**31).reset(seed=0),
        "vector": lambda: ColonyVectorEnv(2, seed=0, max_plies=2**31),
        "gymnasium": lambda: ColonySingleAgentEnv(max_plies=2**31).reset(seed=0),
    }
    with pytest.raises(ValueError, match="max_plies"):
        makers[maker]()
