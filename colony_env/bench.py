"""Benchmarks that print numbers: `python -m colony_env.bench [--repeats 5] [--seconds 2]`.

Each measurement runs `--repeats` times and prints the median (and the spread), so
numbers quoted in the README and in issue notes can be re-run by anyone. The first
call of each compiled kernel is done before timing (see `warm_up`); the one-off
compile cost is printed separately because users pay it only once per machine
(numba caches machine code on disk next to the package).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import numpy as np

from . import engine


def _median_report(name: str, unit: str, samples: list[float], fmt: str = "{:,.0f}") -> None:
    lo, hi = min(samples), max(samples)
    print(f"{name:<44s} {fmt.format(statistics.median(samples)):>12s} {unit:<10s} (min {fmt.format(lo)}, max {fmt.format(hi)}, n={len(samples)})")


def warm_up() -> float:
    """Run every engine kernel once; returns the seconds it took (compile or cache load)."""
    t0 = time.perf_counter()
    s = engine.new_game(0)
    while not s.is_over:
        engine.legal_action_mask(s)
        s = engine.apply_action(s, engine.legal_actions(s)[0])
    s.winner
    engine.colonies(s)
    return time.perf_counter() - t0


def random_playout_rate(seconds: float, seed: int = 0) -> tuple[float, float, float]:
    """Public-API loop: `legal_actions` + a uniform pick + `apply_action`; a new game when
    one is over. Returns (actions/s, games/s, actions per CPU-second of this process); the
    last is what a busy machine disturbs least."""
    pick = random.Random(seed).random
    state = engine.new_game(seed)
    actions = games = 0
    start = time.perf_counter()
    cpu_start = time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(1000):  # check the clock rarely: it costs as much as an action
            if state.is_over:
                games += 1
                state = engine.new_game(seed + games)
            ids = engine.legal_actions(state)
            state = engine.apply_action(state, ids[int(pick() * len(ids))])
        actions += 1000
        now = time.perf_counter()
        if now >= deadline:
            cpu = time.process_time() - cpu_start
            return actions / (now - start), games / (now - start), actions / cpu


def sample_states(n_games: int, seed: int = 1) -> list[engine.GameState]:
    """Every state reached in `n_games` random games (the distribution the mask sees in play)."""
    pick = random.Random(seed).random
    states = []
    for g in range(n_games):
        s = engine.new_game(seed + g)
        while not s.is_over:
            states.append(s)
            ids = engine.legal_actions(s)
            s = engine.apply_action(s, ids[int(pick() * len(ids))])
    return states


def mask_time_us(states: list[engine.GameState]) -> float:
    """Mean microseconds per `legal_action_mask` call over `states`."""
    mask = engine.legal_action_mask
    start = time.perf_counter()
    for s in states:
        mask(s)
    return (time.perf_counter() - start) / len(states) * 1e6


# Sections other modules add to (env, vector env, agents): name -> callable(args).
SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {}


def bench_engine(args: argparse.Namespace) -> None:
    print(f"engine warm-up (compile or load cached kernels): {warm_up():.2f} s")
    rates = [random_playout_rate(args.seconds, seed=i) for i in range(args.repeats)]
    _median_report("engine random playout (public API)", "actions/s", [r[0] for r in rates])
    _median_report("engine random playout (public API)", "games/s", [r[1] for r in rates], "{:,.1f}")
    _median_report("engine random playout (public API)", "actions/cpu-s", [r[2] for r in rates])
    states = sample_states(20)
    _median_report(f"legal_action_mask, {len(states)} states", "us/state", [mask_time_us(states) for _ in range(args.repeats)], "{:.2f}")


SECTIONS["engine"] = bench_engine


def _register_optional_sections() -> None:
    """Sections that live with the code they measure; absent modules are skipped."""
    import importlib

    for module in ("colony_env.bench_env", "colony_env.agents.bench"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not (exc.name and module.startswith(exc.name)):
                raise


def main(argv: list[str] | None = None) -> None:
    _register_optional_sections()
    parser = argparse.ArgumentParser(prog="python -m colony_env.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement; the median is reported")
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each timed run")
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append", help="run only these sections")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.seconds <= 0:
        parser.error("--repeats must be >= 1 and --seconds > 0")
    np.set_printoptions(precision=3)
    for name in args.only or list(SECTIONS):
        print(f"== {name}")
        SECTIONS[name](args)


if __name__ == "__main__":
    # Run through the importable module so that sections registered by other modules
    # (which import `colony_env.bench`, not `__main__`) land in the same SECTIONS dict.
    from colony_env.bench import main as _main

    _main()
