"""The numba cache guard (colony_env/_jit_cache.py): caches go when any kernel source changes."""

from __future__ import annotations

from pathlib import Path

import pytest

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
