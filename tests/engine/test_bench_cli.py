"""Smoke test of the engine benchmark command (every CLI gets a smoke run with tiny settings)."""

from __future__ import annotations

import subprocess
import sys


def test_engine_bench_prints_its_numbers():
    out = subprocess.run(
        [sys.executable, "-m", "colony_env.bench", "--only", "engine", "--repeats", "1", "--seconds", "0.2"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout
    assert "actions/s" in out and "games/s" in out and "us/state" in out


def test_engine_bench_rejects_unknown_options():
    res = subprocess.run([sys.executable, "-m", "colony_env.bench", "--fast"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "unrecognized arguments: --fast" in res.stderr
    res = subprocess.run([sys.executable, "-m", "colony_env.bench", "--repeats", "0"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "--repeats must be >= 1" in res.stderr
