"""Smoke run of the env and vector-env benchmark sections with tiny settings (numbers are not asserted)."""

from __future__ import annotations

import re

from colony_env import bench


def test_env_and_vector_bench_sections_print_medians(capsys) -> None:
    bench.main(["--only", "env", "--only", "vector", "--repeats", "1", "--seconds", "0.02"])
    out = capsys.readouterr().out
    for label in ("AEC env()", "AEC raw_env", "vector env N=1,", "vector env N=64,", "vector env N=256,"):
        assert re.search(re.escape(label) + r".*\d[\d,]* steps/s", out), out
