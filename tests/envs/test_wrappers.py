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
        state = env.game_state
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
            assert env.game_state == after_learner


def test_board_frame_option() -> None:
    env = ColonySingleAgentEnv(learner_colour="blue", canonical=False)
    obs, _ = env.reset(seed=2)
    np.testing.assert_array_equal(obs, encode_observation(env.game_state, ce.BLUE, canonical=False))
    np.testing.assert_array_equal(env.action_masks(), ce.legal_action_mask(env.game_state))


def test_rewards_only_at_the_end_and_from_the_learners_view() -> None:
    for seed in range(6):
        env = ColonySingleAgentEnv(learner_colour="random")
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            _, reward, terminated, truncated, info = env.step(_random_masked(env, rng))
            state = env.game_state
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
        np.testing.assert_array_equal(ia.pop("action_mask"), ib.pop("action_mask"))
        assert ia == ib and a.game_state == b.game_state
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
    before = env.game_state
    with pytest.raises(ce.IllegalActionError, match=f"learner action {illegal}"):
        env.step(illegal)
    with pytest.raises(ce.IllegalActionError, match="outside the action space"):
        env.step(16001)
    assert env.game_state == before


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


# --- Gymnasium conventions (issue 11) and non-integer actions (issue 13, item 8) -------------------
def test_import_colony_env_registers_and_made_env_has_action_masks() -> None:
    """A fresh process: `import colony_env` is all it takes (or the module in the id), and
    `action_masks()` is reachable on what `gymnasium.make` returns."""
    import subprocess
    import sys

    code = (
        "import gymnasium, colony_env\n"
        "env = gymnasium.make('colony_env/ColonySingleAgent-v0', learner_colour='red')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(int(env.action_masks().sum()), int(info['action_mask'].sum()))\n"
        "other = gymnasium.make('colony_env/ColonySingleAgent-v0', max_episode_steps=5)\n"
        "other.reset(seed=0); print(int(other.get_wrapper_attr('action_masks')().sum()) > 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, m, ok = out.stdout.split()
    assert n == m and int(n) > 1 and ok == "True"
    code = "import gymnasium\nenv = gymnasium.make('colony_env:colony_env/ColonySingleAgent-v0')\nprint(env.reset(seed=0)[0].shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(30, 10, 10)"


def test_info_action_mask_is_action_masks() -> None:
    env = ColonySingleAgentEnv(learner_colour="blue")
    _, info = env.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(20):
        np.testing.assert_array_equal(info["action_mask"], env.action_masks())
        env.action_masks()[:] = False  # a copy: the env's mask is not touched
        assert env.action_masks().any()
        _, _, terminated, truncated, info = env.step(_random_masked(env, rng))
        if terminated or truncated:
            assert not info["action_mask"].any()
            break


@pytest.mark.parametrize("colour", ["red", "blue"])
@pytest.mark.parametrize("bad", [136.9, 136.0, "136", None, "abc", True, [136]])
def test_non_integer_actions_are_illegal_for_both_colours(colour: str, bad) -> None:
    """Issue 13 item 8: not integers, so illegal: 'lose' ends the episode with -1 and a warning,
    'raise' raises IllegalActionError naming the action; never played, never a raw error."""
    env = ColonySingleAgentEnv(learner_colour=colour)
    env.reset(seed=0)
    before = env.game_state
    with pytest.warns(UserWarning, match="integer id"):
        _, reward, terminated, truncated, info = env.step(bad)
    assert (reward, terminated, truncated, info["end_reason"]) == (-1.0, True, False, "illegal_action")
    assert env.game_state == before

    env = ColonySingleAgentEnv(learner_colour=colour, illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(ce.IllegalActionError, match=r"learner action .*integer id in 0\.\.16000"):
        env.step(bad)
    assert env.game_state == before
    legal = int(np.flatnonzero(env.action_masks())[0])
    env.step(np.int64(legal))  # NumPy integers and 0-d integer arrays are integers
    env.reset(seed=0)
    env.step(np.array(legal))


def test_opponent_specs() -> None:
    from colony_env.agents import GreedyAgent, MCTSAgent
    from colony_env.wrappers import make_opponent

    assert isinstance(make_opponent(None), RandomAgent) and isinstance(make_opponent("random"), RandomAgent)
    assert isinstance(make_opponent("greedy"), GreedyAgent)
    mcts = make_opponent("mcts:8:0.5")
    assert isinstance(mcts, MCTSAgent) and mcts.name == "mcts:8:0.5"
    for bad, match in (("mcts:0", "unknown opponent spec"), ("mcts:8:-1", "exploration constant"),
                       ("checkpoint:x.pt", "make_agent"), ("alphazero", "allowed: 'random'")):
        with pytest.raises(ValueError, match=match):
            make_opponent(bad)
    env = ColonySingleAgentEnv(opponent="mcts:4", learner_colour="blue", max_plies=6)
    env.reset(seed=0)
    assert env.opponent_name == "mcts:4" and env.game_state.ply == 1  # red (the opponent) opened
