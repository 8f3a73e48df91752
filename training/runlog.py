"""Crash-safe bookkeeping of a run directory, shared by every trainer (PPO, zero, distill).

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
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TEMP_PATTERN = ".*.tmp"  # the names `atomic_write_*` and `save_checkpoint` give their temporary files


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
    """Append `rows` to a CSV log, writing the header first if the file is new."""
    path = Path(path)
    new = not path.is_file()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
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


__all__ = [
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
