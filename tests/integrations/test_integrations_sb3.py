"""Stable-Baselines3 integration: sb3-contrib's MaskablePPO on the Gymnasium wrapper
(examples/sb3_maskable_ppo.py). It learns a few thousand steps without NaNs, its masked
predictions are always legal (R8.4), and the masked distribution over all 16,001 actions
stays finite (the failure of sb3-contrib issues #81/#247)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

import colony_env as ce
from helpers import EXAMPLES, load_example

EXAMPLE = EXAMPLES / "sb3_maskable_ppo.py"
example = load_example("sb3_maskable_ppo.py")


def test_maskable_ppo_learns_without_nan_and_masked_predictions_are_legal():
    torch.set_num_threads(1)
    steps, n_steps = 3000, 500
    fresh = MaskablePPO("MlpPolicy", example.make_env(max_plies=60), n_steps=n_steps, batch_size=100, seed=0, device="cpu")
    model = example.train(steps, max_plies=60, seed=0, n_steps=n_steps, batch_size=100, n_epochs=2)
    assert model.num_timesteps >= steps
    # Learning happened (same seed, same initial weights) and nothing became NaN or inf.
    trained = dict(model.policy.named_parameters())
    initial = dict(fresh.policy.named_parameters())
    assert all(torch.isfinite(p).all() for p in trained.values())
    assert any(not torch.equal(trained[k], initial[k]) for k in trained)
    logged = model.logger.name_to_value
    for key in ("train/loss", "train/entropy_loss", "train/value_loss", "train/approx_kl"):
        assert math.isfinite(logged[key]), key
    # Greedy masked play: evaluate() raises on any illegal masked prediction.
    r = example.evaluate(model, games=3, max_plies=60, seed=5)
    assert r["decisions"] > 0 and r["win_rate"] + r["draw_rate"] + r["loss_rate"] == pytest.approx(1.0)
    # Sampled masked predictions on positions of both colours are legal for the engine (R8.4).
    env = example.make_env(max_plies=60)
    colours = set()
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        colours.add(env.learner)
        for _ in range(10):
            mask = env.action_masks()
            action, _ = model.predict(obs, action_masks=mask, deterministic=False)
            assert ce.is_legal(env.game_state, env.to_board_action(int(action)))
            obs, _, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                break
    assert colours == {ce.Colour.RED, ce.Colour.BLUE}


def test_masked_distribution_over_16001_actions_is_finite():
    """The masked categorical of sb3-contrib on our action space: illegal actions get exactly 0,
    probabilities form a simplex, entropy and gradients are finite, also after `probs` was cached
    before masking (the stale-cache path of #247) and with argument validation on."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dist = MaskableCategoricalDistribution(ce.N_ACTIONS)
    logits = (30.0 * torch.randn(6, ce.N_ACTIONS)).requires_grad_()
    masks = np.zeros((6, ce.N_ACTIONS), bool)
    for i, n_legal in enumerate([1, 2, 70, 150, 400, ce.N_ACTIONS]):
        masks[i, rng.choice(ce.N_ACTIONS, n_legal, replace=False)] = True
    dist.proba_distribution(logits)
    dist.distribution._validate_args = True
    _ = dist.distribution.probs  # cache probs before masking
    dist.apply_masking(masks)
    probs = dist.distribution.probs
    assert torch.all(probs[torch.from_numpy(~masks)] == 0)
    assert torch.allclose(probs.sum(-1), torch.ones(6), atol=1e-6)
    actions = dist.sample()
    assert masks[np.arange(6), actions.numpy()].all()
    entropy = dist.entropy()
    log_prob = dist.log_prob(actions)
    assert torch.isfinite(entropy).all() and torch.isfinite(log_prob).all() and entropy[0].item() == pytest.approx(0.0)
    (entropy.sum() + log_prob.sum()).backward()
    assert torch.isfinite(logits.grad).all()


def test_example_script_runs_and_saves(tmp_path, capsys):
    """The README's command with tiny settings; the saved model reloads and predicts legal moves."""
    torch.set_num_threads(1)
    path = tmp_path / "maskable_ppo.zip"
    assert example.main(["--steps", "128", "--n-steps", "64", "--eval-games", "1", "--max-plies", "30",
                         "--save", str(path)]) == 0
    out = capsys.readouterr().out
    assert "trained 128 steps" in out and "all legal" in out
    model = MaskablePPO.load(path, device="cpu")
    env = example.make_env(max_plies=30)
    obs, _ = env.reset(seed=3)
    mask = example.check_mask(env.action_masks())
    action, _ = model.predict(obs, action_masks=mask, deterministic=True)
    assert mask[int(action)]
    with pytest.raises(ValueError, match="unusable action mask"):
        example.check_mask(np.zeros(ce.N_ACTIONS, bool))
