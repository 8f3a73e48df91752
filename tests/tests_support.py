"""Shared helpers for tests that need games played out."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

import colony_env as ce


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


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(filename: str) -> ModuleType:
    """Import an example script from `examples/` (not a package) as a module."""
    path = EXAMPLES / filename
    spec = importlib.util.spec_from_file_location(f"{path.stem}_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
