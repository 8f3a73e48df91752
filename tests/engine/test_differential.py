"""The compiled engine against the plain-Python reference engine (`reference_engine.py`),
position by position: legal set, per-action check, next state, end reason, winner.

A bounded CI budget (a few seconds); `python tests/scripts/differential.py --positions 100000`
is the slow run (docs/mutation_testing.md).
"""

from __future__ import annotations

import differential as diff
import pytest
import reference_engine as ref
from helpers import pos
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colony_env as ce

SEEDS = st.integers(min_value=0, max_value=2**31 - 1)
# Each example compares tens of positions at ~5 ms each; five examples per source keep
# the whole file at a few seconds.
BUDGET = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=50, deadline=None)
@given(seed=SEEDS)
def test_r2_setup_agrees(seed):
    assert ref.new_game(seed).to_dict() == ce.new_game(seed).to_dict()


@BUDGET
@given(seed=SEEDS, skip=st.integers(min_value=0, max_value=120))
def test_uniform_games_agree(seed, skip):
    stats = diff.Stats()
    diff.play_game(seed, "uniform", 15, stats, skip=skip)
    assert stats.positions >= 1


@BUDGET
@given(seed=SEEDS, skip=st.integers(min_value=0, max_value=60))
def test_biased_deep_games_agree(seed, skip):
    """Games steered towards displacements, connection moves and finishing (R4.2, R6.3)."""
    stats = diff.Stats()
    diff.play_game(seed, "biased", 25, stats, skip=skip)
    assert stats.positions >= 1


@BUDGET
@given(seed=SEEDS)
def test_random_boards_agree(seed):
    stats = diff.Stats()
    diff.random_boards(seed, 15, stats)
    assert stats.positions == 15


R10_BOARD = """
.
.
.
.
.  .  .  .  .  .  r1 .  .  .
.  .  .  .  .  r2 b3 .  .  .
.  .  r4 .  .  .  b1 .  .  .
"""


def test_r10_example_agrees_and_has_the_documented_displacement():
    import numpy as np

    s = pos(R10_BOARD)
    legal = diff.check_position(s, np.random.default_rng(0), diff.Stats())
    assert 11174 in legal and ref.is_legal(ref.from_dict(s.to_dict()), 11174)


@pytest.mark.parametrize("broken", ["winner", "legal_actions", "apply"])
def test_the_comparison_has_teeth(monkeypatch, broken):
    """A wrong reference rule is caught: the harness compares what it claims to."""
    import numpy as np

    s = pos(R10_BOARD)
    if broken == "winner":  # the only colony is 3 v 3, controlled by nobody: a draw
        monkeypatch.setattr(ref, "winner", lambda board: "red")
    elif broken == "legal_actions":
        real = ref.legal_actions
        monkeypatch.setattr(ref, "legal_actions", lambda st_: [a for a in real(st_) if a != 11174])
    else:
        real_apply = ref.apply
        monkeypatch.setattr(
            ref, "apply", lambda st_, a: real_apply(st_, a).__class__(**{**real_apply(st_, a).__dict__, "ply": 99})
        )
    with pytest.raises(diff.Mismatch):
        diff.check_position(s, np.random.default_rng(0), diff.Stats())


def test_rare_positions_corpus_agrees():
    """The stored corpus (`python tests/scripts/differential.py --write-corpus`): positions with a legal
    displacement, in grace, one action from finishing or ending, crowded, random boards."""
    import numpy as np

    stats = diff.Stats()
    rng = np.random.default_rng(0)
    for s in diff.corpus_states():
        diff.check_position(s, rng, stats)
    assert stats.positions == len(diff.corpus_states()) and stats.with_displacement >= 60 and stats.in_grace >= 20


def test_rare_positions_moved_into_the_corners_agree():
    """Each corpus displacement's neighbourhood, moved into the four corners (bounds checks at
    cells 0, 9, 90, 99 and the edge lines, R1.3)."""
    import numpy as np

    stats = diff.Stats()
    rng = np.random.default_rng(0)
    for s in diff.corpus_states():
        for v in diff.corner_variants(s):
            diff.check_position(v, rng, stats)
    assert stats.positions >= 200 and stats.with_displacement >= 100
