"""Self-play PPO for Colony with RLlib (Ray): `colony-train-rllib --config configs/rllib_ppo.yaml`.

The distributed path: the same game, network and checkpoint format as `colony-train`, but
sampling and learning run on RLlib's current API stack (EnvRunners, Learners, RLModules,
connectors), so the run scales from this machine to a Ray cluster by changing
`num_env_runners` / `num_learners` and passing `--address`.

How the pieces map onto RLlib:

| piece                  | here                                                                     |
|------------------------|--------------------------------------------------------------------------|
| env                    | the PettingZoo AEC env `colony_v0` through `colony_env.rllib` (one adapter: PettingZoo's `observation` key becomes RLlib's `observations`, canonical frame of the mover) and RLlib's `PettingZooEnv` |
| agents -> modules      | both colours (`player_0`, `player_1`) map to the one trained module `main` (parameter sharing); in a `pool_share` of the games one colour is a frozen snapshot `main_vN` |
| RLModule               | `ColonyRLModule`: the project's `PolicyValueNet` (training/model.py) with action masking as in RLlib's `ActionMaskingTorchRLModule` example, but with a finite masked logit (no NaN, sb3-contrib #81/#247) |
| self-play              | `SnapshotSelfPlayCallback`, RLlib's self-play callback pattern: every `snapshot_every` iterations a frozen copy of `main` joins the pool (`Algorithm.add_module`), the oldest leaves past `pool_size` |
| checkpoints            | RLlib checkpoints (`<run>/rllib/iter_N`: the whole algorithm, learners and snapshots) and, exported from them, the project's own format (`<run>/checkpoints/latest.pt`) that `colony-eval` / `colony-play` load as `checkpoint:PATH` |

Because the module *is* a `PolicyValueNet` in the canonical view, exporting is a rename of
the weights (`export_state_dict`), and a checkpoint from either trainer plays the same way.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import math
import platform
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

from colony_env.env import AGENTS
from colony_env.rllib import ENV_NAME

from .. import config as config_lib
from ..checkpoint import CheckpointError, save_checkpoint
from ..cli import console_script, report_error
from ..config import ConfigError
from ..runlog import RunDir, RunDirError, atomic_write_text, new_run_dir
from .config import RESUME_KEYS, RllibConfig, load_config

try:  # ray is an optional extra: pip install "colony-rl[rllib]" (the console script checks it first)
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from colony_env.rllib import register_rllib_env

    from .callbacks import (
        MAIN_MODULE,
        SNAPSHOT_PREFIX,
        SnapshotMapping,
        SnapshotSelfPlayCallback,
        learner_module_state,
        push_to_env_runners,
    )
    from ..cluster import ClusterError, ray_session
    from .module import ColonyRLModule, net_from_module_state
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"the RLlib path needs the 'rllib' extra: pip install \"colony-rl[rllib]\" ({_e})"
    ) from None

RLLIB_DIR = "rllib"  # RLlib checkpoints inside a run directory
MODULE_DIR = Path("learner_group") / "learner" / "rl_module"  # the modules' weights inside an RLlib checkpoint
LATEST = "latest.pt"
METRIC_FIELDS = (
    "iteration", "env_steps", "wall_time", "steps_per_s", "episodes", "episode_len_mean", "policy_loss",
    "vf_loss", "entropy", "pool_size", "pool_win_rate", "illegal_games", "env_runners", "nodes",
)  # fmt: skip


# --- Ray and the env runners -------------------------------------------------------------------
def env_runner_health(algorithm: Any) -> tuple[int, int, int]:
    """(remote env runners configured, healthy ones, distinct nodes they run on) of an RLlib Algorithm.

    With no remote env runners (sampling in the driver) it is (0, 0, 1).
    """
    group = algorithm.env_runner_group
    total = group.num_remote_env_runners()
    if total == 0:
        return 0, 0, 1
    nodes = group.foreach_env_runner(lambda _runner: ray.get_runtime_context().get_node_id(), local_env_runner=False)
    return total, group.num_healthy_remote_env_runners(), len(set(nodes))


# --- building the algorithm --------------------------------------------------------------------
def build_ppo_config(cfg: RllibConfig) -> PPOConfig:
    """The RLlib `PPOConfig` of a run (new API stack, multi-agent with one shared module)."""
    from colony_env.env import raw_env
    from colony_env.rllib import RLlibObservationWrapper

    register_rllib_env()  # the driver registers it with the running Ray instance for the env runners
    spaces_env = RLlibObservationWrapper(raw_env(max_plies=cfg.max_plies), packed_mask=True)
    # Explicit spaces, so that snapshots added later (SnapshotSelfPlayCallback) can be built from this spec.
    module_spec = RLModuleSpec(
        module_class=ColonyRLModule,
        observation_space=spaces_env.observation_space(AGENTS[0]),
        action_space=spaces_env.action_space(AGENTS[0]),
        model_config={"channels": cfg.channels, "blocks": cfg.blocks, "torch_threads": cfg.torch_threads},
    )
    config = (
        PPOConfig()
        # RLlib's env check steps random (mostly illegal) actions; the env is tested by its own suite.
        .environment(ENV_NAME, env_config={"max_plies": cfg.max_plies, "packed_mask": True},
                     disable_env_checking=True)
        .framework("torch")
        .env_runners(
            num_env_runners=cfg.num_env_runners,
            num_envs_per_env_runner=cfg.num_envs_per_env_runner,
            num_cpus_per_env_runner=cfg.num_cpus_per_env_runner,
            rollout_fragment_length=cfg.rollout_fragment_length or "auto",
        )
        .learners(num_learners=cfg.num_learners, num_gpus_per_learner=cfg.num_gpus_per_learner)
        .multi_agent(
            policies={MAIN_MODULE},
            policy_mapping_fn=SnapshotMapping([], cfg.pool_share),
            policies_to_train=[MAIN_MODULE],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={MAIN_MODULE: module_spec}))
        .training(
            train_batch_size_per_learner=cfg.train_batch_size,
            minibatch_size=cfg.minibatch_size,
            num_epochs=cfg.update_epochs,
            lr=cfg.learning_rate,
            gamma=cfg.gamma,
            lambda_=cfg.gae_lambda,
            clip_param=cfg.clip_coef,
            vf_clip_param=cfg.vf_clip,
            entropy_coeff=cfg.ent_coef,
            vf_loss_coeff=cfg.vf_coef,
            grad_clip=cfg.max_grad_norm,
            use_kl_loss=False,  # as the project's PPO: clipping only
            kl_coeff=0.0,
        )
        .callbacks(functools.partial(SnapshotSelfPlayCallback, snapshot_every=cfg.snapshot_every,
                                     pool_size=cfg.pool_size, pool_share=cfg.pool_share))
        .debugging(seed=cfg.seed)
    )
    return config


# --- export to the project's checkpoint format -------------------------------------------------
def export_algorithm(algorithm: Any, cfg: RllibConfig, path: str | Path, meta: dict[str, Any]) -> Path:
    """Write `main`'s current weights as a project checkpoint (loadable by `checkpoint:PATH`)."""
    from colony_env.observation import OBS_CHANNELS

    net = net_from_module_state(learner_module_state(algorithm, MAIN_MODULE), cfg.channels, cfg.blocks, OBS_CHANNELS)
    return save_checkpoint(path, net, config={"trainer": "rllib", **cfg.to_dict()}, meta=meta)


# --- the run -----------------------------------------------------------------------------------
def _get(d: dict, *keys: str, default: float = float("nan")) -> float:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    try:
        return float(d)
    except (TypeError, ValueError):
        return default


def _count(result: dict[str, Any], *keys: str) -> int:
    """A summed count from an RLlib result dict, 0 where there is none.

    RLlib reports a sum over no event as NaN: in an iteration in which no game ends (every
    runner's share of the batch shorter than a game, once a game has ended somewhere),
    `illegal_games` is NaN, and `int(nan)` crashed the run (issue 16).
    """
    value = _get(result, *keys, default=0.0)
    return int(value) if math.isfinite(value) else 0


def metrics_row(result: dict[str, Any], t0: float, prev: dict[str, Any], prev_t: float,
                health: tuple[int, int, int] = (0, 0, 1)) -> dict[str, Any]:
    """One `metrics.csv` row from an RLlib result dict, the previous row (`prev`, {} at the start)
    and `env_runner_health` (configured, healthy, nodes)."""
    steps = _count(result, "env_runners", "num_env_steps_sampled_lifetime")
    now = time.perf_counter()
    return {
        "iteration": int(result.get("training_iteration", 0)),
        "env_steps": steps,
        "wall_time": round(now - t0, 2),
        "steps_per_s": round((steps - int(prev.get("env_steps", 0))) / max(1e-9, now - prev_t), 1),
        "episodes": _count(result, "env_runners", "num_episodes_lifetime"),
        "episode_len_mean": _get(result, "env_runners", "episode_len_mean"),
        "policy_loss": _get(result, "learners", MAIN_MODULE, "policy_loss"),
        "vf_loss": _get(result, "learners", MAIN_MODULE, "vf_loss"),
        "entropy": _get(result, "learners", MAIN_MODULE, "entropy"),
        "pool_size": int(result.get("pool_size", 0)),
        "pool_win_rate": _get(result, "env_runners", "pool_win_rate"),
        "illegal_games": _count(result, "env_runners", "illegal_games"),
        "env_runners": health[1],
        "nodes": health[2],
    }


def rllib_checkpoints(run_dir: Path) -> list[Path]:
    """The run's complete RLlib checkpoints, oldest first."""
    return [c for c in sorted((run_dir / RLLIB_DIR).glob("iter_*")) if (c / MODULE_DIR).is_dir()]


def _restore(algo: Any, checkpoint: Path) -> int:
    """Load an RLlib checkpoint of this trainer into a freshly built `algo`; returns its iteration.

    The snapshot modules (`main_vN`) are added first, so that the checkpoint's weights have a
    module to go to, and the self-play callback takes up its pool where the run left it.
    """
    ids = [d.name for d in (checkpoint / MODULE_DIR).iterdir() if re.fullmatch(rf"{SNAPSHOT_PREFIX}\d+", d.name)]
    ids.sort(key=lambda m: int(m[len(SNAPSHOT_PREFIX):]))
    callback = algo.callbacks[0] if isinstance(algo.callbacks, list) else algo.callbacks
    callback.resume_pool(algo, ids)
    algo.restore_from_path(str(checkpoint.resolve()))
    for module_id in ids:
        push_to_env_runners(algo, module_id, learner_module_state(algo, module_id))
    return int(algo.iteration)


def train(cfg: RllibConfig, run_dir: Path | None = None, progress: bool = True,
          on_iteration: Callable[[Any, dict[str, Any]], None] | None = None, resume: bool = False) -> Path:
    """Train with RLlib; returns the run directory (config.yaml, metrics.csv, rllib/, checkpoints/).

    Uses the running Ray instance if there is one (the caller owns it), else starts one per
    `cfg.address` and shuts it down at the end. `on_iteration(algorithm, metrics_row)` runs
    after every iteration (notebooks, tests: the live `Algorithm` can be inspected there).
    `resume=True` continues the run in `run_dir` from its newest RLlib checkpoint.

    The run directory is created once Ray is up and the algorithm is built, and removed again
    if the run fails before its first checkpoint, so a failed start leaves nothing behind.
    """
    from tqdm import tqdm

    torch.set_num_threads(cfg.torch_threads)
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(cfg.out_dir, cfg.run_name)
    files = RunDir(run_dir, {"metrics.csv": METRIC_FIELDS})
    created = not run_dir.exists()
    with ray_session(cfg.address, cfg.num_cpus):
        algo = build_ppo_config(cfg).build_algo()
        try:
            first = 1
            if resume:
                checkpoint = rllib_checkpoints(run_dir)[-1]
                first = _restore(algo, checkpoint) + 1
                files.rewind(first - 1)  # rows past the checkpoint
                print(f"resuming {run_dir} from {checkpoint.name} (iteration {first - 1} of {cfg.num_iterations})",
                      flush=True)
            else:
                files.rewind(None)
                files.write_config(cfg)
            configured, lowest = _iterate(algo, cfg, files, first, progress, on_iteration, tqdm)
        except BaseException:
            if created and not rllib_checkpoints(run_dir):
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        finally:
            algo.stop()
    if configured:
        lost = configured - lowest
        print(f"env runners: lost {lost} of {configured} env runners during the run (their games in flight were "
              "dropped; the others went on)" if lost else f"env runners: all {configured} healthy to the end",
              flush=True)
    if cfg.final_eval_games:
        _final_eval(cfg, run_dir)
    return run_dir


def _iterate(algo: Any, cfg: RllibConfig, files: RunDir, first: int, progress: bool,
             on_iteration: Callable[[Any, dict[str, Any]], None] | None, tqdm: Any) -> tuple[int, int]:
    """Iterations `first..num_iterations`; returns (env runners configured, fewest healthy seen)."""
    run_dir = files.path
    t0 = prev_t = time.perf_counter()
    rows = list(csv.DictReader(open(run_dir / "metrics.csv"))) if first > 1 else []
    row: dict[str, Any] = rows[-1] if rows else {}
    saved = rllib_checkpoints(run_dir)
    configured, lowest = 0, None
    bar = tqdm(total=cfg.num_iterations, initial=first - 1, desc="rllib ppo", unit="it", disable=not progress)
    for iteration in range(first, cfg.num_iterations + 1):
        result = algo.train()
        health = env_runner_health(algo)
        configured = health[0]
        lowest = health[1] if lowest is None else min(lowest, health[1])
        row = metrics_row(result, t0, row, prev_t, health)
        prev_t = time.perf_counter()
        files.log("metrics.csv", [row])
        if on_iteration is not None:
            on_iteration(algo, row)
        if iteration % cfg.checkpoint_every == 0 or iteration == cfg.num_iterations:
            saved.append(_checkpoint(algo, cfg, run_dir, row))
            while cfg.keep_checkpoints and len(saved) > cfg.keep_checkpoints:
                shutil.rmtree(saved.pop(0), ignore_errors=True)
        bar.update(1)
        bar.set_postfix({"steps": row["env_steps"], "sps": f"{row['steps_per_s']:.0f}",
                         "ent": f"{row['entropy']:.2f}", "runners": row["env_runners"]}, refresh=False)
    bar.close()
    return configured, lowest or 0


def _checkpoint(algo: Any, cfg: RllibConfig, run_dir: Path, row: dict[str, Any]) -> Path:
    """An RLlib checkpoint of the whole algorithm plus its export to `checkpoints/latest.pt`.

    The export comes first: a resume starts from the newest RLlib checkpoint, so that one must
    never be ahead of `latest.pt` (a kill between the two would leave a finished run whose
    `latest.pt`, and final evaluation, are of an older iteration)."""
    it = row["iteration"]
    rllib_path = run_dir / RLLIB_DIR / f"iter_{it:06d}"
    meta = {
        "trainer": "rllib", "ray_version": ray.__version__, "iteration": it, "global_step": row["env_steps"],
        "rllib_checkpoint": str(rllib_path), "hardware": platform.platform(),
    }  # fmt: skip
    export_algorithm(algo, cfg, run_dir / "checkpoints" / LATEST, meta)
    partial = rllib_path.with_name(rllib_path.name + ".partial")  # renamed when complete: a kill leaves no half checkpoint
    shutil.rmtree(partial, ignore_errors=True)
    algo.save_to_path(str(partial.resolve()))
    partial.rename(rllib_path)
    return rllib_path


def _final_eval(cfg: RllibConfig, run_dir: Path) -> None:
    from ..checkpoint import load_model
    from ..eval.ladder import evaluate_model

    model, _ = load_model(run_dir / "checkpoints" / LATEST)
    res = evaluate_model(model, cfg.eval_opponents, cfg.final_eval_games, seed=cfg.seed + 10_000_019)
    buf = io.StringIO()  # eval.csv is written whole and atomically: a resume (which evaluates again) replaces it
    w = csv.writer(buf)
    w.writerow(["opponent", "games", "win_rate", "draw_rate", "loss_rate", "seconds"])
    for spec, r in res.items():
        w.writerow([spec, r["games"], r["win_rate"], r["draw_rate"], r["loss_rate"], round(r["seconds"], 2)])
    atomic_write_text(run_dir / "eval.csv", buf.getvalue())
    for spec, r in res.items():
        print(f"final evaluation vs {spec}: win {r['win_rate']:.3f} draw {r['draw_rate']:.3f} "
              f"loss {r['loss_rate']:.3f} over {r['games']} games", flush=True)


# --- CLI ---------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="colony-train-rllib",
        description="Self-play PPO for Colony on RLlib, on a private Ray instance on this machine (loopback only) "
                    "or on a Ray cluster (--address). Any config key can be overridden: --num-env-runners 8 "
                    "--total-steps 1e6.",
        epilog=config_lib.config_help(RllibConfig),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="YAML config (configs/rllib_ppo.yaml); required unless --resume")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue the run in RUN_DIR from its newest RLlib checkpoint (RUN_DIR/config.yaml decides "
                        f"the run; only {', '.join(sorted(RESUME_KEYS))} may be overridden)")
    p.add_argument("--address", help="join a running Ray cluster ('auto' or HOST:PORT); default: a local instance")
    p.add_argument("--run-dir", help="write the run here instead of <out_dir>/<run_name>-<timestamp>")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    return p


def _resume_config(run_dir: Path, overrides: dict[str, Any]) -> RllibConfig:
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"--resume {str(run_dir)!r} is not a colony-train-rllib run directory (no config.yaml)")
    if not rllib_checkpoints(run_dir):
        raise ConfigError(f"--resume {str(run_dir)!r} has no complete RLlib checkpoint (rllib/iter_*) to resume from")
    fixed = sorted(set(overrides) - RESUME_KEYS)
    if fixed:
        raise ConfigError(f"--resume: config key '{fixed[0]}' is decided by {str(run_dir / 'config.yaml')!r}; "
                          f"keys that may change on resume: {', '.join(sorted(RESUME_KEYS))}")
    return load_config(run_dir / "config.yaml", overrides)


@console_script
def main(argv: list[str] | None = None) -> int:
    args, rest = build_parser().parse_known_args(argv)
    try:
        overrides = config_lib.split_overrides(rest, RllibConfig, "--num-env-runners 4")
        if args.address is not None:
            overrides["address"] = args.address
        if args.resume:
            if args.config or args.run_dir:
                raise ConfigError("--resume RUN_DIR takes the config and the directory from RUN_DIR; "
                                  "drop --config and --run-dir")
            run_dir = Path(args.resume)
            cfg = _resume_config(run_dir, overrides)
        else:
            if not args.config:
                raise ConfigError("--config is required (e.g. --config configs/rllib_ppo.yaml), or --resume RUN_DIR")
            cfg = load_config(args.config, overrides)
            run_dir = Path(args.run_dir) if args.run_dir else None
            if run_dir is not None and (run_dir / "checkpoints" / LATEST).exists():
                raise ConfigError(f"--run-dir {str(run_dir)!r} already holds a run; continue it with --resume "
                                  f"{str(run_dir)!r} or choose a new directory")
        out = train(cfg, run_dir=run_dir, progress=not args.no_progress, resume=bool(args.resume))
    except (ConfigError, CheckpointError, ClusterError, RunDirError) as e:
        return report_error("colony-train-rllib", str(e))
    except KeyboardInterrupt:
        print("colony-train-rllib: interrupted; continue with colony-train-rllib --resume RUN_DIR (checkpoints saved so "
              "far are in RUN_DIR/rllib, the newest exported to RUN_DIR/checkpoints/latest.pt)", file=sys.stderr)
        return 130
    print(f"run directory: {out}")
    print(f"exported checkpoint: {out / 'checkpoints' / LATEST}  (colony-eval/colony-play: checkpoint:PATH)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
