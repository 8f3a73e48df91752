"""Training throughput: `python -m colony_training.ppo.bench [--config configs/quickstart.yaml] [--iterations 5]`.

Runs full PPO iterations (rollout in the vector env with batched inference, per-colour GAE,
minibatch updates) with the config's model, on the config's device and processes (`processes: 2`,
training/ppo/parallel.py), and prints the median env steps per second, end to end and split into
rollout and update, the device and the precision. Nothing is written to disk. Any config key can be overridden:
`--processes 1 --torch-threads 2`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from ..cli import console_script, report_error


@console_script
def main(argv: list[str] | None = None) -> int:
    from ..config import ConfigError
    from . import parallel
    from .config import load_config, split_overrides
    from .loss import per_player_gae
    from .opponents import OpponentPool
    from .train import HELPER_KIT, GameStats, SelfPlay, new_learner, ppo_update, resolve_device

    p = argparse.ArgumentParser(prog="python -m colony_training.ppo.bench", description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/quickstart.yaml")
    p.add_argument("--iterations", type=int, default=5, help="timed iterations (after one warm-up)")
    p.add_argument("--device", default=None, choices=("auto", "cpu", "cuda"))
    args, rest = p.parse_known_args(argv)
    try:
        overrides = split_overrides(rest)
        if args.device:
            overrides["device"] = args.device
        cfg = load_config(args.config, overrides)
        device = resolve_device(cfg.device)
    except ConfigError as e:
        return report_error("bench_train", str(e))
    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    model, opt = new_learner(cfg, device)
    pool = OpponentPool(cfg.pool_size)
    pool.add(model, 0)  # so the pool games (and their extra forward passes) are part of the measurement
    helper = parallel.Helper(cfg, model, seed=cfg.seed, kit=HELPER_KIT) if parallel.wanted(cfg, device) else None
    play = SelfPlay(cfg, model, device, seed=cfg.seed, num_envs=helper.n_here if helper else None)
    rng = np.random.default_rng(0)
    total, rollout, update = [], [], []
    try:
        for i in range(args.iterations + 1):
            t0 = time.perf_counter()
            ro = parallel.collect(play, helper, pool, GameStats())
            t1 = time.perf_counter()
            adv, ret = per_player_gae(ro.values + ro.phi, ro.movers, ro.dones, ro.rewards, ro.bootstrap, cfg.gamma,
                                      cfg.gae_lambda)
            ppo_update(cfg, model, opt, ro, adv, ret - ro.phi, device, rng, helper=helper)
            t2 = time.perf_counter()
            if i:  # the first iteration compiles kernels, starts the helper and warms caches
                total.append(cfg.batch_size / (t2 - t0))
                rollout.append(cfg.batch_size / (t1 - t0))
                update.append(cfg.batch_size / (t2 - t1))
    finally:
        if helper is not None:
            helper.close()
    n_params = sum(p.numel() for p in model.parameters())
    procs = 2 if helper is not None else 1
    print(f"config {args.config}: {cfg.num_envs} envs x {cfg.rollout_steps} steps, model {cfg.channels}ch x "
          f"{cfg.blocks} blocks ({n_params / 1e3:.0f}k params), device {device}, processes {procs}, "
          f"torch threads {cfg.torch_threads}, convolutions in {'bf16' if model.bf16_trunk else 'fp32'}")
    print(f"end to end : {statistics.median(total):8.0f} env steps/s (median of {args.iterations} iterations)")
    print(f"rollout    : {statistics.median(rollout):8.0f} env steps/s")
    print(f"update     : {statistics.median(update):8.0f} env steps/s ({cfg.update_epochs} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
