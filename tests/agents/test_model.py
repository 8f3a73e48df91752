"""The policy-value network's action layout (R8) and the masked distribution's safety."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import observation, symmetry
from colony_env.constants import DISPLACEMENT_BASE, N_ACTIONS, PASS_ACTION
from colony_training.model import LOGIT_BOUND, MaskedCategorical, PolicyValueNet, legal_slots


@pytest.fixture(scope="module")
def net() -> PolicyValueNet:
    torch.manual_seed(0)
    model = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1)
    # Give the zero-initialised parts non-trivial weights so the layout checks can fail.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def _obs(n: int, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).random((n, observation.OBS_CHANNELS, 10, 10), np.float32))


def test_full_logits_follow_r8_layout(net: PolicyValueNet) -> None:
    """R8.1/R8.2: the logit of move (s,d,k) and displacement (s,d,pd,pk) is computed at cell s."""
    obs = _obs(1)
    logits, _ = net.full_logits(obs)
    assert logits.shape == (1, N_ACTIONS)
    feats, _ = net._trunk(obs)
    planes = net.policy_planes(feats)[0]  # [160, 10, 10]
    s, d, k = 37, 5, 3
    move = 32 * s + 4 * d + (k - 1)
    assert torch.allclose(logits[0, move], planes[4 * d + k - 1, s // 10, s % 10])
    pd, pk = 6, 2
    disp = DISPLACEMENT_BASE + 2 * (8 * (8 * s + d) + pd) + (pk - 1)
    assert torch.allclose(logits[0, disp], planes[32 + 2 * (8 * d + pd) + pk - 1, s // 10, s % 10])


def test_gathered_logits_equal_full_logits(net: PolicyValueNet) -> None:
    obs = _obs(3, seed=1)
    full, v_full = net.full_logits(obs)
    ids = torch.tensor([[0, 3199, 3200, 15999, PASS_ACTION, 777]] * 3)
    part, v = net(obs, ids)
    assert torch.allclose(part, full.gather(1, ids), atol=1e-5)
    assert torch.allclose(v, v_full)


def test_legal_slots_lists_each_rows_legal_ids() -> None:
    states = [ce.new_game(s) for s in range(3)]
    masks = np.stack([ce.legal_action_mask(s) for s in states])
    ids, valid = legal_slots(masks)
    for i, s in enumerate(states):
        assert list(ids[i][valid[i]]) == list(ce.legal_actions(s))
    assert ids.shape[1] == max(len(ce.legal_actions(s)) for s in states)


def test_all_but_one_illegal_with_extreme_logits_is_finite() -> None:
    """sb3-contrib #81/#247: masked softmax over 16,001 actions must never give NaN."""
    logits = torch.full((4, N_ACTIONS), 1e30)  # illegal logits far above the legal one
    logits[:, 5] = -1e30
    logits[1] = float("inf")
    logits[1, 5] = -float("inf")
    logits[2] = torch.randn(N_ACTIONS) * 1e6
    mask = torch.zeros((4, N_ACTIONS), dtype=torch.bool)
    mask[:, 5] = True
    mask[3, PASS_ACTION] = True
    mask[3, 5] = False
    logits.requires_grad_(True)
    dist = MaskedCategorical(logits, mask)
    assert torch.isfinite(dist.log_probs).all()
    assert torch.equal(dist.probs[:3, 5], torch.ones(3))
    assert float(dist.probs.detach()[mask == 0].max()) == 0.0
    assert torch.equal(dist.sample(), torch.tensor([5, 5, 5, PASS_ACTION]))
    ent = dist.entropy()
    assert torch.allclose(ent, torch.zeros(4))
    lp = dist.log_prob(torch.tensor([5, 5, 5, PASS_ACTION]))
    (lp.sum() + ent.sum()).backward()
    assert torch.isfinite(logits.grad).all()


def test_half_precision_logits_are_safe() -> None:
    logits = torch.full((2, N_ACTIONS), 60000.0, dtype=torch.float16)  # near float16's max
    mask = torch.zeros((2, N_ACTIONS), dtype=torch.bool)
    mask[0, [1, 2]] = True
    mask[1, 7] = True
    dist = MaskedCategorical(logits, mask)
    assert dist.probs.dtype == torch.float32
    assert torch.allclose(dist.probs[0, [1, 2]], torch.tensor([0.5, 0.5]))
    assert torch.isfinite(dist.entropy()).all()
    assert abs(float(dist.entropy()[0]) - np.log(2)) < 1e-6


def test_distribution_matches_softmax_over_legal_entries() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 50, generator=g) * 3
    mask = torch.rand(3, 50, generator=g) < 0.3
    mask[:, 0] = True
    dist = MaskedCategorical(logits, mask)
    for i in range(3):
        ref = torch.softmax(logits[i][mask[i]], 0)
        assert torch.allclose(dist.probs[i][mask[i]], ref, atol=1e-6)
        assert abs(float(dist.entropy()[i]) - float(-(ref * ref.log()).sum())) < 1e-5
    # Sampling never picks an illegal entry and follows the probabilities.
    samples = torch.stack([dist.sample(g) for _ in range(2000)])
    assert bool(mask.gather(1, samples.T).all())
    freq = (samples[:, 0:1] == torch.arange(50)).float().mean(0)
    assert float((freq - dist.probs[0]).abs().max()) < 0.05


def test_clamped_logits_keep_gradients_finite() -> None:
    logits = torch.tensor([[LOGIT_BOUND * 10, 0.0, -LOGIT_BOUND * 10]], requires_grad=True)
    dist = MaskedCategorical(logits, torch.tensor([[True, True, True]]))
    dist.log_prob(torch.tensor([1])).sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_row_without_legal_action_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one legal action"):
        MaskedCategorical(torch.zeros(2, 5), torch.tensor([[True] * 5, [False] * 5]))


def test_canonical_policy_maps_back_to_legal_board_actions(net: PolicyValueNet) -> None:
    """A blue decision is made on the transposed view; its action must be legal on the board."""
    from colony_training.agents import PolicyAgent

    agent = PolicyAgent(net, name="t", greedy=False)
    rng = np.random.default_rng(0)
    s = ce.new_game(3)
    seen_blue = False
    for _ in range(60):
        if s.is_over:
            break
        seen_blue |= s.to_move == ce.BLUE
        a = agent.act(s, rng)
        assert ce.is_legal(s, a)
        s = ce.apply_action(s, a)
    assert seen_blue
    assert symmetry.canonical_action_to_board(symmetry.board_action_to_canonical(123, ce.BLUE), ce.BLUE) == 123


@pytest.mark.parametrize("heuristic", [False, True])
def test_policy_agent_batch_matches_one_position_at_a_time(net: PolicyValueNet, heuristic: bool) -> None:
    """`PolicyAgent.policies` / `act_batch` (one forward pass, packed slots) give what the padded single-position
    path gives, for positions of both colours with different numbers of legal actions."""
    from colony_training.agents import PolicyAgent
    from colony_training.teacher import greedy_action_features

    model = net
    if heuristic:
        torch.manual_seed(1)
        model = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1, heuristic_prior=True)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        model.eval()
    agent = PolicyAgent(model, name="t")
    rng = np.random.default_rng(5)
    states = []
    for g in range(6):
        s = ce.new_game(100 + g)
        for _ in range(int(rng.integers(0, 90))):
            if s.is_over:
                break
            s = ce.apply_action(s, int(rng.choice(ce.legal_actions(s))))
        if not s.is_over:
            states.append(s)
    assert len({len(ce.legal_actions(s)) for s in states}) > 1 and len({int(s.to_move) for s in states}) == 2
    batch = agent.policies(states)
    for s, (ids, probs, value) in zip(states, batch):
        board = ce.legal_actions(s)
        canonical = symmetry.board_action_to_canonical(board, s.to_move)
        feats = None
        if heuristic:
            feats = torch.from_numpy(greedy_action_features(s._a[None], np.zeros(1, np.int64), len(board)))
        with torch.no_grad():
            logits, v = model(torch.from_numpy(observation.encode_observation(s, s.to_move))[None],
                              torch.from_numpy(canonical)[None], feats)
        np.testing.assert_array_equal(ids, board)
        np.testing.assert_allclose(probs, torch.softmax(logits[0].double(), 0).numpy(), atol=1e-6)
        assert probs.sum() == pytest.approx(1.0) and value == pytest.approx(float(v[0]), abs=1e-5)
    one_by_one = [agent.act(s, np.random.default_rng(i)) for i, s in enumerate(states)]
    together = agent.act_batch(states, [np.random.default_rng(i) for i in range(len(states))])
    assert together == one_by_one and all(ce.is_legal(s, a) for s, a in zip(states, together))
    assert agent.act_batch([], []) == []
    over = ce.new_game(0)
    while not over.is_over:
        over = ce.apply_action(over, int(rng.choice(ce.legal_actions(over))))
    with pytest.raises(ValueError, match="R8.4"):
        agent.policies([states[0], over])


# --- policy_target_features: the landing-cell term ------------------------------------------------
def _real_obs(n: int, seed: int = 0, plies: int = 40) -> torch.Tensor:
    """Observations of positions from random play (planes 0..3 one-hot, as the landing cell needs)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        s = ce.new_game(seed + i)
        for _ in range(plies):
            if s.is_over:
                break
            s = ce.apply_action(s, int(rng.choice(ce.legal_actions(s))))
        out.append(observation.encode_observation(s, s.to_move))
    return torch.from_numpy(np.stack(out))


@pytest.fixture(scope="module")
def target_net() -> PolicyValueNet:
    torch.manual_seed(1)
    model = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1, target_features=True)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def test_target_term_is_read_at_the_landing_cell(target_net: PolicyValueNet) -> None:
    """R8.1: move (s,d,k) lands on s + k*d; R4/R8.2: a displacement's mover lands v cells away (v its value)."""
    obs = _real_obs(1, seed=3)
    full, _ = target_net.full_logits(obs)
    feats, _ = target_net._trunk(obs)
    src = target_net.policy_planes(feats)[0]
    tgt = target_net.target_planes(feats)[0]
    s, d, k = 44, 2, 3  # E 3 from (4,4) lands on (4,7)
    move = 32 * s + 4 * d + (k - 1)
    assert torch.allclose(full[0, move], src[4 * d + k - 1, 4, 4] + tgt[4 * d + k - 1, 4, 7], atol=1e-5)
    own = obs[0, :4].argmax(0) + 1  # value of the mover's satellite per cell, where there is one
    s = int(torch.nonzero(obs[0, :4].sum(0).reshape(-1))[0])
    v = int(own.reshape(-1)[s])
    r, c = divmod(s, 10)
    d = next(d for d, (dr, dc) in enumerate(ce.constants.DIRECTIONS) if 0 <= r + v * dr < 10 and 0 <= c + v * dc < 10)
    dr, dc = ce.constants.DIRECTIONS[d]
    q = 32 + 2 * (8 * d + 1) + 0
    disp = DISPLACEMENT_BASE + 2 * (8 * (8 * s + d) + 1) + 0
    assert torch.allclose(full[0, disp], src[q, r, c] + tgt[q, r + v * dr, c + v * dc], atol=1e-5)


def test_target_gathered_logits_equal_full_logits(target_net: PolicyValueNet) -> None:
    """The per-action gather (training) gives the full-board reference at every id, off-board ones included."""
    obs = _real_obs(3, seed=5)
    full, v_full = target_net.full_logits(obs)
    ids = torch.arange(N_ACTIONS).expand(3, -1)
    part, v = target_net(obs, ids)
    assert torch.allclose(part, full, atol=1e-5)
    assert torch.allclose(v, v_full)


def test_target_features_change_logits_only_when_enabled() -> None:
    """The option adds parameters (so old checkpoints, without them, still load into the default net)."""
    plain = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1)
    withit = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1, target_features=True)
    assert "target_planes.weight" not in plain.state_dict()
    assert withit.state_dict()["target_planes.weight"].shape == (160, 8, 1, 1)
    assert withit.architecture()["target_features"] == 1 and plain.architecture()["target_features"] == 0


def test_global_pooling_lets_every_cell_see_the_whole_board() -> None:
    """KataGo's global pooling bias (`global_pool`): without it a corner cell's logits ignore the far
    corner (the receptive field of one block is 4 cells); with it they change when the far corner does."""
    far_cell_moves = []
    for pool in (False, True):
        torch.manual_seed(1)
        # 26 input planes (it reads the first 26 of `_obs`'s): the weights and inputs this test was written with
        model = PolicyValueNet(26, channels=8, blocks=1, global_pool=pool)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        assert ("trunk.0.pool_fc.weight" in model.state_dict()) == pool
        assert model.architecture()["global_pool"] == int(pool)
        assert model.blank_copy().architecture() == model.architecture()
        obs = _obs(1, seed=4)
        changed = obs.clone()
        changed[0, :, 9, 9] = 1.0 - changed[0, :, 9, 9]  # only the far corner (row 9, column 9) differs
        with torch.no_grad():
            before, after = model.full_logits(obs)[0][0, :160], model.full_logits(changed)[0][0, :160]  # cell (0, 0)
        far_cell_moves.append(float((after - before).abs().max()))
    assert far_cell_moves[0] == 0.0
    assert far_cell_moves[1] > 1e-4


@pytest.mark.parametrize("which", ["net", "target_net"])
def test_packed_valid_logits_and_gradients_equal_padded(which: str, request: pytest.FixtureRequest) -> None:
    """`valid` (training's packed path) gives the same logits at the legal slots and the same gradients."""
    model = request.getfixturevalue(which)
    rng = np.random.default_rng(3)
    states = [ce.new_game(11 + i) for i in range(4)]
    for _ in range(30):  # into the middle game, where displacements are legal
        states = [s if s.is_over else ce.apply_action(s, int(rng.choice(ce.legal_actions(s)))) for s in states]
    obs = torch.from_numpy(np.stack([observation.encode_observation(s, s.to_move) for s in states]))
    masks = np.stack([ce.legal_action_mask(s) for s in states])
    masks[1, PASS_ACTION] = True  # a pass slot too
    ids, valid = legal_slots(masks)
    valid[2, -3:] = False  # shorter rows: padding that the packed path skips
    ids_t, valid_t = torch.from_numpy(ids), torch.from_numpy(valid)
    weights = torch.from_numpy(rng.random(ids.shape, np.float32))
    grads = []
    for kwargs in ({}, {"valid": valid_t}):
        model.zero_grad()
        logits, value = model(obs, ids_t, **kwargs)
        ((torch.where(valid_t, logits, torch.zeros_like(logits)) * weights).sum() + value.sum()).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        if kwargs:
            assert torch.equal(logits[~valid_t], torch.zeros(int((~valid_t).sum())))
            assert torch.allclose(logits[valid_t], padded[valid_t], atol=1e-6)
        padded = logits.detach()
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-5)
    model.zero_grad()


def test_bf16_trunk_stays_close_keeps_float32_weights_and_is_copied(target_net: PolicyValueNet) -> None:
    """PPO's `precision: bf16`: the convolutions in bfloat16, the outputs float32 and near the fp32 ones."""
    obs = _real_obs(3, seed=7)
    ids = torch.arange(0, N_ACTIONS, 37).expand(3, -1)
    with torch.no_grad():
        ref_logits, ref_value = target_net(obs, ids)
    target_net.bf16_trunk = True
    try:
        with torch.no_grad():
            logits, value = target_net(obs, ids)
        copy = target_net.blank_copy()
    finally:
        target_net.bf16_trunk = False
    assert logits.dtype == torch.float32 and value.dtype == torch.float32
    assert not torch.equal(logits, ref_logits)  # the bf16 path did run
    scale = ref_logits.abs().max()
    assert (logits - ref_logits).abs().max() < 0.02 * scale
    assert (value - ref_value).abs().max() < 0.02 * max(1.0, float(ref_value.abs().max()))
    assert copy.bf16_trunk and not target_net.bf16_trunk
    assert all(t.dtype == torch.float32 for t in target_net.state_dict().values())


def test_count_features_are_the_engines_counts() -> None:
    """`count_features` reads the planes back into the engine's numbers: connected satellites (R3.1) and the
    colonies each side controls (R7.1), from the observer's view, over whole random games."""
    from colony_training.model import count_features

    rng = np.random.default_rng(3)
    rows, want = [], []
    for seed in range(3):
        s = ce.new_game(seed)
        while not s.is_over:
            me = int(s.to_move)
            red, blue = ce.controlled_counts(s)
            rows.append(observation.encode_observation(s, me))
            want.append((sum(ce.connected_counts(s)), *((red, blue) if me == 0 else (blue, red))))
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    got = count_features(torch.from_numpy(np.stack(rows))).numpy()
    want = np.array(want, np.float64)
    np.testing.assert_allclose(got[:, 0] * 23, want[:, 0], atol=1e-4)
    np.testing.assert_allclose(got[:, 4:] * 4, want[:, 1:], atol=1e-4)
    for k, threshold in zip((1, 2, 3), (20, 21, 22)):
        np.testing.assert_array_equal(got[:, k], want[:, 0] >= threshold)
    assert want[:, 0].max() >= 22 and want[:, 1:].max() >= 2  # the games reached the counts that matter


def test_with_count_inputs_starts_as_the_same_function_and_then_reads_the_counts() -> None:
    from colony_training.model import with_count_inputs

    torch.manual_seed(1)
    base = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1, target_features=True,
                          ownership_head=True).eval()
    grown = with_count_inputs(base).eval()
    assert grown.count_inputs and grown.architecture()["count_inputs"] == 1
    obs = _obs(5, seed=2)
    ids = torch.randint(0, N_ACTIONS, (5, 7))
    with torch.no_grad():
        for a, b in zip(base(obs, ids), grown(obs, ids)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        grown.stem.weight[:, -6:].fill_(0.5)
        grown.value_fc.weight[:, -6:].fill_(0.5)
        assert not torch.equal(base.value(obs), grown.value(obs))  # the new inputs are wired in
    with pytest.raises(ValueError, match="already"):
        with_count_inputs(grown)
