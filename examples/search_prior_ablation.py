"""Which part of `checkpoint:PATH:mcts:N` makes it strong: the search, the heuristic, or training?

Plays the same root-prior search (`colony_env.agents.MCTSAgent(root_prior=...)`) with three priors
against `mcts:N` and `greedy` on the same paired setups:

* `uniform`: every legal move equally likely (PUCT at the root alone);
* `untrained`: a freshly initialised network with the greedy heuristic prior (`heuristic_prior`),
  i.e. what training starts from;
* `trained`: a checkpoint (default: the shipped agent);
* `tempered`: a checkpoint's policy flattened by a temperature (`p ** (1 / T)`, renormalised), the
  control for expert iteration: does distilling the search teach the network more than how flat
  a root prior the search wants?

    python examples/search_prior_ablation.py --games 100 --seed 1          # docs/experiments.md, "Search with the trained policy"
    python examples/search_prior_ablation.py --priors tempered --tempered STAGE2.pt --temperature 2 \
        --opponents greedy --games 400 --seed 11 --workers 2               # docs/experiments.md, "What the distillation changed"
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

import colony_env as ce
from colony_env import observation
from colony_env.agents import MCTSAgent
from colony_env.agents.mcts import DEFAULT_PRIOR_C
from colony_training.agents import load_policy_agent
from colony_training.checkpoint import save_checkpoint
from colony_training.eval.evaluate import evaluate
from colony_training.model import PolicyValueNet

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "colony_ppo.pt"
UNTRAINED_SEED = 0  # torch seed of the untrained network
UNTRAINED_SHAPE = (32, 3)  # channels, blocks: the shipped agent's trunk
PRIORS = ("uniform", "untrained", "trained", "tempered")


def uniform_prior(state: ce.GameState) -> tuple[np.ndarray, np.ndarray]:
    ids = ce.legal_actions(state)
    return ids, np.full(len(ids), 1.0 / len(ids))


def tempered_prior(path: str, temperature: float):
    """The root prior `p ** (1 / temperature)` (renormalised) of checkpoint `path`'s policy."""
    policy = load_policy_agent(path)

    def prior(state: ce.GameState) -> tuple[np.ndarray, np.ndarray]:
        ids, probs, _ = policy.policy(state)
        p = np.power(np.maximum(probs, 1e-300), 1.0 / temperature)
        return ids, p / p.sum()

    return prior


def untrained_checkpoint(folder: Path) -> Path:
    """The network training starts from: random trunk and heads, heuristic prior with weight 1."""
    torch.manual_seed(UNTRAINED_SEED)
    net = PolicyValueNet(observation.OBS_CHANNELS, *UNTRAINED_SHAPE, heuristic_prior=True)
    return save_checkpoint(folder / "untrained.pt", net, {"heuristic_prior": True}, {"global_step": 0})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=100, help="games per pairing (even)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--simulations", type=int, default=200, help="simulations per move, for both searches")
    p.add_argument("--checkpoint", default=str(SHIPPED), help="the trained prior")
    p.add_argument("--opponents", nargs="+", default=None, help="default: mcts:N greedy")
    p.add_argument("--priors", nargs="+", choices=PRIORS, default=list(PRIORS[:3]), help="which rows to play")
    p.add_argument("--tempered", default=str(SHIPPED), help="the checkpoint of the `tempered` row")
    p.add_argument("--temperature", type=float, default=2.0, help="the `tempered` row's temperature (> 0)")
    p.add_argument("--workers", type=int, default=1, help="game-playing processes")
    args = p.parse_args(argv)
    if not args.temperature > 0:
        p.error(f"--temperature must be > 0, got {args.temperature}")
    opponents = args.opponents or [f"mcts:{args.simulations}", "greedy"]
    sims = args.simulations
    with tempfile.TemporaryDirectory() as tmp:
        priors = {
            "uniform": MCTSAgent(max_simulations=sims, root_prior=uniform_prior, prior_c=DEFAULT_PRIOR_C,
                                 name=f"uniform-prior:mcts:{sims}"),
            "untrained": f"checkpoint:{untrained_checkpoint(Path(tmp))}:mcts:{sims}",
            "trained": f"checkpoint:{args.checkpoint}:mcts:{sims}",
        }
        if "tempered" in args.priors:
            priors["tempered"] = MCTSAgent(max_simulations=sims, root_prior=tempered_prior(args.tempered, args.temperature),
                                           name=f"tempered-{args.temperature:g}-prior:mcts:{sims}")
        priors = {k: v for k, v in priors.items() if k in args.priors}
        print(f"{'root prior':<10} {'opponent':<10} {'games':>5} {'W':>4} {'D':>4} {'L':>4} {'score':>6}")
        for label, agent in priors.items():
            for opponent in opponents:
                pair = evaluate([agent, opponent], games=args.games, seed=args.seed, workers=args.workers, progress=False).pairs[0]
                print(f"{label:<10} {opponent:<10} {pair.games:>5} {pair.wins:>4} {pair.draws:>4} {pair.losses:>4} "
                      f"{pair.score:>6.3f}", flush=True)


if __name__ == "__main__":
    main()
