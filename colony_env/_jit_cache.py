"""Drop numba's on-disk caches when any kernel source changes, not only the caller's file.

numba's `cache=True` keys a cached function on its *own* source file, so a kernel that calls
a kernel from another file keeps running the old callee after that file changes (numba issue
#1833, documented under "Cache invalidation" in numba's docs). Here that is not only stale
but unsafe: a cached `colony_training.teacher.greedy_action_features` built against an older
`agents._search` ran beside the new `greedy_scores` and corrupted memory ("NRT_adapt_ndarray_to_python:
'descr' is NULL", "malloc(): unaligned tcache chunk"). So each package fingerprints the sources
its kernels depend on and, when the fingerprint differs from the one its cache was built
with, deletes the cache files in its `__pycache__` folders before any kernel loads.

Only the in-tree cache (`__pycache__` beside the sources) is managed; with `NUMBA_CACHE_DIR`
set, clearing that folder after an upgrade is up to its owner.

A cache file that exists but cannot be loaded (truncated when a disk filled up, bit-flipped,
swapped with another kernel's file) is a second hazard: numba trusts any file whose source
stamp matches, so every later import would fail the same way. `heal_unreadable_caches`
wraps numba's cache loader for this project's kernels only: a file that fails to load, or
that loads a different kernel or signature than the one asked for, is deleted with one
warning line and the kernel is compiled afresh (and cached again).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

_log = logging.getLogger("colony_env")

STAMP_NAME = "numba_sources.sha256"  # in the package's __pycache__
CACHE_SUFFIXES = (".nbi", ".nbc")  # numba's index and data files


def sources_fingerprint(roots: Iterable[Path]) -> str:
    """SHA-256 over the paths and contents of every .py file under `roots` (sorted)."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def drop_stale_caches(package_dir: Path, dependencies: Iterable[Path] = ()) -> bool:
    """Delete `package_dir`'s numba cache files if its sources or `dependencies` changed.

    Returns whether files were deleted. Never raises for file-system problems: a read-only
    install simply keeps numba's own behaviour.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    package_dir = Path(package_dir)
    stamp = package_dir / "__pycache__" / STAMP_NAME
    try:
        fingerprint = sources_fingerprint([package_dir, *dependencies])
        if stamp.is_file() and stamp.read_bytes().strip() == fingerprint.encode():
            return False
        dropped = False
        for cache_dir in package_dir.rglob("__pycache__"):
            for f in cache_dir.iterdir():
                if f.suffix in CACHE_SUFFIXES:
                    f.unlink(missing_ok=True)
                    dropped = True
        stamp.parent.mkdir(exist_ok=True)
        tmp = stamp.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(fingerprint)
        os.replace(tmp, stamp)
        return dropped
    except OSError:
        return False


# --- the first run's compile, said once ---------------------------------------------------
COMPILE_SECONDS = 30  # a cold `colony-eval greedy random --games 2`, 2 cores (docs/engine.md, "First run")
COMMAND_ENV = "COLONY_COMMAND_ID"  # set by a command for its worker processes, which inherit it
_announced = False


def _marker(command: str) -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / f"colony-compile-announced-{command}"


def announce_compile() -> None:
    """Say, once per command (its worker processes included), that kernels are being compiled.

    Called when a kernel of this project misses its cache: the first run of a new installation (or
    after an upgrade) compiles for tens of seconds, which would otherwise look like a hang. Worker
    processes that miss at the same moment agree on one speaker through a marker file named after
    the command (`COLONY_COMMAND_ID`, set by the command-line tools); `end_command` removes it.
    """
    global _announced
    if _announced:
        return
    _announced = True
    command = os.environ.get(COMMAND_ENV)
    if command:
        try:
            os.close(os.open(_marker(command), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return  # another process of this command said it
        except OSError:
            pass  # no temporary folder to agree in: say it anyway
    _log.warning(
        f"colony: compiling the engine's kernels for this installation, once (about {COMPILE_SECONDS} s "
        "on 2 cores); later runs load them from the cache"
    )


def begin_command() -> str:
    """Name this process's command for its future workers (see `announce_compile`); returns the id."""
    command = os.environ.setdefault(COMMAND_ENV, f"{os.getpid()}-{threading.get_ident()}")
    return command


def end_command(command: str) -> None:
    """Remove the command's marker file, if a compile was announced."""
    try:
        _marker(command).unlink(missing_ok=True)
    except OSError:
        pass


# --- self-healing loads -----------------------------------------------------------------
_HEALED_ROOTS: list[Path] = []  # packages whose kernels get self-healing cache loads
_heal_lock = threading.Lock()
_warned = False  # one warning line per process, however many files were bad


def _owned(py_func: Callable[..., Any]) -> bool:
    """Whether `py_func` is defined under one of the registered package folders."""
    try:
        source = Path(py_func.__code__.co_filename).resolve()
    except (AttributeError, OSError):
        return False
    return any(source.is_relative_to(root) for root in _HEALED_ROOTS)


def _drop_entry(cache: Any) -> list[str]:
    """Delete one kernel's index file and all of its data files; return the names deleted."""
    cache_file = cache._cache_file
    index = Path(cache_file._index_path)
    base = index.name[: -len(".nbi")]
    dropped = []
    for f in [index, *index.parent.glob(f"{base}.*.nbc")]:
        try:
            f.unlink()
            dropped.append(f.name)
        except OSError:  # already gone (another process healed it) or read-only: compile anyway
            pass
    return dropped


def _matches(cache: Any, sig: Any, loaded: Any) -> bool:
    """A loaded compile result is the kernel and signature that were asked for (not a swapped file)."""
    fndesc = getattr(loaded, "fndesc", None)
    if fndesc is None:  # not a CompileResult (a library cache): nothing to compare
        return True
    from numba.core import sigutils

    args, _ret = sigutils.normalize_signature(sig)
    py_func = cache._py_func
    return (
        fndesc.qualname == py_func.__qualname__
        and fndesc.modname == py_func.__module__
        and tuple(loaded.signature.args) == tuple(args)
    )


def heal_unreadable_caches(package_dir: Path) -> bool:
    """Make numba drop and recompile this package's cache files that cannot be loaded.

    Patches `numba.core.caching.Cache.load_overload` once per process (kernels of other
    packages keep numba's behaviour). Returns False, leaving numba untouched, when its
    cache internals are not the expected ones (a numba version this was not written for).
    """
    with _heal_lock:
        root = Path(package_dir).resolve()
        if root not in _HEALED_ROOTS:
            _HEALED_ROOTS.append(root)
        from numba.core import caching

        original = caching.Cache.load_overload
        if getattr(original, "_colony_heals", False):
            return True
        if not hasattr(caching.IndexDataCacheFile, "_load_index") or not hasattr(caching.Cache, "_load_overload"):
            return False

        def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
            global _warned
            if not _owned(self._py_func):
                return original(self, sig, target_context)
            try:
                loaded = original(self, sig, target_context)
                if loaded is None:
                    announce_compile()
                    return None
                if _matches(self, sig, loaded):
                    return loaded
                problem = "it holds another kernel or signature"
            except Exception as exc:  # noqa: BLE001 - any failure to unpickle or rebuild means the file is bad
                problem = f"{type(exc).__name__}: {str(exc)[:100]}"
            dropped = _drop_entry(self)
            message = (
                f"colony_env: warning: unreadable kernel cache for {self._py_func.__qualname__} ({problem}); "
                f"dropped {', '.join(dropped) or 'nothing'} and recompiling"
            )
            if _warned:
                _log.debug(message)
            else:
                _warned = True
                _log.warning(message)
            return None  # numba compiles the kernel and saves a fresh cache entry

        load_overload._colony_heals = True  # type: ignore[attr-defined]
        caching.Cache.load_overload = load_overload
        return True
