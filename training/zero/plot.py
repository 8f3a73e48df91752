"""Learning curves of colony-zero runs: `python -m colony_training.zero.plot RUN [RUN ...] --out curve.png`.

Left: Elo of the policy (and of the search agent, when the run evaluated it) against the CPU
hours spent so far, with 95% intervals, fitted against the fixed ladder's ratings
(`colony_training.eval.elo.LADDER_ELO`: `random` 0, then `greedy`, `mcts:200`, `mcts:1000`, each
rated once), drawn as dotted lines. Right: the score against each ladder opponent with its
Wilson 95% interval. One colour per run. Everything comes from the wins, draws and losses of
each run's `eval.csv`; a RUN may also be a CSV file with those columns (`cpu_hours`, `agent`,
`opponent`, `wins`, `draws`, `losses`), such as `docs/shipped_lineage.csv`, the recorded
evaluations of the shipped agent's stages.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

from ..cli import console_script, report_error
from ..eval.elo import LADDER_ELO, PairTally, ladder_rating, score_interval

PROG = "python -m colony_training.zero.plot"


REQUIRED = ("cpu_hours", "agent", "opponent", "wins", "draws", "losses")


def read_eval(run: Path) -> list[dict[str, str]]:
    """The evaluation rows of a run directory (its `eval.csv`) or of a CSV file with its columns."""
    path = run if run.suffix == ".csv" else run / "eval.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{str(path)!r} does not exist (has the run finished an evaluation?)")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{str(path)!r} lacks the column(s) {', '.join(missing)} "
                             f"(an evaluation CSV needs {', '.join(REQUIRED)})")
        return list(reader)


def plot_runs(runs: list[Path], out: Path, labels: list[str] | None = None,
              offsets: list[float] | None = None) -> Path:
    """Draw the runs' curves into `out`; `offsets[i]` CPU hours are added to run i's axis (a run
    started from another run's checkpoint with `init_from` counts from zero)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_elo, ax_score) = plt.subplots(1, 2, figsize=(12, 4.5))
    markers = {"random": "s", "greedy": "^", "mcts:200": "v", "mcts:1000": "D"}  # by opponent
    for i, run in enumerate(runs):
        rows = read_eval(run)
        colour = f"C{i}"
        label = labels[i] if labels and i < len(labels) else run.name
        results: dict[str, dict[float, list[PairTally]]] = defaultdict(lambda: defaultdict(list))
        score: dict[tuple[str, str], list[tuple[float, float, float, float]]] = defaultdict(list)
        for n, r in enumerate(rows, start=2):  # line numbers of the file, after its header
            x = float(r["cpu_hours"]) + (offsets[i] if offsets and i < len(offsets) else 0.0)
            tally = PairTally(r["agent"], r["opponent"], float(r["wins"]), float(r["draws"]), float(r["losses"]))
            counts = (tally.wins, tally.draws, tally.losses)
            if not (math.isfinite(x) and all(math.isfinite(c) and c >= 0 for c in counts) and tally.games > 0):
                raise ValueError(f"line {n} of {str(run)!r}: cpu_hours must be a finite number and wins, draws, "
                                 f"losses counts >= 0 with at least one game")
            results[r["agent"]][x].append(tally)
            score[(r["agent"], r["opponent"])].append((x, tally.score, *score_interval(tally.score, tally.games)))
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
    for k, (name, rating) in enumerate(sorted(LADDER_ELO.items(), key=lambda kv: kv[1])):
        ax_elo.axhline(rating, color="grey", ls=":", lw=1)
        right = k % 2 == 1  # neighbouring anchors' labels at opposite ends, so close ratings stay legible
        ax_elo.annotate(f"{name} {rating:+.0f}", (1 if right else 0, rating), xycoords=("axes fraction", "data"),
                        xytext=(-3 if right else 3, 2), textcoords="offset points", fontsize=7, color="dimgrey",
                        ha="right" if right else "left")
    ax_elo.set_xlabel("CPU hours (self-play + fitting, all processes)")
    ax_elo.set_ylabel("Elo on the fixed ladder (dotted: its anchors)")
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
    p.add_argument("runs", nargs="+", help="run directories written by colony-zero, or CSV files with eval.csv's columns")
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
        return report_error(PROG, str(e))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
