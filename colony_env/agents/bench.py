"""Speed of the agents on one core: `python -m colony_env.agents.bench`.

Prints medians over a fixed set of positions taken from seeded random games at several
stages (the opening, while connections are locked, and later positions, where the
rollouts are shorter):

* MCTS simulations per second per core (`uct_search`, one process) for each budget;
* rollouts per second: the agents' rejection sampler vs. the engine's full generation;
* microseconds per move of the greedy agent (median and means, before and after the unlock, R3.5).

Numbers depend on the machine and on its load; run it on an idle core to compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from .. import _core
from ..engine import GameState, apply_action, legal_actions, new_game
from . import _search
from .greedy import GreedyAgent
from .mcts import DEFAULT_UCT_C

STAGE_PLIES = (0, 60, 120, 180)  # positions are taken from random games at these plies


def sample_positions(n_games: int, seed: int) -> list[GameState]:
    """Ongoing positions at STAGE_PLIES of `n_games` seeded uniformly random games."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_games):
        state = new_game(rng)
        while not state.is_over and state.ply <= STAGE_PLIES[-1]:
            if state.ply in STAGE_PLIES:
                out.append(state)
            legal = legal_actions(state)
            state = apply_action(state, int(legal[rng.integers(len(legal))]))
    return out


def _time(fn, repeats: int) -> float:
    """Median wall time of `fn()` over `repeats` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m colony_env.agents.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, nargs="+", default=[200, 1000], help="MCTS budgets to time")
    parser.add_argument("--games", type=int, default=3, help="random games to take positions from")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per position (median)")
    parser.add_argument("--rollouts", type=int, default=300, help="rollouts per timing of the rollout rate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if min(args.sims) < 1 or args.games < 1 or args.repeats < 1 or args.rollouts < 1:
        parser.error("--sims, --games, --repeats and --rollouts must be positive")

    positions = sample_positions(args.games, args.seed)
    print(f"{len(positions)} positions from {args.games} random games at plies {STAGE_PLIES}; medians over positions")
    opening = new_game(args.seed)._a
    # Compile (or load the cache) before timing.
    _search.uct_search(opening, 2, DEFAULT_UCT_C, 1, 0)
    for sims in args.sims:
        per_pos = []
        for k, pos in enumerate(positions):
            per_pos.append(_time(lambda: _search.uct_search(pos._a, sims, DEFAULT_UCT_C, 1, k), args.repeats))
        med = statistics.median(per_pos)
        opening_t = _time(lambda: _search.uct_search(opening, sims, DEFAULT_UCT_C, 1, 1), args.repeats)
        print(
            f"mcts:{sims:<5} {sims / med:8.0f} simulations/s per core (median), "
            f"{1e3 * med:7.1f} ms/move median, {1e3 * opening_t:7.1f} ms/move at the opening"
        )
    fast = _time(lambda: [_search.random_playout(opening, i) for i in range(args.rollouts)], args.repeats)
    full = _time(lambda: [_core.random_playout(opening, i) for i in range(args.rollouts)], args.repeats)
    print(
        f"rollouts from the opening: {args.rollouts / fast:8.0f}/s with the agents' sampler, "
        f"{args.rollouts / full:8.0f}/s generating every legal action (engine's random_playout)"
    )
    greedy = GreedyAgent()
    rng = np.random.default_rng(args.seed)
    per_pos = [_time(lambda: greedy.act(pos, rng), args.repeats) for pos in positions]
    split = "; ".join(
        f"{name} {1e6 * statistics.mean(t for t, pos in zip(per_pos, positions) if pos.unlocked == unlocked):.0f}"
        for name, unlocked in (("before the unlock", False), ("after", True))
        if any(pos.unlocked == unlocked for pos in positions))
    print(f"greedy: {1e6 * statistics.median(per_pos):.0f} us/move median, {1e6 * statistics.mean(per_pos):.0f} mean "
          f"(means {split})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
