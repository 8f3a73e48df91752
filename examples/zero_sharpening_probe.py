"""Would sharper policy targets make a colony-zero policy play better? An A/B on a fixed replay.

    python examples/zero_sharpening_probe.py RUN --steps 600 --temperatures 1,0.25,0.05 --out DIR
    colony-eval checkpoint:DIR/T0.25.pt greedy --games 200 --seed 4401 --workers 2   # for each T

The policy is judged by its most likely move, while colony-zero fits it to the search's whole
improved policy. This probe continues the run's latest network on the run's own last 7 replay
shards (the trainer's `fit`, its config, batches and optimiser settings) once for each
temperature T, with every stored policy target replaced by p^(1/T), renormalised per position
(T = 1: the targets as stored; small T: nearly the search's best move, one-hot), and saves each
network as `DIR/T<T>.pt` for `colony-eval`. docs/zero.md ("Measured choices") has one run of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from colony_training.checkpoint import build_model, read_checkpoint, save_checkpoint
from colony_training.config import load_config
from colony_training.zero.config import ZeroConfig
from colony_training.zero.fit import fit
from colony_training.zero.replay import read_shard, shard_generations, shard_path
from colony_training.zero.selfplay import concat


def sharpen(probs: np.ndarray, offsets: np.ndarray, temperature: float) -> np.ndarray:
    """p^(1/T) renormalised within each position's slice offsets[i]:offsets[i+1]."""
    p = np.power(probs.astype(np.float64), 1.0 / temperature)
    sums = np.add.reduceat(p, offsets[:-1])
    return (p / np.repeat(sums, np.diff(offsets))).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a colony-zero run directory")
    ap.add_argument("--steps", type=int, default=600, help="fitting steps per temperature")
    ap.add_argument("--temperatures", default="1,0.25,0.05", help="comma-separated T > 0")
    ap.add_argument("--shards", type=int, default=7, help="the newest replay shards to fit on")
    ap.add_argument("--out", type=Path, required=True, help="folder for the networks T<T>.pt")
    args = ap.parse_args()
    temps = [float(t) for t in args.temperatures.split(",")]
    if not all(t > 0 for t in temps):
        ap.error("--temperatures takes numbers > 0")
    torch.set_num_threads(1)
    ckpt = read_checkpoint(args.run / "checkpoints" / "latest.pt")
    cfg = load_config(args.run / "config.yaml", cls=ZeroConfig)
    gens = shard_generations(args.run)[-args.shards:]
    if not gens:
        ap.error(f"no replay shards in {args.run}")
    data = concat([read_shard(shard_path(args.run, g)) for g in gens])
    print(f"{data.n_positions} positions, {int(data.full_search.sum())} policy targets, generations {gens}")
    stored = data.target_probs.copy()
    args.out.mkdir(parents=True, exist_ok=True)
    for t in temps:
        data.target_probs = sharpen(stored, data.offsets, t)
        model = build_model(ckpt)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        torch.manual_seed(0)
        losses = fit(model, opt, data, args.steps, cfg, np.random.default_rng(0), torch.device("cpu"))
        path = save_checkpoint(args.out / f"T{t:g}.pt", model, cfg.to_dict(), dict(ckpt.get("meta", {})))
        print(f"T={t:g}: policy loss {losses['policy_loss']:.3f} against target entropy "
              f"{losses['target_entropy']:.3f}; wrote {path}", flush=True)


if __name__ == "__main__":
    main()
