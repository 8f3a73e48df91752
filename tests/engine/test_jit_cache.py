"""The numba cache guard (colony_env/_jit_cache.py): caches go when any kernel source changes,
and a cache file that cannot be loaded is dropped and recompiled (issue 13, item 5)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import colony_env
from colony_env._jit_cache import STAMP_NAME, drop_stale_caches


def _cache_files(pkg: Path) -> list[str]:
    return sorted(p.name for p in pkg.rglob("*") if p.suffix in (".nbi", ".nbc"))


def _fake_cache(pkg: Path) -> None:
    for d in (pkg / "__pycache__", pkg / "sub" / "__pycache__"):
        d.mkdir(parents=True, exist_ok=True)
        (d / "mod.kernel-10.py311.nbi").write_bytes(b"index")
        (d / "mod.kernel-10.py311.1.nbc").write_bytes(b"code")


def test_caches_survive_until_a_source_or_a_dependency_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    pkg, dep = tmp_path / "pkg", tmp_path / "dep"
    (pkg / "sub").mkdir(parents=True)
    dep.mkdir()
    (pkg / "mod.py").write_text("x = 1\n")
    (pkg / "sub" / "inner.py").write_text("y = 1\n")
    (dep / "callee.py").write_text("z = 1\n")
    _fake_cache(pkg)
    assert drop_stale_caches(pkg, [dep])  # no stamp yet: the caches' sources are unknown
    assert _cache_files(pkg) == [] and (pkg / "__pycache__" / STAMP_NAME).is_file()

    _fake_cache(pkg)  # numba writes new caches; nothing changed since
    assert not drop_stale_caches(pkg, [dep])
    assert len(_cache_files(pkg)) == 4

    (dep / "callee.py").write_text("z = 2\n")  # the callee in another package changed (numba #1833)
    assert drop_stale_caches(pkg, [dep])
    assert _cache_files(pkg) == []

    _fake_cache(pkg)
    (pkg / "sub" / "inner.py").write_text("y = 2\n")  # a nested module of the package itself
    assert drop_stale_caches(pkg, [dep]) and _cache_files(pkg) == []
    (pkg / "notes.txt").write_text("not a source")
    _fake_cache(pkg)
    assert not drop_stale_caches(pkg, [dep])


def test_a_user_cache_dir_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mod.py").write_text("x = 1\n")
    _fake_cache(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert not drop_stale_caches(tmp_path)
    assert len(_cache_files(tmp_path)) == 4


def test_an_unreadable_stamp_file_does_not_break_the_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "mod.py").write_text("x = 1\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / STAMP_NAME).write_bytes(b"\xff\xfe garbage")  # not UTF-8
    _fake_cache(tmp_path)
    assert drop_stale_caches(tmp_path)
    assert _cache_files(tmp_path) == []


# --- self-healing loads: real numba caches in a temporary folder ----------------------------
_HEAL_WARNING = "colony_env: warning: unreadable kernel cache"

_TINY_PACKAGE = '''
from pathlib import Path
from numba import njit
from colony_env._jit_cache import heal_unreadable_caches
heal_unreadable_caches(Path(__file__).parent)

@njit(cache=True)
def double(x):
    return 2 * x

@njit(cache=True)
def triple(x):
    return 3 * x

@njit(cache=True)
def square(x):
    return x * x

@njit(cache=True)
def negate(x):
    return -x

@njit(cache=True)
def shout(x):
    return x + 1000
'''
_TINY_CALLS = "import tinypkg as t; print(t.double(21), t.triple(2), t.square(5), t.negate(7), t.shout(1))"
_TINY_RESULTS = ["42", "6", "25", "-7", "1001"]


def _run(code: str, root: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter that imports packages from `root` first."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NUMBA_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def _entry(cache_dir: Path, kernel: str, suffix: str) -> Path:
    (path,) = cache_dir.glob(f"*.{kernel}-*{suffix}")
    return path


def test_garbled_cache_files_are_dropped_and_recompiled(tmp_path: Path) -> None:
    pkg = tmp_path / "tinypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_TINY_PACKAGE)
    first = _run(_TINY_CALLS, tmp_path)
    assert first.returncode == 0 and first.stdout.split() == _TINY_RESULTS, first.stderr
    cache = pkg / "__pycache__"
    truncated = _entry(cache, "double", ".1.nbc")
    truncated.write_bytes(truncated.read_bytes()[:100])
    _entry(cache, "triple", ".nbi").write_bytes(os.urandom(3000))
    flipped = _entry(cache, "square", ".1.nbc")
    flipped.write_bytes(bytes(b ^ 0x55 for b in flipped.read_bytes()))
    shutil.copyfile(_entry(cache, "shout", ".1.nbc"), _entry(cache, "negate", ".1.nbc"))  # another kernel's file

    healed = _run(_TINY_CALLS, tmp_path)
    assert healed.returncode == 0, healed.stderr
    assert healed.stdout.split() == _TINY_RESULTS  # the right kernels ran, not the swapped one
    lines = [line for line in healed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(_HEAL_WARNING), healed.stderr  # one line however many files
    again = _run(_TINY_CALLS, tmp_path)  # every kernel was cached afresh: they all load now
    assert again.returncode == 0 and again.stdout.split() == _TINY_RESULTS and again.stderr.strip() == "", again.stderr
    for kernel in ("double", "triple", "square", "negate"):
        assert len(list(cache.glob(f"*.{kernel}-*.nbc"))) == 1


def test_a_truncated_cache_file_of_the_package_recovers(tmp_path: Path) -> None:
    """The reported case: truncate `_core.legal_ids-*.nbc` in a copy of colony_env, then play."""
    source = Path(colony_env.__file__).parent
    # copy2 keeps modification times, so numba's source stamps still match the copied caches
    shutil.copytree(source, tmp_path / "colony_env", ignore=shutil.ignore_patterns("*.tmp*"))
    code = "import colony_env as ce; s = ce.new_game(seed=3); print(ce.__file__, len(ce.legal_actions(s)))"
    warm = _run(code, tmp_path)
    assert warm.returncode == 0 and warm.stdout.startswith(str(tmp_path)), warm.stderr
    expected = warm.stdout
    (data,) = (tmp_path / "colony_env" / "__pycache__").glob("_core.legal_ids-*.1.nbc")
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    healed = _run(code, tmp_path)
    assert healed.returncode == 0 and healed.stdout == expected, healed.stderr
    assert healed.stderr.count(_HEAL_WARNING) == 1 and "legal_ids" in healed.stderr
    again = _run(code, tmp_path)
    assert again.returncode == 0 and again.stdout == expected and _HEAL_WARNING not in again.stderr


def test_a_compile_is_announced_once_per_command(tmp_path: Path) -> None:
    """Worker processes of one command that all miss the cache say it in one line between them."""
    import subprocess
    import sys

    code = "from colony_env._jit_cache import announce_compile; announce_compile(); announce_compile()"

    def run(command: str) -> str:
        env = {**os.environ, "COLONY_COMMAND_ID": command, "TMPDIR": str(tmp_path)}
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stderr

    first, second, other = run("cmd-a"), run("cmd-a"), run("cmd-b")
    assert first.count("compiling the engine's kernels") == 1  # once, however often a process misses
    assert "compiling" not in second  # a second worker of the same command stays quiet
    assert other.count("compiling the engine's kernels") == 1  # another command speaks for itself
