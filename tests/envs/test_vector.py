"""The batched vector env against the engine, game by game (R4, R6, R7.4, R8.4)."""

from __future__ import annotations

import numpy as np
import pytest

import colony_env as ce
from colony_env import symmetry
from colony_env.constants import END_REASONS, I_PLY, N_ACTIONS
from colony_env.observation import OBS_CHANNELS, encode_observation
from colony_env.vector import ColonyVectorEnv


def _game(seed: int, slot: int, index: int, max_plies: int = 400) -> ce.GameState:
    """Game `index` of `slot`: slots draw their setups in turn from `default_rng((seed, slot))`."""
    rng = np.random.default_rng((seed, slot))
    for _ in range(index):
        ce.new_game(rng, max_plies)
    return ce.new_game(rng, max_plies)


def _check_view(venv: ColonyVectorEnv, vo, states: list[ce.GameState]) -> None:
    """Obs, mask and to_move of every game equal the engine's, mapped to the canonical frame."""
    for i, s in enumerate(states):
        assert venv.state(i) == s
        assert vo.to_move[i] == int(s.to_move)
        expected = symmetry.canonical_mask(ce.legal_action_mask(s), s.to_move)
        np.testing.assert_array_equal(vo.mask[i], expected)
        n = vo.legal_counts[i]
        np.testing.assert_array_equal(np.sort(vo.legal_ids[i, :n]), np.flatnonzero(expected))
        assert not vo.legal_ids[i, n:].any()
        np.testing.assert_array_equal(vo.obs[i], encode_observation(s, s.to_move, canonical=True))


def test_shapes_and_dtypes() -> None:
    venv = ColonyVectorEnv(3, seed=1)
    vo = venv.reset()
    assert venv.observation_shape == (OBS_CHANNELS, 10, 10)
    assert venv.num_actions == N_ACTIONS
    assert vo.obs.shape == (3, OBS_CHANNELS, 10, 10) and vo.obs.dtype == np.float32
    assert vo.mask.shape == (3, N_ACTIONS) and vo.mask.dtype == np.bool_
    assert vo.to_move.dtype == np.int8
    assert venv.states.shape == (3, 108) and venv.states.dtype == np.int32
    with pytest.raises(ValueError):
        venv.states[0, 0] = 1  # a read-only view
    vo, rewards, dones, reasons = venv.step(venv.random_actions(np.random.default_rng(0)))
    assert rewards.shape == (3, 2) and rewards.dtype == np.float32
    assert dones.shape == (3,) and dones.dtype == np.bool_
    assert reasons.shape == (3,) and reasons.dtype == np.int8


def test_lockstep_with_engine_including_auto_reset() -> None:
    """Every step equals the engine's `apply_action` on the board-frame action; ended games
    report the engine's rewards and end reason, then restart from the next seed (R6.2, R7.4)."""
    seed, n, max_plies = 7, 6, 40
    venv = ColonyVectorEnv(n, seed=seed, max_plies=max_plies)
    vo = venv.reset(seed=seed)
    games = [1] * n
    states = [_game(seed, i, 0, max_plies) for i in range(n)]
    _check_view(venv, vo, states)
    rng = np.random.default_rng(3)
    ended = set()
    for _ in range(3 * max_plies):
        actions = venv.random_actions(rng)
        vo, rewards, dones, reasons = venv.step(actions)
        for i in range(n):
            board_action = int(symmetry.canonical_action_to_board(actions[i], states[i].to_move))
            after = ce.apply_action(states[i], board_action)
            assert dones[i] == after.is_over
            np.testing.assert_array_equal(rewards[i], after.rewards())
            if after.is_over:
                assert END_REASONS[reasons[i] - 1] == after.end_reason
                ended.add(after.end_reason)
                after = _game(seed, i, games[i], max_plies)
                games[i] += 1
            else:
                assert reasons[i] == 0
            states[i] = after
        _check_view(venv, vo, states)
    assert "ply_limit" in ended  # max_plies 40 < any random game here
    np.testing.assert_array_equal(venv.games_started, games)


def test_same_seed_same_games_and_new_seed_differs() -> None:
    a, b, c = ColonyVectorEnv(4, seed=11), ColonyVectorEnv(4, seed=11), ColonyVectorEnv(4, seed=12)
    np.testing.assert_array_equal(a.states, b.states)
    assert not np.array_equal(a.states, c.states)
    ra, rb = np.random.default_rng(0), np.random.default_rng(0)
    for _ in range(30):
        a.step(a.random_actions(ra))
        b.step(b.random_actions(rb))
    np.testing.assert_array_equal(a.states, b.states)
    a.reset(seed=11)
    c.reset(seed=11)
    np.testing.assert_array_equal(a.states, c.states)


def test_reset_without_seed_continues_the_sequence() -> None:
    venv = ColonyVectorEnv(2, seed=5)
    venv.reset()
    assert venv.state(0) == _game(5, 0, 1)
    assert venv.state(1) == _game(5, 1, 1)


def test_grace_player_moves_again() -> None:
    """R6.3: `to_move` may stay the same colour for several steps; the env follows the engine."""
    venv = ColonyVectorEnv(16, seed=0)
    rng = np.random.default_rng(0)
    prev = venv.states[:, 100].copy()
    repeats = 0
    for _ in range(300):
        vo, _, dones, _ = venv.step(venv.random_actions(rng))
        repeats += int(np.sum((vo.to_move == prev) & ~dones))
        prev = vo.to_move.copy()
    assert repeats > 0


def test_illegal_action_raises_and_leaves_every_game_untouched() -> None:
    venv = ColonyVectorEnv(3, seed=2)
    vo = venv.reset()
    before = venv.states.copy()
    actions = venv.random_actions(np.random.default_rng(0))
    illegal = int(np.flatnonzero(~vo.mask[1])[0])
    actions[1] = illegal
    with pytest.raises(ce.IllegalActionError, match="game 1"):
        venv.step(actions)
    np.testing.assert_array_equal(venv.states, before)
    actions[1] = N_ACTIONS  # out of range
    with pytest.raises(ce.IllegalActionError, match="outside the action space"):
        venv.step(actions)
    with pytest.raises(ce.IllegalActionError, match="shape"):
        venv.step(actions[:2])
    with pytest.raises(ce.IllegalActionError, match="int array"):
        venv.step(actions.astype(np.float32))
    np.testing.assert_array_equal(venv.states, before)
    venv.step(venv.random_actions(np.random.default_rng(0)))  # still usable


def test_returned_arrays_stay_valid_when_kept() -> None:
    """Buffers are recycled only once the caller dropped them."""
    venv = ColonyVectorEnv(4, seed=3)
    rng = np.random.default_rng(1)
    kept = [venv.reset()]
    copies = [(kept[0].obs.copy(), kept[0].mask.copy())]
    for _ in range(6):
        vo = venv.step(venv.random_actions(rng))[0]
        kept.append(vo)
        copies.append((vo.obs.copy(), vo.mask.copy()))
    for vo, (obs, mask) in zip(kept, copies):
        np.testing.assert_array_equal(vo.obs, obs)
        np.testing.assert_array_equal(vo.mask, mask)
    view = kept[-1].mask[:2]  # a view keeps its base alive and unrecycled
    expected = view.copy()
    del kept, vo
    for _ in range(6):
        venv.step(venv.random_actions(rng))
    np.testing.assert_array_equal(view, expected)


def test_random_actions_are_legal_and_cover_the_set() -> None:
    venv = ColonyVectorEnv(2, seed=4)
    vo = venv.reset()
    rng = np.random.default_rng(0)
    legal = set(np.flatnonzero(vo.mask[0]).tolist())
    seen = {int(venv.random_actions(rng)[0]) for _ in range(20 * len(legal))}
    assert seen == legal


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_constructor_arguments(bad) -> None:
    with pytest.raises(ValueError, match="num_envs"):
        ColonyVectorEnv(bad)
    with pytest.raises(ValueError, match="max_plies"):
        ColonyVectorEnv(1, max_plies=bad)


def test_ply_counts_in_new_games_start_at_zero() -> None:
    venv = ColonyVectorEnv(3, seed=0, max_plies=2)
    rng = np.random.default_rng(0)
    venv.step(venv.random_actions(rng))
    _, _, dones, reasons = venv.step(venv.random_actions(rng))
    assert dones.all() and (reasons == 1 + END_REASONS.index("ply_limit")).all()
    assert (venv.states[:, I_PLY] == 0).all()


def test_recycled_masks_are_exact_and_read_only() -> None:
    """Buffers are recycled once released and only the bits set last time are cleared:
    every recycled mask still equals the engine's legal set (R8.4), step after step."""
    venv = ColonyVectorEnv(4, seed=5, max_plies=30)
    vo = venv.reset()
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):  # several games per slot (max_plies 30), dropping each VecObs
        vo, _r, _d, _reasons = venv.step(venv.random_actions(rng))
        seen.add(id(vo.mask.base))
        _check_view(venv, vo, [venv.state(i) for i in range(4)])
        assert vo.mask.sum() == vo.legal_counts.sum()
    assert len(seen) <= 3  # the pool was recycled, not reallocated
    with pytest.raises(ValueError):
        vo.mask[0, 0] = True
