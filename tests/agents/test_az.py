"""The batched network-guided search (colony_env.agents.az): batching, Gumbel root, values."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import colony_env as ce
from colony_env.agents._az import considered_visits_table
from colony_env.agents._search import position_seeds, random_playout, solve, solve_actions, winning_action
from colony_env.agents.az import MAX_LEGAL, AZAgent, BatchedSearch, RolloutMixEvaluator, SearchConfig, pruned_visits
from colony_env.agents.base import MAX_LEAF_PLAYOUTS, MAX_SIMULATIONS
from colony_env.constants import I_TO_MOVE, PASS_ACTION
from colony_env.symmetry import TRANSPOSE_ACTIONS
from colony_env.engine import _wrap
from helpers import minimax, minimax_after


def hashed_evaluator(states, obs, ids, counts):
    """Deterministic, row-independent 'network': logits from the ids, value from the planes.

    Each row depends only on its own inputs, so batched and one-at-a-time calls give the
    same numbers bit for bit (what a deterministic net gives up to float reordering).
    """
    logits = np.sin(ids.astype(np.float64) * 0.37 + counts[:, None] * 0.01) * 2.0
    own = obs[:, :4].sum(axis=(1, 2, 3)) + obs[:, 8].sum(axis=(1, 2))
    opp = obs[:, 4:8].sum(axis=(1, 2, 3)) + obs[:, 9].sum(axis=(1, 2))
    return logits, np.tanh(0.05 * (own - opp) + 0.01 * obs[:, 11].sum(axis=(1, 2)))


def midgame_states(n: int, plies: int = 30) -> list[ce.GameState]:
    out = []
    for seed in range(n):
        rng = np.random.default_rng(seed)
        s = ce.new_game(seed)
        for _ in range(plies + seed):
            if s.is_over:
                break
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
        if not s.is_over:
            out.append(s)
    return out


KATAGO_PUCT = {"root": "puct", "forced_playouts": 2.0, "root_dirichlet": 0.25}  # forced playouts, pruning, noise


@pytest.mark.parametrize("root", ["gumbel", "puct", "katago"])
def test_batched_search_equals_one_at_a_time(root):
    states = [ce.new_game(3), *midgame_states(5)]
    cfg = SearchConfig(simulations=24, **(KATAGO_PUCT if root == "katago" else {"root": root}))
    batched = BatchedSearch(hashed_evaluator, cfg).search(states, np.random.default_rng(7))
    rng = np.random.default_rng(7)  # the same generator, drawn in the same order (tree by tree)
    single = [BatchedSearch(hashed_evaluator, cfg).search([s], rng)[0] for s in states]
    for a, b in zip(batched, single):
        assert a.action == b.action
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.visits, b.visits)
        np.testing.assert_array_equal(a.q, b.q)
        np.testing.assert_array_equal(a.policy, b.policy)
        assert a.value == b.value


def test_act_batch_plays_what_act_plays_game_by_game():
    """AZAgent.act_batch (colony-eval --batch): each game draws its Gumbel noise from its own
    generator, so with a row-independent evaluator every move equals `act` on that game alone,
    forced moves included (they are played without a search and draw nothing)."""
    states = [forced_pass_state(), *midgame_states(4), ce.new_game(9)]
    agent = AZAgent(hashed_evaluator, SearchConfig(simulations=16))
    rngs = [np.random.default_rng(100 + k) for k in range(len(states))]
    batched = agent.act_batch(states, rngs)
    single = [agent.act(s, np.random.default_rng(100 + k)) for k, s in enumerate(states)]
    assert batched == single
    # and each generator is left where `act` leaves it
    after = [np.random.default_rng(100 + k) for k in range(len(states))]
    for s, r in zip(states, after):
        agent.act(s, r)
    assert [r.random() for r in rngs] == [r.random() for r in after]
    with pytest.raises(ValueError, match="one per state"):
        agent.search.search(states[1:3], [np.random.default_rng(0)])


def test_batching_makes_fewer_evaluator_calls():
    states = midgame_states(6)
    search = BatchedSearch(hashed_evaluator, SearchConfig(simulations=10))
    search.search(states, np.random.default_rng(0))
    assert search.evaluator_calls <= 11  # one for the roots, one per simulation step
    assert search.leaf_evaluations > 5 * search.evaluator_calls


@pytest.mark.parametrize("root", ["gumbel", "puct"])
def test_search_statistics_are_consistent(root):
    s = midgame_states(1)[0]
    r = BatchedSearch(hashed_evaluator, SearchConfig(simulations=40, root=root)).search([s], np.random.default_rng(1))[0]
    np.testing.assert_array_equal(np.sort(r.actions), ce.legal_actions(s))
    assert r.visits.sum() == 40
    assert r.policy.shape == r.actions.shape and abs(r.policy.sum() - 1) < 1e-9 and np.all(r.policy >= 0)
    assert abs(r.prior.sum() - 1) < 1e-9
    assert r.action in set(r.actions.tolist())
    assert -1.0 <= r.value <= 1.0
    if root == "puct":
        assert r.visits[list(r.actions).index(r.action)] == r.visits.max()


@pytest.mark.parametrize("root", ["gumbel", "puct"])
def test_result_keeps_the_trees_canonical_ids_and_the_position_after_the_move(root):
    """Issue 29: the tree holds canonical ids of the root's mover (what the network scored and
    self-play stores); only the chosen move is in the board frame, and the next position is the
    tree's child, equal to the engine's `apply_action`."""
    states = [*midgame_states(6), forced_pass_state()]
    assert {int(s.to_move) for s in states} == {0, 1}
    results = BatchedSearch(hashed_evaluator, SearchConfig(simulations=12, root=root)).search(states, np.random.default_rng(3))
    for s, r in zip(states, results):
        assert r.colour == int(s.to_move)
        np.testing.assert_array_equal(r.canonical_actions, ce.symmetry.board_action_to_canonical(ce.legal_actions(s), s.to_move))
        np.testing.assert_array_equal(r.actions, ce.legal_actions(s))  # the engine's order, board frame
        assert r.action in set(r.actions.tolist())
        assert r.next_state == ce.apply_action(s, r.action)


def test_gumbel_sequential_halving_table_matches_mctx():
    # mctx seq_halving.get_sequence_of_considered_visits(4, 10), worked by hand: log2(4) = 2 phases;
    # phase 1 gives each of the 4 int(10 / (2 * 4)) = 1 visit, phase 2 the best 2 int(10 / (2 * 2)) = 2 visits
    # each, and the budget left goes on in rounds of the 2.
    assert considered_visits_table(4, 10)[4].tolist() == [0, 0, 0, 0, 1, 1, 2, 2, 3, 3]
    assert considered_visits_table(16, 5)[1].tolist() == [0, 1, 2, 3, 4]


def test_gumbel_root_considers_at_most_m_actions():
    s = midgame_states(1)[0]
    cfg = SearchConfig(simulations=16, root="gumbel", max_considered=4)
    r = BatchedSearch(hashed_evaluator, cfg).search([s], np.random.default_rng(2))[0]
    assert (r.visits > 0).sum() <= 4
    # the chosen action is among the most visited considered ones
    assert r.visits[list(r.actions).index(r.action)] == r.visits.max()


def forced_pass_state() -> ce.GameState:
    """Red to move with every satellite connected: the only legal action is pass (R4.3)."""
    rows = [".." * 10] * 10
    rows[0] = "r1b1" + ".." * 8
    rows[1] = "b2r2" + ".." * 8
    d = {"board": rows, "to_move": "red", "unlocked": True, "finished": None, "grace_left": 0, "ply": 10,
         "passes": 0, "max_plies": 400}
    return ce.GameState.from_dict(d)


def test_one_legal_action_is_played_without_search():
    s = forced_pass_state()
    assert ce.legal_actions(s).tolist() == [PASS_ACTION]
    calls = []

    def counting(states, obs, ids, counts):
        calls.append(len(states))
        return hashed_evaluator(states, obs, ids, counts)

    r = BatchedSearch(counting, SearchConfig(simulations=30)).search([s], np.random.default_rng(0))[0]
    assert r.action == PASS_ACTION and r.policy.tolist() == [1.0] and r.visits.sum() == 0
    assert calls == [1]  # the root only
    assert AZAgent(counting, SearchConfig(simulations=30)).act(s, np.random.default_rng(0)) == PASS_ACTION


def test_gumbel_with_all_but_one_action_ruled_out_by_the_prior():
    s = midgame_states(1)[0]
    legal = ce.legal_actions(s)
    favourite = int(legal[len(legal) // 2])
    colour = int(s._a[I_TO_MOVE])
    fav_canonical = int(ce.symmetry.board_action_to_canonical(favourite, colour))

    def one_hot(states, obs, ids, counts):
        logits = np.where(ids == fav_canonical, 0.0, -1e9)  # every other action ~ probability 0
        return logits, np.zeros(len(states))

    for m in (1, 16):
        r = BatchedSearch(one_hot, SearchConfig(simulations=12, max_considered=m, gumbel_scale=0.0)).search(
            [s], np.random.default_rng(0))[0]
        assert r.action == favourite
        assert np.all(np.isfinite(r.policy)) and abs(r.policy.sum() - 1) < 1e-9
        assert r.policy[list(r.actions).index(favourite)] > 0.99


def test_value_sign_follows_the_colour_to_move():
    """A value 'good for the mover' must make the root value positive for red and for blue."""
    def mover_wins(states, obs, ids, counts):
        return np.zeros(ids.shape), np.full(len(states), 0.5)

    for s in midgame_states(6):
        r = BatchedSearch(mover_wins, SearchConfig(simulations=8, root="puct")).search([s], np.random.default_rng(0))[0]
        assert r.raw_value == pytest.approx(0.5)


def test_terminal_leaves_use_the_exact_result():
    """One ply before a decided end the search must find the winning move whatever the net says."""
    # Find a position in random play where the mover has a move that ends the game with its win.
    rng = np.random.default_rng(0)
    for seed in range(200):
        s = ce.new_game(seed)
        while not s.is_over:
            legal = ce.legal_actions(s)
            wins = [a for a in legal if (n := ce.apply_action(s, int(a))).is_over and n.winner == s.to_move]
            if wins and len(wins) < len(legal):
                def pessimist(states, obs, ids, counts):
                    return np.zeros(ids.shape), np.full(len(states), -0.9)

                r = BatchedSearch(pessimist, SearchConfig(simulations=len(legal) * 2, root="puct")).search(
                    [s], np.random.default_rng(0))[0]
                assert r.action in wins
                return
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    pytest.fail("no position with an immediately winning move found")


def random_game_positions(seeds: range, max_plies: int = 400) -> list[ce.GameState]:
    """Every position of one uniformly random game per seed (setups `new_game(seed)`)."""
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        s = ce.new_game(seed, max_plies=max_plies)
        while not s.is_over:
            out.append(s)
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    return out


def immediate_wins(s: ce.GameState) -> list[int]:
    """The reference: every legal action after which the game is over and the mover has won."""
    return [int(a) for a in ce.legal_actions(s)
            if (n := ce.apply_action(s, int(a))).is_over and n.winner == s.to_move]


@pytest.mark.parametrize("max_plies", [400, 60])
def test_winning_action_finds_exactly_the_first_immediate_win(max_plies):
    """`_search.winning_action` skips quiet moves (R6.2 cannot follow them) and must still miss no win:
    compared with applying every legal action, over whole random games (connected23, grace and, with
    60 plies, the ply limit as the end)."""
    checked = with_win = 0
    for s in random_game_positions(range(60), max_plies):
        legal = ce.legal_actions(s).astype(np.int64)
        wins = immediate_wins(s)
        i = winning_action(s._a, legal, len(legal))
        assert (int(legal[i]) if i >= 0 else None) == (wins[0] if wins else None)
        # the same actions as the search lists them for blue (transposed ids) give the same answer
        transposed = TRANSPOSE_ACTIONS[legal].astype(np.int16)
        assert winning_action(s._a, transposed, len(legal), True) == i
        checked += 1
        with_win += bool(wins)
    assert with_win >= 10 and checked > 1000  # the comparison met many wins, not just their absence


def test_decisive_root_plays_the_win_without_simulating():
    """With `decisive`, a root with an immediately winning action plays it, its target all on it, after
    the root's one evaluation, whatever the network thinks; without it the search simulates."""
    s = next(p for p in random_game_positions(range(30)) if 0 < len(immediate_wins(p)) < len(ce.legal_actions(p)))

    def pessimist(states, obs, ids, counts):  # the mover is lost, and the win is its least likely action
        return -np.asarray(ids, np.float64), np.full(len(states), -0.9)

    search = BatchedSearch(pessimist, SearchConfig(simulations=32, decisive=True))
    r = search.search([s], np.random.default_rng(0))[0]
    assert r.action == immediate_wins(s)[0]
    assert r.policy[r.canonical_actions.tolist().index(int(r.canonical_actions[np.argmax(r.policy)]))] == 1.0
    assert r.policy.max() == 1.0 and search.leaf_evaluations == 1
    off = BatchedSearch(pessimist, SearchConfig(simulations=32))
    off.search([s], np.random.default_rng(0))
    assert off.leaf_evaluations > 1


def test_decisive_scores_a_move_that_hands_the_opponent_a_win_as_lost():
    """Below the root, a node whose mover can win at once is a won position: a root move after which the
    opponent has an immediately winning reply gets the exact value -1, not the network's (here 0)."""
    def level(states, obs, ids, counts):
        return np.zeros(ids.shape), np.zeros(len(states))

    found = 0
    for s in random_game_positions(range(40)):
        legal = ce.legal_actions(s)
        if not 2 <= len(legal) <= 16:  # every action considered (m = 16)
            continue
        after = {int(a): ce.apply_action(s, int(a)) for a in legal}
        loses = {a: not n.is_over and n.to_move != s.to_move and bool(immediate_wins(n)) for a, n in after.items()}
        if not any(loses.values()) or all(loses.values()) or immediate_wins(s):
            continue
        for decisive in (True, False):
            r = BatchedSearch(level, SearchConfig(simulations=64, decisive=decisive)).search(
                [s], np.random.default_rng(1))[0]
            lost = np.array([loses[int(a)] for a in r.actions])
            visited = r.visits > 0
            if decisive:
                np.testing.assert_array_equal(r.q[lost & visited], -1.0)
                # uniform priors: the target ranks by value alone, and nothing is below a lost move
                assert r.policy[lost].max() <= r.policy[~lost].min() + 1e-12
            else:
                assert np.all(r.q[lost & visited] > -1.0)  # the level network alone cannot tell
        found += 1
        if found == 5:
            return
    pytest.fail(f"only {found} positions with a move that hands the opponent a win found")


def late_positions(seeds: range, from_connected: int, most_legal: int) -> list[ce.GameState]:
    """Positions of random games with `from_connected`+ connected satellites and at most `most_legal` actions."""
    return [s for s in random_game_positions(seeds) if sum(ce.connected_counts(s)) >= from_connected
            and len(ce.legal_actions(s)) <= most_legal]


def test_solve_agrees_with_plain_minimax_on_late_positions():
    """The compiled solver (decisive moves first, quiet moves last, turns as the engine gives them, grace
    included) must find exactly what minimax over the public engine finds, at 1 to 3 plies."""
    states = late_positions(range(40), 18, 16)
    seen = collections.Counter()
    for s in states[::4]:
        for plies in (1, 2, 3):
            want = minimax(s, plies)
            assert solve(s._a, plies, np.array([10**7], np.int64)) == want
            seen[want] += 1
    assert seen[1] >= 20 and seen[-1] >= 5 and seen[0] >= 20  # the comparison met every answer


def test_solve_actions_transposed_and_out_of_budget():
    """`solve_actions` values each action as minimax values the position after it, for the mover, in the
    board frame and in blue's transposed ids alike; with no budget every ongoing action is undecided."""
    s = next(p for p in late_positions(range(40), 20, 24) if minimax(p, 2) != 0)
    legal = ce.legal_actions(s).astype(np.int64)
    want = [minimax_after(s, int(a), 2) for a in legal]
    got = solve_actions(s._a, legal, len(legal), 2, 10**7)
    assert got.tolist() == want
    assert solve_actions(s._a, TRANSPOSE_ACTIONS[legal], len(legal), 2, 10**7, True).tolist() == want
    ended = [int(ce.apply_action(s, int(a)).is_over) for a in legal]
    starved = solve_actions(s._a, legal, len(legal), 2, 0)
    assert all(v == 0 or e for v, e in zip(starved.tolist(), ended))


def test_search_rejects_bad_input():
    with pytest.raises(ValueError, match="simulations"):
        SearchConfig(simulations=0)
    with pytest.raises(ValueError, match=r"simulations must be an int in 1\.\.1000000"):
        SearchConfig(simulations=MAX_SIMULATIONS + 1)
    with pytest.raises(ValueError, match=r"max_considered must be an int in 1\.\.1921"):
        SearchConfig(max_considered=MAX_LEGAL + 1)
    inner = hashed_evaluator
    with pytest.raises(ValueError, match=r"playouts must be an int in 1\.\.1000"):
        RolloutMixEvaluator(inner, 0.5, playouts=MAX_LEAF_PLAYOUTS + 1)
    with pytest.raises(ValueError, match=r"from_connected must be an int in 0\.\.22"):
        RolloutMixEvaluator(inner, 0.5, from_connected=23)  # 23 connected satellites end the game (R6.2.1)
    with pytest.raises(ValueError, match="PUCT root"):
        SearchConfig(forced_playouts=2.0)  # the default root is gumbel
    with pytest.raises(ValueError, match="PUCT root"):
        SearchConfig(root_dirichlet=0.25)
    with pytest.raises(ValueError, match="share"):
        SearchConfig(root="puct", root_dirichlet=1.5)
    with pytest.raises(ValueError, match="forced_playouts"):
        SearchConfig(root="puct", forced_playouts=-1.0)
    with pytest.raises(ValueError, match="root"):
        SearchConfig(root="alpha")
    with pytest.raises(ValueError, match="c_puct"):
        SearchConfig(c_puct=float("nan"))
    s = forced_pass_state()
    over = ce.apply_action(ce.apply_action(s, PASS_ACTION), PASS_ACTION)
    if over.is_over:
        with pytest.raises(ValueError, match="ongoing"):
            BatchedSearch(hashed_evaluator).search([over], np.random.default_rng(0))


def test_rollout_mix_values_are_the_playout_result_for_the_mover():
    """mix=1: each leaf's value is one random playout's result (R7) seen by the colour to move there."""
    states = midgame_states(8)
    assert {int(s._a[I_TO_MOVE]) for s in states} == {0, 1}  # both colours to move
    packed = np.stack([s._a for s in states]).astype(np.int32)
    obs = np.zeros((len(states), 1), np.float32)
    ids = np.zeros((len(states), 1), np.int16)
    counts = np.ones(len(states), np.int32)
    const = lambda value: lambda st, o, i, c: (np.zeros(i.shape), np.full(len(st), value))
    for k, s in enumerate(states):
        _, v = RolloutMixEvaluator(const(0.3), 1.0, seed=k)(packed[k:k + 1], obs[:1], ids[:1], counts[:1])
        seed = int(position_seeds(packed[k:k + 1], k)[0])  # the leaf's own seed: its position and the salt k
        end = _wrap(random_playout(packed[k].copy(), seed))  # the same playout, replayed
        assert end.is_over
        assert v.shape == (1,) and v[0] == end.rewards()[s.to_move]
    half = RolloutMixEvaluator(const(0.4), 0.5, seed=3)
    _, v = half(packed, obs, ids, counts)
    assert set(np.round(v, 6)) <= {0.7, 0.2, -0.3}  # 0.5 * 0.4 + 0.5 * {+1, 0, -1}
    assert len(set(np.round(v, 6))) > 1  # the playouts differ
    with pytest.raises(ValueError, match="rollout mix"):
        RolloutMixEvaluator(hashed_evaluator, 1.5)


def test_rollout_mix_from_connected_mixes_only_late_leaves_with_the_playouts_mean():
    """`from_connected`: leaves with fewer connected satellites keep the network's value exactly; the others
    get the mean of `playouts` playouts (multiples of 1/playouts, for the colour to move)."""
    positions = random_game_positions(range(6))
    totals = np.array([sum(ce.connected_counts(s)) for s in positions])
    assert (totals < 17).any() and (totals >= 17).any()
    packed = np.stack([s._a for s in positions]).astype(np.int32)
    n = len(positions)
    obs, ids, counts = np.zeros((n, 1), np.float32), np.zeros((n, 1), np.int16), np.ones(n, np.int32)
    const = lambda st, o, i, c: (np.zeros(i.shape), np.full(len(st), 0.3))
    _, v = RolloutMixEvaluator(const, 1.0, seed=5, playouts=8, from_connected=17)(packed, obs, ids, counts)
    np.testing.assert_array_equal(v[totals < 17], 0.3)
    late = v[totals >= 17]
    np.testing.assert_allclose(late * 8, np.round(late * 8))  # a mean of 8 results in {-1, 0, +1}
    assert np.all(np.abs(late) <= 1.0) and not np.all(late == 0.3)
    for bad in ({"playouts": 0}, {"from_connected": -1}, {"playouts": 2.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RolloutMixEvaluator(const, 0.5, **bad)


def test_rollout_mix_values_depend_on_the_leaf_and_the_seed_alone():
    """A leaf's playouts are seeded by its position and the evaluator's seed: the same leaves give the same
    values in any order, alone or in a batch, before or after other calls (colony-eval's --workers, --batch
    and --resume cannot change a game); another seed, or another position, draws other playouts."""
    positions = random_game_positions(range(4))
    packed = np.stack([s._a for s in positions]).astype(np.int32)
    n = len(packed)
    obs, ids, counts = np.zeros((n, 1), np.float32), np.zeros((n, 1), np.int16), np.ones(n, np.int32)
    const = lambda st, o, i, c: (np.zeros(i.shape), np.zeros(len(st)))
    first = RolloutMixEvaluator(const, 1.0, seed=9, playouts=4)
    _, v = first(packed, obs, ids, counts)
    _, again = first(packed, obs, ids, counts)  # after a call
    order = np.random.default_rng(0).permutation(n)
    _, shuffled = RolloutMixEvaluator(const, 1.0, seed=9, playouts=4)(packed[order], obs, ids, counts)
    one = [RolloutMixEvaluator(const, 1.0, seed=9, playouts=4)(packed[k:k + 1], obs[:1], ids[:1], counts[:1])[1][0]
           for k in range(0, n, 37)]
    np.testing.assert_array_equal(v, again)
    np.testing.assert_array_equal(v[order], shuffled)
    np.testing.assert_array_equal(v[::37], one)
    _, other = RolloutMixEvaluator(const, 1.0, seed=10, playouts=4)(packed, obs, ids, counts)
    assert not np.array_equal(v, other)
    seeds = position_seeds(packed, 9)
    assert seeds.min() >= 0 and seeds.max() < 2**31 and len(np.unique(seeds)) == len(np.unique(packed, axis=0))
    np.testing.assert_array_equal(seeds, position_seeds(packed.copy(), 9))
    assert not np.array_equal(seeds, position_seeds(packed, 10))


# --- KataGo's forced playouts and policy target pruning (Wu 2019, section 3.2), root noise ----------------
def test_forced_playouts_give_every_visited_root_child_its_share():
    """With k = 2 every visited root child ends with about sqrt(k P(c) sum N) visits or more (it is forced
    whenever it falls below: at most one visit short, as the sum grows after the last check); plain PUCT
    leaves some visited children below that."""
    shortfalls = {}
    for k in (0.0, 2.0):
        worst = 0.0
        for s in midgame_states(6):
            r = BatchedSearch(hashed_evaluator, SearchConfig(simulations=200, root="puct", forced_playouts=k)).search(
                [s], np.random.default_rng(0))[0]
            need = np.sqrt(2.0 * r.prior * r.visits.sum())
            seen = r.visits > 0
            worst = max(worst, float((need[seen] - r.visits[seen]).max()))
        shortfalls[k] = worst
    assert shortfalls[2.0] <= 1.0
    assert shortfalls[0.0] > 1.0


def test_pruned_visits_take_away_only_forced_visits():
    """A hand-made root: c* (most visited) keeps its 40; a child whose PUCT value with fewer visits would
    still be below c*'s loses up to n_forced; a child of high value loses nothing; one left with <= 1 visit
    is dropped."""
    visits = np.array([40, 6, 6, 2, 0])
    q = np.array([0.5, -0.5, 0.55, -0.5, 0.0])
    prior = np.array([0.4, 0.2, 0.2, 0.1, 0.1])
    root = int(visits.sum()) + 1
    out = pruned_visits(visits, q, prior, 0, root, c_puct=1.25, forced_k=2.0)
    total = visits.sum()
    assert out[0] == 40
    best_u = q[0] + 1.25 * prior[0] * np.sqrt(root) / 41
    n_forced = np.sqrt(2.0 * prior[1] * total)  # about 2.9
    expected = max(6 - n_forced, 1.25 * prior[1] * np.sqrt(root) / (best_u - q[1]) - 1)
    assert out[1] == pytest.approx(expected) and 1 < out[1] < 6
    assert out[2] == 6  # its value alone is above c*'s PUCT value: its visits were earned
    assert out[3] == 0  # reduced to at most one visit: dropped
    assert out[4] == 0
    np.testing.assert_array_equal(pruned_visits(np.zeros(3, np.int64), np.zeros(3), np.ones(3) / 3, 0, 1, 1.25, 2.0),
                                  np.zeros(3))


def test_pruned_target_keeps_the_played_move_and_drops_forced_exploration():
    """The search's target with forced playouts: the played (most visited) move keeps all its visits, the
    target has no more mass outside it than the raw visit counts, and some child is pruned away."""
    dropped = 0
    for s in midgame_states(6):
        r = BatchedSearch(hashed_evaluator, SearchConfig(simulations=100, root="puct", forced_playouts=2.0)).search(
            [s], np.random.default_rng(0))[0]
        best = int(np.flatnonzero(ce.symmetry.canonical_action_to_board(r.canonical_actions, r.colour) == r.action)[0])
        assert r.visits[best] == r.visits.max()
        assert r.policy[best] >= r.visits[best] / r.visits.sum() - 1e-12
        assert np.all(r.policy[r.visits == 0] == 0)
        dropped += int(((r.visits > 0) & (r.policy == 0)).sum())
    assert dropped > 0


def test_root_dirichlet_noise_moves_the_search_not_the_reported_prior():
    """Noise changes where the visits go and is drawn from the generator (same seed, same search); the
    result's prior is the network's own."""
    s = midgame_states(1)[0]
    plain = BatchedSearch(hashed_evaluator, SearchConfig(simulations=64, root="puct")).search(
        [s], np.random.default_rng(0))[0]
    noisy = [BatchedSearch(hashed_evaluator, SearchConfig(simulations=64, root="puct", root_dirichlet=0.25)).search(
        [s], np.random.default_rng(seed))[0] for seed in (0, 0, 1)]
    np.testing.assert_array_equal(noisy[0].visits, noisy[1].visits)
    assert not np.array_equal(noisy[0].visits, noisy[2].visits)
    assert not np.array_equal(noisy[0].visits, plain.visits)
    for r in noisy:
        np.testing.assert_allclose(r.prior, plain.prior)
