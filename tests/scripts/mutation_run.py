"""Mutation testing of the rules engine (`colony_env/_core.py`, `colony_env/engine.py`) with
mutmut, in a throw-away copy of the repository. docs/mutation_testing.md has the why and
the latest numbers.

    python tests/scripts/mutation_run.py                          # the whole run (one worker)
    python tests/scripts/mutation_run.py "colony_env._core.x_winner*"   # a subset, by mutant-name glob
    python tests/scripts/mutation_run.py --results-only           # show the results of the last run

Why a copy, and why the kernels lose `@njit` there:
  * mutmut 3 does not mutate decorated functions (it swaps each function for a trampoline
    that picks the mutant at call time), and compiled code could not call a trampoline
    anyway. So in the copy the `@njit(...)` lines of `_core.py` are deleted and the kernels
    run as plain Python (NUMBA_DISABLE_JIT=1 covers any other compiled module). The code
    under test is the same text; only numba's fixed-width integer overflow differs, and no
    rule computes numbers anywhere near it.
  * mutmut writes a `mutants/` folder and its own state; the shared working tree stays clean.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_WORKDIR = Path("/tmp/colony-mutmut")
MUTATED = ("colony_env/_core.py", "colony_env/engine.py")
# The tests run against every mutant: the rule tests, and the reference-engine differential
# and rule properties on the stored corpus of rare positions and on random boards. The
# game-playing tests are left out: with the kernels in plain Python they take minutes, and a
# surviving mutant runs the whole selection (mutmut stops a mutant at its first failure).
TESTS = (
    "tests/engine/test_rules_mutation_kills.py",
    "tests/engine/test_rules_moves.py",
    "tests/engine/test_rules_sequence.py",
    "tests/engine/test_rules_setup_encoding.py",
    "tests/engine/test_rules_engine_properties.py::test_properties_on_the_rare_positions_corpus",
    "tests/engine/test_differential.py::test_r2_setup_agrees",
    "tests/engine/test_differential.py::test_rare_positions_corpus_agrees",
    "tests/engine/test_differential.py::test_rare_positions_moved_into_the_corners_agree",
    "tests/engine/test_differential.py::test_random_boards_agree",
)
CONFIG = """
[tool.mutmut]
source_paths = ["colony_env"]
only_mutate = {only}
pytest_add_cli_args_test_selection = {tests}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist"]
timeout_multiplier = 5.0
"""
NJIT_LINE = re.compile(r"^@njit\b.*\n", re.MULTILINE)


def prepare(workdir: Path) -> None:
    """Copy the working tree (tracked and untracked, not ignored files) to `workdir`, strip
    the kernels' `@njit` decorators and append the mutmut configuration."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\n")
    if workdir.exists():
        shutil.rmtree(workdir)
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("checkpoints/", "runs/")):
            dst = workdir / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    core = workdir / "colony_env" / "_core.py"
    text, n = NJIT_LINE.subn("", core.read_text())
    if n == 0:
        raise SystemExit(f"no @njit lines found in {core}: has the kernel module changed shape?")
    # `_build_tables` runs once at import, before mutmut forks a worker per mutant, so its
    # mutants could never take effect there; the differential test checks the tables'
    # geometry through every move instead (docs/mutation_testing.md).
    text, n_tables = re.subn(
        r"^(def _build_tables\(\).*:)$", r"\1  # pragma: no mutate block", text, flags=re.MULTILINE
    )
    if n_tables != 1:
        raise SystemExit(f"def _build_tables() not found in {core}: has the kernel module changed shape?")
    core.write_text(text)
    tests = list(TESTS)
    quoted = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"
    with open(workdir / "pyproject.toml", "a") as f:
        f.write(CONFIG.format(only=quoted(MUTATED), tests=quoted(tests)))
    print(f"prepared {workdir}: {n} @njit decorators stripped from _core.py; tests: {', '.join(tests)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Mutation testing of the rules engine with mutmut (one worker).")
    p.add_argument(
        "mutants", nargs="*", help="mutant-name globs to run (default: all), e.g. 'colony_env._core.x_winner*'"
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help=f"scratch copy of the repository (default {DEFAULT_WORKDIR})",
    )
    p.add_argument("--keep", action="store_true", help="reuse the existing copy and mutmut's cached results")
    p.add_argument(
        "--results-only", action="store_true", help="print the results of the last run in --workdir and stop"
    )
    args = p.parse_args(argv)
    if shutil.which("mutmut") is None:
        p.error("mutmut is not installed: pip install -e '.[dev]' (the dev extra has it)")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(args.workdir)}
    if args.results_only:
        if not (args.workdir / "mutants").exists():
            p.error(f"no mutmut results in {args.workdir}; run without --results-only first")
        return subprocess.run(["mutmut", "results", "--all", "true"], cwd=args.workdir, env=env, check=False).returncode
    if not (args.keep and args.workdir.exists()):
        prepare(args.workdir)
    t0 = time.time()
    rc = subprocess.run(
        ["mutmut", "run", "--max-children", "1", *args.mutants], cwd=args.workdir, env=env, check=False
    ).returncode
    print(
        f"mutmut finished in {time.time() - t0:.0f}s (exit {rc}); survivors: python {Path(__file__).name} --results-only"
    )
    return rc


if __name__ == "__main__":
    sys.exit(main())
