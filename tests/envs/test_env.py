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
from colony_env.env import AGENT_COLOUR, AGENTS, END_REASON_NAMES, env, raw_env
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
        state = e.unwrapped.game_state
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
    assert e.unwrapped.game_state.to_move == ce.RED  # R2.1


# --- seeding -----------------------------------------------------------------------------------
def test_seed_fixes_the_setup_and_the_game() -> None:
    a, b = raw_env(), raw_env()
    a.reset(seed=42)
    b.reset(seed=42)
    assert a.game_state == ce.new_game(42)  # R2.4: the same seeded setup as the engine's
    assert b.game_state == a.game_state
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(60):
        a.step(_random_action(a.observe(a.agent_selection), rng_a))
        b.step(_random_action(b.observe(b.agent_selection), rng_b))
    assert a.game_state == b.game_state
    a.reset(seed=7)
    assert a.game_state == ce.new_game(7) and a.game_state != ce.new_game(42)


def test_unseeded_resets_continue_the_seeded_generator() -> None:
    a, b = raw_env(), raw_env()
    a.reset(seed=5)
    b.reset(seed=5)
    a.reset()
    b.reset()
    assert a.game_state == b.game_state
    assert a.game_state != ce.new_game(5)


# --- rewards, terminations, truncations, infos ---------------------------------------------
def _check_end(e, expected_reason: str) -> None:
    """Bookkeeping at a game end: +1/-1/0 (R7.4), termination vs truncation (R6.2), infos."""
    state = e.unwrapped.game_state
    assert state.is_over and state.end_reason == expected_reason
    red, blue = state.rewards()
    truncated = expected_reason == "ply_limit"
    assert all(e.truncations[a] == truncated for a in AGENTS)
    assert all(e.terminations[a] == (not truncated) for a in AGENTS)
    winner = None if state.winner is None else AGENTS[int(state.winner)]
    counts = ce.controlled_counts(state)
    for a in AGENTS:  # numbers only (issue 32): END_REASON_NAMES names the code, -1 is nobody
        assert e.infos[a] == {"end_reason": END_REASON_NAMES.index(expected_reason), "winner": -1 if winner is None else AGENTS.index(winner),
                              "colonies": (counts[0], counts[1]), "illegal_agent": -1, "illegal_action": -1}
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
        if e.unwrapped.game_state.end_reason == reason and (repeated or not need_repeat):
            return e, movers
    raise AssertionError(f"no random game in {max_seed} seeds ended with {reason}")


def test_connected23_end() -> None:
    e, _ = _find_game("connected23")
    assert sum(ce.connected_counts(e.unwrapped.game_state)) >= 23  # R6.2.1
    _check_end(e, "connected23")


def test_grace_end_with_one_agent_moving_several_times_in_a_row() -> None:
    """R6.3: once a colour is finished, the other agent moves alone (up to 3 grace moves)."""
    e, movers = _find_game("grace", need_repeat=True)
    state = e.unwrapped.game_state
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
    before, agent = e.game_state, e.agent_selection
    illegal = int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0])
    with pytest.raises(ce.IllegalActionError, match=f"illegal action {illegal}"):
        e.step(illegal)
    with pytest.raises(ce.IllegalActionError, match="outside the action space"):
        e.step(16001)
    assert e.game_state == before and e.agent_selection == agent
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
    assert END_REASON_NAMES[e.infos[offender]["end_reason"]] == "illegal_action"
    assert e.infos[other] == e.infos[offender]
    assert e.infos[offender]["illegal_agent"] == AGENTS.index(offender) and e.infos[offender]["illegal_action"] == illegal
    assert e.infos[offender]["winner"] == -1
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
    assert isinstance(e.unwrapped.game_state, ce.GameState)
    assert e.unwrapped.game_state == s


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


# --- PettingZoo conventions (issue 11) --------------------------------------------------------------
def test_state_is_pettingzoo_global_state_method() -> None:
    """`state()` is AECEnv's global-state method (not the engine state hiding it): red's planes
    of the whole position in the board frame, in `state_space`, a fresh array each call."""
    e = env()
    e.reset(seed=4)
    try:  # how a generic pipeline probes for a global state
        state = e.state()
    except NotImplementedError:  # pragma: no cover - the failure this test guards against
        pytest.fail("state() is not implemented")
    assert e.unwrapped.state_space.contains(state) and state.flags.c_contiguous
    game = e.unwrapped.game_state
    assert isinstance(game, ce.GameState)
    np.testing.assert_array_equal(state, encode_observation(game, ce.RED, canonical=False).transpose(1, 2, 0))
    state[:] = 0.5
    assert not np.array_equal(e.state(), state)
    other = raw_env(canonical=True)  # the global state does not depend on the agents' view
    other.reset(seed=4)
    np.testing.assert_array_equal(other.state(), e.state())


def test_observe_and_last_return_arrays_the_caller_owns() -> None:
    """Zeroing the returned mask (and planes) in place changes nothing in the env: the next
    legal move is still accepted by the wrapped env's illegal-move check."""
    e = env()
    e.reset(seed=6)
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, *_ = e.last()
        legal = _random_action(obs, rng)
        assert obs["observation"].flags.c_contiguous and obs["observation"].flags.writeable
        obs["action_mask"][:] = 0
        obs["observation"][:] = 0.0
        e.observe(e.agent_selection)["action_mask"][:] = 0
        again, *_ = e.last()
        assert again["action_mask"][legal] == 1 and again["observation"].any()
        e.step(legal)
        assert all(END_REASON_NAMES[info["end_reason"]] != "illegal_action" for info in e.infos.values())
        if any(e.terminations.values()) or any(e.truncations.values()):
            break


def test_registry_make_and_versioned_module() -> None:
    """`pettingzoo.make("aec", "colony_env/colony-v0")` works after `import colony_env`, passes
    keyword arguments on, and is the versioned module's `env()`."""
    import subprocess
    import sys

    code = (
        "import pettingzoo, colony_env\n"
        "e = pettingzoo.make('aec', 'colony_env/colony-v0', max_plies=7, canonical=True)\n"
        "e.reset(seed=0); print(type(e.unwrapped).__name__, e.unwrapped.max_plies, e.unwrapped.canonical)"
    )
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["raw_env", "7", "True"]
    from colony_env import colony_v0

    made = __import__("pettingzoo").make("aec", "colony_env/colony_v0")  # PettingZoo's _vN spelling too
    made.reset(seed=3)
    direct = colony_v0.env()
    direct.reset(seed=3)
    assert made.unwrapped.game_state == direct.unwrapped.game_state
    assert type(made) is type(direct) and colony_v0.raw_env is raw_env


def test_pettingzoo_tests_in_the_canonical_view() -> None:
    """The board view runs them at the top of this file."""
    api_test(env(canonical=True), num_cycles=200)
    seed_test(lambda **kw: env(canonical=True, **kw), num_cycles=60)


def test_canonical_view_against_the_engine() -> None:
    """`canonical=True`: player_1's planes, mask and actions are the transpose (symmetry.py);
    player_0's are the board frame. Checked against the engine through the symmetry maps."""
    from colony_env import symmetry

    e = raw_env(canonical=True)
    board = raw_env()
    e.reset(seed=8)
    board.reset(seed=8)
    rng = np.random.default_rng(3)
    blue_moves = 0
    for _ in range(120):
        state = e.game_state
        if state.is_over:
            break
        agent = e.agent_selection
        colour = AGENT_COLOUR[agent]
        obs = e.observe(agent)
        np.testing.assert_array_equal(obs["observation"], encode_observation(state, colour, canonical=True).transpose(1, 2, 0))
        np.testing.assert_array_equal(obs["action_mask"].astype(bool), symmetry.canonical_mask(ce.legal_action_mask(state), colour))
        action = _random_action(obs, rng)
        board_action = int(symmetry.canonical_action_to_board(action, colour))
        assert e.board_action(agent, action) == board_action and e.env_action(agent, board_action) == action
        blue_moves += colour == ce.BLUE and action != board_action
        e.step(action)
        board.step(board_action)
        assert e.game_state == board.game_state == ce.apply_action(state, board_action)
    assert blue_moves > 10  # the frames really differed
    np.testing.assert_array_equal(e.state(), board.state())  # the global state is the board frame in both


def test_canonical_option_is_checked() -> None:
    with pytest.raises(ValueError, match="canonical"):
        raw_env(canonical="yes")


def test_non_integer_actions_are_illegal_actions() -> None:
    """raw_env: a float or a string is refused like any illegal action, nothing changes."""
    e = raw_env()
    e.reset(seed=1)
    before = e.game_state
    legal = int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0])
    for bad in (legal + 0.5, float(legal), str(legal), None):
        with pytest.raises(ce.IllegalActionError, match="integer"):
            e.step(bad)
    assert e.game_state == before
    e.step(np.int64(legal))  # NumPy integers are integers
    assert e.game_state == ce.apply_action(before, legal)


def test_engine_agents_play_in_the_canonical_view() -> None:
    """PettingZooAdapter hands the env the agent's own frame (transposed for player_1)."""
    from colony_env.agents import GreedyAgent, PettingZooAdapter, RandomAgent

    e = env(canonical=True)
    e.reset(seed=2)
    players = {"player_0": PettingZooAdapter(RandomAgent(), seed=1), "player_1": PettingZooAdapter(GreedyAgent(), seed=2)}
    for name in e.agent_iter():
        e.last()
        e.step(players[name](e, name))
    assert e.unwrapped.game_state.is_over  # every action was legal (an illegal one ends with a warning)
    assert all(END_REASON_NAMES[info["end_reason"]] != "illegal_action" for info in e.infos.values())


# --- issue 32: infos of one shape, bools refused ------------------------------------------------
def _info_types(info: dict) -> dict:
    return {k: (type(v), len(v) if isinstance(v, tuple) else None) for k, v in info.items()}


@pytest.mark.parametrize("make", [env, raw_env], ids=["env", "raw_env"])
def test_every_info_has_the_same_keys_and_types_at_every_step(make) -> None:
    """Issue 32 item 10: typed per-step buffers need one schema: the keys of `INFO_KEYS` at every
    step, each value a number of one type (a pair for `colonies`) and never None (0 or -1 until
    the game ends), so that each converts to a tensor as TorchRL's specs need."""
    from colony_env.env import INFO_KEYS

    rng = np.random.default_rng(3)
    for seed in range(3):
        e = make(max_plies=60 + 40 * seed)
        e.reset(seed=seed)
        expected = None
        for agent in e.agent_iter():
            obs, _, term, trunc, info = e.last()
            for a in e.agents:
                assert tuple(e.infos[a]) == INFO_KEYS and None not in e.infos[a].values()
                shape = _info_types(e.infos[a])
                expected = expected or shape
                assert shape == expected, (shape, expected)
            if not (term or trunc):
                assert info["end_reason"] == 0 and info["winner"] == -1 and info["illegal_action"] == -1
                assert all(np.asarray(v).dtype.kind == "i" for v in info.values())
            e.step(None if term or trunc else _random_action(obs, rng))


@pytest.mark.parametrize("bad", [True, False, np.True_, np.bool_(False)])
def test_a_bool_is_not_an_action(bad) -> None:
    """Issue 32 item 8: `True` is not action 1. raw_env refuses it with the one-line
    IllegalActionError of any non-integer; env() with the out-of-space AssertionError."""
    e = raw_env()
    e.reset(seed=1)
    before = e.game_state
    with pytest.raises(ce.IllegalActionError, match="integer id in 0..16000") as info:
        e.step(bad)
    assert "\n" not in str(info.value) and e.game_state == before
    w = env()
    w.reset(seed=1)
    with pytest.raises(AssertionError, match="not in the action space") as info:
        w.step(bad)
    assert "\n" not in str(info.value) and w.unwrapped.game_state == before
    w.step(int(np.flatnonzero(w.last()[0]["action_mask"])[0]))  # still playable


def test_env_writes_no_pettingzoo_private_attribute() -> None:
    """Issue 29 item 7: the wrappers are the project's own over PettingZoo's public BaseWrapper;
    nothing of PettingZoo's private state is read or written, so a release that renames it
    changes nothing."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(ce.__file__).parent / "env.py").read_text())
    private = {"_prev_obs", "_prev_info", "_deads_step_first", "_was_dead_step", "_generic_warning",
               "_skip_agent_selection", "_has_reset", "_has_updated", "_terminated"}
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} & private
    assert used == set(), used
    from pettingzoo.utils import wrappers as pz_wrappers

    chain, e = [], env()
    while hasattr(e, "env"):
        chain.append(type(e))
        e = e.env
    assert all(c.__module__ == "colony_env.env" for c in chain)
    assert not any(issubclass(c, (pz_wrappers.OrderEnforcingWrapper, pz_wrappers.TerminateIllegalWrapper,
                                  pz_wrappers.AssertOutOfBoundsWrapper)) for c in chain)
