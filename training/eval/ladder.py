"""A trainer's network against a fixed ladder of agent specs, in process (`colony-train`, `colony-train-rllib`).

The same engine as `colony-eval` (paired seeds: each setup once with each colour), on a CPU
copy of the network so that training on another device is not disturbed.
"""

from __future__ import annotations

import time

from colony_env.constants import DEFAULT_MAX_PLIES

from ..agents import PolicyAgent
from ..model import PolicyValueNet
from .evaluate import evaluate


def evaluate_model(model: PolicyValueNet, specs: list[str], games: int, seed: int,
                   max_plies: int = DEFAULT_MAX_PLIES) -> dict[str, dict[str, float]]:
    """Greedy play of `model` against each agent spec with `colony-eval`'s engine (paired seeds, in-process, all
    games side by side)."""
    agent = PolicyAgent(_cpu_copy(model), name="learner", greedy=True)
    games = max(2, games + games % 2)  # each setup is played once with each colour
    results: dict[str, dict[str, float]] = {}
    for spec in specs:
        t0 = time.perf_counter()
        # All games side by side: the network moves in every game waiting for it with one forward pass.
        pair = evaluate([agent, spec], games=games, seed=seed, workers=1, schedule="gauntlet", progress=False,
                        max_plies=max_plies, batch=games).pairs[0]
        results[spec] = {
            "games": pair.games, "win_rate": pair.wins / pair.games, "draw_rate": pair.draws / pair.games,
            "loss_rate": pair.losses / pair.games, "seconds": round(time.perf_counter() - t0, 1),
        }  # fmt: skip
    return results


def _cpu_copy(model: PolicyValueNet) -> PolicyValueNet:
    net = model.blank_copy()
    net.load_state_dict({k: v.detach().cpu() for k, v in model.state_dict().items()})
    return net.eval()
