"""Shared test helpers: small ASCII positions for rule tests, random games, the examples as modules.

Small ASCII positions:

A diagram is up to 10 lines of up to 10 whitespace-separated tokens (`.`, `r1`..`r4`,
`b1`..`b4`), row 0 (North) first; missing rows and cells are empty. Positions go
through `GameState.from_dict`, so every test position is also a valid R9 state.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

import colony_env as ce
from colony_env.constants import BOARD_SIZE


def rows_from_diagram(diagram: str) -> list[str]:
    lines = [ln.split() for ln in diagram.strip("\n").splitlines()]
    lines = [ln for ln in lines if ln] if diagram.strip() else []
    assert len(lines) <= BOARD_SIZE, "diagram has more than 10 rows"
    rows = []
    for r in range(BOARD_SIZE):
        tokens = lines[r] if r < len(lines) else []
        assert len(tokens) <= BOARD_SIZE, f"diagram row {r} has more than 10 cells"
        tokens = tokens + ["."] * (BOARD_SIZE - len(tokens))
        rows.append("".join(".." if t == "." else t for t in tokens))
    return rows


def pos(
    diagram: str,
    to_move: str = "red",
    unlocked: bool = True,
    finished: str | None = None,
    grace_left: int = 0,
    ply: int = 0,
    passes: int = 0,
    max_plies: int = 400,
) -> ce.GameState:
    return ce.GameState.from_dict(
        {
            "board": rows_from_diagram(diagram),
            "to_move": to_move,
            "unlocked": unlocked,
            "finished": finished,
            "grace_left": grace_left,
            "ply": ply,
            "passes": passes,
            "max_plies": max_plies,
        }
    )


def cell(name: str) -> int:
    return ce.parse_cell(name)


def rc(r: int, c: int) -> int:
    """Flat index of (row, column)."""
    return r * BOARD_SIZE + c


def act(state: ce.GameState, text: str) -> int:
    """Action id from human notation in `state`."""
    return ce.parse_action(text, state)


def legal_strs(state: ce.GameState) -> set[str]:
    return {ce.action_to_str(int(a), state) for a in ce.legal_actions(state)}


def assert_illegal(state: ce.GameState, action: int, *fragments: str) -> str:
    """The action raises IllegalActionError mentioning every fragment, and `state` is untouched."""
    import pytest

    before = state.to_array()
    assert not ce.legal_action_mask(state)[action]
    with pytest.raises(ce.IllegalActionError) as info:
        ce.apply_action(state, action)
    msg = str(info.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    assert (state.to_array() == before).all()
    return msg


def assert_legal(state: ce.GameState, action: int) -> ce.GameState:
    assert ce.legal_action_mask(state)[action], ce.action_to_str(action, state)
    assert action in ce.legal_actions(state)
    return ce.apply_action(state, action)


# --- games played out, and the examples -------------------------------------------------------

def random_game(seed: int, max_plies: int = 400) -> list[ce.GameState]:
    """All states of one uniformly random game (seeded), the final one included."""
    rng = np.random.default_rng(seed)
    s = ce.new_game(seed, max_plies=max_plies)
    states = [s]
    while not s.is_over:
        ids = ce.legal_actions(s)
        s = ce.apply_action(s, int(ids[rng.integers(len(ids))]))
        states.append(s)
    return states


def random_final_state(seed: int) -> ce.GameState:
    return random_game(seed)[-1]


ROOT = Path(__file__).resolve().parents[1]  # the repository
EXAMPLES = ROOT / "examples"


def load_example(filename: str) -> ModuleType:
    """Import an example script from `examples/` (not a package) as a module."""
    path = EXAMPLES / filename
    spec = importlib.util.spec_from_file_location(f"{path.stem}_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_zero_run(out: Path, *extra: str) -> Path:
    """One generation of colony-zero at toy size (8 x 1 network, 2 games of at most 40 plies, one process) with
    `extra` options; returns its run directory under `out`."""
    from colony_training.zero import train as zero_train

    argv = ["--out-dir", str(out), "--generations", "1", "--no-progress", "--channels", "8", "--blocks", "1",
            "--games-per-generation", "2", "--parallel-games", "2", "--workers", "1", "--max-plies", "40",
            "--eval-games", "2", "--eval-every", "0", "--batch-size", "32", "--keep-checkpoints", "1", *extra]
    assert zero_train.main(argv) == 0
    return next(out.iterdir())


# --- kill tests: one interpreter, one forked child per scenario ------------------------------
# A zygote script imports a tool once (the slow part), defines `child(mode, n, argv)` (which hooks
# the tool's write points for `mode` and runs its main) and calls `run_all`; each scenario runs in
# a forked child, so the imports are paid once. `run_all` prints `EXIT k code` per scenario
# (code negative: killed by that signal) and calls `after(k)` once the child has ended.
FORK_EACH_SCENARIO = r"""
import os, sys

def run_all(scenarios, before=lambda argv: argv, after=lambda k: None):
    for k, (mode, n, argv) in enumerate(scenarios):
        argv = before(argv)
        sys.stdout.flush(); sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(mode, n, argv)
            finally:
                sys.stdout.flush(); sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        after(k)
        print("EXIT", k, code, flush=True)
"""


def run_forked_scenarios(zygote: str, args: list[str], scenarios: list[tuple[str, int, list[str]]],
                         timeout: float = 900) -> tuple[list[int], str]:
    """Run `zygote` (after `FORK_EACH_SCENARIO`) with `args` and the scenarios as its last argument;
    (each scenario's exit code, stderr). Fails if the zygote did not report every scenario."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", FORK_EACH_SCENARIO + zygote, *args, json.dumps(scenarios)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    codes = [int(line.split()[2]) for line in r.stdout.splitlines() if line.startswith("EXIT ")]
    assert r.returncode == 0 and len(codes) == len(scenarios), r.stdout[-2000:] + r.stderr[-3000:]
    return codes, r.stderr


def minimax(s: ce.GameState, plies: int) -> int:
    """A reference for `_search.solve`: plain minimax over every legal action through the public engine, for
    the colour to move: +1 it wins within `plies` plies, -1 it loses within them, 0 neither (or a draw)."""
    values = [minimax_after(s, int(a), plies - 1) for a in ce.legal_actions(s)]
    return 1 if 1 in values else (-1 if all(v == -1 for v in values) else 0)


def minimax_after(s: ce.GameState, action: int, plies: int) -> int:
    """`minimax` of the position after `action` (its exact result if that ends the game), for the mover of `s`."""
    n = ce.apply_action(s, action)
    if n.is_over:
        return 0 if n.winner is None else (1 if n.winner == s.to_move else -1)
    if plies == 0:
        return 0
    return minimax(n, plies) * (1 if n.to_move == s.to_move else -1)
