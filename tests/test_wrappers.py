"""The Gymnasium single-agent wrapper: Gymnasium's checker, frames, opponent turns, rewards (R6, R7.4)."""

from __future__ import annotations

import gymnasium
import matplotlib
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import colony_env as ce
from colony_env import symmetry
from colony_env.agents import RandomAgent
from colony_env.observation import encode_observation
from colony_env.wrappers import GYMNASIUM_ID, ColonySingleAgentEnv

matplotlib.use("Agg")
pytestmark = pytest.mark.filterwarnings("ignore:.*the episode ends with reward:UserWarning")  # checker's random actions


def _random_masked(env: ColonySingleAgentEnv, rng: np.random.Generator) -> int:
    ids = np.flatnonzero(env.action_masks())
    return int(ids[rng.integers(len(ids))])


@pytest.mark.parametrize("colour", ["red", "blue", "random"])
def test_gymnasium_env_checker(colour: str) -> None:
    check_env(ColonySingleAgentEnv(learner_colour=colour), skip_render_check=True)


def test_gymnasium_make_and_render_modes() -> None:
    env = gymnasium.make(GYMNASIUM_ID, render_mode="rgb_array", max_plies=30)
    check_env(env.unwrapped)  # with a spec the checker also tries the other render modes
    env.reset(seed=0)
    picture = env.render()
    assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3


@pytest.mark.parametrize("colour", [ce.RED, ce.BLUE])
def test_canonical_frame_and_engine_lockstep(colour: ce.Colour) -> None:
    """Observation and mask are the learner's canonical view; its action is mapped back to the
    board frame; the opponent then moves until the learner is to move again (R6.3, R6.4)."""
    seen_agent_moves = []

    def opponent(state: ce.GameState, rng: np.random.Generator) -> int:
        seen_agent_moves.append(state)
        return RandomAgent().act(state, rng)

    env = ColonySingleAgentEnv(opponent=opponent, learner_colour=str(colour))
    obs, info = env.reset(seed=4)
    assert info["learner_colour"] == str(colour)
    rng = np.random.default_rng(0)
    for _ in range(40):
        state = env.state
        assert state.to_move == colour
        np.testing.assert_array_equal(obs, encode_observation(state, colour, canonical=True))
        mask = env.action_masks()
        np.testing.assert_array_equal(mask, symmetry.canonical_mask(ce.legal_action_mask(state), colour))
        action = _random_masked(env, rng)
        after_learner = ce.apply_action(state, int(symmetry.canonical_action_to_board(action, colour)))
        seen_agent_moves.clear()
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
        # the opponent was asked exactly at the positions where it was to move
        assert all(s.to_move != colour for s in seen_agent_moves)
        if seen_agent_moves:
            assert seen_agent_moves[0] == after_learner
        else:  # the learner moves again (grace, R6.3)
            assert env.state == after_learner


def test_board_frame_option() -> None:
    env = ColonySingleAgentEnv(learner_colour="blue", canonical=False)
    obs, _ = env.reset(seed=2)
    np.testing.assert_array_equal(obs, encode_observation(env.state, ce.BLUE, canonical=False))
    np.testing.assert_array_equal(env.action_masks(), ce.legal_action_mask(env.state))


def test_rewards_only_at_the_end_and_from_the_learners_view() -> None:
    for seed in range(6):
        env = ColonySingleAgentEnv(learner_colour="random")
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            _, reward, terminated, truncated, info = env.step(_random_masked(env, rng))
            state = env.state
            if terminated or truncated:
                break
            assert reward == 0.0  # R7.4
        assert reward == state.rewards()[ce.Colour[info["learner_colour"].upper()]]
        assert info["end_reason"] == state.end_reason and truncated == (state.end_reason == "ply_limit")
        assert not env.action_masks().any()
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)


def test_ply_limit_truncates() -> None:
    env = ColonySingleAgentEnv(learner_colour="red", max_plies=4)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    env.step(_random_masked(env, rng))
    _, _, terminated, truncated, info = env.step(_random_masked(env, rng))
    assert truncated and not terminated and info["end_reason"] == "ply_limit"  # R6.2.4


def test_seeded_resets_are_reproducible_and_colours_vary() -> None:
    a, b = ColonySingleAgentEnv(), ColonySingleAgentEnv()
    colours = set()
    for seed in range(8):
        oa, ia = a.reset(seed=seed)
        ob, ib = b.reset(seed=seed)
        np.testing.assert_array_equal(oa, ob)
        assert ia == ib and a.state == b.state
        colours.add(ia["learner_colour"])
    assert colours == {"red", "blue"}


def test_illegal_action_lose_and_raise() -> None:
    env = ColonySingleAgentEnv(learner_colour="red")
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.warns(UserWarning, match="illegal action"):
        _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["end_reason"]) == (-1.0, True, False, "illegal_action")
    assert not env.action_masks().any()

    env = ColonySingleAgentEnv(learner_colour="red", illegal_action="raise")
    env.reset(seed=0)
    before = env.state
    with pytest.raises(ce.IllegalActionError, match=f"learner action {illegal}"):
        env.step(illegal)
    with pytest.raises(ce.IllegalActionError, match="outside the action space"):
        env.step(16001)
    assert env.state == before


def test_bad_arguments_and_bad_opponents() -> None:
    with pytest.raises(ValueError, match="learner_colour"):
        ColonySingleAgentEnv(learner_colour="green")
    with pytest.raises(ValueError, match="max_plies"):
        ColonySingleAgentEnv(max_plies=1)
    with pytest.raises(ValueError, match="illegal_action"):
        ColonySingleAgentEnv(illegal_action="ignore")
    with pytest.raises(TypeError, match="opponent"):
        ColonySingleAgentEnv(opponent=42)
    env = ColonySingleAgentEnv(opponent=lambda state, rng: 16001, learner_colour="blue")
    with pytest.raises(ce.IllegalActionError, match="opponent"):
        env.reset(seed=0)
