"""A CleanRL-style masked PPO loop on Colony's Gymnasium vector env (`gymnasium.make_vec`).

    python examples/cleanrl_masked_ppo.py --num-envs 64 --iterations 20

One file, read top to bottom as CleanRL's `ppo.py`: the batched env comes from
Gymnasium's registry (`vectorization_mode="vector_entry_point"`: the compiled
`colony_env.gym_vector.ColonyGymVectorEnv`), the learners play a random opponent, and the
only additions to CleanRL's loop are the action mask and the autoreset step:

* masks come with every step in `infos["action_mask"]` (bool[N, 16001], the learner's
  frame); illegal logits get a large finite negative value, not -inf, so an all-False
  mask (a finished episode) stays finite;
* the env resets a finished slot on the *next* step (`AutoresetMode.NEXT_STEP`, Gymnasium's
  default): that step's action is ignored and its reward is 0, so those transitions are
  left out of the loss (`valid`).
"""

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium
import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import colony_env  # noqa: E402,F401  (registers the env ids)
from colony_env.constants import DISPLACEMENTS_PER_CELL, MOVES_PER_CELL, N_CELLS  # noqa: E402

ENV_ID = "colony_env/ColonySingleAgent-v0"
MASKED_LOGIT = -1e8  # finite: an all-masked row gives a uniform distribution, not NaN


@dataclass
class Args:
    num_envs: int = 64
    num_steps: int = 32  # steps per env per rollout
    iterations: int = 20
    max_plies: int = 400
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    update_epochs: int = 2
    minibatches: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    seed: int = 0


class Agent(nn.Module):
    """A small conv net. The policy head is one 1x1 conv with 160 planes: R8's ids are
    cell-major (32 move ids, then 128 displacement ids per cell), so the planes read per
    cell give all 16,000 board ids in order; pass gets one more logit."""

    def __init__(self, channels: int, width: int = 32) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(),
                                   nn.Conv2d(width, width, 3, padding=1), nn.ReLU())  # fmt: skip
        self.planes = nn.Conv2d(width, MOVES_PER_CELL + DISPLACEMENTS_PER_CELL, 1)
        self.pass_logit = nn.Linear(width, 1)
        self.value = nn.Linear(width, 1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        h = self.trunk(obs)
        pooled = h.mean(dim=(2, 3))
        p = self.planes(h).permute(0, 2, 3, 1).reshape(len(obs), N_CELLS, -1)  # [B, cell, 160]
        logits = torch.cat([p[..., :MOVES_PER_CELL].flatten(1), p[..., MOVES_PER_CELL:].flatten(1), self.pass_logit(pooled)], 1)
        logits = logits.masked_fill(~mask, MASKED_LOGIT)
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(pooled).squeeze(-1)


def train(args: Args) -> dict[str, float]:
    """Run the loop; returns summary numbers (also what the test checks)."""
    torch.manual_seed(args.seed)
    envs = gymnasium.make_vec(ENV_ID, num_envs=args.num_envs, vectorization_mode="vector_entry_point",
                              opponent="random", max_plies=args.max_plies)  # fmt: skip
    n, steps = args.num_envs, args.num_steps
    obs_shape, n_actions = envs.single_observation_space.shape, int(envs.single_action_space.n)
    agent = Agent(obs_shape[0])
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs_buf = torch.zeros((steps, n, *obs_shape))
    mask_buf = torch.zeros((steps, n, n_actions), dtype=torch.bool)
    act_buf = torch.zeros((steps, n), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf, valid_buf = (torch.zeros((steps, n)) for _ in range(5))

    obs, infos = envs.reset(seed=args.seed)
    next_obs, next_mask = torch.tensor(obs), torch.tensor(infos["action_mask"])
    next_done = torch.zeros(n)
    autoreset = np.zeros(n, bool)  # NEXT_STEP: these slots reset on the coming step
    stats = {"episodes": 0, "wins": 0, "illegal": 0, "learner_steps": 0, "loss": float("nan")}
    start = time.perf_counter()
    for _ in range(args.iterations):
        for t in range(steps):
            obs_buf[t], mask_buf[t], done_buf[t] = next_obs, next_mask, next_done
            valid_buf[t] = torch.tensor(~autoreset, dtype=torch.float32)
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs, next_mask)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            obs, reward, term, trunc, infos = envs.step(action.numpy())
            ended = term | trunc
            stats["learner_steps"] += int((~autoreset).sum())
            stats["episodes"] += int(ended.sum())
            stats["wins"] += int((reward > 0).sum())
            if "end_reason" in infos:
                stats["illegal"] += int((infos["end_reason"][infos["_end_reason"]] == "illegal_action").sum())
            rew_buf[t] = torch.tensor(reward, dtype=torch.float32)
            next_obs, next_mask = torch.tensor(obs), torch.tensor(infos["action_mask"])
            next_done = torch.tensor(ended, dtype=torch.float32)
            autoreset = ended

        with torch.no_grad():  # GAE (CleanRL's), a finished episode does not bootstrap
            next_value = agent.act(next_obs, next_mask)[3]
            adv = torch.zeros_like(rew_buf)
            last = torch.zeros(n)
            for t in reversed(range(steps)):
                nonterminal = 1.0 - (next_done if t == steps - 1 else done_buf[t + 1])
                nv = next_value if t == steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * nv * nonterminal - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                adv[t] = last
            returns = adv + val_buf

        b = lambda x: x.reshape(steps * n, *x.shape[2:])  # noqa: E731
        b_obs, b_mask, b_act, b_logp = b(obs_buf), b(mask_buf), b(act_buf), b(logp_buf)
        b_adv, b_ret, b_valid = b(adv), b(returns), b(valid_buf)
        size = steps * n // args.minibatches
        for _ in range(args.update_epochs):
            for idx in torch.randperm(steps * n).split(size):
                _, logp, entropy, value = agent.act(b_obs[idx], b_mask[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef))
                w = b_valid[idx]  # autoreset steps carry no real transition
                denom = w.sum().clamp(min=1.0)
                loss = ((pg + args.vf_coef * 0.5 * (value - b_ret[idx]) ** 2 - args.ent_coef * entropy) * w).sum() / denom
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
                stats["loss"] = loss.item()
    envs.close()
    stats["seconds"] = time.perf_counter() - start
    stats["win_rate"] = stats["wins"] / max(1, stats["episodes"])
    return stats


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    stats = train(Args(**vars(parser.parse_args(argv))))
    print(", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in stats.items()))
    return stats


if __name__ == "__main__":
    main()
