"""Learning curves of colony-zero runs: `python -m colony_training.zero.plot RUN_DIR [RUN_DIR ...] --out curve.png`.

Left: Elo of the policy (and of the search agent, when the run evaluated it) against the CPU
hours spent so far, with 95% intervals, fitted against the fixed ladder's ratings
(`colony_training.eval.elo.LADDER_ELO`: `random` 0, `greedy` measured once against it). Right:
the score against each ladder opponent with its Wilson 95% interval. One colour per run.
Everything comes from the runs' `eval.csv`.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

from ..cli import console_script
from ..eval.elo import LADDER_ELO, PairTally, ladder_rating

PROG = "python -m colony_training.zero.plot"


def read_eval(run: Path) -> list[dict[str, str]]:
    path = run / "eval.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist (has the run finished an evaluation?)")
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def plot_runs(runs: list[Path], out: Path, labels: list[str] | None = None,
              offsets: list[float] | None = None) -> Path:
    """Draw the runs' curves into `out`; `offsets[i]` CPU hours are added to run i's axis (a run
    started from another run's checkpoint with `init_from` counts from zero)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_elo, ax_score) = plt.subplots(1, 2, figsize=(12, 4.5))
    markers = {"policy": "o", "random": "s", "greedy": "^"}
    for i, run in enumerate(runs):
        rows = read_eval(run)
        colour = f"C{i}"
        label = labels[i] if labels and i < len(labels) else run.name
        results: dict[str, dict[float, list[PairTally]]] = defaultdict(lambda: defaultdict(list))
        score: dict[tuple[str, str], list[tuple[float, float, float, float]]] = defaultdict(list)
        for r in rows:
            x = float(r["cpu_hours"]) + (offsets[i] if offsets and i < len(offsets) else 0.0)
            results[r["agent"]][x].append(PairTally(r["agent"], r["opponent"], float(r["wins"]), float(r["draws"]),
                                                    float(r["losses"])))
            score[(r["agent"], r["opponent"])].append((x, float(r["score"]), float(r["score_lo"]), float(r["score_hi"])))
        # rated here from the games, not read from the `elo` column: runs written before the
        # fixed ladder anchored their Elo at `random`, which saturates
        elo = {agent: {x: ladder_rating(agent, tallies) for x, tallies in by_x.items()}
               for agent, by_x in results.items()}
        for agent, points in elo.items():
            xs = sorted(points)
            style = "-" if agent == "policy" else "--"
            ax_elo.errorbar(xs, [points[x][0] for x in xs], yerr=[points[x][1] for x in xs], fmt=style + "o",
                            color=colour, capsize=3, ms=4, label=f"{label}: {agent}")
        for (agent, opp), pts in sorted(score.items()):
            pts.sort()
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
            ax_score.errorbar(xs, ys, yerr=err, fmt=("-" if agent == "policy" else "--") + markers.get(opp, "D"),
                              color=colour, capsize=3, ms=4, label=f"{label}: {agent} vs {opp}")
    ax_elo.set_xlabel("CPU hours (self-play + fitting, all processes)")
    ax_elo.set_ylabel("Elo on the fixed ladder (" + ", ".join(f"{k} {v:+.0f}" for k, v in LADDER_ELO.items()) + ")")
    ax_elo.set_title("Strength against compute")
    ax_score.set_xlabel("CPU hours")
    ax_score.set_ylabel("score (win = 1, draw = 1/2), Wilson 95%")
    ax_score.set_ylim(-0.02, 1.02)
    ax_score.set_title("Score against the fixed ladder")
    for ax in (ax_elo, ax_score):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


@console_script
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description="Plot colony-zero learning curves (Elo against CPU hours).")
    p.add_argument("runs", nargs="+", help="run directories written by colony-zero")
    p.add_argument("--out", default="zero_curve.png", help="output PNG (default zero_curve.png)")
    p.add_argument("--label", action="append", help="legend label per run, in order")
    p.add_argument("--offset", action="append", type=float, metavar="CPU_HOURS",
                   help="CPU hours to add to a run's axis, per run in order (a run started with init_from)")
    args = p.parse_args(argv)
    if args.offset and not all(math.isfinite(h) and h >= 0 for h in args.offset):
        print(f"{PROG}: error: --offset takes finite CPU hours >= 0, got {args.offset}", file=sys.stderr)
        return 2
    try:
        path = plot_runs([Path(r) for r in args.runs], Path(args.out), args.label, args.offset)
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
