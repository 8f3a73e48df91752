"""The pieces of PPO that are worth testing on their own: per-player GAE and the clipped loss.

Two colours share one network and one game stream, so a rollout is not one trajectory per env
but two interleaved ones. Each step belongs to the colour to move; a colour may move several
times in a row (grace moves, R6.3), and the only rewards are the terminal ones (R7.4), which
reach *both* colours' last steps of that game. `per_player_gae` therefore walks each env
backwards keeping, per colour, "the value and advantage of my next own decision" and "the
reward I collect before it".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..model import MaskedCategorical
from ..ownership import ownership_errors

N_COLOURS = 2


def per_player_gae(
    values: np.ndarray,
    movers: np.ndarray,
    dones: np.ndarray,
    rewards: np.ndarray,
    bootstrap: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation (Schulman et al. 2016) over per-colour trajectories.

    Args:
        values: float[T, N], V(s_t) from the view of the colour to move at step t.
        movers: int[T, N], colour (0 red, 1 blue) that acted at step t.
        dones: bool[T, N], the action at step t ended the game (the env then started a new one).
        rewards: float[T, N, 2], (red, blue) rewards produced by the action at step t.
        bootstrap: float[N, 2], value of each colour's next decision after the last step
            (V(s_T) for the colour to move in s_T, -V(s_T) for the other: zero-sum).
        gamma, lam: discount per own decision and the GAE lambda.

    For a step t of colour c whose next own decision is t' in the same game:
        delta_t = r + gamma * V(t') - V(t),  A_t = delta_t + gamma * lam * A_t'
    where r is 0; if the game ends before c decides again, r is c's terminal reward and
    V(t') = A_t' = 0. Returns (advantages, returns = advantages + values), both float32[T, N].
    """
    t_len, n = values.shape
    adv = np.zeros((t_len, n), np.float32)
    env = np.arange(n)
    next_value = bootstrap.astype(np.float32).copy()  # [N, 2]
    next_adv = np.zeros((n, N_COLOURS), np.float32)
    pending_reward = np.zeros((n, N_COLOURS), np.float32)
    for t in reversed(range(t_len)):
        ended = dones[t]
        # The game ended by this step: both colours' futures are cut here and each gets its reward.
        pending_reward[ended] = rewards[t][ended]
        next_value[ended] = 0.0
        next_adv[ended] = 0.0
        c = movers[t].astype(np.int64)
        delta = pending_reward[env, c] + gamma * next_value[env, c] - values[t]
        adv[t] = delta + gamma * lam * next_adv[env, c]
        next_value[env, c] = values[t]
        next_adv[env, c] = adv[t]
        pending_reward[env, c] = 0.0
    return adv, adv + values.astype(np.float32)


@dataclass
class LossInfo:
    """Scalars logged per update."""

    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float
    clip_frac: float
    teacher_ce: float = 0.0
    lookahead_ce: float = 0.0  # -log P(kept set) over the rows with lookahead targets (training/ppo/lookahead.py)
    ownership_loss: float = 0.0  # the ownership head's mean squared error over the rows with a known target


def kept_set_loss(log_probs: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """Per row `-log P(kept set)` (0 for a row with no kept slot, i.e. no target): `log_probs` [B, W] of the legal
    slots (`MaskedCategorical.log_probs`), `kept` bool [B, W]."""
    masked = torch.where(kept, log_probs, torch.full_like(log_probs, -torch.inf))
    has = kept.any(-1)
    return torch.where(has, -torch.logsumexp(torch.where(has[:, None], masked, torch.zeros_like(masked)), -1),
                       torch.zeros_like(has, dtype=log_probs.dtype))


def ppo_loss(
    model: nn.Module,
    obs: torch.Tensor,
    ids: torch.Tensor,
    valid: torch.Tensor,
    slots: torch.Tensor,
    old_logp: torch.Tensor,
    old_values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    clip_coef: float,
    clip_vloss: bool,
    ent_coef: float,
    vf_coef: float,
    norm_adv: bool,
    teacher_best: torch.Tensor | None = None,
    teacher_weight: float = 0.0,
    features: torch.Tensor | None = None,
    kept: torch.Tensor | None = None,
    lookahead_weight: float = 0.0,
    lookahead_share: float = 1.0,
    ownership: torch.Tensor | None = None,
    own_known: torch.Tensor | None = None,
    ownership_weight: float = 0.0,
) -> tuple[torch.Tensor, LossInfo]:
    """The clipped PPO objective (CleanRL's ppo.py) on one minibatch, with masked actions.

    `ids`/`valid` are each position's candidate actions (`model.legal_slots`), `slots` the
    chosen entry of `ids`. With `teacher_best` (bool, the teacher's best slots) and a positive
    `teacher_weight`, the kickstarting cross-entropy towards the uniform distribution over
    those slots is added (training/teacher.py). With `kept` (bool, the one-ply lookahead's kept slots; rows
    without a target have none) and a positive `lookahead_weight`, `-log P(kept set)` is added, summed over the
    rows and divided by `rows * lookahead_share` (the expected number of rows with a target), so that the loss is
    linear in the rows: two halves of a minibatch weighted by their shares add up to the whole
    (training/ppo/lookahead.py). With `ownership` (int8 [B, 100], training/ownership.py), `own_known` (bool [B]) and a
    positive `ownership_weight`, the ownership head's squared error is added, summed over the known rows and
    divided by all rows (linear in the rows too; a row whose game had not ended counts 0).
    """
    with_own = ownership is not None and ownership_weight > 0
    out = model(obs, ids, features, valid=valid, with_ownership=with_own)
    logits, values = out[0], out[1]
    dist = MaskedCategorical(logits, valid)
    logp = dist.log_prob(slots)
    entropy = dist.entropy().mean()
    log_ratio = logp - old_logp
    ratio = log_ratio.exp()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - log_ratio).mean()  # the k3 estimator (J. Schulman's blog)
        clip_frac = ((ratio - 1.0).abs() > clip_coef).float().mean()
    if norm_adv and advantages.numel() > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    pg_loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()
    if clip_vloss:
        v_clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
        v_loss = 0.5 * torch.max((values - returns) ** 2, (v_clipped - returns) ** 2).mean()
    else:
        v_loss = 0.5 * ((values - returns) ** 2).mean()
    loss = pg_loss - ent_coef * entropy + vf_coef * v_loss
    teacher_ce = torch.zeros(())
    if teacher_best is not None and teacher_weight > 0:
        best = teacher_best & valid
        n_best = best.sum(-1).clamp(min=1)
        teacher_ce = -(torch.where(best, dist.log_probs, torch.zeros_like(dist.log_probs)).sum(-1) / n_best).mean()
        loss = loss + teacher_weight * teacher_ce
    lookahead_ce = torch.zeros(())
    if kept is not None and lookahead_weight > 0:
        kept = kept & valid
        per_row = kept_set_loss(dist.log_probs, kept)
        loss = loss + lookahead_weight * per_row.sum() / (len(per_row) * max(lookahead_share, 1e-8))
        with torch.no_grad():
            has = kept.any(-1)
            lookahead_ce = per_row[has].mean() if has.any() else torch.zeros(())
    own_loss = torch.zeros(())
    if with_own:
        errors = torch.where(own_known, ownership_errors(out[2], ownership), torch.zeros(()))
        loss = loss + ownership_weight * errors.sum() / len(errors)
        with torch.no_grad():
            own_loss = errors.sum() / own_known.sum().clamp(min=1)
    info = LossInfo(*(float(x.detach()) for x in (pg_loss, v_loss, entropy, approx_kl, clip_frac, teacher_ce,
                                                   lookahead_ce, own_loss)))
    return loss, info
