"""The OpenSpiel game `python_colony`: OpenSpiel's own consistency checks, the engine in
lockstep, the chance-dealt setup (R2), serialisation, MCTSBot, Shimmy's PettingZoo view."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms.mcts import MCTSBot, RandomRolloutEvaluator
from pettingzoo.test import api_test
from shimmy import OpenSpielCompatibilityV0

import colony_env as ce
from colony_env import openspiel as cos
from colony_env.constants import N_SATELLITES, SATELLITE_VALUES
from colony_env.engine import setup_game
from colony_env.observation import encode_observation

pytestmark = pytest.mark.filterwarnings("ignore:.*observation space value is.*infinity:UserWarning")  # Shimmy's Box


def _deal_randomly(state: pyspiel.State, rng: np.random.Generator) -> None:
    while state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        state.apply_action(int(rng.choice(outcomes, p=probs)))


@pytest.mark.parametrize("spec", ["python_colony(max_plies=24)", "python_colony(seed=3,max_plies=24)"])
def test_openspiel_random_simulation_checks(spec: str) -> None:
    """OpenSpiel's consistency checks for a game (legal actions, observations, clones, returns,
    serialisation by history) over random games, with the chance deal and with a fixed seed."""
    pyspiel.random_sim_test(pyspiel.load_game(spec), num_sims=2, serialize=True, verbose=False)


def test_game_type_and_parameters() -> None:
    game = pyspiel.load_game("python_colony")
    assert game.num_distinct_actions() == ce.N_ACTIONS and game.num_players() == 2
    assert game.get_parameters() == {"seed": -1, "max_plies": 400}
    assert game.max_chance_outcomes() == 4 and game.max_game_length() == 400
    kind = game.get_type()
    assert kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert game.new_initial_state().is_chance_node()
    seeded = pyspiel.load_game("python_colony", {"seed": 7, "max_plies": 50}).new_initial_state()
    assert not seeded.is_chance_node() and seeded.game_state == ce.new_game(7, 50)
    for params, match in (({"seed": -2}, "seed"), ({"max_plies": 0}, "max_plies")):
        with pytest.raises(Exception, match=match):
            pyspiel.load_game("python_colony", params)


def test_chance_deal_is_r2_setup() -> None:
    """Dealing the values of `new_game(S)` gives exactly `new_game(S)`; each outcome's probability
    is the copies of that value left over the cells left (a uniform ordering, R2.2)."""
    game = pyspiel.load_game("python_colony(max_plies=80)")
    for seed in range(3):
        target = ce.new_game(seed, 80)
        rng = np.random.default_rng(seed)
        values = np.array(SATELLITE_VALUES)
        red, blue = rng.permutation(values), rng.permutation(values)
        assert setup_game(red, blue, 80) == target
        state = game.new_initial_state()
        for k, v in enumerate([*red, *blue]):
            own = [*red, *blue][N_SATELLITES if k >= N_SATELLITES else 0 : k]
            left = Counter(SATELLITE_VALUES) - Counter(own)
            probs = dict(state.chance_outcomes())
            assert probs == {cos.VALUES.index(x): n / (N_SATELLITES - len(own)) for x, n in left.items() if n}
            assert sum(probs.values()) == pytest.approx(1.0)
            state.apply_action(cos.VALUES.index(int(v)))
        assert state.current_player() == 0 and state.game_state == target


def test_decisions_follow_the_engine() -> None:
    """Legal actions, transitions, returns, observation tensors and strings are the engine's."""
    game = pyspiel.load_game("python_colony(max_plies=60)")
    state = game.new_initial_state()
    rng = np.random.default_rng(1)
    _deal_randomly(state, rng)
    while not state.is_terminal():
        s = state.game_state
        player = state.current_player()
        assert player == int(s.to_move)
        assert state.legal_actions() == ce.legal_actions(s).tolist()
        for p in (0, 1):
            tensor = np.asarray(state.observation_tensor(p), np.float32)
            np.testing.assert_array_equal(tensor, encode_observation(s, p, canonical=False).ravel())
            assert state.observation_string(p) == ce.board_text(s)
        action = int(rng.choice(state.legal_actions()))
        assert state.action_to_string(player, action) == ce.action_to_str(action, s)
        state.apply_action(action)
        assert state.game_state == ce.apply_action(s, action)
    assert state.returns() == list(state.game_state.rewards()) and sum(state.returns()) == 0.0
    seeded = pyspiel.load_game("python_colony(seed=0)").new_initial_state()
    for bad in (ce.N_ACTIONS + 5, 5):  # the engine refuses, naming the rule
        with pytest.raises(ce.IllegalActionError, match="outside the action space|R4"):
            seeded.apply_action(bad)


def test_serialisation_and_clone_round_trip() -> None:
    game = pyspiel.load_game("python_colony(max_plies=100)")
    state = game.new_initial_state()
    rng = np.random.default_rng(4)
    _deal_randomly(state, rng)
    for _ in range(30):
        state.apply_action(int(rng.choice(state.legal_actions())))
    text = pyspiel.serialize_game_and_state(game, state)
    game2, state2 = pyspiel.deserialize_game_and_state(text)
    assert str(game2) == str(game) and state2.game_state == state.game_state
    assert state2.history() == state.history()
    clone = state.clone()
    clone.apply_action(clone.legal_actions()[0])
    assert state.game_state != clone.game_state and state2.game_state == state.game_state


def test_mcts_bot_plays_a_game() -> None:
    """OpenSpiel's MCTSBot (random rollouts) against uniform random play, through the deal."""
    game = pyspiel.load_game("python_colony(max_plies=16)")
    random_state = np.random.RandomState(0)
    bot = MCTSBot(game, uct_c=2.0, max_simulations=6, evaluator=RandomRolloutEvaluator(1, random_state), random_state=random_state)
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    bot_moves = 0
    while not state.is_terminal():
        _deal_randomly(state, rng)
        if state.current_player() == 0:
            action = bot.step(state)
            assert action in state.legal_actions()
            bot_moves += 1
        else:
            action = int(rng.choice(state.legal_actions()))
        state.apply_action(action)
    assert bot_moves >= 8 and state.game_state.is_over and sum(state.returns()) == 0.0


@pytest.mark.parametrize("config", [None, {"seed": 5, "max_plies": 30}])
def test_shimmy_openspiel_compatibility_passes_api_test(config) -> None:
    env = (OpenSpielCompatibilityV0(env=pyspiel.load_game("python_colony(max_plies=30)")) if config is None
           else OpenSpielCompatibilityV0(game_name="python_colony", config=config))  # fmt: skip
    api_test(env, num_cycles=60)
