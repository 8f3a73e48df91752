"""Env benchmarks, registered as sections of `python -m colony_env.bench`:

* `env`: the PettingZoo AEC env, random legal actions drawn from the action mask of the
  observation that `last()` builds every step (as PettingZoo's `performance_benchmark`
  does), through the wrapped `colony_env.env()` and through `raw_env`;
* `vector`: the batched vector env at N = 1, 64, 256 with random legal actions
  (`ColonyVectorEnv.random_actions`), counting every game's step;
* `gym_vector`: the Gymnasium VectorEnv of the single-agent task (`gym_vector.py`) at
  N = 1, 64, 256, random legal learner actions against the random opponent, counting
  learner steps (each includes the opponent's replies); and, for comparison, Gymnasium's
  `SyncVectorEnv` over the single-agent env at N = 16 on the same task.

Each run reports the median over `--repeats` runs of `--seconds` each, as wall-clock
steps/s and as steps per CPU-second of this process (the second is steadier on a shared
machine: other processes' load lowers the first, not the second).

    python -m colony_env.bench --only env --only vector --only gym_vector
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from .bench import SECTIONS, _median_report

VECTOR_SIZES = (1, 64, 256)
SYNC_SIZE = 16  # SyncVectorEnv steps its envs one by one, so its rate hardly depends on N


def _timed(run_chunk, seconds: float) -> tuple[float, float]:
    """Call `run_chunk()` (returns steps done) until `seconds` of wall time; (wall, cpu) steps/s."""
    steps = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall0 < seconds:
        steps += run_chunk()
    return steps / (time.perf_counter() - wall0), steps / (time.process_time() - cpu0)


def aec_rate(seconds: float, seed: int = 0, wrapped: bool = True) -> tuple[float, float]:
    """AEC steps/s: `last()` (observation and mask built), a uniform legal action from the
    mask, `step()`; dead steps at the end count too, as in `performance_benchmark`."""
    from .env import env, raw_env

    e = env() if wrapped else raw_env()
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def chunk(n: int = 200) -> int:
        for _ in range(n):
            obs, _, term, trunc, _ = e.last()
            if term or trunc:
                action = None
            else:
                legal = obs["action_mask"].view(np.bool_).nonzero()[0]  # int8 0/1 read as bool
                action = int(legal[int(rng.random() * len(legal))])
            e.step(action)
            if not e.agents:
                e.reset()
        return n

    chunk()  # warm-up (kernels loaded, caches filled)
    return _timed(chunk, seconds)


def vector_rate(num_envs: int, seconds: float, seed: int = 0) -> tuple[float, float]:
    """Vector env steps/s summed over the N games (one `step` = N steps)."""
    from .vector import ColonyVectorEnv

    venv = ColonyVectorEnv(num_envs, seed=seed)
    rng = np.random.default_rng(seed)

    def chunk(n: int = 10) -> int:
        for _ in range(n):
            venv.step(venv.random_actions(rng))
        return n * num_envs

    for _ in range(30):  # warm-up, and move past the openings towards the mix of a long run
        chunk()
    return _timed(chunk, seconds)


def gym_vector_rate(num_envs: int, seconds: float, seed: int = 0) -> tuple[float, float]:
    """Learner steps/s of `ColonyGymVectorEnv` (random opponent) summed over the N slots."""
    from .gym_vector import ColonyGymVectorEnv

    envs = ColonyGymVectorEnv(num_envs, opponent="random")
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def chunk(n: int = 10) -> int:
        for _ in range(n):
            envs.step(envs.random_actions(rng))
        return n * num_envs

    for _ in range(min(30, max(1, int(30 * seconds)))):  # warm-up and past the openings (short for smoke runs)
        chunk()
    return _timed(chunk, seconds)


def sync_vector_rate(num_envs: int, seconds: float, seed: int = 0) -> tuple[float, float]:
    """The same task through Gymnasium's `SyncVectorEnv` over `ColonySingleAgentEnv`."""
    from gymnasium.vector import SyncVectorEnv

    from .wrappers import ColonySingleAgentEnv

    envs = SyncVectorEnv([lambda: ColonySingleAgentEnv(opponent="random") for _ in range(num_envs)])
    _, infos = envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    state = {"masks": infos["action_mask"]}

    def chunk(n: int = 5) -> int:
        for _ in range(n):
            actions = [rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in state["masks"]]
            state["masks"] = envs.step(np.array(actions))[4]["action_mask"]
        return n * num_envs

    chunk()
    return _timed(chunk, seconds)


def _load_note() -> str:
    try:
        return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    except OSError:  # pragma: no cover - not on every platform
        return ""


def bench_env(args: argparse.Namespace) -> None:
    print(_load_note())
    for wrapped, name in ((True, "AEC env()"), (False, "AEC raw_env")):
        rates = [aec_rate(args.seconds, seed=i, wrapped=wrapped) for i in range(args.repeats)]
        _median_report(f"{name}, random legal from mask", "steps/s", [r[0] for r in rates])
        _median_report(f"{name}, random legal from mask", "steps/cpu-s", [r[1] for r in rates])


def bench_vector(args: argparse.Namespace) -> None:
    print(_load_note())
    for n in VECTOR_SIZES:
        rates = [vector_rate(n, args.seconds, seed=i) for i in range(args.repeats)]
        _median_report(f"vector env N={n}, random legal", "steps/s", [r[0] for r in rates])
        _median_report(f"vector env N={n}, random legal", "steps/cpu-s", [r[1] for r in rates])


def bench_gym_vector(args: argparse.Namespace) -> None:
    print(_load_note())
    for n in VECTOR_SIZES:
        rates = [gym_vector_rate(n, args.seconds, seed=i) for i in range(args.repeats)]
        _median_report(f"gym vector env N={n}, vs random", "steps/s", [r[0] for r in rates])
        _median_report(f"gym vector env N={n}, vs random", "steps/cpu-s", [r[1] for r in rates])
    rates = [sync_vector_rate(SYNC_SIZE, args.seconds, seed=i) for i in range(args.repeats)]
    _median_report(f"SyncVectorEnv N={SYNC_SIZE}, vs random", "steps/s", [r[0] for r in rates])
    _median_report(f"SyncVectorEnv N={SYNC_SIZE}, vs random", "steps/cpu-s", [r[1] for r in rates])


SECTIONS["env"] = bench_env
SECTIONS["vector"] = bench_vector
SECTIONS["gym_vector"] = bench_gym_vector
