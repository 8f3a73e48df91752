"""Can the network fit a clear target on a colony-zero run's positions? A diagnostic.

    python examples/zero_learnability_probe.py runs/zero-quickstart-XXXX [--shards 2] [--steps 600]

When a from-scratch run's policy loss stays at the entropy of a uniform policy, either the
search targets carry no learnable signal or the fitting does not work. This probe separates
the two: it replaces the stored targets of the run's first replay shards by a clear,
deterministic one (the greedy agent's choice, one-hot; `colony_env.agents.greedy`, a heuristic
used here only as a yardstick, never in training) and fits a fresh quickstart-sized network
exactly as `colony-zero` fits (same batches, augmentation, optimiser, learning rate). It prints
the held-out cross-entropy and top-1 agreement every 100 steps, next to the held-out
cross-entropy of a network fitted the same way to the run's own search targets.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from colony_env import symmetry
from colony_env.agents._search import greedy_scores
from colony_env.constants import I_TO_MOVE
from colony_env.observation import OBS_CHANNELS
from colony_training.augment import AUG_SYMS, augment
from colony_training.model import PolicyValueNet, masked_log_probs
from colony_training.zero.replay import make_batch, read_shard, shard_generations, shard_path
from colony_training.zero.selfplay import GameData, concat

HELD_OUT = 2000  # positions kept out of fitting


def greedy_targets(data: GameData) -> np.ndarray:
    """One-hot on the greedy agent's choice among each position's stored legal ids."""
    probs = np.zeros_like(data.target_probs)
    for p in range(data.n_positions):
        a, b = data.offsets[p], data.offsets[p + 1]
        board_ids = symmetry.canonical_action_to_board(data.target_ids[a:b].astype(np.int64), int(data.states[p, I_TO_MOVE]))
        probs[a + int(np.argmax(greedy_scores(data.states[p].astype(np.int32), np.asarray(board_ids, np.int64))))] = 1.0
    return probs


def fit(data: GameData, steps: int, seed: int, label: str) -> None:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(data.n_positions)
    held_out = max(1, min(HELD_OUT, data.n_positions // 5))  # a tiny run keeps most of its positions to fit
    test, train = order[:held_out], order[held_out:]
    model = PolicyValueNet(OBS_CHANNELS, 32, 2, False, True)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)

    def loss(idx: np.ndarray, aug: bool) -> tuple[torch.Tensor, torch.Tensor]:
        _, obs, ids, probs, valid, _ = make_batch(data, idx, 0.0)
        if aug:
            obs, ids = augment(obs, ids, rng.choice(AUG_SYMS, size=len(idx)))
        logits, _ = model(torch.from_numpy(np.ascontiguousarray(obs)), torch.from_numpy(ids))
        valid_t, p = torch.from_numpy(valid), torch.from_numpy(probs)
        logp = masked_log_probs(logits, valid_t)
        ce = -(torch.where(valid_t, p * logp, torch.zeros_like(logp))).sum(-1).mean()
        return ce, (logp.argmax(-1) == p.argmax(-1)).float().mean()

    for step in range(steps + 1):
        if step % 100 == 0 or step == steps:
            with torch.no_grad():
                ce, top1 = loss(test, False)
            print(f"{label:>14}  step {step:4d}  held-out cross-entropy {float(ce):.3f}  top-1 {float(top1):.3f}", flush=True)
        if step < steps:
            ce, _ = loss(rng.choice(train, 256), True)
            opt.zero_grad()
            ce.backward()
            opt.step()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="a colony-zero run directory")
    p.add_argument("--shards", type=int, default=2, help="replay shards (generations) to use, from the first")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    gens = shard_generations(args.run)[: args.shards]
    if not gens:
        p.error(f"no replay shards in {args.run}")
    torch.set_num_threads(1)
    data = concat([read_shard(shard_path(args.run, g)) for g in gens])
    print(f"{data.n_positions} positions from generations {gens}")
    fit(data, args.steps, args.seed, "search targets")
    data.target_probs = greedy_targets(data)
    fit(data, args.steps, args.seed, "greedy one-hot")


if __name__ == "__main__":
    main()
