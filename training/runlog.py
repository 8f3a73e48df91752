"""The run directory of every trainer (PPO, RLlib, zero, distill) and its crash-safe bookkeeping.

`new_run_dir` names a run, `RunDir` writes it (config file, CSV logs, TensorBoard, rewind on
resume); the functions below it are the pieces, also used on their own (atomic writes, the
output checks of `colony-eval`).

A run can be killed at any instant (SIGKILL, OOM, power) and resumed from its last
checkpoint. Everything logged after that checkpoint will be produced again by the resumed
run, so resuming must first cut the logs back to where the checkpoint was taken, or the
rows of those iterations appear twice (issue 13, item 3). The recipe:

    positions = log_positions(run_dir, LOGS)       # when saving a checkpoint: store in its meta
    ...
    rewind_logs(run_dir, LOGS, meta.get("log_rows"))   # on resume (None on a fresh start)
    rewind_events(run_dir / "tb", meta["global_step"])   # TensorBoard events likewise (None: all)
    remove_temp_files(run_dir / "checkpoints")     # leftovers of a kill during an atomic write

CSV rows are counted, not parsed, so a row torn by a kill mid-write (no final newline) is
never counted and is removed by the rewind.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CONFIG_FILE = "config.yaml"
CHECKPOINT_DIR = "checkpoints"
TB_DIR = "tb"
TEMP_PATTERN = ".*.tmp"  # the names `atomic_write_*` and `save_checkpoint` give their temporary files
LOCK_FILE = ".lock"  # `lock_run_dir`: held by the process that writes into the directory


class RunDirError(ValueError):
    """The run directory cannot be used: it cannot be made or written, or another process writes into it."""


class RunDirBusy(RunDirError):
    """Another live process writes into the run directory (`lock_run_dir`)."""


_held_locks: dict[str, Any] = {}  # resolved directory -> its open lock file, for the life of the process


def lock_run_dir(directory: str | Path) -> None:
    """Make this process the only writer of `directory` until it ends; `RunDirBusy` in one line if
    another live process holds it (e.g. a second `--resume` of a run that is still going).

    An exclusive `flock` on `directory/.lock`: the system releases it when the holder ends, however
    it ends (a kill leaves no stale lock), and forked workers share their parent's. The file holds
    the holder's pid for the message. Taking it again in the same process is a no-op. Where `fcntl`
    does not exist (Windows) or the file system cannot lock, nothing is locked.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    key = str(Path(directory).resolve())
    if key in _held_locks:
        return
    path = Path(directory) / LOCK_FILE
    f = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        f.close()
        raise RunDirBusy(f"{str(directory)!r} is in use by another process (pid {holder}); wait for it to end "
                         "or stop it, then run this again") from None
    except OSError:  # a file system without locks (some network mounts): as on Windows, nothing is locked
        f.close()
        return
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    _held_locks[key] = f


def unlock_run_dir(directory: str | Path) -> None:
    """Give up `lock_run_dir(directory)` (if this process holds it): the end of a run in a longer process."""
    f = _held_locks.pop(str(Path(directory).resolve()), None)
    if f is not None:
        f.close()


def is_file(path: str | Path) -> bool:
    """`Path.is_file`, but False for a path the OS cannot even look up (too long, NUL byte) instead of raising."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` so that a crash leaves either the old file or the new one, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _default_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _default_file_mode()


def csv_data_rows(path: str | Path) -> int:
    """Complete data rows of a CSV file (header and a torn last line not counted); 0 if absent."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return 0
    complete = data.count(b"\n")  # every finished row ends in a newline; a torn one does not
    return max(0, complete - 1)


def truncate_csv(path: str | Path, keep_rows: int) -> int:
    """Keep the header and the first `keep_rows` complete data rows; returns the rows removed.

    The file is rewritten atomically, so a kill during the rewind loses nothing either.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    lines = data.split(b"\n")
    complete = lines[:-1]  # the piece after the last newline is empty or a torn row
    if not complete:
        if data:  # a torn header: nothing usable
            path.unlink()
        return 0
    kept = complete[: 1 + max(0, keep_rows)]
    removed = len(complete) - len(kept)
    if removed or lines[-1]:
        atomic_write_bytes(path, b"\n".join(kept) + b"\n")
    return removed


def append_csv(path: str | Path, fields: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    """Append `rows` to a CSV log, writing the header first if the file is new (or empty). A file begun with
    other columns (a run resumed by a version that logs more) keeps its own header: the rows fill those columns,
    the others stay empty or are left out, so every row stays aligned with the header."""
    path = Path(path)
    new = not path.is_file() or path.stat().st_size == 0
    if not new:
        with path.open(newline="") as f:
            header = next(csv.reader(f), None)
        fields = tuple(header) if header else fields
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerows(rows)
        f.flush()


def truncate_csv_after(path: str | Path, column: str, last: int) -> int:
    """Keep the rows whose integer `column` is at most `last` (for checkpoints without row counts)."""
    path = Path(path)
    if not path.is_file():
        return 0
    with path.open(newline="", encoding="utf-8") as f:
        text = f.read()
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # drop a torn last row
    rows = list(csv.reader(text.splitlines()))
    if not rows or column not in rows[0]:
        return truncate_csv(path, csv_data_rows(path))
    col = rows[0].index(column)
    keep = 0
    for row in rows[1:]:
        try:
            if int(float(row[col])) > last:
                break
        except (IndexError, ValueError):
            break
        keep += 1
    return truncate_csv(path, keep)


def log_positions(run_dir: str | Path, names: Iterable[str]) -> dict[str, int]:
    """{file name: complete data rows} of a run's CSV logs; store it in the checkpoint's meta."""
    return {name: csv_data_rows(Path(run_dir) / name) for name in names}


def rewind_logs(run_dir: str | Path, names: Iterable[str], positions: dict[str, Any] | None,
                column: str = "iteration", last: int | None = None) -> dict[str, int]:
    """Cut each CSV log back to the checkpoint being resumed; returns the rows removed per file.

    `positions` is what `log_positions` stored with the checkpoint (None on a fresh start: every
    row goes). Checkpoints written before positions were stored fall back to keeping the rows
    whose `column` is at most `last`.
    """
    removed = {}
    for name in names:
        path = Path(run_dir) / name
        if positions is not None and isinstance(positions.get(name), int):
            removed[name] = truncate_csv(path, positions[name])
        elif positions is not None and last is not None:
            removed[name] = truncate_csv_after(path, column, last)
        else:
            removed[name] = truncate_csv(path, 0)
    return removed


EVENTS_GLOB = "events.out.tfevents.*"


def rewind_events(log_dir: str | Path, last_step: int | None) -> int:
    """Drop TensorBoard summaries logged after step `last_step` (all of them if None); returns how many.

    Each events file is rewritten atomically without those events (and without a record torn
    by a kill), so every reader, not only TensorBoard's own purge logic, sees one value per step.
    """
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    dropped = 0
    for path in sorted(Path(log_dir).glob(EVENTS_GLOB)) if Path(log_dir).is_dir() else []:
        kept: list[bytes] = []
        n_read = 0
        for raw in RawEventFileLoader(str(path)).Load():
            n_read += 1
            event = event_pb2.Event.FromString(raw)
            if event.HasField("summary") and (last_step is None or event.step > last_step):
                continue
            kept.append(raw)
        if len(kept) == n_read and path.stat().st_size == _framed_size(kept):
            continue  # nothing to drop and no torn tail
        dropped += n_read - len(kept)
        buf = io.BytesIO()
        writer = RecordWriter(buf)
        for raw in kept:
            writer.write(raw)
        atomic_write_bytes(path, buf.getvalue())
    return dropped


def _framed_size(records: list[bytes]) -> int:
    """Bytes the TFRecord framing of `records` takes (length 8 + crc 4 + data + crc 4 each)."""
    return sum(16 + len(r) for r in records)


def output_dir_problem(path: str | Path) -> str | None:
    """Why files cannot be written into folder `path`, or None if they can.

    Checked by really creating the folder and a probe file, before hours of games are played
    whose results would otherwise be lost at the end (`os.access` is wrong for root, read-only
    mounts and full disks). The probe then removes the folders it made, so a tool that fails
    later leaves nothing behind; writers create their folders when they write.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{str(path)!r} is a file, not a folder"
    made = [p for p in (path, *path.parents) if not p.exists()]  # deepest first
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", suffix=".tmp", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"cannot write into {str(path)!r}: {e.strerror or type(e).__name__}"
    finally:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
    return None


def output_file_problem(path: str | Path) -> str | None:
    """Why file `path` cannot be written (or appended to), or None if it can; creates its folder."""
    path = Path(path)
    if path.is_dir():
        return f"{str(path)!r} is a folder; give a file name (e.g. {str(path / 'games.jsonl')!r})"
    problem = output_dir_problem(path.parent)
    if problem is None and path.exists():
        try:
            with path.open("ab"):
                pass
        except OSError as e:
            return f"cannot write {str(path)!r}: {e.strerror or type(e).__name__}"
    return problem


def remove_temp_files(directory: str | Path, pattern: str = TEMP_PATTERN) -> list[Path]:
    """Delete the temporary files an interrupted atomic write left behind; returns them.

    Only call this while no other process writes into `directory` (a run is resumed by one
    process at a time).
    """
    directory = Path(directory)
    removed = []
    if directory.is_dir():
        for tmp in directory.glob(pattern):
            if tmp.is_file():
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
    return removed


# --- the run directory every trainer writes ---------------------------------------------------------
def new_run_dir(out_dir: str | Path, run_name: str) -> Path:
    """A fresh `<out_dir>/<run_name>-<timestamp>[-k]` path (not created yet): two runs started in the
    same second get different directories."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(out_dir) / f"{run_name}-{stamp}"
    run_dir, k = base, 1
    while run_dir.exists():
        k += 1
        run_dir = base.with_name(f"{base.name}-{k}")
    return run_dir


class RunDir:
    """One run directory: its config file, CSV logs, TensorBoard events and the rewind on resume.

    Every trainer (colony-train, colony-train-rllib, colony-zero, colony-distill) writes the same
    layout through this class: `config.yaml`, one CSV file per entry of `logs` (header once,
    rows appended and flushed), TensorBoard events under `tb/` (opened on the first scalar) and
    `checkpoints/`. `rewind` is the resume recipe of the module docstring in one call.
    """

    def __init__(self, path: str | Path, logs: dict[str, tuple[str, ...]], column: str = "iteration",
                 tb_dir: str = TB_DIR) -> None:
        self.path = Path(path)
        self.logs = dict(logs)  # file name -> CSV fields
        self.column = column  # the counter column of the logs (checkpoints without row counts rewind by it)
        self.tb_dir = self.path / tb_dir
        self.checkpoints = self.path / CHECKPOINT_DIR
        self._tb: Any = None

    def _make(self) -> None:
        """Create the directory and its `checkpoints/`; `RunDirError` in one line if that cannot be done."""
        try:
            self.checkpoints.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunDirError(f"cannot make the run directory {str(self.path)!r}: {e.strerror or type(e).__name__}; "
                              f"give a folder that can be written") from None

    def rewind(self, last: int | None, step: int | None = None, positions: dict[str, Any] | None = None) -> None:
        """Prepare the directory for (re)starting after the checkpoint taken at `column` value `last`
        (TensorBoard step `step`, CSV row counts `positions` if it stored them); `last=None` is a
        fresh start, which removes every logged row and event. Temporary files of an interrupted
        atomic write are removed first."""
        self._make()
        lock_run_dir(self.path)  # before anything is cut back: a second writer would corrupt the run
        remove_temp_files(self.checkpoints)
        remove_temp_files(self.path)
        resumed = last is not None
        rewind_logs(self.path, self.logs, (positions or {}) if resumed else None, self.column, last)
        rewind_events(self.tb_dir, step if resumed else None)

    def write_config(self, cfg: Any) -> Path:
        """`config.yaml` of a config dataclass (its `to_dict()`), written atomically: a kill mid-write
        must not leave a run that cannot resume."""
        import yaml

        self._make()
        lock_run_dir(self.path)
        return atomic_write_text(self.path / CONFIG_FILE, yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    def log(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Append `rows` to the CSV log `name` (one of `logs`), flushed."""
        append_csv(self.path / name, self.logs[name], rows)

    def log_positions(self) -> dict[str, int]:
        """The CSV logs' row counts, for the meta of a checkpoint (`rewind(positions=...)`)."""
        return log_positions(self.path, self.logs)

    def scalars(self, prefix: str, values: dict[str, Any], step: int) -> None:
        """TensorBoard scalars `prefix/key` of the finite numbers in `values` at `step`."""
        if self._tb is None:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(self.tb_dir))
        for key, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                self._tb.add_scalar(f"{prefix}/{key}", value, step)

    def flush(self) -> None:
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        """Close the TensorBoard writer and give up the directory's lock (`lock_run_dir`)."""
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        unlock_run_dir(self.path)


__all__ = [
    "RunDir",
    "RunDirBusy",
    "lock_run_dir",
    "unlock_run_dir",
    "new_run_dir",
    "append_csv",
    "atomic_write_bytes",
    "atomic_write_text",
    "csv_data_rows",
    "log_positions",
    "output_dir_problem",
    "output_file_problem",
    "remove_temp_files",
    "rewind_events",
    "rewind_logs",
    "truncate_csv",
    "truncate_csv_after",
]
