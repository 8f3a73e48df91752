"""The greedy heuristic's scores against a plain reference that tries every reply.

`greedy_scores` (compiled) only plays the opponent's replies that can change colonies or end
the game, and before the unlock (R3.5) only the ids past the moves; this reference plays every
legal reply, so it checks that what is skipped could never change a score.
"""

from __future__ import annotations

import numpy as np
import pytest

import colony_env as ce
from colony_env import _core
from colony_env.agents._search import _margins, _quick, greedy_scores
from colony_env.constants import I_PLY, I_REASON, I_TO_MOVE, I_UNLOCKED, N_CELLS


def _reference_scores(a: np.ndarray, actions: np.ndarray) -> np.ndarray:
    p = int(a[I_TO_MOVE])
    out = []
    for x in actions:
        after = _core.apply_unchecked(a, int(x))
        q = _quick(after, p)
        if after[I_REASON] != 0:
            out.append(q)
            continue
        threat = 0.0
        if after[I_TO_MOVE] != p:
            for reply in _core.legal_ids(after):
                threat = max(threat, q - _quick(_core.apply_unchecked(after, int(reply)), p))
        out.append(q + _margins(_core.colony_table(after[:N_CELLS]), p) - threat)
    return np.array(out)


def _positions(max_plies: int, plies: tuple[int, ...], seeds: range) -> list[ce.GameState]:
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        s = ce.new_game(seed, max_plies=max_plies)
        for ply in range(max(plies) + 1):
            if s.is_over:
                break
            if ply in plies:
                out.append(s)
            s = ce.apply_action(s, int(rng.choice(ce.legal_actions(s))))
    return out


@pytest.mark.parametrize("max_plies, plies", [(300, (0, 20, 60, 110, 160)), (41, (0, 39, 40)), (12, (0, 10, 11))])
def test_greedy_scores_equal_every_reply_reference(max_plies: int, plies: tuple[int, ...]) -> None:
    states = _positions(max_plies, plies, range(6))
    unlocked = [bool(s._a[I_UNLOCKED]) for s in states]
    assert not all(unlocked)  # the pre-unlock shortcut is exercised ...
    assert max_plies == 12 or any(unlocked)  # ... and the full reply scan
    if max_plies < 300:  # replies that reach the ply limit (R6.2.4), before and after the unlock
        assert any(s._a[I_PLY] + 2 >= max_plies for s in states)
    for s in states:
        legal = ce.legal_actions(s)
        np.testing.assert_array_equal(greedy_scores(s._a, legal), _reference_scores(s._a, legal))
