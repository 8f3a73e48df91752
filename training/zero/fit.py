"""Fitting a network to search targets: the policy's cross-entropy to the search's policy, the value's
squared error to the outcome (`fit`, colony-zero's learner), and the gradient step every fitter shares.

Used by `colony-zero` (train.py), its refit (refit.py) and expert iteration (`colony-distill`,
distill/train.py), so the three fit with the same loss and the same step.
"""

from __future__ import annotations

import numpy as np
import torch

from ..augment import AUG_SYMS, augment, augment_cells
from ..model import PolicyValueNet, masked_log_probs
from ..ownership import ownership_errors
from ..teacher import greedy_action_features
from .config import ZeroConfig
from .replay import make_batch
from .selfplay import GameData


def gradient_step(model: PolicyValueNet, opt: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float) -> None:
    """One optimizer step on `loss`, the gradient's global norm clipped to `max_grad_norm`."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()


def policy_cross_entropy(logits: torch.Tensor, valid: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """Per-row cross-entropy of the policy over the valid slots to the target probabilities."""
    logp = masked_log_probs(logits, valid)
    return -torch.where(valid, probs * logp, torch.zeros_like(logp)).sum(-1)


def fit(model: PolicyValueNet, opt: torch.optim.Optimizer, data: GameData, steps: int, cfg: ZeroConfig,
        rng: np.random.Generator, device: torch.device) -> dict[str, float]:
    """`steps` Adam steps on minibatches of `data`; mean policy loss, target entropy and value loss."""
    model.train()
    sums = {"policy_loss": 0.0, "target_entropy": 0.0, "value_loss": 0.0, "ownership_loss": 0.0}
    n = data.n_positions
    with_own = model.ownership_head
    for _ in range(steps):
        idx = rng.integers(n, size=min(cfg.batch_size, n))
        states, obs, ids, probs, valid, z = make_batch(data, idx, cfg.root_value_mix, cfg.rollout_value_mix)
        own = data.ownership[idx]
        if cfg.augment_symmetry:
            syms = rng.choice(AUG_SYMS, size=len(idx))
            obs, ids = augment(obs, ids, syms)
            own = augment_cells(own, syms)  # moved with the planes
        feats = None
        if model.heuristic_prior:
            feats = torch.from_numpy(greedy_action_features(states, np.arange(len(idx)), ids.shape[1])).to(device)
        valid_t = torch.from_numpy(valid).to(device)
        out = model(torch.from_numpy(np.ascontiguousarray(obs)).to(device), torch.from_numpy(ids).to(device), feats,
                    with_ownership=with_own, valid=valid_t)
        logits, value = out[0], out[1]
        p = torch.from_numpy(probs).to(device)
        w = torch.from_numpy(data.full_search[idx].astype(np.float32)).to(device)  # fast searches teach no policy
        w_sum = w.sum().clamp_min(1.0)
        policy_loss = (w * policy_cross_entropy(logits, valid_t, p)).sum() / w_sum
        value_loss = ((torch.tanh(value) - torch.from_numpy(z).to(device)) ** 2).mean()
        loss = policy_loss + cfg.value_loss_coef * value_loss
        if with_own:
            own_loss = ownership_errors(out[2], torch.from_numpy(own).to(device)).mean()
            loss = loss + cfg.ownership_loss_coef * own_loss
            sums["ownership_loss"] += float(own_loss.detach())
        gradient_step(model, opt, loss, cfg.max_grad_norm)
        plogp = torch.where(p > 0, p * torch.log(p.clamp_min(1e-30)), torch.zeros_like(p))
        sums["policy_loss"] += float(policy_loss.detach())
        sums["target_entropy"] += float(-(w * plogp.sum(-1)).sum() / w_sum)
        sums["value_loss"] += float(value_loss.detach())
    model.eval()
    return {k: v / max(1, steps) for k, v in sums.items()}
