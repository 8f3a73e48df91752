"""`colony-plot RUN_DIR`: learning curves of a run as PNG files in RUN_DIR/plots/.

Reads the run's `metrics.csv` and `eval.csv` (written by `colony-train`) and draws, against
environment steps: losses, entropy, KL, explained variance, throughput, game length and the
score in training games (each a moving average with the raw values faint behind, because
single iterations are noisy), and the evaluation scores per opponent with their 95%
intervals, from the network before training (step 0) on.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..cli import console_script, report_error

# (metrics.csv columns, panel title, y label); one panel may hold several series
PANELS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("policy_loss",), "policy loss", "clipped PPO objective"),
    (("value_loss",), "value loss", "squared error"),
    (("entropy",), "policy entropy", "nats"),
    (("approx_kl",), "policy change per update", "approx. KL (nats)"),
    (("explained_var",), "value head: explained variance", "1 - Var(return - V) / Var(return)"),
    (("steps_per_s",), "throughput", "env steps / s"),
    (("mean_game_plies",), "game length", "plies per finished game"),
    (("pool_win_rate", "greedy_win_rate"), "score in training games (sampled play)", "score (win 1, draw 0.5)"),
)
SERIES_LABELS = {"pool_win_rate": "vs past snapshots", "greedy_win_rate": "vs the greedy agent"}
SERIES_WEIGHTS = {"pool_win_rate": "pool_games", "greedy_win_rate": "greedy_games",
                  "mean_game_plies": "games"}  # games behind each value
SMOOTH_POINTS = 20  # the moving average spans about 1/20 of the run
RAW_ALPHA = 0.25


class PlotError(ValueError):
    """RUN_DIR is not a run directory with metrics."""


def _read(path: Path, needs: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """The rows of a run's CSV file; PlotError if it is not text, not CSV or lacks a column in `needs`."""
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as e:
        raise PlotError(f"{str(path)!r} is not a CSV file written by colony-train ({type(e).__name__})") from None
    missing = [c for c in needs if c not in columns]
    if rows and missing:
        raise PlotError(f"{str(path)!r} has no column(s) {missing}: not a colony-train run's file "
                        f"(a colony-zero run is drawn by python -m colony_training.zero.plot)")
    return rows


def _num(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else float("nan")
    except ValueError:
        return float("nan")


def smoothing_window(n: int) -> int:
    """An odd window of about n / SMOOTH_POINTS iterations (1: no smoothing for short runs)."""
    w = max(1, round(n / SMOOTH_POINTS))
    return w if w % 2 else w + 1


def moving_average(values: np.ndarray, window: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Centred moving average that skips NaN (iterations without such games) instead of spreading it.

    With `weights` (e.g. games per iteration) it is the weighted mean, so an iteration with one
    game counts one game's worth, not as much as an iteration with forty.
    """
    w = np.ones(len(values)) if weights is None else np.nan_to_num(np.asarray(weights, float))
    ok = np.isfinite(values) & (w > 0)
    if window <= 1 and weights is None:
        return values.astype(float)
    kernel = np.ones(max(1, window))
    total = np.convolve(np.where(ok, values * w, 0.0), kernel, mode="same")
    count = np.convolve(np.where(ok, w, 0.0), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def evaluation_points(rows: list[dict[str, str]]) -> dict[str, list[tuple[float, float, float, float, int]]]:
    """opponent -> sorted (step, score, low, high, games): score = wins + draws / 2 with its Wilson 95% interval."""
    from .elo import score_interval

    series: dict[str, list[tuple[float, float, float, float, int]]] = defaultdict(list)
    for r in rows:
        n = _num(r.get("games"))
        games = int(n) if np.isfinite(n) else 0
        score = _num(r.get("win_rate")) + 0.5 * _num(r.get("draw_rate"))
        if games <= 0 or not np.isfinite(score):
            continue
        low, high = score_interval(score, games)
        series[r["opponent"]].append((_num(r["global_step"]), score, low, high, games))
    return {k: sorted(v) for k, v in series.items()}


def steps_label(x: float, _pos: object = None) -> str:
    """Axis ticks like 300k and 1.5M: full step counts overlap on a small panel."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:g}{suffix}"
    return f"{x:g}"


def opponent_label(spec: str) -> str:
    """'the greedy agent' rather than a bare 'greedy', which reads like the way the network plays."""
    return f"the {spec} agent" if spec in ("random", "greedy") else spec


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write `plots/training.png` and (if there were evaluations) `plots/evaluation.png`; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    run = Path(run_dir)
    metrics_path = run / "metrics.csv"
    if not metrics_path.is_file():
        raise PlotError(f"{str(run)!r} has no metrics.csv (not a colony-train run directory)")
    rows = _read(metrics_path, ("global_step",))
    if not rows:
        raise PlotError(f"{str(metrics_path)!r} has no rows yet")
    out_dir = run / "plots"
    out_dir.mkdir(exist_ok=True)
    steps = np.array([_num(r["global_step"]) for r in rows])
    window = smoothing_window(len(rows))
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.4), constrained_layout=True)
    for ax, (keys, title, ylabel) in zip(axes.flat, PANELS):
        for k, key in enumerate(keys):
            raw = np.array([_num(r.get(key)) for r in rows])
            colour = f"C{k}"
            ok = np.isfinite(raw)
            if not ok.any():  # e.g. no games against the greedy agent in this run
                continue
            ax.plot(steps[ok], raw[ok], lw=0.8, color=colour, alpha=RAW_ALPHA)
            weight_key = SERIES_WEIGHTS.get(key)
            weights = np.array([_num(r.get(weight_key)) for r in rows]) if weight_key and weight_key in rows[0] else None
            smooth = moving_average(raw, window, weights)
            shown = np.isfinite(smooth)  # one line across iterations without a value, not fragments
            ax.plot(steps[shown], smooth[shown], lw=1.8, color=colour,
                    label=SERIES_LABELS.get(key, key) if len(keys) > 1 else None)
        if len(keys) > 1:
            ax.set_ylim(-0.02, 1.02)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8, loc="lower right")
        ax.set_title(title)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(FuncFormatter(steps_label))
        ax.grid(alpha=0.3)
    how = f"solid: moving average over {window} iterations; faint: each iteration" if window > 1 else "each iteration"
    fig.suptitle(f"training: {run.name}  ({how})")
    written = [out_dir / "training.png"]
    fig.savefig(written[0], dpi=90)
    plt.close(fig)

    eval_path = run / "eval.csv"
    series = evaluation_points(_read(eval_path, ("global_step", "opponent"))) if eval_path.is_file() else {}
    if series:
        fig, ax = plt.subplots(figsize=(7.5, 4.8), constrained_layout=True)
        for k, (name, pts) in enumerate(sorted(series.items())):
            x = np.array([p[0] for p in pts])
            y = np.array([p[1] for p in pts])
            # clipped at 0: at a score of exactly 0 or 1 rounding can put the bound a hair inside
            err = np.maximum(0.0, np.array([[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]))
            sizes = sorted({p[4] for p in pts})
            games = f"{sizes[0]} games" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]} games"
            ax.errorbar(x, y, yerr=err, marker="o", ms=4, capsize=3, lw=1.2, color=f"C{k}",
                        label=f"vs {opponent_label(name)} ({games} per point)")
        ax.axhline(0.5, color="grey", lw=0.8, ls=":", label="0.5: as strong as the opponent")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlim(left=min(0.0, ax.get_xlim()[0]))
        ax.set_xlabel("env steps (0 = the network before training)")
        ax.xaxis.set_major_formatter(FuncFormatter(steps_label))
        ax.set_ylabel("score of the network being trained\n(its most likely moves; win 1, draw 0.5)")
        ax.set_title(f"evaluation: {run.name}  (bars: 95% Wilson intervals)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
        written.append(out_dir / "evaluation.png")
        fig.savefig(written[-1], dpi=90)
        plt.close(fig)
    return written


@console_script
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="colony-plot", description="Learning curves of a colony-train run as PNG files.")
    p.add_argument("run_dir", help="a run directory written by colony-train")
    args = p.parse_args(argv)
    try:
        for path in plot_run(args.run_dir):
            print(path)
    except PlotError as e:
        return report_error("colony-plot", str(e))
    except OSError as e:  # the run's files were read, so the plots folder or a PNG could not be written
        return report_error("colony-plot", f"cannot write the plots of {args.run_dir!r}: {e.filename}: {e.strerror or e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
