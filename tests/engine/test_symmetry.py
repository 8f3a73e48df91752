"""Board symmetries and the canonical view, checked against the engine (R1.4, R2.3, R4, R7, R8)."""

from __future__ import annotations

import numpy as np
import pytest

import colony_env as ce
from colony_env import symmetry as sy
from colony_env.constants import BLUE_START_CELLS, N_ACTIONS, PASS_ACTION, RED_START_CELLS
from colony_env.notation import encode_displacement, encode_move
from colony_env.observation import encode_observation


def _sample_states(n_games: int = 6, every: int = 7, seed: int = 0) -> list[ce.GameState]:
    """Positions from random games: the opening, the unlocked middle game, grace phases, ends."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_games):
        s = ce.new_game(seed + g)
        k = 0
        while True:
            if k % every == 0 or s.is_over or s.finished is not None:
                out.append(s)
            if s.is_over:
                break
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
            k += 1
    return out


STATES = _sample_states()


def test_maps_are_permutations_with_inverses() -> None:
    for sym in range(sy.N_SYMMETRIES):
        assert sorted(sy.CELL_MAP[sym]) == list(range(100))
        assert sorted(sy.ACTION_MAP[sym]) == list(range(N_ACTIONS))
        assert sy.ACTION_MAP[sym, PASS_ACTION] == PASS_ACTION
        inv = sy.INVERSE[sym]
        np.testing.assert_array_equal(sy.ACTION_MAP[inv][sy.ACTION_MAP[sym]], np.arange(N_ACTIONS))
    assert sy.INVERSE[sy.ROT90] == sy.ROT270 and sy.INVERSE[sy.TRANSPOSE] == sy.TRANSPOSE


def test_colour_preserving_maps_keep_each_colours_edges() -> None:
    """R2.3: red's start cells map to red's, blue's to blue's, or exchange for the other four."""
    red = {10 * r + c for r, c in RED_START_CELLS}
    blue = {10 * r + c for r, c in BLUE_START_CELLS}
    for sym in range(sy.N_SYMMETRIES):
        image = {int(sy.CELL_MAP[sym, i]) for i in red}
        assert image == (blue if sy.swaps_colours(sym) else red)


def test_r10_displacement_under_the_transpose() -> None:
    """R10: r4 (6,2) East, push SE 1 = 11174; transposed: from (2,6) South, push SE (its own image)."""
    assert sy.transform_action(11174, sy.TRANSPOSE) == encode_displacement(26, 4, 3, 1)
    assert sy.transform_action(encode_move(0, 2, 3), sy.ROT90) == encode_move(9, 4, 3)  # a10 E3 -> j10 S3
    assert sy.transform_action(encode_move(0, 2, 3), sy.FLIP_NS) == encode_move(90, 2, 3)


@pytest.mark.parametrize("sym", range(sy.N_SYMMETRIES))
def test_transformed_legal_set_is_the_legal_set_of_the_transformed_position(sym: int) -> None:
    """R4/R5 are symmetric: the image of the legal set is the legal set of the image position
    (colours exchanged for the maps that exchange their edges); masks agree; the end and the
    winner (R6.2, R7) map too."""
    for s in STATES:
        t = sy.transform_state(s, sym)
        np.testing.assert_array_equal(np.sort(sy.transform_action(ce.legal_actions(s), sym)), ce.legal_actions(t))
        np.testing.assert_array_equal(sy.transform_mask(ce.legal_action_mask(s), sym), ce.legal_action_mask(t))
        assert t.end_reason == s.end_reason
        if s.is_over and s.winner is not None:
            assert t.winner == (s.winner.opponent if sy.swaps_colours(sym) else s.winner)
        for colour in ce.Colour:
            seen_by = colour.opponent if sy.swaps_colours(sym) else colour
            np.testing.assert_array_equal(
                sy.transform_planes(encode_observation(s, colour, canonical=False), sym),
                encode_observation(t, seen_by, canonical=False),
            )


def test_applying_a_transformed_action_commutes_with_the_map() -> None:
    rng = np.random.default_rng(1)
    for s in STATES[:40]:
        if s.is_over:
            continue
        a = int(rng.choice(ce.legal_actions(s)))
        for sym in range(sy.N_SYMMETRIES):
            after = ce.apply_action(sy.transform_state(s, sym), int(sy.transform_action(a, sym)))
            assert after == sy.transform_state(ce.apply_action(s, a), sym)


def test_canonical_view_makes_both_colours_look_the_same() -> None:
    """The mover always sees its edges North/South: blue's view of s equals red's view of the
    colour-swapped transpose of s, masks and action ids included."""
    for s in STATES:
        mover = s.to_move
        canonical = encode_observation(s, mover, canonical=True)
        assert canonical[18, 0].all() and canonical[18, 9].all()  # own edges: rows 0 and 9
        t = sy.transform_state(s, sy.TRANSPOSE)
        np.testing.assert_array_equal(canonical, encode_observation(t, mover.opponent, canonical=True))
        mask = sy.canonical_mask(ce.legal_action_mask(s), mover)
        np.testing.assert_array_equal(mask, sy.canonical_mask(ce.legal_action_mask(t), mover.opponent))
        ids = np.flatnonzero(mask)
        board = sy.canonical_action_to_board(ids, mover)
        np.testing.assert_array_equal(np.sort(board), ce.legal_actions(s))
        np.testing.assert_array_equal(sy.board_action_to_canonical(board, mover), ids)


def test_vectorised_colour_argument() -> None:
    ids = np.array([0, 11174, PASS_ACTION])
    colours = np.array([0, 1, 1])
    out = sy.board_action_to_canonical(ids, colours)
    assert out.tolist() == [0, int(sy.ACTION_MAP[sy.TRANSPOSE, 11174]), PASS_ACTION]
    np.testing.assert_array_equal(sy.canonical_action_to_board(out, colours), ids)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="symmetry"):
        sy.transform_action(0, 8)
    with pytest.raises(ValueError, match="action ids"):
        sy.board_action_to_canonical(N_ACTIONS, ce.RED)
    with pytest.raises(ValueError, match="planes"):
        sy.transform_planes(np.zeros((3, 9, 10)), 1)
