"""The Gymnasium VectorEnv of the single-agent task: Gymnasium's API exactly, lockstep with
`SyncVectorEnv` over `ColonySingleAgentEnv`, autoreset modes, masks, errors, a CleanRL-style loop."""

from __future__ import annotations

import re

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

import colony_env as ce
from colony_env import symmetry
from colony_env.gym_vector import ColonyGymVectorEnv
from colony_env.registration import GYMNASIUM_ID
from colony_env.wrappers import ColonySingleAgentEnv
from helpers import load_example

pytestmark = pytest.mark.filterwarnings("ignore:.*the episode ends with reward:UserWarning")  # injected illegal actions


def _compare_infos(a: dict, b: dict, path: str = "") -> None:
    """Equal `SyncVectorEnv`-layout infos: the same keys, dtypes and values."""
    assert set(a) == set(b), (path, sorted(set(a) ^ set(b)))
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            _compare_infos(x, y, f"{path}{key}.")
        elif key == "final_obs":
            for u, v in zip(x, y, strict=True):
                assert (u is None) == (v is None), path + key
                if u is not None:
                    np.testing.assert_array_equal(u, v)
        else:
            assert x.dtype == y.dtype, (path + key, x.dtype, y.dtype)
            np.testing.assert_array_equal(x, y, err_msg=path + key)


def _lockstep(num_envs: int, steps: int, mode: AutoresetMode, seed: int, illegal_every: int = 0, **kwargs) -> int:
    """Step the compiled vector env and SyncVectorEnv over the single env with the same seeds
    and actions; every output must be identical. Returns the number of episodes that ended."""
    sync = SyncVectorEnv([lambda: ColonySingleAgentEnv(**kwargs) for _ in range(num_envs)], autoreset_mode=mode)
    vec = ColonyGymVectorEnv(num_envs, autoreset_mode=mode, **kwargs)
    assert vec.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"] == mode
    obs_s, info_s = sync.reset(seed=seed)
    obs_v, info_v = vec.reset(seed=seed)
    np.testing.assert_array_equal(obs_s, obs_v)
    _compare_infos(info_s, info_v)
    rng = np.random.default_rng(seed)
    ended = 0
    for t in range(steps):
        masks = info_v["action_mask"]
        np.testing.assert_array_equal(np.stack(sync.call("action_masks")), np.stack(vec.call("action_masks")))
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        if illegal_every and t % illegal_every == illegal_every - 1:
            actions[t % num_envs] = ce.N_ACTIONS  # outside the action space: the slot loses
        out_s, out_v = sync.step(actions), vec.step(actions)
        for x, y in zip(out_s[:4], out_v[:4], strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        _compare_infos(out_s[4], out_v[4])
        info_v = out_v[4]
        ended += int(out_v[2].sum() + out_v[3].sum())
    assert [s for s in sync.call("game_state")] == list(vec.call("game_state"))
    return ended


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_lockstep_with_sync_vector_env_random_opponent(mode: AutoresetMode) -> None:
    ended = _lockstep(6, 120, mode, seed=11, illegal_every=17, opponent="random", max_plies=30)
    assert ended >= 12  # games ended by the ply limit, by illegal actions and by play


def test_lockstep_other_opponent_board_frame_fixed_colour() -> None:
    """A non-batched opponent (asked slot by slot), the board frame, blue learners."""
    ended = _lockstep(3, 40, AutoresetMode.NEXT_STEP, seed=2, opponent="greedy", max_plies=24,
                      canonical=False, learner_colour="blue")  # fmt: skip
    assert ended >= 3


def test_make_vec_and_the_vector_env_api() -> None:
    envs = gymnasium.make_vec(GYMNASIUM_ID, num_envs=4, vectorization_mode="vector_entry_point", opponent="random", max_plies=50)
    assert isinstance(envs, VectorEnv) and isinstance(envs.unwrapped, ColonyGymVectorEnv)
    assert envs.num_envs == 4 and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert envs.single_observation_space == gymnasium.spaces.Box(0.0, 1.0, (30, 10, 10), np.float32)
    assert envs.single_action_space == gymnasium.spaces.Discrete(ce.N_ACTIONS)
    assert envs.action_space == gymnasium.spaces.MultiDiscrete([ce.N_ACTIONS] * 4)
    obs, infos = envs.reset(seed=[1, None, 3, 4], options={"unused": True})  # options are accepted
    assert envs.observation_space.contains(obs)
    masks = infos["action_mask"]
    assert masks.shape == (4, ce.N_ACTIONS) and masks.dtype == np.bool_ and infos["_action_mask"].all()
    np.testing.assert_array_equal(np.stack(envs.call("action_masks")), masks)
    assert envs.get_attr("max_plies") == (50,) * 4
    for i, (state, learner) in enumerate(zip(envs.call("game_state"), envs.call("learner"), strict=True)):
        assert state.to_move == learner  # the opponent has moved (R6.4)
        np.testing.assert_array_equal(masks[i], symmetry.canonical_mask(ce.legal_action_mask(state), learner))
    obs, rewards, term, trunc, infos = envs.step(envs.unwrapped.action_space.sample(mask=tuple(m.astype(np.int8) for m in masks)))
    assert rewards.dtype == np.float64 and term.dtype == trunc.dtype == np.bool_
    masks[:] = False  # the caller's copy: the env's view is not changed
    assert envs.unwrapped.action_masks().any()
    with pytest.raises(AttributeError, match="supports"):
        envs.call("no_such_method")
    envs.close()
    assert envs.closed


def test_autoreset_modes_and_reset_mask() -> None:
    """NEXT_STEP: the step after an end resets (action ignored, reward 0); DISABLED: stepping an
    ended slot is refused until `reset(options={"reset_mask": ...})` restarts it."""
    env = ColonyGymVectorEnv(2, learner_colour="red", max_plies=4, autoreset_mode="Disabled")
    env.reset(seed=0)
    rng = np.random.default_rng(0)

    def legal_actions(masks: np.ndarray) -> np.ndarray:
        return np.array([rng.choice(np.flatnonzero(m)) for m in masks])

    env.step(legal_actions(env.action_masks()))
    _, rewards, term, trunc, infos = env.step(legal_actions(env.action_masks()))
    assert trunc.all() and not term.any() and list(infos["end_reason"]) == ["ply_limit"] * 2  # R6.2.4
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="reset_mask"):
        env.step(np.zeros(2, np.int64))
    obs, infos = env.reset(options={"reset_mask": np.array([True, False])})
    assert infos["_ply"].tolist() == [True, False] and env.action_masks()[0].any() and not env.action_masks()[1].any()


def test_illegal_actions_lose_or_raise() -> None:
    env = ColonyGymVectorEnv(3, learner_colour="red")
    _, infos = env.reset(seed=5)
    illegal = int(np.flatnonzero(~infos["action_mask"][1])[0])
    legal = [int(np.flatnonzero(m)[0]) for m in infos["action_mask"]]
    with pytest.warns(UserWarning, match=f"slot 1: learner action .*{illegal}"):
        _, rewards, term, _, infos = env.step(np.array([legal[0], illegal, legal[2]]))
    assert rewards[1] == -1.0 and term.tolist() == [False, True, False]
    # every slot has every key (issue 32: one shape at every step): "" where the episode goes on
    assert infos["end_reason"].tolist() == ["", "illegal_action", ""] and infos["_end_reason"].all()
    assert infos["error"][1] and infos["error"][0] == infos["error"][2] == "" and infos["winner"].tolist() == ["", "", ""]

    env = ColonyGymVectorEnv(3, learner_colour="red", illegal_action="raise")
    _, infos = env.reset(seed=5)
    before = env.call("game_state")
    with pytest.raises(ce.IllegalActionError, match="slot 1"):
        env.step(np.array([legal[0], illegal, legal[2]]))
    with pytest.raises(ce.IllegalActionError, match="integer id"):
        env.step(np.array([0.5, 1.0, 2.0]))  # not integers (issue 13, item 8)
    assert env.call("game_state") == before  # nothing moved
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        env.step(np.zeros(2, np.int64))


def test_bad_arguments() -> None:
    for kwargs, match in (({"num_envs": 0}, "num_envs"), ({"max_plies": 1}, "max_plies"),
                          ({"autoreset_mode": "sometimes"}, "autoreset_mode"), ({"opponent": "mcts:x"}, "opponent"),
                          ({"learner_colour": "green"}, "learner_colour"), ({"illegal_action": "ignore"}, "illegal_action")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            ColonyGymVectorEnv(**{"num_envs": 2, **kwargs})
    env = ColonyGymVectorEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=[1])
    with pytest.raises(ValueError, match="reset_mask"):
        env.reset(options={"reset_mask": np.array([1, 0])})


def test_cleanrl_style_masked_ppo_loop() -> None:
    """The example's loop runs a few iterations: finite losses, only legal actions, episodes
    end and restart through the autoreset step."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        example = load_example("cleanrl_masked_ppo.py")
        stats = example.train(example.Args(num_envs=8, num_steps=16, iterations=3, max_plies=30, update_epochs=1, minibatches=2))
    finally:
        torch.set_num_threads(threads)
    assert np.isfinite(stats["loss"]) and stats["illegal"] == 0
    assert stats["episodes"] >= 8 and stats["learner_steps"] >= 8 * 16 * 3 - stats["episodes"]


def test_random_actions_are_legal() -> None:
    env = ColonyGymVectorEnv(5, max_plies=20)
    _, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(40):
        actions = env.random_actions(rng)
        masks = infos["action_mask"]
        assert all(m[a] for m, a in zip(masks, actions, strict=True) if m.any())
        _, _, term, trunc, infos = env.step(actions)
        assert "end_reason" not in infos or "illegal_action" not in set(infos["end_reason"][infos["_end_reason"]])


def test_bench_section_prints_medians(capsys) -> None:
    from colony_env import bench

    bench.main(["--only", "gym_vector", "--repeats", "1", "--seconds", "0.02"])
    out = capsys.readouterr().out
    for label in ("gym vector env N=1,", "gym vector env N=256,", "SyncVectorEnv N=16,"):
        assert re.search(re.escape(label) + r".*\d[\d,]* steps/s", out), out


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_infos_have_the_same_keys_and_no_none_at_every_step(mode) -> None:
    """Issue 32 item 10: the single env's keys in every slot at every step, never None."""
    from colony_env.wrappers import ColonySingleAgentEnv

    keys = ["learner_colour", "ply", "action_mask", "end_reason", "winner", "error"]
    single = ColonySingleAgentEnv(max_plies=12)
    _, info = single.reset(seed=0)
    rng = np.random.default_rng(0)
    env = ColonyGymVectorEnv(4, max_plies=12, autoreset_mode=mode)
    _, infos = env.reset(seed=0)
    ends = 0
    for _ in range(30):
        assert list(info) == keys and all(v is not None for v in info.values())
        assert [k for k in infos if not k.startswith("_") and not k.startswith("final")] == keys
        for k in keys:
            assert infos[f"_{k}"].all() and not any(v is None for v in infos[k])
        _, _, term, trunc, infos = env.step(env.random_actions(rng))
        ends += int((term | trunc).sum())
        if info["end_reason"]:
            _, info = single.reset()
        else:
            _, _, _, _, info = single.step(int(np.flatnonzero(single.action_masks())[0]))
    assert ends > 0
