"""`colony-plot RUN_DIR`: learning curves of a run as PNG files in RUN_DIR/plots/.

Reads the run's `metrics.csv` and `eval.csv` (written by `colony-train`) and draws
losses, entropy, KL, explained variance, throughput, game length, the win rate against
the opponent pool, and the evaluation win rates per opponent, against environment steps.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

PANELS: tuple[tuple[str, str], ...] = (
    ("policy_loss", "policy loss"),
    ("value_loss", "value loss"),
    ("entropy", "policy entropy (nats)"),
    ("approx_kl", "approx. KL per update"),
    ("explained_var", "explained variance"),
    ("steps_per_s", "env steps / s"),
    ("mean_game_plies", "game length (plies)"),
    ("pool_win_rate", "score vs opponent pool"),
)


class PlotError(ValueError):
    """RUN_DIR is not a run directory with metrics."""


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _num(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else float("nan")
    except ValueError:
        return float("nan")


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write `plots/training.png` and (if there were evaluations) `plots/evaluation.png`; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = Path(run_dir)
    metrics_path = run / "metrics.csv"
    if not metrics_path.is_file():
        raise PlotError(f"{str(run)!r} has no metrics.csv (not a colony-train run directory)")
    rows = _read(metrics_path)
    if not rows:
        raise PlotError(f"{str(metrics_path)!r} has no rows yet")
    out_dir = run / "plots"
    out_dir.mkdir(exist_ok=True)
    steps = [_num(r["global_step"]) for r in rows]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7), constrained_layout=True)
    for ax, (key, title) in zip(axes.flat, PANELS):
        ax.plot(steps, [_num(r.get(key)) for r in rows], lw=1)
        ax.set_title(title)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    fig.suptitle(f"training: {run.name}")
    written = [out_dir / "training.png"]
    fig.savefig(written[0], dpi=90)
    plt.close(fig)

    eval_path = run / "eval.csv"
    evals = _read(eval_path) if eval_path.is_file() else []
    if evals:
        series: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for r in evals:
            series[r["opponent"]].append((_num(r["global_step"]), _num(r["win_rate"])))
        fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
        for name, pts in series.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"vs {name}")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("env steps")
        ax.set_ylabel("win rate (greedy play)")
        ax.set_title(f"evaluation: {run.name}")
        ax.grid(alpha=0.3)
        ax.legend()
        written.append(out_dir / "evaluation.png")
        fig.savefig(written[-1], dpi=90)
        plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="colony-plot", description="Learning curves of a colony-train run as PNG files.")
    p.add_argument("run_dir", help="a run directory written by colony-train")
    args = p.parse_args(argv)
    try:
        for path in plot_run(args.run_dir):
            print(path)
    except PlotError as e:
        print(f"colony-plot: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
