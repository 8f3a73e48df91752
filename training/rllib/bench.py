"""RLlib sampling throughput: `python -m colony_training.rllib.bench [--envs-per-runner 32] [--steps 2048]`.

Starts a private loopback Ray instance with one remote env runner (1 CPU, 1 torch thread)
and times its `sample()` calls as the trainer makes them, episodes shipped back to the driver
included. Prints env steps per second of that one env runner and the bytes each step carries
from the env runner to the learner (the pickled episodes per env step). Compare with the
rollout line of `python -m colony_training.ppo.bench --config configs/quickstart.yaml`: the
project's own PPO rollout on one core with the same network (32 channels, 2 blocks).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time

from ..cli import console_script


@console_script
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m colony_training.rllib.bench", description=__doc__.splitlines()[0])
    p.add_argument("--envs-per-runner", type=int, default=32, help="games the env runner steps together")
    p.add_argument("--steps", type=int, default=2048, help="env steps per timed sample call")
    p.add_argument("--repeats", type=int, default=3, help="timed sample calls (after one warm-up)")
    args = p.parse_args(argv)
    if min(args.envs_per_runner, args.steps, args.repeats) < 1:
        print("bench: error: --envs-per-runner, --steps and --repeats must be >= 1", file=sys.stderr)
        return 2

    from ..cluster import ray_session
    from .config import config_from_dict
    from .selfplay import build_ppo_config

    cfg = config_from_dict({"num_env_runners": 1, "num_envs_per_env_runner": args.envs_per_runner,
                            "train_batch_size": args.steps, "minibatch_size": min(256, args.steps),
                            "channels": 32, "blocks": 2, "num_cpus": 2, "final_eval_games": 0})
    rates, sizes = [], []
    with ray_session("", cfg.num_cpus):
        algo = build_ppo_config(cfg).build_algo()
        try:
            group = algo.env_runner_group
            group.foreach_env_runner(lambda r: len(r.sample(num_timesteps=256)), local_env_runner=False)  # warm-up
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                episodes = group.foreach_env_runner(lambda r, n=args.steps: r.sample(num_timesteps=n),
                                                    local_env_runner=False)[0]
                seconds = time.perf_counter() - t0
                steps = sum(e.env_steps() for e in episodes)
                rates.append(steps / seconds)
                sizes.append(len(pickle.dumps(episodes)) / steps)
        finally:
            algo.stop()
    print(f"RLlib env runner, {args.envs_per_runner} games per runner, 1 CPU: "
          f"{statistics.median(rates):.0f} env steps/s (median of {args.repeats}), "
          f"{statistics.median(sizes) / 1024:.1f} KB per env step to the learner")
    return 0


if __name__ == "__main__":
    sys.exit(main())
