"""A `colony-zero` run in one small file that another machine can continue (issue 31, item 2).

    colony-zero --export-resume RUN_DIR POINT.pt            # after any finished generation
    colony-zero --resume-from POINT.pt --run-dir NEW_DIR     # on any machine with the repository

A *resume point* is an ordinary checkpoint file (`checkpoint.save_checkpoint`: plain data only,
loaded with `weights_only=True`, every record's CRC checked, weights finite; every tool plays it
as `checkpoint:POINT.pt`) that also holds what `--resume` needs besides the network:

    optimizer, generation, rng_state   the training checkpoint's own fields (`train._save`)
    pending_log                         if the run died before its last generation was logged
    resume_point                        {format, version, logs: {metrics.csv: text, eval.csv: text},
                                         replay_npz: uint8 tensor, replay_info: {...}}

The replay buffer (up to `replay_positions` positions, 100+ MB) is replaced by a sample of at
most `sample_positions` of its positions (default `DEFAULT_SAMPLE`), drawn uniformly without
replacement with a generator seeded by (seed, generation) and kept in buffer order: fitting
draws its minibatches uniformly from the buffer, so a uniform sample is the buffer's
distribution in miniature. The sample is stored as the bytes of a compressed replay shard
(`replay.write_shard`'s `.npz`, read back with `allow_pickle=False`; about 350 bytes a position).
`restore` rebuilds a run directory from it (config.yaml, the CSV
logs, TensorBoard events from those rows, `checkpoints/latest.pt` and the sample as the one
replay shard of the resume point's generation); `colony-zero --resume` then continues it as
it would the original. docs/zero.md says how that differs from an uninterrupted run.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..checkpoint import CheckpointError, build_model, read_checkpoint, save_checkpoint
from ..config import config_from_dict
from ..runlog import CHECKPOINT_DIR, RunDir, atomic_write_text, is_file, output_dir_problem, output_file_problem
from .config import ZeroConfig
from .replay import ReplayBuffer, shard_bytes, shard_path, write_shard
from .selfplay import ARRAY_FIELDS, GameData

RESUME_FORMAT = "colony-zero-resume-point"
RESUME_VERSION = 1
DEFAULT_SAMPLE = 10_000
"""Replay positions kept by default: about 3.5 MB compressed (docs/zero.md)."""
MAX_SAMPLE_BYTES = 2**30
"""The most a replay sample may unpack to (1 GiB: about a million positions)."""
LOG_NAMES = ("metrics.csv", "eval.csv")
LATEST = f"{CHECKPOINT_DIR}/latest.pt"
_DTYPES = {"states": np.int32, "target_ids": np.int16, "target_probs": np.float32, "offsets": np.int64,
           "outcome": np.float32, "root_value": np.float32, "game_lengths": np.int32, "game_reasons": np.int8,
           "game_winners": np.int8, "ownership": np.int8, "rollout_value": np.float32, "full_search": np.uint8}
_PER_POSITION = ("states", "outcome", "root_value", "ownership", "rollout_value", "full_search")


class ResumePointError(ValueError):
    """A resume point that cannot be written or used; the message says why in one line."""


# --- the sample -------------------------------------------------------------------------------------
def sample_positions(data: GameData, limit: int, seed: list[int]) -> GameData:
    """At most `limit` positions of `data`, uniformly without replacement, in their order; the
    games' arrays (lengths, winners) are kept whole, the targets re-based to the kept rows."""
    n = data.n_positions
    if n <= limit:
        return data
    keep = np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))
    starts, ends = data.offsets[keep], data.offsets[keep + 1]
    counts = ends - starts
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    gather = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)]) if limit else np.zeros(0, np.int64)
    return GameData(
        states=data.states[keep], target_ids=data.target_ids[gather], target_probs=data.target_probs[gather],
        offsets=offsets, outcome=data.outcome[keep], root_value=data.root_value[keep],
        game_lengths=data.game_lengths, game_reasons=data.game_reasons, game_winners=data.game_winners,
        ownership=data.ownership[keep], rollout_value=data.rollout_value[keep], full_search=data.full_search[keep],
        cpu_seconds=data.cpu_seconds, leaf_evaluations=data.leaf_evaluations)


def _logs_up_to(run_dir: Path, generation: int) -> dict[str, str]:
    """The complete rows of each CSV log whose generation is at most `generation`, as CSV text."""
    logs = {}
    for name in LOG_NAMES:
        try:
            text = (run_dir / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        reader = csv.DictReader(io.StringIO(text[: text.rfind("\n") + 1]))  # a torn last row is not a row
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=reader.fieldnames or [], lineterminator="\n")
        writer.writeheader()
        for row in reader:
            try:
                if int(float(row["generation"])) <= generation:
                    writer.writerow(row)
            except (KeyError, TypeError, ValueError):
                break
        logs[name] = out.getvalue()
    return logs


# --- export -----------------------------------------------------------------------------------------
def export(run_dir: str | Path, out: str | Path, limit: int = DEFAULT_SAMPLE) -> dict[str, Any]:
    """Write the resume point of `run_dir`'s last checkpoint to `out`; returns what it holds."""
    run_dir, out = Path(run_dir), Path(out)
    if limit < 0:
        raise ResumePointError(f"--resume-positions must be >= 0, got {limit}")
    ckpt_path = run_dir / LATEST
    if not is_file(run_dir / "config.yaml"):
        raise ResumePointError(f"{str(run_dir)!r} has no config.yaml (is it a colony-zero run directory?)")
    if not is_file(ckpt_path):
        raise ResumePointError(f"{str(run_dir)!r} has no {LATEST} yet: no generation has finished")
    if out.resolve().is_relative_to(run_dir.resolve()):
        raise ResumePointError(f"write the resume point outside the run directory, not to {str(out)!r}")
    if out.is_dir():
        raise ResumePointError(f"{str(out)!r} is a folder; give a file name, e.g. {str(out / 'resume.pt')!r}")
    problem = output_file_problem(out)
    if problem:
        raise ResumePointError(problem)
    ckpt = read_checkpoint(ckpt_path)
    if "generation" not in ckpt or "optimizer" not in ckpt or "rng_state" not in ckpt:
        raise ResumePointError(f"{str(ckpt_path)!r} is not a colony-zero training checkpoint")
    cfg = _config(ckpt["config"])
    gen = int(ckpt["generation"])
    buffer = ReplayBuffer.load(run_dir, cfg.replay_positions, gen).flat()
    sample = sample_positions(buffer, limit, [cfg.seed, gen, 31])
    info = {"generation": gen, "buffer_positions": buffer.n_positions, "sampled_positions": sample.n_positions,
            "sample_seed": [cfg.seed, gen, 31], "source": str(run_dir)}
    extra = {k: ckpt[k] for k in ("optimizer", "generation", "rng_state", "pending_log") if k in ckpt}
    extra["resume_point"] = {
        "format": RESUME_FORMAT, "version": RESUME_VERSION, "logs": _logs_up_to(run_dir, gen),
        "replay_npz": torch.frombuffer(bytearray(shard_bytes(sample)), dtype=torch.uint8), "replay_info": info}
    save_checkpoint(out, build_model(ckpt), ckpt["config"], ckpt["meta"], extra)
    return {**info, "bytes": out.stat().st_size}


# --- load -------------------------------------------------------------------------------------------
def read(path: str | Path) -> dict[str, Any]:
    """A resume point's dict, checked like a checkpoint (`read_checkpoint`) and then its own fields."""
    data = read_checkpoint(path)
    where = repr(str(path))
    point = data.get("resume_point")
    if point is None:
        raise ResumePointError(f"{where} is a checkpoint but not a colony-zero resume point "
                               "(make one with colony-zero --export-resume RUN_DIR OUT.pt)")
    if not isinstance(point, dict) or point.get("format") != RESUME_FORMAT:
        raise ResumePointError(f"{where} is damaged: its 'resume_point' field is not a {RESUME_FORMAT}")
    if point.get("version") != RESUME_VERSION:
        raise ResumePointError(f"{where} is a resume point of version {point.get('version')!r}; "
                               f"this code reads version {RESUME_VERSION}")
    for key, kind in (("generation", int), ("rng_state", dict), ("optimizer", dict)):
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise ResumePointError(f"{where} is damaged: field {key!r} must be a {kind.__name__}")
    logs = point.get("logs")
    if not isinstance(logs, dict) or not all(k in LOG_NAMES and isinstance(v, str) for k, v in logs.items()):
        raise ResumePointError(f"{where} is damaged: 'logs' must map {', '.join(LOG_NAMES)} to CSV text")
    _replay(point, where)
    return data


def _replay(point: dict[str, Any], where: str) -> GameData:
    """The replay sample as GameData, every array of its type and the ragged targets consistent."""
    raw = point.get("replay_npz")
    if not isinstance(raw, torch.Tensor) or raw.dtype != torch.uint8 or raw.dim() != 1:
        raise ResumePointError(f"{where} is damaged: 'replay_npz' must be a 1-d uint8 tensor")
    try:
        with np.load(io.BytesIO(raw.numpy().tobytes()), allow_pickle=False) as z:
            unpacked = sum(info.file_size for info in z.zip.infolist())
            if unpacked > MAX_SAMPLE_BYTES:  # a small file must not make the loader allocate gigabytes
                raise ResumePointError(f"{where} is damaged: its replay sample unpacks to {unpacked} bytes, "
                                       f"more than the {MAX_SAMPLE_BYTES} a resume point may hold")
            arrays = {k: z[k] for k in ARRAY_FIELDS}
            stats = float(z["cpu_seconds"]), int(z["leaf_evaluations"])
    except ResumePointError:
        raise
    except (OSError, ValueError, KeyError, EOFError, TypeError) as e:
        raise ResumePointError(f"{where} is damaged: its replay sample cannot be read ({type(e).__name__})") from None
    for k, a in arrays.items():
        if a.dtype != _DTYPES[k]:
            raise ResumePointError(f"{where} is damaged: replay field {k!r} must be {np.dtype(_DTYPES[k])}, got {a.dtype}")
        if a.dtype.kind == "f" and not bool(np.isfinite(a).all()):
            raise ResumePointError(f"{where} is damaged: replay field {k!r} has non-finite values")
    n = arrays["states"].shape[0]
    offsets = arrays["offsets"]
    consistent = (all(arrays[k].shape[:1] == (n,) for k in _PER_POSITION) and offsets.shape == (n + 1,)
                  and offsets[0] == 0 and bool(np.all(np.diff(offsets) >= 0))
                  and offsets[-1] == arrays["target_ids"].shape[0] == arrays["target_probs"].shape[0])
    if not consistent:
        raise ResumePointError(f"{where} is damaged: its replay sample's arrays do not fit together")
    return GameData(**arrays, cpu_seconds=stats[0], leaf_evaluations=stats[1])


# --- restore ----------------------------------------------------------------------------------------
def _config(values: dict[str, Any]) -> ZeroConfig:
    """The run's config; an `init_from` file this machine lacks is dropped (only generation 0 reads
    it, and the ancestor's record stays in the checkpoint's meta, `init_from`)."""
    values = dict(values)
    if values.get("init_from") and not is_file(values["init_from"]):
        values["init_from"] = ""
    return config_from_dict(values, cls=ZeroConfig)


def config_of(path: str | Path) -> ZeroConfig:
    """The config of the run a resume point continues (the file checked whole, as `read`)."""
    return _config(read(path)["config"])


def replay_sample_of(path: str | Path) -> GameData:
    """The replay sample a resume point holds (the file checked whole, as `read`): its run's recent positions
    with their targets, e.g. for looking at what the network was fitted to (examples/endgame_probe.py)."""
    return _replay(read(path)["resume_point"], repr(str(path)))


def restore(path: str | Path, run_dir: str | Path, tb_keys: tuple[str, ...] = ()) -> ZeroConfig:
    """Rebuild a run directory at `run_dir` (which must not exist or be empty) from a resume point;
    returns its config. TensorBoard gets `zero/<k>` for `tb_keys` of each metrics row and
    `eval/*` of each eval row, as `train.log_generation` logged them. Built in a temporary
    folder beside `run_dir` and renamed, so a kill leaves no half-built run."""
    data = read(path)
    run_dir = Path(run_dir)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise ResumePointError(f"--run-dir {str(run_dir)!r} exists and is not empty; give a new folder")
    problem = output_dir_problem(run_dir.parent)
    if problem:
        raise ResumePointError(f"--run-dir {str(run_dir)!r}: {problem}")
    cfg = _config(data["config"])
    point = data["resume_point"]
    replay = _replay(point, repr(str(path)))
    gen = int(data["generation"])
    tmp = run_dir.with_name(f".{run_dir.name}.restoring")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        log = RunDir(tmp, {})
        log.write_config(cfg)
        extra = {k: data[k] for k in ("optimizer", "generation", "rng_state", "pending_log") if k in data}
        meta = {**data["meta"], "restored_from": {"path": str(path), **point.get("replay_info", {})}}
        save_checkpoint(tmp / LATEST, build_model(data), cfg.to_dict(), meta, extra)
        for name, text in point["logs"].items():
            atomic_write_text(tmp / name, text)
        write_shard(shard_path(tmp, gen), replay)
        _rebuild_events(log, point["logs"], tb_keys)
        log.close()
        if run_dir.exists():
            run_dir.rmdir()  # empty (checked above)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, run_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return cfg


def _rebuild_events(log: RunDir, logs: dict[str, str], tb_keys: tuple[str, ...]) -> None:
    """TensorBoard's zero/* and eval/* scalars again, from the CSV rows (the values `log_generation` wrote)."""
    def rows(name: str) -> list[dict[str, str]]:
        return list(csv.DictReader(io.StringIO(logs.get(name, ""))))

    def number(v: str | None) -> float | None:
        try:
            return float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None

    for row in rows("metrics.csv"):
        log.scalars("zero", {k: number(row.get(k)) for k in tb_keys}, int(float(row["generation"])))
    by_gen: dict[int, dict[str, Any]] = {}
    for row in rows("eval.csv"):
        by_gen.setdefault(int(float(row["generation"])), {})[f"{row['agent']}_vs_{row['opponent']}"] = number(row.get("score"))
    for g, values in sorted(by_gen.items()):
        log.scalars("eval", values, g)
    log.flush()


__all__ = ["DEFAULT_SAMPLE", "ResumePointError", "config_of", "export", "read", "restore", "sample_positions"]
