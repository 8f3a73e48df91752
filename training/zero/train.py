"""`colony-zero` (also `python -m colony_training.zero`): search-based self-play with a learned value.

    colony-zero --config configs/zero_quickstart.yaml
    colony-zero --config configs/zero.yaml --generations 300 --workers 2
    colony-zero --resume runs/zero-20261201-101500
    colony-zero --export-resume runs/zero-20261201-101500 zero-gen42.pt   # one file of a few MB
    colony-zero --resume-from zero-gen42.pt --run-dir runs/zero-continued  # on another machine

Each generation (AlphaZero, Silver et al. 2018; Gumbel AlphaZero, Danihelka et al. 2022):
1. **self-play**: `workers` processes each play their share of `games_per_generation` games
   with the current network steering a batched search (`simulations` per move, Gumbel root
   by default); every position is stored with the search's improved policy and, at the end,
   the game's result for the colour that was to move there;
2. **fit**: the network is trained on minibatches drawn from the replay buffer (the last
   `replay_positions` positions): cross-entropy to the search's policy plus the squared error
   of tanh(value) to the result, each sample shown in a random board symmetry;
3. **bookkeeping**: `checkpoints/latest.pt` is written atomically (the usual checkpoint format:
   every tool loads it); then every `eval_every` generations the policy (and, with
   `eval_simulations`, the search agent) plays the fixed ladder `eval_opponents`; `eval.csv`
   holds scores with Wilson intervals and Elo with 95% intervals against the CPU time spent so
   far; TensorBoard gets the generation's values, and `metrics.csv` its row, last.

What each core does: during self-play each of the `workers` processes plays its own games
(tree walks compiled, one batched forward pass per simulation step); during fitting the
learner runs with `workers` torch threads. `--resume RUN_DIR` continues after the last
finished generation: the replay shards of later generations are deleted and replayed with
the same seeds, and the CSV files and TensorBoard events are cut back to the checkpoint, so a
killed and resumed run has exactly one row per generation. The checkpoint carries its
generation's `metrics.csv` row: a run killed between the checkpoint and that row (during the
evaluation, say) logs the generation again on resume, evaluation included, instead of losing
its rows (`log_generation`; docs/training.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import dataclasses
import functools
import io
import math
import multiprocessing as mp
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from colony_env.agents.az import SearchConfig
from colony_env.observation import OBS_CHANNELS

from ..agents import leaf_evaluator
from ..checkpoint import CheckpointError, build_model, read_checkpoint, save_checkpoint
from ..cli import console_script, report_error, terminate_workers
from ..config import (
    ConfigError,
    config_from_dict,
    config_help,
    load_config,
    resolve_device,
    split_overrides,
)
from ..eval.agent_specs import AgentSpecError
from ..eval.evaluate import EvalError
from ..model import PolicyValueNet, with_count_inputs
from ..quantize import int8_copy
from ..runlog import RunDir, RunDirError, new_run_dir
from . import resume_point
from .config import ZeroConfig
from .distributed import DistributedError, RayPool
from .fit import fit
from .replay import ReplayBuffer, ReplayError, remove_stray_files, shard_path, write_shard
from .resume_point import DEFAULT_SAMPLE, ResumePointError
from .selfplay import GameData, concat, play_games, worker_play
from .starts import generation_starts, load_positions

PROG = "colony-zero"
_error = functools.partial(report_error, PROG)


def _fixed_keys_refusal(flag: str, overrides: dict) -> str | None:
    """Why `flag` cannot take these overrides (keys that decide what the run learns), or None."""
    bad = sorted(set(overrides) - set(RESUMABLE_KEYS))
    if not bad:
        return None
    return f"{flag} cannot change {', '.join(bad)} (it decides what the run learns); allowed: {', '.join(RESUMABLE_KEYS)}"
TRAINER = "colony-zero"
RESUMABLE_KEYS = ("generations", "workers", "address", "device", "torch_threads", "eval_every", "eval_games",
                  "eval_simulations", "eval_max_plies", "eval_opponents", "eval_policy", "eval_search_opponents",
                  "parallel_games", "keep_checkpoints")
"""Settings a resumed run may change: they decide how fast or how often, not what is learned."""
METRICS_FIELDS = ("generation", "games", "positions", "buffer", "game_length", "red_wins", "draws", "selfplay_s",
                  "fit_s", "fit_steps", "policy_loss", "target_entropy", "value_loss", "ownership_loss", "cpu_hours",
                  "wall_hours", "leaf_evals_per_s", "nodes")
EVAL_FIELDS = ("generation", "cpu_hours", "agent", "opponent", "games", "wins", "draws", "losses", "score",
               "score_lo", "score_hi", "elo", "elo_ci95")
TB_KEYS = ("policy_loss", "target_entropy", "value_loss", "game_length", "leaf_evals_per_s")  # zero/* in TensorBoard


def run_files(run_dir: Path) -> RunDir:
    """The run directory's logs, rewound by generation on resume."""
    return RunDir(run_dir, {"metrics.csv": METRICS_FIELDS, "eval.csv": EVAL_FIELDS}, column="generation")


def search_config(cfg: ZeroConfig) -> SearchConfig:
    return SearchConfig(simulations=cfg.simulations, root=cfg.root, c_puct=cfg.c_puct,
                        max_considered=cfg.max_considered, c_scale=cfg.c_scale, rescale_q=cfg.rescale_q,
                        forced_playouts=cfg.forced_playouts, root_dirichlet=cfg.root_dirichlet)


def fast_search_config(cfg: ZeroConfig) -> SearchConfig | None:
    """The cheap search of playout cap randomisation (`fast_simulations`), or None when it is off."""
    if not cfg.fast_simulations:
        return None
    return dataclasses.replace(search_config(cfg), simulations=cfg.fast_simulations,
                               max_considered=min(cfg.max_considered, cfg.fast_simulations))


def game_seeds(cfg: ZeroConfig, generation: int) -> list[int]:
    """The setups of one generation: fixed by (seed, generation), so a replayed generation plays the same games."""
    return [int(s) for s in np.random.SeedSequence([cfg.seed, generation]).generate_state(cfg.games_per_generation)]


# --- run directory ------------------------------------------------------------------------------
def ancestor_meta(path: str, checkpoint: dict[str, Any]) -> dict[str, Any]:
    """What a run started with `init_from` records of its starting point, so that a card can add up
    the compute behind an agent: the path and the ancestor's own meta (with its ancestors, nested)."""
    return {"path": str(path), **checkpoint.get("meta", {})}


def _save(run_dir: Path, model: PolicyValueNet, opt: torch.optim.Optimizer, cfg: ZeroConfig, generation: int,
          totals: dict[str, float], rng: np.random.Generator, ancestor: dict[str, Any] | None = None,
          pending_log: dict[str, Any] | None = None, restored_from: dict[str, Any] | None = None) -> Path:
    """Write `checkpoints/latest.pt` (and the numbered copy); `pending_log` is what `log_generation`
    still has to write for this generation, kept so that a resume can write it if the run dies first;
    `restored_from` records the resume point a run was rebuilt from (`resume_point.restore`)."""
    meta = {"trainer": TRAINER, "generation": generation, "value_head": "tanh", **totals,
            "hardware": f"{platform.machine()} {platform.processor() or ''}".strip(), "torch": str(torch.__version__),
            "python": platform.python_version()}
    if ancestor is not None:
        meta["init_from"] = ancestor
    if restored_from is not None:
        meta["restored_from"] = restored_from
    extra = {"optimizer": opt.state_dict(), "generation": generation, "rng_state": rng.bit_generator.state}
    if pending_log is not None:
        extra["pending_log"] = pending_log
    ckpt_dir = run_dir / "checkpoints"
    path = save_checkpoint(ckpt_dir / "latest.pt", model, cfg.to_dict(), meta, extra)
    if cfg.keep_checkpoints:
        save_checkpoint(ckpt_dir / f"gen_{generation:06d}.pt", model, cfg.to_dict(), meta)
        numbered = sorted(ckpt_dir.glob("gen_*.pt"))
        for old in numbered[: -cfg.keep_checkpoints]:
            old.unlink(missing_ok=True)
    return path


EVAL_BATCH = 16
"""Games a worker plays side by side in an evaluation (fewer when the games would not reach every worker)."""


def evaluate_checkpoint(path: Path, cfg: ZeroConfig, generation: int, cpu_hours: float) -> list[dict[str, Any]]:
    """The policy (and the search agent) against their ladders; one row per (agent, opponent).

    What each evaluation cost (games, seconds) is said on stderr, one line per agent: the ladder's
    top anchors are search agents, and their games can cost more than the generation they rate."""
    from ..eval.elo import ladder_rating
    from ..eval.evaluate import evaluate

    agents = [(f"checkpoint:{path}", "policy", cfg.eval_opponents)] if cfg.eval_policy else []
    if cfg.eval_simulations:
        agents.append((f"checkpoint:{path}:az:{cfg.eval_simulations}", f"az:{cfg.eval_simulations}",
                       cfg.eval_search_opponents or cfg.eval_opponents))
    rows = []
    for agent, label, opponents in agents:
        t0 = time.time()
        # Games side by side (`colony-eval --batch`): the network moves in all of a worker's games with one call.
        batch = max(1, min(EVAL_BATCH, len(opponents) * cfg.eval_games // cfg.workers))
        result = evaluate([agent, *opponents], games=cfg.eval_games, seed=cfg.eval_seed + generation,
                          workers=cfg.workers, schedule="gauntlet", max_plies=cfg.eval_max_plies, progress=False,
                          batch=batch)
        seconds = time.time() - t0
        games = sum(s.games for s in result.pairs)
        tqdm.write(f"{PROG}: generation {generation} evaluation of {label}: {games} games against "
                   f"{', '.join(opponents)} in {seconds:.1f} s on {cfg.workers} worker(s) "
                   f"({seconds / max(1, games):.2f} s a game)", file=sys.stderr)
        elo, elo_ci95 = ladder_rating(agent, [s.tally() for s in result.pairs])
        for s in result.pairs:
            rows.append({"generation": generation, "cpu_hours": round(cpu_hours, 4), "agent": label, "opponent": s.b,
                         "games": s.games, "wins": s.wins, "draws": s.draws, "losses": s.losses,
                         "score": round(s.score, 4), "score_lo": round(s.ci_low, 4), "score_hi": round(s.ci_high, 4),
                         "elo": round(elo, 1), "elo_ci95": round(elo_ci95, 1)})
    return rows


def log_generation(log: RunDir, checkpoint: Path, cfg: ZeroConfig, generation: int, row: dict[str, Any],
                   eval_due: bool, bar: tqdm | None = None) -> None:
    """The bookkeeping of a generation whose checkpoint is written: the evaluation (if due), then
    TensorBoard (flushed), `eval.csv` and, last, the `metrics.csv` row, which marks the
    generation as logged. A kill before that row is undone on resume (`train`): the rows and
    events of the generation are cut and this runs again from the checkpoint's `pending_log`."""
    rows = evaluate_checkpoint(checkpoint, cfg, generation, row["cpu_hours"]) if eval_due else []
    log.scalars("zero", {k: row[k] for k in TB_KEYS}, generation)
    if rows:
        log.scalars("eval", {f"{r['agent']}_vs_{r['opponent']}": r["score"] for r in rows}, generation)
    log.flush()  # the events are on disk before the row that says they are
    if rows:
        log.log("eval.csv", rows)
    log.log("metrics.csv", [row])
    if rows and bar is not None:
        bar.write("  ".join(f"{r['agent']} vs {r['opponent']}: {r['score']:.3f} [{r['score_lo']:.2f}, "
                            f"{r['score_hi']:.2f}]" for r in rows))


def last_logged_generation(run_dir: Path) -> int:
    """The generation of the last complete `metrics.csv` row (-1 if none): the last one fully logged."""
    try:
        text = (run_dir / "metrics.csv").read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return -1
    rows = list(csv.DictReader(io.StringIO(text[: text.rfind("\n") + 1])))  # a torn last row does not count
    try:
        return int(rows[-1]["generation"]) if rows else -1
    except (KeyError, TypeError, ValueError):
        return -1


# --- the loop -----------------------------------------------------------------------------------
def train(cfg: ZeroConfig, run_dir: Path, resume: dict[str, Any] | None = None, progress: bool = True,
          pool: cf.Executor | RayPool | None = None) -> Path:
    """Run (or continue) `cfg` in `run_dir`; returns the path of the latest checkpoint.

    `pool` runs the self-play chunks (a `RayPool` for a cluster); by default `workers` local processes.
    """
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(cfg.torch_threads, cfg.workers))
    if resume is not None:
        model = build_model(resume).to(device)
        start = int(resume["generation"]) + 1
        totals = {k: resume["meta"].get(k, 0) for k in ("games", "positions", "cpu_seconds", "wall_seconds")}
        rng = np.random.default_rng()
        rng.bit_generator.state = resume["rng_state"]
        ancestor = resume["meta"].get("init_from")
        restored_from = resume["meta"].get("restored_from")
    elif cfg.init_from:
        init = read_checkpoint(cfg.init_from)
        model = build_model(init)
        if cfg.count_inputs and not model.count_inputs:
            model = with_count_inputs(model)  # the same function as the file's network until training moves it
        model = model.to(device)
        start, totals, rng = 0, {}, np.random.default_rng([cfg.seed, 1])
        ancestor = ancestor_meta(cfg.init_from, init)
        restored_from = None
    else:
        model = PolicyValueNet(OBS_CHANNELS, cfg.channels, cfg.blocks, False, cfg.target_features,
                               cfg.ownership_head, cfg.global_pool, cfg.count_inputs).to(device)
        start, totals, rng = 0, {}, np.random.default_rng([cfg.seed, 1])
        ancestor = restored_from = None
    totals = {k: float(totals.get(k, 0)) for k in ("games", "positions", "cpu_seconds", "wall_seconds")}
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    if resume is not None:
        opt.load_state_dict(resume["optimizer"])
    positions = load_positions(cfg.start_records, cfg.max_plies) if cfg.start_records else None
    last_done = start - 1
    remove_stray_files(run_dir, last_done)
    log = run_files(run_dir)
    # Rows of a generation after the checkpoint are played again; so are those of the checkpoint's
    # own generation if the run died before its last row (checkpoints before pending_log: not known).
    pending = resume.get("pending_log") if resume is not None else None
    relog = pending is not None and last_logged_generation(run_dir) < last_done
    keep = last_done - 1 if relog else last_done
    log.rewind(keep if start else None, keep)
    buffer = ReplayBuffer.load(run_dir, cfg.replay_positions, last_done) if start else ReplayBuffer(cfg.replay_positions)
    if pool is None and cfg.workers > 1:
        pool = cf.ProcessPoolExecutor(cfg.workers, mp_context=mp.get_context("spawn"))
    lost_reported = 0
    bar = tqdm(total=cfg.generations, initial=start, desc=PROG, unit="gen", disable=not progress, dynamic_ncols=True)
    latest = run_dir / "checkpoints" / "latest.pt"
    try:
        if relog:
            log_generation(log, latest, cfg, last_done, pending["metrics"], bool(pending["eval_due"]), bar)
        for gen in range(start, cfg.generations):
            t0 = time.time()
            cpu0 = time.process_time()
            data = self_play(model, cfg, gen, pool, device, positions)
            write_shard(shard_path(run_dir, gen), data)
            buffer.add(data)
            t1 = time.time()
            steps = max(1, math.ceil(data.n_positions * cfg.sample_reuse / cfg.batch_size))
            losses = fit(model, opt, buffer.flat(), steps, cfg, rng, device)
            t2 = time.time()
            totals["games"] += len(data.game_lengths)
            totals["positions"] += data.n_positions
            totals["cpu_seconds"] += (time.process_time() - cpu0) + data.cpu_seconds
            totals["wall_seconds"] += t2 - t0
            row = {"generation": gen, "games": int(totals["games"]), "positions": int(totals["positions"]),
                   "buffer": len(buffer), "game_length": round(float(data.game_lengths.mean()), 1),
                   "red_wins": round(float((data.game_winners == 0).mean()), 3),
                   "draws": round(float((data.game_winners == -1).mean()), 3),
                   "selfplay_s": round(t1 - t0, 1), "fit_s": round(t2 - t1, 1), "fit_steps": steps,
                   **{k: round(v, 4) for k, v in losses.items()},
                   "cpu_hours": round(totals["cpu_seconds"] / 3600, 4), "wall_hours": round(totals["wall_seconds"] / 3600, 4),
                   "leaf_evals_per_s": round(data.leaf_evaluations / max(1e-9, t1 - t0), 1),
                   "nodes": pool.take_nodes() if isinstance(pool, RayPool) else 1}
            eval_due = bool(cfg.eval_every and (gen + 1) % cfg.eval_every == 0) or gen == cfg.generations - 1
            latest = _save(run_dir, model, opt, cfg, gen, totals, rng, ancestor,
                           pending_log={"metrics": row, "eval_due": eval_due}, restored_from=restored_from)
            log_generation(log, latest, cfg, gen, row, eval_due, bar)
            lost_reported = _report_lost_nodes(pool, lost_reported, bar)
            bar.set_postfix(pos=len(buffer), pl=f"{losses['policy_loss']:.2f}", vl=f"{losses['value_loss']:.3f}",
                            len=row["game_length"])
            bar.update()
        _report_lost_nodes(pool, lost_reported, bar)
    except BaseException:
        if isinstance(pool, cf.ProcessPoolExecutor):
            terminate_workers(pool)  # stopped (Ctrl-C, SIGTERM) or failed: not after the chunks in flight
        raise
    finally:
        bar.close()
        log.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return latest


def _report_lost_nodes(pool: object, reported: int, bar: tqdm) -> int:
    """Say once per newly lost Ray node that it is gone (its chunks ran again elsewhere); the count said so far."""
    if not isinstance(pool, RayPool):
        return reported
    lost, joined = pool.lost_nodes()
    if lost > reported:
        bar.write(f"{PROG}: lost {lost} of {joined} Ray nodes; their self-play chunks were played again on the "
                  "others (same seeds, same games)", file=sys.stderr)
    return max(lost, reported)


def self_play(model: PolicyValueNet, cfg: ZeroConfig, generation: int, pool: cf.Executor | RayPool | None,
              device: torch.device, positions: np.ndarray | None = None) -> GameData:
    """One generation's games, split over the workers (each with its own search noise); a `start_share`
    of them start from `positions` (`starts.load_positions` of `start_records`)."""
    seeds = game_seeds(cfg, generation)
    starts = generation_starts(cfg.seed, generation, len(seeds), cfg.start_share, positions)
    rng_seeds = [int(s) for s in np.random.SeedSequence([cfg.seed, generation, 7]).generate_state(cfg.workers)]
    mix = cfg.rollout_mix_at(generation)
    if pool is None:
        player = int8_copy(model) if cfg.selfplay_int8 and device.type == "cpu" else model
        return play_games(leaf_evaluator(player, device, mix, rng_seeds[0] + 1, playouts=cfg.rollout_playouts,
                                         from_connected=cfg.rollout_from), search_config(cfg), seeds,
                          cfg.parallel_games, cfg.max_plies, np.random.default_rng(rng_seeds[0]), cfg.value_rollouts,
                          fast_search_config(cfg), cfg.full_search_prob, starts)
    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    chunks = [seeds[w:: cfg.workers] for w in range(cfg.workers)]
    futures = [pool.submit(worker_play, model.architecture(), weights, search_config(cfg), chunk, cfg.parallel_games,
                           cfg.max_plies, rng_seeds[w], cfg.torch_threads, str(device), mix, cfg.value_rollouts,
                           fast_search_config(cfg), cfg.full_search_prob, cfg.selfplay_int8, cfg.rollout_playouts,
                           cfg.rollout_from, starts[w:: cfg.workers])
               for w, chunk in enumerate(chunks) if chunk]
    return concat([f.result() for f in futures])


# --- command line -------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Search-based self-play (AlphaZero / Gumbel AlphaZero) with a learned value. "
        "Guide: docs/zero.md.", epilog=config_help(ZeroConfig), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML config (keys of ZeroConfig), e.g. configs/zero_quickstart.yaml")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR after its last finished generation")
    p.add_argument("--export-resume", nargs=2, metavar=("RUN_DIR", "OUT"),
                   help="write RUN_DIR's last finished generation as one resume point file OUT (network, optimizer, "
                   "config, CSV rows, a sample of the replay buffer) that --resume-from continues on any machine")
    p.add_argument("--resume-positions", type=int, default=None, metavar="N",
                   help=f"replay positions a resume point keeps, a seeded uniform sample (default {DEFAULT_SAMPLE})")
    p.add_argument("--resume-from", metavar="POINT", help="rebuild a run directory from a resume point and continue it")
    p.add_argument("--run-dir", metavar="DIR", help="with --resume-from: the new run directory (must not exist or be "
                   "empty; default <out_dir>/<run_name>-<timestamp>)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def export_resume(run_dir: str, out: str, positions: int | None) -> int:
    """`--export-resume`: write the resume point and say what it holds, in one line."""
    info = resume_point.export(run_dir, out, DEFAULT_SAMPLE if positions is None else positions)
    print(f"{PROG}: resume point {out}: generation {info['generation']}, {info['sampled_positions']} of "
          f"{info['buffer_positions']} replay positions, {info['bytes'] / 1e6:.1f} MB; continue with "
          f"{PROG} --resume-from {out} --run-dir NEW_DIR")
    return 0


@console_script
def main(argv: list[str] | None = None) -> int:
    args, rest = build_parser().parse_known_args(argv)
    run_dir: Path | None = None
    modes = [f for f, v in (("--resume", args.resume), ("--resume-from", args.resume_from),
                            ("--export-resume", args.export_resume)) if v]
    if len(modes) > 1:
        return _error(f"{' and '.join(modes)} cannot be combined; give one")
    if args.run_dir and not args.resume_from:
        return _error("--run-dir goes with --resume-from (a new run's directory comes from out_dir and run_name)")
    if args.resume_positions is not None and not args.export_resume:
        return _error("--resume-positions goes with --export-resume")
    try:
        overrides = split_overrides(rest, ZeroConfig, example="--generations 10")
        if args.export_resume:
            if overrides or args.config:
                return _error("--export-resume takes no config or overrides")
            return export_resume(*args.export_resume, args.resume_positions)
        if args.resume_from:
            if args.config:
                return _error("--resume-from takes the resume point's own config; drop --config")
            if refusal := _fixed_keys_refusal("--resume-from", overrides):
                return _error(refusal)
            point_cfg = resume_point.config_of(args.resume_from)
            run_dir = Path(args.run_dir) if args.run_dir else new_run_dir(point_cfg.out_dir, point_cfg.run_name)
            resume_point.restore(args.resume_from, run_dir, TB_KEYS)
            print(f"{PROG}: rebuilt run directory {run_dir} from {args.resume_from}", file=sys.stderr)
            args.resume = str(run_dir)
        if args.resume:
            run_dir = Path(args.resume)
            if not (run_dir / "config.yaml").is_file():
                return _error(f"--resume {str(run_dir)!r}: no config.yaml there (is it a colony-zero run directory?)")
            if args.config:
                return _error("--resume takes the run's own config.yaml; drop --config")
            if refusal := _fixed_keys_refusal("--resume", overrides):
                return _error(refusal)
            cfg = load_config(run_dir / "config.yaml", overrides, cls=ZeroConfig)
            ckpt = run_dir / "checkpoints" / "latest.pt"
            resume = read_checkpoint(ckpt) if ckpt.is_file() else None
            if resume is not None and "generation" not in resume:
                return _error(f"{str(ckpt)!r} is not a colony-zero training checkpoint")
        else:
            cfg = load_config(args.config, overrides, cls=ZeroConfig) if args.config else config_from_dict(overrides, cls=ZeroConfig)
            run_dir = new_run_dir(cfg.out_dir, cfg.run_name)
            resume = None
        resolve_device(cfg.device)
        pool = RayPool(cfg.address) if cfg.address else None  # joined before anything is written
        run_files(run_dir).write_config(cfg)
        print(f"{PROG}: run directory {run_dir}", file=sys.stderr)
        latest = train(cfg, run_dir, resume, progress=not args.no_progress, pool=pool)
    except (ConfigError, CheckpointError, ReplayError, AgentSpecError, EvalError, DistributedError,
            ResumePointError, RunDirError) as e:
        return _error(str(e))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted" + (f"; continue with --resume {run_dir}" if run_dir else ""), file=sys.stderr)
        return 130
    print(f"{PROG}: latest checkpoint {latest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
