"""Property tests over random playouts (hypothesis picks the seeds): invariants in every
reached state (R3.2, R3.5, R5.1, R5.3, R9.1), the legal set against single-action
checks (R8.4), and illegal actions leaving the state untouched."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colony_env as ce
from colony_env import _core
from colony_env.constants import MAX_COMPONENT, N_ACTIONS
from helpers import random_game

SEEDS = st.integers(min_value=0, max_value=2**31 - 1)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_invariants(s: ce.GameState) -> None:
    b = s.board
    conn = ce.connected_mask(s)
    same = b[:, :-1] * b[:, 1:] > 0
    assert not (same & conn[:, :-1] & conn[:, 1:]).any(), "R5.1 horizontal"
    same = b[:-1, :] * b[1:, :] > 0
    assert not (same & conn[:-1, :] & conn[1:, :]).any(), "R5.1 vertical"
    label, size, count = _core.components(s.board.ravel().astype(np.int32))
    assert count == 0 or size[:count].max() <= MAX_COMPONENT, "R5.3"
    for sign in (1, -1):
        vals = b[b * sign > 0] * sign
        assert vals.size <= 12 and all(np.sum(vals == v) <= 3 for v in range(1, 5)), "R9.1 counts"
    assert ce.GameState.from_dict(s.to_dict()) == s  # every reached state is a valid R9 state


@FAST
@given(seed=SEEDS)
def test_invariants_hold_in_every_reached_state(seed):
    states = random_game(seed)
    for prev, s in zip(states, states[1:]):
        _check_invariants(s)
        # R3.2: connected satellites never move; R3.5: the unlock flag is never cleared
        pb, sb = prev.board, s.board
        stay = ce.connected_mask(prev)
        assert np.array_equal(pb[stay], sb[stay])
        assert s.unlocked or not prev.unlocked
        assert s.ply == prev.ply + 1
    last = states[-1]
    assert last.is_over and last.end_reason in ("connected23", "grace", "passes", "ply_limit")
    assert not ce.legal_action_mask(last).any()


@FAST
@given(seed=SEEDS, pick=st.randoms(use_true_random=False))
def test_mask_agrees_with_single_action_checks(seed, pick):
    """R8.4: the generated legal set equals {a : the per-action check accepts a} over all 16001 ids."""
    states = random_game(seed)
    for s in pick.sample(states, 3):
        mask = ce.legal_action_mask(s)
        codes = np.array([_core.action_code(s._a, a) for a in range(N_ACTIONS)])
        assert np.array_equal(mask, codes == 0)
        ids = ce.legal_actions(s)
        assert np.array_equal(ids, np.flatnonzero(mask)) and np.all(np.diff(ids) > 0)
        assert (len(ids) == 0) == s.is_over


@FAST
@given(seed=SEEDS, pick=st.randoms(use_true_random=False))
def test_illegal_actions_raise_and_leave_the_state_untouched(seed, pick):
    states = random_game(seed)
    for s in pick.sample(states, 5):
        before = s.to_array()
        mask = ce.legal_action_mask(s)
        illegal = np.flatnonzero(~mask)
        for a in [int(x) for x in pick.sample(list(illegal), 10)] + [-1, N_ACTIONS, 10**30]:
            try:
                ce.apply_action(s, a)
            except ce.IllegalActionError as err:
                assert "illegal action" in str(err) or "outside" in str(err)
            else:
                raise AssertionError(f"illegal action {a} was accepted")
            assert np.array_equal(s.to_array(), before)
        legal = ce.legal_actions(s)
        if len(legal):
            ce.apply_action(s, int(legal[0]))
            assert np.array_equal(s.to_array(), before), "apply_action mutated its input"


def test_non_integer_actions_are_rejected():
    s = ce.new_game(0)
    for bad in (1.5, "72", None):
        try:
            ce.apply_action(s, bad)
        except ce.IllegalActionError as err:
            assert "integer id" in str(err)
        else:
            raise AssertionError(bad)
    assert ce.apply_action(s, np.int64(72)) == ce.apply_action(s, 72)


@FAST
@given(seed=SEEDS)
def test_compiled_playout_matches_the_rules(seed):
    """`random_playout` (used by MCTS) ends in a valid final state reachable under R6."""
    end = ce.GameState.from_array(_core.random_playout(ce.new_game(seed)._a, seed))
    assert end.is_over
    _check_invariants(end)


def _rows(table: np.ndarray) -> list[tuple[int, ...]]:
    """A colony table's rows without the label column, sorted (labels and order may differ)."""
    return sorted(tuple(int(v) for v in row[1:]) for row in table)


def test_colony_table_after_join_equals_a_new_component_search():
    """R3.3-R3.4, R7.1: the table from the old board's component sums equals `colony_table` of the new
    board, for every legal move and displacement of every state of a few random games."""
    joined_colonies = displacements = 0
    for seed in range(6):
        for s in random_game(seed):
            if s.is_over:
                continue
            board = s._a[: s.board.size]
            label, size, red, blue, count = _core.component_sums(board)
            for action in ce.legal_actions(s):
                if action == ce.PASS_ACTION:
                    continue
                kind, start, d, k, _ = _core.decode(int(action))
                land = _core.RAY[start, d, (k if kind == 0 else abs(board[start])) - 1]
                got = _core.colony_table_after_join(board, label, size, red, blue, count, land, board[start])
                want = _core.colony_table(_core.apply_unchecked(s._a, int(action))[: board.size])
                assert _rows(got) == _rows(want), (seed, s.ply, int(action))
                displacements += kind == 1
                joined_colonies += len(want) > len(_core.colony_table(board))
    assert displacements > 50 and joined_colonies > 100  # both kinds of join were exercised
