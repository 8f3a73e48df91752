"""Property checks of the rules the invariant tests did not cover (issue 15): R4.2.2, R4.2.4
and R4.2.5 on every legal displacement, R5.2 after every connecting action, and "an edge
empties -> unlocked from then on" (R3.5). Checked through the public API on the stored
corpus of rare positions (tests/data/differential_corpus.json) and on biased-deep games
under hypothesis (displacements are rare in uniform play, tests/scripts/differential.py)."""

from __future__ import annotations

from itertools import pairwise

import differential as diff
import reference_engine as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colony_env as ce

BUDGET = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EDGE_LINES = ((0, slice(None)), (-1, slice(None)), (slice(None), 0), (slice(None), -1))  # R1.3


def _rc(i: int) -> tuple[int, int]:
    return divmod(i, ref.SIZE)


def _colony_sets(s: ce.GameState) -> list[set[tuple[int, int]]]:
    return [set(c.cells) for c in ce.colonies(s)]


def _check_displacement(s: ce.GameState, a: int) -> None:
    _kind, (src, d, pd, pk) = ref.decode(a)
    me = 1 if s.to_move == ce.RED else -1
    board, conn = s.board, ce.connected_mask(s)
    v = abs(int(board[_rc(src)]))
    x = ref.step(src, d, v)
    y = ref.step(x, pd, pk)
    # R4.2.2: the landing cell is king-adjacent to a *connected* satellite of the mover
    assert any(board[_rc(n)] * me > 0 and conn[_rc(n)] for n in ref.king_neighbours(x)), "R4.2.2"
    n = ce.apply_action(s, a)
    nconn = ce.connected_mask(n)
    # R4.2.4: the pushed satellite stays unconnected; no satellite of the mover touches Y
    assert n.board[_rc(y)] == board[_rc(x)] and not nconn[_rc(y)], "R4.2.4"
    assert not any(n.board[_rc(m)] * me > 0 for m in ref.orthogonal_neighbours(y)), "R4.2.4"
    # R4.2.5: the mover is connected on X, in a component holding a satellite of an old colony
    assert nconn[_rc(x)], "R4.2.5 connected"
    before = set().union(*_colony_sets(s))
    (grown,) = [c for c in _colony_sets(n) if _rc(x) in c]
    assert grown & before, "R4.2.5 extends a colony"


def _check_transition(s: ce.GameState, n: ce.GameState) -> None:
    # R5.2: connected satellites never move (R3.2), so an old colony keeps its cells; no new
    # component may hold cells of two old colonies.
    old = _colony_sets(s)
    for comp in _colony_sets(n):
        assert sum(1 for c in old if c & comp) <= 1, "R5.2"
    # R3.5: an empty edge means unlocked, and unlocked stays unlocked
    if any(not n.board[line].any() for line in EDGE_LINES):
        assert n.unlocked, "R3.5: an edge is empty but connections are locked"
    assert n.unlocked or not s.unlocked, "R3.5: the flag was cleared"


def check_properties(s: ce.GameState) -> int:
    """Check every rare legal action of `s` (displacements, connection moves, moves off an
    edge line, pass); return how many displacements were checked."""
    if s.is_over:
        return 0
    r = ref.from_dict(s.to_dict())
    checked = 0
    for a in ce.legal_actions(s).tolist():
        kind = ref.classify(r, a)
        if kind == "displacement":
            _check_displacement(s, a)
            checked += 1
        if kind != "normal" or diff._edge_leaving(a):
            _check_transition(s, ce.apply_action(s, a))
    return checked


def test_properties_on_the_rare_positions_corpus():
    states = diff.corpus_states()
    displacements = sum(check_properties(s) for s in states)
    assert displacements >= 60  # the corpus holds 60 positions with a legal displacement


@BUDGET
@given(seed=st.integers(min_value=0, max_value=2**31 - 1))
def test_properties_in_biased_deep_games(seed):
    states = list(diff.game_positions(seed, "biased"))
    for prev, s in pairwise(states):
        _check_transition(prev, s)  # the move actually played
    for s in states[:: max(1, len(states) // 25)]:
        check_properties(s)


def test_an_edge_emptied_mid_game_unlocks_for_good():
    """Follow games until an edge empties (R3.5): from that state on the flag stays set,
    even after the edge fills again."""
    for seed in range(40):
        states = list(diff.game_positions(seed, "biased"))
        first = next((i for i, s in enumerate(states) if any(not s.board[line].any() for line in EDGE_LINES)), None)
        if first is not None and first > 0 and not states[0].unlocked:
            assert not states[first - 1].unlocked and all(s.unlocked for s in states[first:])
            return
    raise AssertionError("no game of 40 emptied an edge after a locked start")
