"""Per-colour GAE against hand-computed numbers, and the PPO loss's basic behaviour."""

from __future__ import annotations

import numpy as np
import torch

from colony_training.model import PolicyValueNet
from colony_training.ppo.loss import per_player_gae, ppo_loss

RED, BLUE = 0, 1


def test_gae_hand_computed_with_grace_moves_and_game_end() -> None:
    """One env, 5 steps: red, blue, blue (a grace move, R6.3), red ends the game and wins
    (R7.4: +1 / -1 to both colours), then red opens the next game.

    gamma 0.9, lambda 0.5; bootstrap after step 4: blue to move with V = 0.6 (so red's is -0.6).
        t4 red : delta = 0 + 0.9*(-0.6) - 0.5 = -1.04                  A = -1.04
        t3 red : delta = +1 - 0.4 = 0.6 (terminal)                      A = 0.6
        t2 blue: delta = -1 - 0.3 = -1.3 (blue's last step, the loss)   A = -1.3
        t1 blue: delta = 0.9*0.3 - 0.2 = 0.07                           A = 0.07 + 0.45*(-1.3) = -0.515
        t0 red : delta = 0.9*0.4 - 0.1 = 0.26 (next own step is t3)     A = 0.26 + 0.45*0.6 = 0.53
    """
    values = np.array([[0.1], [0.2], [0.3], [0.4], [0.5]], np.float32)
    movers = np.array([[RED], [BLUE], [BLUE], [RED], [RED]], np.int8)
    dones = np.array([[False], [False], [False], [True], [False]])
    rewards = np.zeros((5, 1, 2), np.float32)
    rewards[3, 0] = (1.0, -1.0)
    bootstrap = np.array([[-0.6, 0.6]], np.float32)
    adv, ret = per_player_gae(values, movers, dones, rewards, bootstrap, gamma=0.9, lam=0.5)
    np.testing.assert_allclose(adv[:, 0], [0.53, -0.515, -1.3, 0.6, -1.04], atol=1e-6)
    np.testing.assert_allclose(ret[:, 0], [0.63, -0.315, -1.0, 1.0, -0.54], atol=1e-6)


def test_gae_reduces_to_standard_gae_for_a_single_mover() -> None:
    """With one colour moving throughout, per-colour GAE is CleanRL's GAE."""
    rng = np.random.default_rng(0)
    t_len, gamma, lam = 7, 0.97, 0.8
    values = rng.standard_normal((t_len, 1)).astype(np.float32)
    dones = np.zeros((t_len, 1), bool)
    dones[3] = True
    rewards = np.zeros((t_len, 1, 2), np.float32)
    rewards[3, 0] = (-1.0, 1.0)
    boot = np.array([[0.25, -0.25]], np.float32)
    adv, _ = per_player_gae(values, np.zeros((t_len, 1), np.int8), dones, rewards, boot, gamma, lam)
    ref = np.zeros(t_len)
    last = 0.0
    for t in reversed(range(t_len)):
        nonterminal = 0.0 if dones[t, 0] else 1.0
        next_v = boot[0, 0] if t == t_len - 1 else values[t + 1, 0]
        delta = rewards[t, 0, 0] + gamma * next_v * nonterminal - values[t, 0]
        last = delta + gamma * lam * nonterminal * last
        ref[t] = last
    np.testing.assert_allclose(adv[:, 0], ref, atol=1e-5)


def test_gae_monte_carlo_limit_gives_each_colour_its_final_reward() -> None:
    """gamma = lambda = 1: every step's return is its colour's terminal reward (R7.4), per env."""
    rng = np.random.default_rng(1)
    t_len, n = 9, 3
    movers = rng.integers(0, 2, (t_len, n)).astype(np.int8)
    values = rng.uniform(-1, 1, (t_len, n)).astype(np.float32)
    dones = np.zeros((t_len, n), bool)
    dones[-1] = True
    rewards = np.zeros((t_len, n, 2), np.float32)
    rewards[-1] = [[1, -1], [-1, 1], [0, 0]]
    _, ret = per_player_gae(values, movers, dones, rewards, np.zeros((n, 2), np.float32), 1.0, 1.0)
    expected = rewards[-1][np.arange(n)[None, :], movers]
    np.testing.assert_allclose(ret, expected, atol=1e-5)


def test_ppo_loss_is_finite_and_moves_policy_towards_positive_advantage() -> None:
    torch.manual_seed(0)
    net = PolicyValueNet(4, channels=8, blocks=1)
    obs = torch.randn(6, 4, 10, 10)
    ids = torch.tensor([[0, 1, 2, 16000]] * 6)
    valid = torch.tensor([[True, True, True, False]] * 6)
    slots = torch.zeros(6, dtype=torch.long)
    with torch.no_grad():
        logits, values = net(obs, ids)
        from colony_training.model import MaskedCategorical

        old_logp = MaskedCategorical(logits, valid).log_prob(slots)
    adv = torch.ones(6)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    for _ in range(3):
        loss, info = ppo_loss(net, obs, ids, valid, slots, old_logp, values, adv, values + 1, 0.2, True, 0.0, 0.5,
                              norm_adv=False)
        assert torch.isfinite(loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        logits, _ = net(obs, ids)
        new_logp = MaskedCategorical(logits, valid).log_prob(slots)
    assert bool((new_logp > old_logp).all())
    assert info.clip_frac >= 0.0 and np.isfinite(info.approx_kl)


def test_ownership_targets_label_each_game_at_its_end_in_each_steps_frame() -> None:
    """`OwnershipTargets` (ownership_coef): every step of a game that ends within the rollout gets who controls each
    cell's colony at that game's end, from its mover's side, in the symmetry its observation was shown in; the steps
    of a game still in flight stay unknown. Checked against the same games replayed on the engine, one by one."""
    import colony_env as ce
    from colony_env import symmetry
    from colony_env.constants import I_TO_MOVE
    from colony_env.frame import to_frame
    from colony_env.vector import ColonyVectorEnv
    from colony_training.augment import AUG_SYMS
    from colony_training.ownership import ownership
    from colony_training.ppo.train import OwnershipTargets

    n, t_len = 3, 200
    env = ColonyVectorEnv(n, seed=5, max_plies=90)
    v = env.reset(seed=5)
    rng = np.random.default_rng(1)
    movers = np.zeros((t_len, n), np.int8)  # the rollout's buffer, filled before each step is recorded
    own = OwnershipTargets(movers)
    games: list[list[list[tuple[int, np.ndarray, int]]]] = [[[]] for _ in range(n)]  # slot -> games -> steps
    finals: list[list[ce.GameState]] = [[] for _ in range(n)]
    for t in range(t_len):
        syms = rng.choice(AUG_SYMS, size=n)
        actions = env.random_actions(rng)
        before = env.states.copy()
        for i in range(n):
            games[i][-1].append((t, before[i].copy(), int(syms[i])))
        movers[t] = v.to_move
        v, rewards, done, _ = env.step(actions)
        own.record(t, syms, done, before, actions)
        for i in np.flatnonzero(done):
            state = ce.GameState.from_array(before[i])
            final = ce.apply_action(state, int(to_frame(int(actions[i]), int(before[i][I_TO_MOVE]) == 1)))
            assert final.is_over and tuple(final.rewards()) == tuple(rewards[i])
            finals[i].append(final)
            games[i].append([])
    labelled = 0
    for i in range(n):
        assert len(finals[i]) >= 2  # several games per slot, so the ranges between ends are exercised
        for g, steps in enumerate(games[i]):
            for t, state, sym in steps:
                if g < len(finals[i]):
                    want = ownership(state[None], finals[i][g])[0][symmetry.CELL_GATHER[sym]]
                    assert own.known[t, i] and np.array_equal(own.targets[t, i], want)
                    labelled += int(np.count_nonzero(want) > 0)
                else:  # the game in flight at the end
                    assert not own.known[t, i] and not own.targets[t, i].any()
    assert labelled > 0  # some targets name a controlled colony
