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

import colony_env as ce

from ..config import ConfigError
from ..eval.records import RecordError, read_records


def load_positions(paths: Sequence[str], max_plies: int) -> list[ce.GameState]:
    """Every position of the records in `paths` that is not over and has plies left under `max_plies`,
    re-limited to `max_plies` (R6.2.4), in file and ply order; `ConfigError` (one line) if a file cannot be used."""
    positions: list[ce.GameState] = []
    for path in paths:
        try:
            records = read_records(path)
        except RecordError as e:
            raise ConfigError(f"start_records: {e}") from None
        for n, rec in enumerate(records, 1):
            try:
                states = rec.replay()
            except RecordError as e:
                raise ConfigError(f"start_records: {path}: game {n} does not replay: {e}") from None
            for state in states:
                if not state.is_over and state.ply < max_plies:
                    d = state.to_dict()
                    d["max_plies"] = max_plies
                    positions.append(ce.GameState.from_dict(d))
    if not positions:
        raise ConfigError(f"start_records: {', '.join(paths)} hold no position that is not over")
    return positions


def generation_starts(seed: int, generation: int, games: int, share: float,
                      positions: Sequence[ce.GameState]) -> list[np.ndarray | None]:
    """For each of a generation's `games`: the packed position it starts from (a uniform draw from
    `positions`, with probability `share`), or None for a new game; fixed by (seed, generation)."""
    if share <= 0 or not positions:
        return [None] * games
    rng = np.random.default_rng([seed, generation, 11])
    used = rng.random(games) < share
    picks = rng.integers(len(positions), size=games)
    return [positions[int(p)].to_array() if u else None for u, p in zip(used, picks)]
