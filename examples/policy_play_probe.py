"""Does the policy alone lose games to its play rule? Near-tie widths, sampling and symmetry averaging.

    python examples/policy_play_probe.py checkpoints/colony_zero.pt --games 400 --seed 71012 \\
        --ties 0,0.1,0.5,1,2 --sample --symmetries 0.5

`checkpoint:PATH` plays the policy's most likely move, near-ties (log-probabilities within
`NEAR_TIE_NATS` = 0.5 of the best) broken at random (`training/agents.py`). This probe plays the
same network against `greedy` on the same setups (paired seeds) once for each near-tie width in
`--ties`, once sampling from the policy (`--sample`), and once for each width in `--symmetries`
with the policy averaged over the 4 board symmetries that keep each colour's edges (the
geometric mean of the 4 views' probabilities: one forward pass of 4 positions per move, no
search). It prints one row per variant. docs/zero.md ("Play-time settings of the shipped
agent") has one run of it.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from colony_training.agents import NEAR_TIE_NATS, PolicyAgent
from colony_training.augment import AUG_SYMS, augment
from colony_training.checkpoint import CheckpointError, load_model
from colony_training.eval.evaluate import evaluate


class SymmetricPolicyAgent(PolicyAgent):
    """`PolicyAgent` whose probabilities are the normalised geometric mean over the colour-keeping symmetries."""

    def _probabilities(self, obs: np.ndarray, canonical: np.ndarray, valid: np.ndarray,
                       feats: torch.Tensor | None) -> tuple[np.ndarray, np.ndarray]:
        n, b = len(AUG_SYMS), len(obs)
        # every position in each of the n views: rows [view 0 of all positions, view 1 of all, ...]
        views, ids = augment(np.tile(obs, (n, 1, 1, 1)), np.tile(canonical, (n, 1)), np.repeat(AUG_SYMS, b))
        feats_t = None if feats is None else feats.repeat(n, 1)  # a slot's greedy score does not depend on the view
        logits, value = self.model(torch.from_numpy(np.ascontiguousarray(views)), torch.from_numpy(ids), feats_t)
        logp = torch.log_softmax(logits.double().masked_fill(~torch.from_numpy(np.tile(valid, (n, 1))), -1e300), -1)
        mean = logp.view(n, b, -1).mean(dim=0)
        return torch.softmax(mean, dim=-1).numpy() * valid, value.view(n, b).mean(dim=0).float().numpy()


def _widths(text: str) -> list[float]:
    try:
        widths = [float(t) for t in text.split(",") if t.strip()] if text else []
    except ValueError:
        widths = [-1.0]
    if any(not 0 <= w < float("inf") for w in widths):
        raise argparse.ArgumentTypeError(f"widths are numbers >= 0 in nats, got {text!r}")
    return widths


def main(argv: list[str] | None = None) -> list[tuple]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="a network checkpoint (colony-zero or colony-train)")
    ap.add_argument("--games", type=int, default=400, help="games per variant, even (default 400)")
    ap.add_argument("--seed", type=int, default=0, help="colony-eval's run seed: the same setups for every variant")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--ties", type=_widths, default=[NEAR_TIE_NATS],
                    help=f"near-tie widths in nats, comma-separated (default {NEAR_TIE_NATS:g}, the agent's)")
    ap.add_argument("--sample", action="store_true", help="also sample from the policy")
    ap.add_argument("--symmetries", type=_widths, default=[],
                    help="near-tie widths for the symmetry-averaged policy (default: none)")
    args = ap.parse_args(argv)
    if args.games < 2 or args.games % 2:
        ap.error(f"--games must be an even number >= 2 (each setup is played once with each colour), got {args.games}")
    try:
        model, _ = load_model(args.checkpoint)
    except CheckpointError as e:
        ap.error(str(e))
    variants: list[tuple[str, PolicyAgent]] = [(f"ties {w:g}", PolicyAgent(model, f"ties{w:g}", tie_nats=w))
                                               for w in args.ties]
    if args.sample:
        variants.append(("sampled", PolicyAgent(model, "sampled", greedy=False)))
    variants += [(f"4 symmetries, ties {w:g}", SymmetricPolicyAgent(model, f"sym4-ties{w:g}", tie_nats=w))
                 for w in args.symmetries]
    rows: list[tuple] = []  # (variant, games, the policy's wins, draws, losses, score, its 95% interval)
    print(f"{'variant':26s} {'games':>5s}   W / D / L      score  95% CI (policy's side, against greedy)")
    for label, agent in variants:
        pair = evaluate(["greedy", agent], games=args.games, seed=args.seed, workers=args.workers,
                        schedule="gauntlet", progress=False).pairs[0]  # greedy's side: read it the other way
        row = (label, pair.games, pair.losses, pair.draws, pair.wins, 1.0 - pair.score, 1.0 - pair.ci_high,
               1.0 - pair.ci_low)
        print("{:26s} {:5d}   {} / {} / {}   {:.3f}  [{:.3f}, {:.3f}]".format(*row), flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
