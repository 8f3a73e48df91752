"""Self-play games that start from positions of recorded games (`start_records`, `start_share`).

KataGo starts a share of its self-play games from positions of other games, so that the network
sees positions its own play does not steer into. Here the positions come from `colony-eval`
game records (games.jsonl, `training/eval/records.py`): every position of every game that is not
over, replayed and checked (`GameRecord.replay`). A generation's games are fixed by (seed,
generation): which of them start from a position, and from which, too, so a replayed generation
plays the same games (`generation_starts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from colony_env.constants import I_MAX_PLIES
from colony_env.engine import check_max_plies

from ..config import ConfigError
from ..eval.records import RecordError, replayed_games


def load_positions(paths: Sequence[str], max_plies: int) -> np.ndarray:
    """The packed states (int32[P, STATE_LEN]) of every position of the records in `paths` that is not over and
    has plies left under `max_plies`, re-limited to `max_plies` (R6.2.4), in file and ply order; `ConfigError`
    (one line) if a file cannot be used."""
    max_plies = check_max_plies(max_plies)
    positions: list[np.ndarray] = []
    try:
        for _, states in replayed_games(paths):
            positions += [s.to_array() for s in states if not s.is_over and s.ply < max_plies]
    except RecordError as e:
        raise ConfigError(f"start_records: {e}") from None
    if not positions:
        raise ConfigError(f"start_records: {', '.join(paths)} hold no position that is not over")
    packed = np.stack(positions)
    packed[:, I_MAX_PLIES] = max_plies  # the field GameState.from_dict sets from "max_plies"
    return packed


def generation_starts(seed: int, generation: int, games: int, share: float,
                      positions: np.ndarray | None) -> list[np.ndarray | None]:
    """For each of a generation's `games`: the packed position it starts from (a uniform draw from the rows
    of `positions`, with probability `share`), or None for a new game; fixed by (seed, generation)."""
    if share <= 0 or positions is None or not len(positions):
        return [None] * games
    rng = np.random.default_rng([seed, generation, 11])
    used = rng.random(games) < share
    picks = rng.integers(len(positions), size=games)
    return [positions[int(p)].copy() if u else None for u, p in zip(used, picks)]
