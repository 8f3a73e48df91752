"""Shared test helpers: small ASCII positions for rule tests, random games, the examples as modules.

Small ASCII positions:

A diagram is up to 10 lines of up to 10 whitespace-separated tokens (`.`, `r1`..`r4`,
`b1`..`b4`), row 0 (North) first; missing rows and cells are empty. Positions go
through `GameState.from_dict`, so every test position is also a valid R9 state.
"""

from __future__ import annotations

import importlib.util
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
