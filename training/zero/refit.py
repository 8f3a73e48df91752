"""`python -m colony_training.zero.refit`: fit a new network to the self-play data of finished runs.

    python -m colony_training.zero.refit runs/zero-A runs/zero-B --channels 64 --blocks 4 --samples 700000 --out runs/refit
    python -m colony_training.zero.refit --resume runs/refit
    python -m colony_training.zero.refit runs/zero-A --init runs/zero-A/checkpoints/latest.pt --learning-rate 5e-5 \
        --samples 80000 --out runs/annealed      # a trained network fitted on, at a small learning rate

A colony-zero run's replay shards (`RUN/replay/gen_*.npz`) keep every position it played with
the search's improved policy, the game's result and the playouts' mean. That is a supervised
data set: a network of another shape can be fitted to it without playing a game, which is how
a run changes network mid-way (AlphaGo Zero's "supervised" baseline; KataGo's practice of
training a larger net on the smaller net's games). The result is an ordinary checkpoint that
every tool plays and that `colony-zero` continues with `init_from`.

One shard per source run (its newest) is held out: the held-out policy and value losses in
`metrics.csv` say whether more samples still help. The learning rate falls from
`--learning-rate` to a tenth of it along a cosine over `--samples`. Every `--save-every`
samples `checkpoints/latest.pt` is written atomically with the optimizer and generator state,
so `--resume DIR` continues exactly where a stopped fit was. `--init CHECKPOINT` starts from a trained
network (its shape and inputs) instead of random weights: the same schedule then anneals it on the shards.
"""

from __future__ import annotations

import argparse
import functools
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from colony_env.observation import OBS_CHANNELS

from .. import runlog
from ..checkpoint import CheckpointError, build_model, read_checkpoint, save_checkpoint
from ..cli import console_script, report_error
from ..config import ConfigError, config_from_dict
from ..model import PolicyValueNet
from ..teacher import greedy_action_features
from .config import ZeroConfig
from .replay import ReplayError, make_batch, read_shard, shard_generations, shard_path
from .selfplay import GameData, concat
from .train import ancestor_meta
from .fit import fit, policy_cross_entropy

PROG = "refit"
_error = functools.partial(report_error, PROG)
TRAINER = "refit"
VALIDATION_SAMPLES = 4096
"""Held-out positions scored at every save (a fixed draw, so the numbers compare)."""
LR_FLOOR = 0.1
"""The cosine schedule ends at this share of the learning rate."""
METRICS_FIELDS = ("samples", "cpu_hours", "learning_rate", "policy_loss", "value_loss", "ownership_loss",
                  "val_policy_loss", "val_value_loss")


class RefitError(ValueError):
    """A source or option that cannot be used; the message says which and why."""


def load_sources(runs: list[str]) -> tuple[GameData, GameData, float]:
    """(training positions, held-out positions, self-play CPU seconds behind them) of the runs' shards."""
    train_parts: list[GameData] = []
    held_parts: list[GameData] = []
    cpu = 0.0
    for run in runs:
        gens = shard_generations(Path(run))
        if len(gens) < 2:
            raise RefitError(f"{run!r} has {len(gens)} replay shard(s) in {run}/replay; a source run needs at least 2 "
                             "(one is held out)")
        for g in gens:
            data = read_shard(shard_path(Path(run), g))
            cpu += data.cpu_seconds
            (held_parts if g == gens[-1] else train_parts).append(data)
    return concat(train_parts), concat(held_parts), cpu


@torch.no_grad()
def held_out_losses(model: PolicyValueNet, held: GameData, cfg: ZeroConfig) -> tuple[float, float]:
    """Policy cross-entropy and value squared error on a fixed draw of held-out positions (no augmentation)."""
    model.eval()
    idx = np.random.default_rng(0).permutation(held.n_positions)[:VALIDATION_SAMPLES]
    pl = vl = 0.0
    weight = max(1.0, float(held.full_search[idx].sum()))  # positions with a policy target (full searches)
    for chunk in np.array_split(idx, max(1, len(idx) // 512)):
        states, obs, ids, probs, valid, z = make_batch(held, chunk, cfg.root_value_mix, cfg.rollout_value_mix)
        feats = None
        if model.heuristic_prior:
            feats = torch.from_numpy(greedy_action_features(states, np.arange(len(chunk)), ids.shape[1]))
        logits, value = model(torch.from_numpy(obs), torch.from_numpy(ids), feats)[:2]
        w = torch.from_numpy(held.full_search[chunk].astype(np.float32))
        pl += float((w * policy_cross_entropy(logits, torch.from_numpy(valid), torch.from_numpy(probs))).sum())
        vl += float(((torch.tanh(value) - torch.from_numpy(z)) ** 2).sum())
    return pl / weight, vl / len(idx)


def learning_rate(cfg: ZeroConfig, done: int, total: int) -> float:
    """Cosine from the peak to LR_FLOOR of it: the late, small steps settle the fit on the whole data set."""
    frac = min(1.0, done / max(1, total))
    return cfg.learning_rate * (LR_FLOOR + (1 - LR_FLOOR) * 0.5 * (1 + math.cos(math.pi * frac)))


def refit(cfg: ZeroConfig, runs: list[str], samples: int, save_every: int, out: Path,
          resume: dict[str, Any] | None = None, progress: bool = True, greedy_input: bool = False,
          init: tuple[str, dict[str, Any]] | None = None) -> Path:
    """Fit (or continue fitting) a network on the runs' shards; returns the path of `refit.pt`.
    `init`: (path, checkpoint dict) of a trained network to start from instead of random weights."""
    torch.set_num_threads(max(1, cfg.torch_threads))
    data, held, selfplay_cpu = load_sources(runs)
    if resume is not None:
        model = build_model(resume)
        done = int(resume["samples_done"])
        cpu = float(resume["meta"]["fit_cpu_seconds"])
        rng = np.random.default_rng()
        rng.bit_generator.state = resume["rng_state"]
    else:
        torch.manual_seed(cfg.seed)
        model = build_model(init[1]) if init is not None else PolicyValueNet(
            OBS_CHANNELS, cfg.channels, cfg.blocks, greedy_input, cfg.target_features, cfg.ownership_head,
            cfg.global_pool)
        done, cpu, rng = 0, 0.0, np.random.default_rng(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    if resume is not None:
        opt.load_state_dict(resume["optimizer"])
    metrics = out / "metrics.csv"
    runlog.truncate_csv_after(metrics, "samples", done)  # rows of saves after the checkpoint resumed from
    bar = tqdm(total=samples, initial=done, desc=PROG, unit="sample", unit_scale=True, disable=not progress,
               dynamic_ncols=True)
    meta: dict[str, Any] = dict(resume["meta"]) if resume is not None else {}
    ancestor = meta.get("init_from") if resume is not None else (ancestor_meta(*init) if init is not None else None)
    try:
        while done < samples:
            cpu0 = time.process_time()
            chunk = min(save_every, samples - done)
            for group in opt.param_groups:
                group["lr"] = learning_rate(cfg, done, samples)
            losses = fit(model, opt, data, max(1, chunk // cfg.batch_size), cfg, rng, torch.device("cpu"))
            done += chunk
            val_pl, val_vl = held_out_losses(model, held, cfg)
            cpu += time.process_time() - cpu0
            meta = {"trainer": TRAINER, "value_head": "tanh", "sources": list(runs),
                    "positions": data.n_positions, "held_out_positions": held.n_positions, "samples": done,
                    "fit_cpu_seconds": cpu, "source_selfplay_cpu_seconds": selfplay_cpu,
                    "hardware": f"{platform.machine()} {platform.processor() or ''}".strip(),
                    "torch": str(torch.__version__), "python": platform.python_version()}
            if ancestor is not None:
                meta["init_from"] = ancestor
            save_checkpoint(out / "checkpoints" / "latest.pt", model, cfg.to_dict(), meta,
                            {"optimizer": opt.state_dict(), "samples_done": done, "rng_state": rng.bit_generator.state,
                             "refit": {"samples": samples, "save_every": save_every}})
            row = {"samples": done, "cpu_hours": round(cpu / 3600, 4), "learning_rate": round(opt.param_groups[0]["lr"], 7),
                   **{k: round(losses[k], 4) for k in ("policy_loss", "value_loss", "ownership_loss")},
                   "val_policy_loss": round(val_pl, 4), "val_value_loss": round(val_vl, 4)}
            runlog.append_csv(metrics, METRICS_FIELDS, [row])
            bar.set_postfix(pl=f"{losses['policy_loss']:.3f}", val_pl=f"{val_pl:.3f}", val_vl=f"{val_vl:.3f}")
            bar.update(chunk)
    finally:
        bar.close()
    return save_checkpoint(out / "refit.pt", model, cfg.to_dict(), meta)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Fit a new network to the replay shards of finished colony-zero "
                                "runs (docs/zero.md).")
    p.add_argument("runs", nargs="*", metavar="RUN", help="colony-zero run directories whose replay/ shards are the data")
    p.add_argument("--out", help="output directory (metrics.csv, checkpoints/latest.pt, refit.pt)")
    p.add_argument("--resume", metavar="DIR", help="continue the fit in DIR (its own sources, network and settings)")
    p.add_argument("--score", metavar="CHECKPOINT", action="append", default=[],
                   help="print CHECKPOINT's losses on the RUNs' held-out shards and exit (repeatable; writes nothing)")
    p.add_argument("--init", metavar="CHECKPOINT", help="start from this trained network instead of random weights "
                   "(its shape and inputs; not with --channels, --blocks or --greedy-input)")
    p.add_argument("--channels", type=int, help="trunk width (default 64)")
    p.add_argument("--blocks", type=int, help="residual blocks (default 4)")
    p.add_argument("--greedy-input", action="store_true",
                   help="add the greedy agent's score of each move to the logits, as colony_ppo.pt and colony_zero.pt "
                   "do (a heuristic input; without it the network sees only the observation planes)")
    p.add_argument("--samples", type=int, default=700_000, help="positions shown in all (default 700000)")
    p.add_argument("--save-every", type=int, default=50_000, help="samples between checkpoints (default 50000)")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="peak learning rate (default 0.001)")
    p.add_argument("--rollout-value-mix", type=float, default=0.5,
                   help="share of the playouts' mean in the value target, the rest the game's result (default 0.5)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


@console_script
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    init = None
    try:
        if args.score:
            if not args.runs:
                return _error("--score needs the source RUN directories whose held-out shards it scores")
            cfg = ZeroConfig(rollout_value_mix=args.rollout_value_mix, value_rollouts=1).finalize()
            torch.set_num_threads(max(1, args.threads))
            held = load_sources(list(args.runs))[1]
            for path in args.score:
                pl, vl = held_out_losses(build_model(read_checkpoint(path)), held, cfg)
                print(f"{path}: held-out policy cross-entropy {pl:.4f}, value squared error {vl:.4f} "
                      f"({min(VALIDATION_SAMPLES, held.n_positions)} of {held.n_positions} positions)")
            return 0
        if args.resume:
            fresh = [name for name, given in (("RUN", args.runs), ("--out", args.out), ("--init", args.init),
                                              ("--channels", args.channels is not None),
                                              ("--blocks", args.blocks is not None),
                                              ("--greedy-input", args.greedy_input)) if given]
            if fresh:
                return _error(f"--resume continues a fit with its own sources, network and settings; leave out "
                              f"{', '.join(fresh)}")
            out = Path(args.resume)
            latest = out / "checkpoints" / "latest.pt"
            if not latest.is_file():
                return _error(f"--resume {str(out)!r}: no checkpoints/latest.pt there (is it a refit directory?)")
            resume = read_checkpoint(latest)
            if "samples_done" not in resume:
                return _error(f"{str(latest)!r} is not a refit checkpoint")
            try:
                cfg = config_from_dict(resume["config"], cls=ZeroConfig)
                runs = [str(r) for r in resume["meta"]["sources"]]
                samples, save_every = int(resume["refit"]["samples"]), int(resume["refit"]["save_every"])
            except (KeyError, TypeError, ValueError) as e:
                return _error(f"{str(latest)!r} is a damaged refit checkpoint ({type(e).__name__}: {e})")
        else:
            if not args.runs or not args.out:
                return _error("give the source RUN directories and --out DIR (or --resume DIR)")
            if args.samples < 1 or args.save_every < 1 or args.threads < 1:
                return _error("--samples, --save-every and --threads must be positive integers")
            if args.init:
                if args.channels is not None or args.blocks is not None or args.greedy_input:
                    return _error("--init takes the network's shape and inputs from its checkpoint; leave out "
                                  "--channels, --blocks and --greedy-input")
                init = (args.init, read_checkpoint(args.init))
                shape = build_model(init[1])
                args.channels, args.blocks = shape.channels, shape.blocks
            cfg = ZeroConfig(channels=64 if args.channels is None else args.channels,
                             blocks=4 if args.blocks is None else args.blocks, learning_rate=args.learning_rate,
                             rollout_value_mix=args.rollout_value_mix, value_rollouts=1, torch_threads=args.threads,
                             seed=args.seed).finalize()
            runs, samples, save_every, resume = list(args.runs), args.samples, args.save_every, None
            out = Path(args.out)
            if (out / "checkpoints" / "latest.pt").exists():
                return _error(f"--out {str(out)!r} already holds a fit; continue it with --resume {out}")
        path = refit(cfg, runs, samples, save_every, out, resume, progress=not args.no_progress,
                     greedy_input=args.greedy_input, init=init)
    except (RefitError, ReplayError, CheckpointError, ConfigError) as e:
        return _error(str(e))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; continue with --resume {args.resume or args.out}", file=sys.stderr)
        return 130
    print(f"{PROG}: wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
