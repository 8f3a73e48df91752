"""Colony: a rules engine, PettingZoo environment and self-play toolkit for the board game.

The engine API (pure functions over an immutable `GameState`) is re-exported here;
see `colony_env.engine` for details and docs/rules.md for the rules it implements.
"""

from pathlib import Path as _Path

from ._jit_cache import drop_stale_caches as _drop_stale_caches
from ._jit_cache import heal_unreadable_caches as _heal_unreadable_caches

_drop_stale_caches(_Path(__file__).parent)  # before any cached kernel loads (see _jit_cache.py)
_heal_unreadable_caches(_Path(__file__).parent)  # a truncated or garbled cache file is recompiled

from .constants import BLUE, N_ACTIONS, PASS_ACTION, RED, Colour
from .engine import (
    Colony,
    GameState,
    IllegalActionError,
    apply_action,
    colonies,
    connected_counts,
    connected_mask,
    controlled_counts,
    is_legal,
    legal_action_mask,
    legal_actions,
    new_game,
)
from .notation import action_to_str, board_text, cell_name, parse_action, parse_cell

# PettingZoo AEC env (`colony_v0`). Imported eagerly on purpose: the submodule is named
# `env` too, and loading it here first keeps `colony_env.env` the factory function.
from .env import env, raw_env  # noqa: E402
from .registration import register_envs as _register_envs  # noqa: E402

_register_envs()  # pettingzoo.make / gymnasium.make ids (see registration.py)

__version__ = "0.1.0"

__all__ = [
    "BLUE",
    "N_ACTIONS",
    "PASS_ACTION",
    "RED",
    "Colony",
    "Colour",
    "GameState",
    "IllegalActionError",
    "action_to_str",
    "apply_action",
    "board_text",
    "cell_name",
    "colonies",
    "connected_counts",
    "connected_mask",
    "controlled_counts",
    "env",
    "is_legal",
    "legal_action_mask",
    "legal_actions",
    "new_game",
    "parse_action",
    "parse_cell",
    "raw_env",
]
