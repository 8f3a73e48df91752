"""The PettingZoo AEC env `colony_v0`: conformance, seeding, masks, rewards and ends (R6, R7.4, R8.4)."""

from __future__ import annotations

import importlib
import re
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
from pettingzoo.test import api_test, performance_benchmark, render_test, seed_test
from pettingzoo.utils.env_logger import EnvLogger

import colony_env as ce
from colony_env import observation
from colony_env.env import AGENT_COLOUR, AGENTS, env, raw_env
from colony_env.observation import encode_observation
from helpers import pos

matplotlib.use("Agg")  # the human render mode draws headless


def _random_action(obs: dict, rng: np.random.Generator) -> int:
    ids = np.flatnonzero(obs["action_mask"])
    return int(ids[rng.integers(len(ids))])


def _play_to_end(e, rng: np.random.Generator) -> list[str]:
    """Random legal actions until the game is over; returns the agents that acted, in order."""
    movers = []
    while not (any(e.terminations.values()) or any(e.truncations.values())):
        obs, *_ = e.last()
        movers.append(e.agent_selection)
        e.step(_random_action(obs, rng))
    return movers


# --- PettingZoo's own tests --------------------------------------------------------------
def test_pettingzoo_api_test() -> None:
    api_test(env(), num_cycles=300)
    api_test(env(max_plies=12), num_cycles=100)  # truncation path


def test_pettingzoo_seed_test() -> None:
    seed_test(env, num_cycles=100)


def test_pettingzoo_render_test() -> None:
    render_test(env)


def test_pettingzoo_performance_benchmark_runs(monkeypatch, capsys) -> None:
    clock = iter(np.arange(0.0, 1e6, 0.25))  # a fake clock: the 5-second loop ends after ~20 cycles
    module = importlib.import_module("pettingzoo.test.performance_benchmark")
    monkeypatch.setattr(module, "time", SimpleNamespace(time=lambda: float(next(clock))))
    performance_benchmark(env())
    assert "turns per second" in capsys.readouterr().out


# --- spaces, observations, masks ------------------------------------------------------------
def test_spaces_and_metadata() -> None:
    e = raw_env()
    assert e.metadata["name"] == "colony_v0"
    assert e.possible_agents == ["player_0", "player_1"]
    for a in e.possible_agents:
        assert e.action_space(a).n == 16001
        space = e.observation_space(a)
        assert space["observation"].shape == (10, 10, observation.OBS_CHANNELS)
        assert space["observation"].dtype == np.float32
        assert space["action_mask"].shape == (16001,) and space["action_mask"].dtype == np.int8


def test_mask_and_planes_follow_the_engine_for_both_agents() -> None:
    """R8.4: the mover's mask is exactly the engine's legal set, the other agent's is all zeros;
    planes are the encoder's, from each agent's own point of view, in the board frame."""
    e = raw_env()
    e.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(150):
        state = e.unwrapped.state
        if state.is_over:
            break
        for agent in AGENTS:
            obs = e.observe(agent)
            assert e.observation_space(agent).contains(obs)
            colour = AGENT_COLOUR[agent]
            np.testing.assert_array_equal(obs["observation"], encode_observation(state, colour, canonical=False).transpose(1, 2, 0))
            if agent == e.agent_selection:
                assert colour == state.to_move
                np.testing.assert_array_equal(obs["action_mask"].astype(bool), ce.legal_action_mask(state))
            else:
                assert not obs["action_mask"].any()
        e.step(_random_action(e.observe(e.agent_selection), rng))


def test_player_0_is_red_and_moves_first() -> None:
    e = env()
    e.reset(seed=0)
    assert e.agent_selection == "player_0"
    assert e.unwrapped.state.to_move == ce.RED  # R2.1


# --- seeding -----------------------------------------------------------------------------------
def test_seed_fixes_the_setup_and_the_game() -> None:
    a, b = raw_env(), raw_env()
    a.reset(seed=42)
    b.reset(seed=42)
    assert a.state == ce.new_game(42)  # R2.4: the same seeded setup as the engine's
    assert b.state == a.state
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(60):
        a.step(_random_action(a.observe(a.agent_selection), rng_a))
        b.step(_random_action(b.observe(b.agent_selection), rng_b))
    assert a.state == b.state
    a.reset(seed=7)
    assert a.state == ce.new_game(7) and a.state != ce.new_game(42)


def test_unseeded_resets_continue_the_seeded_generator() -> None:
    a, b = raw_env(), raw_env()
    a.reset(seed=5)
    b.reset(seed=5)
    a.reset()
    b.reset()
    assert a.state == b.state
    assert a.state != ce.new_game(5)


# --- rewards, terminations, truncations, infos ---------------------------------------------
def _check_end(e, expected_reason: str) -> None:
    """Bookkeeping at a game end: +1/-1/0 (R7.4), termination vs truncation (R6.2), infos."""
    state = e.unwrapped.state
    assert state.is_over and state.end_reason == expected_reason
    red, blue = state.rewards()
    truncated = expected_reason == "ply_limit"
    assert all(e.truncations[a] == truncated for a in AGENTS)
    assert all(e.terminations[a] == (not truncated) for a in AGENTS)
    winner = None if state.winner is None else AGENTS[int(state.winner)]
    counts = ce.controlled_counts(state)
    for a in AGENTS:
        assert e.infos[a] == {"end_reason": expected_reason, "winner": winner, "colonies": {"player_0": counts[0], "player_1": counts[1]}}
    finals = {}
    while e.agents:  # every agent sees its final reward in last(), then takes a dead step
        agent = e.agent_selection
        _, reward, term, trunc, _ = e.last()
        assert term or trunc
        finals[agent] = reward
        e.step(None)
    assert finals == {"player_0": red, "player_1": blue}
    if winner is not None:
        assert finals[winner] == 1.0 and sum(finals.values()) == 0.0


def _rewards_stay_zero_until_the_end(e, rng) -> list[str]:
    movers = []
    while not (any(e.terminations.values()) or any(e.truncations.values())):
        obs, reward, *_ = e.last()
        assert reward == 0.0  # R7.4: no reward before the end
        movers.append(e.agent_selection)
        e.step(_random_action(obs, rng))
    return movers


def test_ply_limit_is_a_truncation_with_rewards_paid() -> None:
    e = env(max_plies=6)
    e.reset(seed=0)
    movers = _rewards_stay_zero_until_the_end(e, np.random.default_rng(0))
    assert len(movers) == 6
    _check_end(e, "ply_limit")


def _find_game(reason: str, max_seed: int = 60, need_repeat: bool = False):
    """A seeded random game that ends with `reason` (deterministic: fixed seeds)."""
    for seed in range(max_seed):
        e = env()
        e.reset(seed=seed)
        movers = _rewards_stay_zero_until_the_end(e, np.random.default_rng(seed))
        repeated = len(movers) >= 2 and movers[-1] == movers[-2]
        if e.unwrapped.state.end_reason == reason and (repeated or not need_repeat):
            return e, movers
    raise AssertionError(f"no random game in {max_seed} seeds ended with {reason}")


def test_connected23_end() -> None:
    e, _ = _find_game("connected23")
    assert sum(ce.connected_counts(e.unwrapped.state)) >= 23  # R6.2.1
    _check_end(e, "connected23")


def test_grace_end_with_one_agent_moving_several_times_in_a_row() -> None:
    """R6.3: once a colour is finished, the other agent moves alone (up to 3 grace moves)."""
    e, movers = _find_game("grace", need_repeat=True)
    state = e.unwrapped.state
    grace_agent = AGENTS[int(state.finished.opponent)]
    run = 0
    for agent in reversed(movers):  # the game ended during the grace player's run of moves
        if agent != grace_agent:
            break
        run += 1
    assert 2 <= run <= 4  # the finishing move (if by this agent) plus up to 3 grace moves
    _check_end(e, "grace")


def test_passes_end() -> None:
    """R4.3 / R6.2.3: red, all connected, can only pass; after blue's pass that ends the game.
    Blue controls the colony (3 > 1 + 1, R7.1) and wins (R7.2)."""
    e = env()
    e.reset(seed=0)
    e.unwrapped.set_state(pos("r1 b3 r1", to_move="red", passes=1))
    obs, *_ = e.last()
    assert np.flatnonzero(obs["action_mask"]).tolist() == [ce.PASS_ACTION]
    e.step(ce.PASS_ACTION)
    _check_end(e, "passes")


def test_game_already_over_when_set() -> None:
    e = raw_env()
    e.reset(seed=0)
    e.set_state(pos("r1 b3 r1", to_move="red", passes=2))
    assert all(e.terminations.values())
    assert not e.observe("player_0")["action_mask"].any()  # R8.4: nothing legal once over


# --- illegal actions -----------------------------------------------------------------------------
def test_raw_env_raises_and_leaves_the_game_untouched() -> None:
    e = raw_env()
    e.reset(seed=1)
    before, agent = e.state, e.agent_selection
    illegal = int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0])
    with pytest.raises(ce.IllegalActionError, match=f"illegal action {illegal}"):
        e.step(illegal)
    with pytest.raises(ce.IllegalActionError, match="outside the action space"):
        e.step(16001)
    assert e.state == before and e.agent_selection == agent
    assert not any(e.terminations.values()) and e.rewards == {"player_0": 0.0, "player_1": 0.0}
    e.step(_random_action(e.observe(agent), np.random.default_rng(0)))  # still playable


def test_wrapped_env_ends_the_game_on_an_illegal_action_with_a_clear_warning() -> None:
    e = env()
    e.reset(seed=1)
    rng = np.random.default_rng(0)
    e.step(_random_action(e.last()[0], rng))
    offender = e.agent_selection
    other = AGENTS[1 - AGENTS.index(offender)]
    illegal = int(np.flatnonzero(e.last()[0]["action_mask"] == 0)[0])
    EnvLogger.flush()
    e.step(illegal)
    messages = [str(m) for m in EnvLogger.mqueue]
    assert any(re.search(rf"{offender} played an illegal action {illegal} .* gets -1", m) for m in messages), messages
    assert all(e.terminations.values())
    assert e.infos[offender]["end_reason"] == "illegal_action"
    finals = {}
    while e.agents:
        finals[e.agent_selection] = e.last()[1]
        e.step(None)
    assert finals == {offender: -1.0, other: 0.0}


def test_wrapped_env_checks_bounds_and_order() -> None:
    e = env()
    with pytest.raises(AssertionError, match="reset"):
        e.step(0)
    e.reset(seed=0)
    with pytest.raises(AssertionError, match="action space"):
        e.step(16001)
    with pytest.raises(AssertionError, match="action space"):
        e.step(-1)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="max_plies"):
        raw_env(max_plies=0)
    with pytest.raises(ValueError, match="render_mode"):
        raw_env(render_mode="video")


# --- state and docs -------------------------------------------------------------------------------
def test_unwrapped_state_is_the_engine_state() -> None:
    e = env()
    e.reset(seed=9)
    s = ce.new_game(9)
    rng = np.random.default_rng(2)
    for _ in range(20):
        a = _random_action(e.last()[0], rng)
        e.step(a)
        s = ce.apply_action(s, a)
    assert isinstance(e.unwrapped.state, ce.GameState)
    assert e.unwrapped.state == s


def _plane_table(doc: str) -> list[str]:
    return [ln.strip() for ln in doc.splitlines() if re.match(r"\|\s*\d+(-\d+)?\s*\|", ln.strip())]


def _section(doc: str, start: str, end: str) -> str:
    return doc[doc.index(start) : doc.index(end)]


def test_env_docstring_documents_every_observation_plane() -> None:
    """The user doc (env module docstring) and the encoder's table must not drift apart."""
    env_doc = importlib.import_module("colony_env.env").__doc__  # `colony_env.env` is the factory
    env_table = _plane_table(_section(env_doc, "### Observation Space", "#### Legal Actions Mask"))
    assert env_table == _plane_table(observation.__doc__)
    covered = set()
    for row in env_table:
        lo, _, hi = row.split("|")[1].strip().partition("-")
        covered.update(range(int(lo), int(hi or lo) + 1))
    assert covered == set(range(observation.OBS_CHANNELS))
