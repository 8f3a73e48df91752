"""How much of a policy's gap to its search's targets is the targets' own noise?

    python examples/search_target_noise.py RUN --checkpoint NET --positions 300 --simulations 64 --considered 16

RUN is a `colony-distill` run directory (its `data/` shards give the positions: the ones the search met).
On `--positions` of them, drawn from the last shard with `--seed`, the network's own `az` search
(`checkpoint:NET:az:N:m=M`, the teacher of `colony-distill --expert az` and of colony-zero) runs twice
with independent generators, and the script prints

- the targets' entropy, the cross-entropy from one search's improved policy to the other's, and how
  often the two pick the same move: what a perfect student of one search scores against another;
- the network's policy (as `checkpoint:NET` plays it) scored against one search and against the mean of two.

If the policy is as close to a search as a second search is, a closer fit to these targets is not
what is missing. docs/zero.md ("Three more levers, measured") has one run of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from colony_env.engine import GameState
from colony_training.agents import load_az_agent, load_policy_agent
from colony_training.distill.train import load_shards


def _sorted_policy(agent, state: GameState) -> np.ndarray:
    """The policy's probabilities over the legal ids in increasing order (the order the search's targets use)."""
    ids, probs, _ = agent.policy(state)
    return probs[np.argsort(ids)]


def _ce(p: np.ndarray, q: np.ndarray) -> float:
    return float(-(p * np.log(q + 1e-12)).sum())


def measure(run: Path, checkpoint: Path, positions: int, simulations: int, considered: int,
            seed: int = 0) -> dict[str, float]:
    """The numbers the module docstring lists, averaged over the positions."""
    shards = sorted((run / "data").glob("shard_*.npz"))
    if not shards:
        raise SystemExit(f"{run}: no data/shard_*.npz (give a colony-distill run directory)")
    data = load_shards(shards[-1:])
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(data), size=min(positions, len(data)), replace=False)
    states = [GameState.from_array(data.states[r]) for r in rows]
    search = load_az_agent(checkpoint, simulations, max_considered=considered).search
    a, b = ([r.policy.astype(np.float64) for r in
             search.search(states, [np.random.default_rng([seed, run_k, k]) for k in range(len(states))])]
            for run_k in (1, 2))
    policy = load_policy_agent(checkpoint)
    out: dict[str, list[float]] = {k: [] for k in ("entropy", "ce_search_to_search", "same_move",
                                                   "ce_policy_to_search", "ce_policy_to_mean")}
    for state, pa, pb in zip(states, a, b):
        p = _sorted_policy(policy, state)
        out["entropy"].append(_ce(pa, pa))
        out["ce_search_to_search"].append(_ce(pa, pb))
        out["same_move"].append(float(pa.argmax() == pb.argmax()))
        out["ce_policy_to_search"].append(_ce(pa, p))
        out["ce_policy_to_mean"].append(_ce((pa + pb) / 2, p))
    return {"positions": float(len(states)), **{k: float(np.mean(v)) for k, v in out.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a colony-distill run directory (its data/ shards)")
    ap.add_argument("--checkpoint", type=Path, required=True, help="the network whose search and policy are compared")
    ap.add_argument("--positions", type=int, default=300)
    ap.add_argument("--simulations", type=int, default=64)
    ap.add_argument("--considered", type=int, default=16, help="actions the Gumbel root considers (m)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    r = measure(args.run, args.checkpoint, args.positions, args.simulations, args.considered, args.seed)
    print(f"{int(r['positions'])} positions, az:{args.simulations}:m={args.considered}: target entropy "
          f"{r['entropy']:.3f} nats; one search to another: cross-entropy {r['ce_search_to_search']:.3f}, "
          f"same move {r['same_move']:.3f}")
    print(f"the policy: cross-entropy to one search {r['ce_policy_to_search']:.3f}, "
          f"to the mean of two {r['ce_policy_to_mean']:.3f}")


if __name__ == "__main__":
    main()
