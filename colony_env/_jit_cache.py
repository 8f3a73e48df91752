"""Drop numba's on-disk caches when any kernel source changes, not only the caller's file.

numba's `cache=True` keys a cached function on its *own* source file, so a kernel that calls
a kernel from another file keeps running the old callee after that file changes (numba issue
#1833, documented under "Cache invalidation" in numba's docs). Here that is not only stale
but unsafe: a cached `training.teacher.greedy_action_features` built against an older
`agents._search` ran beside the new `greedy_scores` and corrupted memory ("NRT_adapt_ndarray_to_python:
'descr' is NULL", "malloc(): unaligned tcache chunk"). So each package fingerprints the sources
its kernels depend on and, when the fingerprint differs from the one its cache was built
with, deletes the cache files in its `__pycache__` folders before any kernel loads.

Only the in-tree cache (`__pycache__` beside the sources) is managed; with `NUMBA_CACHE_DIR`
set, clearing that folder after an upgrade is up to its owner.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

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
        if stamp.is_file() and stamp.read_text().strip() == fingerprint:
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
