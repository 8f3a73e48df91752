"""Engine-level agents: legality everywhere, the greedy heuristic, MCTS search, rollout sampling."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import pos

import colony_env as ce
from colony_env.agents import (
    Agent,
    Evaluator,
    GreedyAgent,
    MCTSAgent,
    RandomAgent,
    RandomRolloutEvaluator,
)
from colony_env.agents import _search
from colony_env.agents.base import MAX_SIMULATIONS
from colony_env.agents.bench import sample_positions


class ZeroEvaluator(Evaluator):
    """Uniform prior, value 0: forces the Python search path."""

    def evaluate(self, state: ce.GameState) -> np.ndarray:
        return np.zeros(2)

    def prior(self, state: ce.GameState) -> list[tuple[int, float]]:
        legal = ce.legal_actions(state)
        return [(int(a), 1.0 / len(legal)) for a in legal]


@pytest.fixture(scope="module")
def positions() -> list[ce.GameState]:
    """Ongoing positions from random games: locked openings and unlocked middle games."""
    rng = np.random.default_rng(11)
    out = []
    for _ in range(3):
        state = ce.new_game(rng)
        while not state.is_over:
            if state.ply % 17 == 0:
                out.append(state)
            legal = ce.legal_actions(state)
            state = ce.apply_action(state, int(legal[rng.integers(len(legal))]))
    assert any(s.unlocked for s in out) and any(not s.unlocked for s in out)
    return out


def forced_pass_position() -> ce.GameState:
    """Red's only satellite is connected (R3.2), so red must pass (R4.3)."""
    return pos(
        """
        . . . .
        . . . .
        . . . .
        . . . .
        . . r1 b1
        """
    )


# A red-controlled colony is one move away (R4.1 connection move g9-g5, exactly 4; R7.1 5 > 3).
COLONY_DIAGRAM = """
. . . . . . . . . .
. . . . . . r4 . . .
. . . . . . . . . .
. . . . . . . . . .
. . . . . . . . . .
. . . . r1 b3 . . . .
"""


def agents_under_test() -> list[Agent]:
    return [
        RandomAgent(),
        GreedyAgent(),
        MCTSAgent(max_simulations=16),
        MCTSAgent(max_simulations=8, evaluator=ZeroEvaluator(), child_selection="puct", name="puct"),
        MCTSAgent(max_simulations=8, evaluator=RandomRolloutEvaluator(random_state=0), child_selection="puct", name="p2"),
    ]


def test_every_agent_plays_only_legal_actions(positions):
    rng = np.random.default_rng(0)
    for agent in agents_under_test():
        for state in positions:
            a = agent.act(state, rng)
            assert isinstance(a, int) and ce.is_legal(state, a), (agent, state, a)


def test_every_agent_passes_when_pass_is_forced():
    state = forced_pass_position()
    assert ce.legal_actions(state).tolist() == [ce.PASS_ACTION]
    for agent in agents_under_test():
        assert agent.act(state, np.random.default_rng(0)) == ce.PASS_ACTION


def test_agents_refuse_a_finished_game():
    state = ce.GameState.from_array(_search.random_playout(ce.new_game(0)._a, 1))
    assert state.is_over
    for agent in agents_under_test():
        with pytest.raises(ValueError, match="game is over"):
            agent.act(state, np.random.default_rng(0))


def test_whole_games_between_agents_stay_legal():
    """Complete games (grace moves R6.3, passes R4.3 and all): apply_action would raise on an illegal id."""
    rng = np.random.default_rng(3)
    for red, blue in ((GreedyAgent(), RandomAgent()), (MCTSAgent(max_simulations=4), GreedyAgent())):
        state = ce.new_game(5)
        while not state.is_over:
            agent = red if state.to_move == ce.RED else blue
            state = ce.apply_action(state, agent.act(state, rng))
        assert state.end_reason in ("connected23", "grace", "passes", "ply_limit")


def test_random_agent_is_uniform_over_legal_actions(positions):
    state = positions[-1]
    legal = ce.legal_actions(state)
    rng = np.random.default_rng(1)
    draws = [RandomAgent().act(state, rng) for _ in range(60 * len(legal))]
    values, counts = np.unique(draws, return_counts=True)
    assert set(values.tolist()) == set(legal.tolist())
    assert counts.min() > 20 and counts.max() < 110  # expectation 60 each


def test_rollout_sampler_is_uniform_and_legal(positions):
    """The rejection sampler must draw each legal action (R4, R8.4) with equal probability."""
    from numba import njit

    @njit
    def draws(a, n, seed):
        np.random.seed(seed)
        sats = np.empty(12, np.int64)
        cands = np.empty(96, np.int64)
        buf = np.empty(_search.MAX_LEGAL, np.int16)
        out = np.empty(n, np.int64)
        for i in range(n):
            out[i] = _search.sample_legal(a, sats, cands, buf)
        return out

    per_action = 400
    for state in positions[:: max(1, len(positions) // 6)] + [forced_pass_position()]:
        legal = ce.legal_actions(state)
        values, counts = np.unique(draws(state._a, per_action * len(legal), 7), return_counts=True)
        assert values.tolist() == legal.tolist()
        sigma = np.sqrt(per_action)
        assert np.all(np.abs(counts - per_action) < 6 * sigma), (state, counts.min(), counts.max())


def test_compiled_playout_is_reproducible_and_ends():
    a = ce.new_game(4)._a
    f1, f2 = _search.random_playout(a, 9), _search.random_playout(a, 9)
    assert np.array_equal(f1, f2)
    assert ce.GameState.from_array(f1).is_over


def test_greedy_takes_a_colony():
    """R4.1 connection move g9-g5 makes a colony red controls (R7.1: 5 > 3); every other move is quiet."""
    state = pos(COLONY_DIAGRAM)
    target = ce.parse_action("g9-g5", state)
    legal, scores = GreedyAgent().scores(state)
    assert scores[list(legal).index(target)] > max(s for a, s in zip(legal, scores) if a != target)
    for seed in range(5):
        assert GreedyAgent().act(state, np.random.default_rng(seed)) == target


def test_greedy_does_not_hand_the_opponent_colonies():
    """Connecting r1 to b4 makes a colony blue controls (R7.1: 4 > 3): greedy plays a quiet move instead."""
    state = pos(
        """
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . r1 . . .
        . . . . r2 b4 . . . .
        """
    )
    bad = {ce.parse_action("g6-g5", state), ce.parse_action("g6-f6", state)}
    assert bad <= set(ce.legal_actions(state).tolist())
    legal, scores = GreedyAgent().scores(state)
    assert all(s < 0 for a, s in zip(legal, scores) if a in bad)
    for seed in range(10):
        assert GreedyAgent().act(state, np.random.default_rng(seed)) not in bad


def test_greedy_sees_the_opponents_reply():
    """A connection that is no colony yet, but which blue completes at once (b2 c6-e6, R4.1) into a
    colony blue controls (R7.1: 6 > 1), is scored below a quiet move: the heuristic's threat term."""
    state = pos(
        """
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . b2 . . . r1 . . .
        . . . . . b4 . . . .
        """
    )
    pair = ce.parse_action("g6-f6", state)  # r1 next to b4: a pair, then b2 c6-e6 makes a blue colony
    after = ce.apply_action(state, pair)
    reply = ce.parse_action("c6-e6", after)
    assert ce.is_legal(after, reply)
    assert ce.controlled_counts(ce.apply_action(after, reply)) == (0, 1)
    legal, scores = GreedyAgent().scores(state)
    quiet = ce.parse_action("g6-h6", state)
    score = dict(zip(legal.tolist(), scores))
    assert score[pair] < score[quiet] == 0


@pytest.mark.parametrize("compiled", [True, False])
def test_mcts_finds_the_winning_move(compiled):
    """At ply max_plies-1 the next action ends the game (R6.2 ply_limit, scored by R7): only g9-g5
    wins (a red colony), every other move draws (no colonies)."""
    state = pos(COLONY_DIAGRAM, ply=398, max_plies=399)
    target = ce.parse_action("g9-g5", state)
    if compiled:
        agent = MCTSAgent(max_simulations=200)
        assert agent.compiled
    else:
        agent = MCTSAgent(max_simulations=200, evaluator=RandomRolloutEvaluator(random_state=0), child_selection="puct")
        assert not agent.compiled
    for seed in range(3):
        assert agent.act(state, np.random.default_rng(seed)) == target


def test_mcts_search_statistics_and_reproducibility(positions):
    state = next(s for s in positions if s.unlocked)
    agent = MCTSAgent(max_simulations=50, uct_c=1.0)
    root = agent.mcts_search(state, np.random.default_rng(5))
    assert sorted(c.action for c in root.children) == ce.legal_actions(state).tolist()
    assert sum(c.explore_count for c in root.children) == 50
    assert all(-c.explore_count <= c.total_reward <= c.explore_count for c in root.children)
    a1 = agent.act(state, np.random.default_rng(5))
    a2 = agent.act(state, np.random.default_rng(5))
    assert a1 == a2 == max(root.children, key=lambda c: (c.explore_count, c.total_reward)).action


def test_mcts_rejects_bad_settings_and_bad_priors(positions):
    with pytest.raises(ValueError, match="max_simulations"):
        MCTSAgent(max_simulations=0)
    with pytest.raises(ValueError, match=r"max_simulations must be an int in 1\.\.1000000, got 1000001"):
        MCTSAgent(max_simulations=MAX_SIMULATIONS + 1)  # its arrays would need gigabytes; 10**20 overflowed numba
    with pytest.raises(ValueError, match="uct_c"):
        MCTSAgent(uct_c=float("nan"))
    with pytest.raises(ValueError, match="child_selection"):
        MCTSAgent(child_selection="best")

    class Illegal(ZeroEvaluator):
        def prior(self, state):
            return [(ce.PASS_ACTION, 1.0)]

    agent = MCTSAgent(max_simulations=4, evaluator=Illegal())
    with pytest.raises(ValueError, match="evaluator prior"):
        agent.act(positions[1], np.random.default_rng(0))


def _one_hot_prior(favourite: int):
    """A root prior putting (almost) all its mass on `favourite`."""

    def prior(state):
        ids = ce.legal_actions(state)
        probs = np.full(len(ids), 1e-6)
        probs[ids == favourite] = 1.0
        return ids, probs

    return prior


def test_root_prior_steers_the_compiled_search(positions):
    """PUCT at the root (`_search.prior_root_search`): a near-one-hot prior with a large prior_c
    sends most simulations to its favourite, where plain UCT spreads them over the children."""
    state = next(s for s in positions if s.unlocked and len(ce.legal_actions(s)) > 20)
    legal = ce.legal_actions(state)
    favourite = int(legal[len(legal) // 2])
    agent = MCTSAgent(max_simulations=200, root_prior=_one_hot_prior(favourite), prior_c=50.0)
    root = agent.mcts_search(state, np.random.default_rng(0))
    visits = {c.action: c.explore_count for c in root.children}
    assert sorted(visits) == legal.tolist()
    assert sum(visits.values()) == 200
    assert visits[favourite] > 100
    plain = MCTSAgent(max_simulations=200).mcts_search(state, np.random.default_rng(0))
    assert max(c.explore_count for c in plain.children) < 100  # UCT alone spreads them out


def test_root_prior_cannot_hide_a_win():
    """With the default uniform floor (`uniform_mix`) the prior only orders the simulations:
    rollouts still find the one winning move (R6.2, R7) when the prior favours a drawing one.
    Without the floor PUCT never tries the move the prior rules out."""
    state = pos(COLONY_DIAGRAM, ply=398, max_plies=399)
    target = ce.parse_action("g9-g5", state)
    decoy = int(next(a for a in ce.legal_actions(state) if a != target))
    agent = MCTSAgent(max_simulations=300, root_prior=_one_hot_prior(decoy))
    for seed in range(3):
        assert agent.act(state, np.random.default_rng(seed)) == target
    blind = MCTSAgent(max_simulations=300, root_prior=_one_hot_prior(decoy), uniform_mix=0.0)
    assert blind.act(state, np.random.default_rng(0)) == decoy


def test_root_prior_errors(positions):
    state = positions[1]
    legal = ce.legal_actions(state)
    with pytest.raises(ValueError, match="prior_c"):
        MCTSAgent(root_prior=_one_hot_prior(0), prior_c=-1.0)
    with pytest.raises(ValueError, match="uniform_mix"):
        MCTSAgent(root_prior=_one_hot_prior(0), uniform_mix=1.5)
    with pytest.raises(ValueError, match="compiled search"):
        MCTSAgent(root_prior=_one_hot_prior(0), child_selection="puct")
    for bad in [lambda s: (legal[:-1], np.ones(len(legal) - 1)),  # a legal action missing
                lambda s: (np.append(legal[:-1], ce.PASS_ACTION), np.ones(len(legal))),  # an illegal one
                lambda s: (legal, np.ones(len(legal) - 1))]:  # probabilities do not match
        with pytest.raises(ValueError, match="each of the"):
            MCTSAgent(max_simulations=4, root_prior=bad).act(state, np.random.default_rng(0))
    for probs in (np.full(len(legal), np.nan), np.zeros(len(legal)), -np.ones(len(legal))):
        with pytest.raises(ValueError, match="finite, >= 0"):
            MCTSAgent(max_simulations=4, root_prior=lambda s, p=probs: (legal, p)).act(state, np.random.default_rng(0))


def test_bench_positions_are_ongoing():
    states = sample_positions(1, 0)
    assert states and all(not s.is_over for s in states)


def test_pettingzoo_adapter_plays_a_whole_aec_game():
    """Engine agents as AEC policies: the env accepts every action and pays R7.4 rewards."""
    from colony_env.agents import PettingZooAdapter
    from colony_env.env import env as make_env

    e = make_env()
    e.reset(seed=2)
    players = {"player_0": PettingZooAdapter(GreedyAgent(), seed=1), "player_1": PettingZooAdapter(RandomAgent(), seed=2)}
    totals = {"player_0": 0.0, "player_1": 0.0}
    for name in e.agent_iter():
        _, reward, termination, truncation, _ = e.last()
        totals[name] += reward
        action = players[name](e, name)
        assert (action is None) == (termination or truncation)
        e.step(action)
    final = e.unwrapped.game_state
    assert final.is_over
    assert (totals["player_0"], totals["player_1"]) == final.rewards()
    with pytest.raises(ValueError, match="not to move"):
        e.reset(seed=3)
        players["player_1"](e, "player_1")


def test_bench_cli_prints_simulations_per_second(capsys):
    from colony_env.agents.bench import main

    assert main(["--sims", "8", "--games", "1", "--repeats", "1", "--rollouts", "2"]) == 0
    out = capsys.readouterr().out
    assert "simulations/s per core" in out and "rollouts from the opening" in out and "greedy:" in out
    with pytest.raises(SystemExit):
        main(["--sims", "0"])


def test_search_prior_ablation_example_runs(capsys):
    """examples/search_prior_ablation.py (docs/experiments.md, "Search with the trained policy"), tiny settings:
    each prior plays its games and the table shows them."""
    from helpers import load_example

    load_example("search_prior_ablation.py").main(["--games", "2", "--simulations", "4", "--opponents", "random"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [r[0] for r in rows] == ["uniform", "untrained", "trained"]
    assert all(r[1] == "random" and int(r[2]) == 2 == int(r[3]) + int(r[4]) + int(r[5]) for r in rows)


def test_search_prior_ablation_tempered_control(capsys):
    """The `tempered` row (docs/experiments.md, "What the distillation changed") plays alone when asked; T <= 0 is refused."""
    from helpers import load_example

    example = load_example("search_prior_ablation.py")
    state = ce.new_game(2)
    ids1, p1 = example.tempered_prior(str(example.SHIPPED), 1.0)(state)
    ids3, p3 = example.tempered_prior(str(example.SHIPPED), 3.0)(state)
    assert np.array_equal(ids1, ids3) and np.isclose(p3.sum(), 1.0)
    assert -(p3 * np.log(p3)).sum() > -(p1 * np.log(p1)).sum()  # higher entropy
    assert np.argmax(p1) == np.argmax(p3)  # flattened, same order
    main = example.main
    main(["--games", "2", "--simulations", "4", "--opponents", "random", "--priors", "tempered", "--temperature", "3"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [r[:3] for r in rows] == [["tempered", "random", "2"]]
    with pytest.raises(SystemExit):
        main(["--priors", "tempered", "--temperature", "0"])
    assert "--temperature must be > 0" in capsys.readouterr().err
