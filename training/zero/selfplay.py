"""Self-play games with the batched search: positions, improved-policy targets and outcomes.

`play_games` keeps `parallel` games in flight; every move of every game in flight is one
search, and the searches of all games share one network call per simulation step
(`colony_env.agents.az.BatchedSearch`). Each position is stored as the packed state, the
search's improved policy over its legal actions (canonical ids, the engine's generation
order) and, once the game is over, the result for the colour that was to move there: +1 won,
-1 lost, 0 draw. The colour to move is read from each state, never from the ply's parity,
because during grace (R6.3) one colour may move several times in a row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

import colony_env as ce
from colony_env.agents._search import rollout_mover_means
from colony_env.agents.az import SEED_HIGH, BatchedSearch, SearchConfig
from colony_env.constants import END_REASONS, I_TO_MOVE, N_CELLS, STATE_LEN

from ..agents import leaf_evaluator
from ..checkpoint import build_model
from ..ownership import ownership
from ..quantize import int8_copy

END_REASON_CODES = {None: 0, **{r: i + 1 for i, r in enumerate(END_REASONS)}}


@dataclass
class GameData:
    """Positions of finished self-play games, flat; targets ragged through `offsets`."""

    states: np.ndarray  # int32[P, STATE_LEN]
    target_ids: np.ndarray  # int16[T] canonical legal ids, position p at offsets[p]:offsets[p+1]
    target_probs: np.ndarray  # float32[T] the improved policy at those ids
    offsets: np.ndarray  # int64[P + 1]
    outcome: np.ndarray  # float32[P] final result for the colour to move at the position
    root_value: np.ndarray  # float32[P] the search's value of the position for that colour
    game_lengths: np.ndarray  # int32[G]
    game_reasons: np.ndarray  # int8[G] 1 + index into END_REASONS
    game_winners: np.ndarray  # int8[G] 0 red, 1 blue, -1 draw
    ownership: np.ndarray  # int8[P, 100] final controller of each cell's colony, mover's view, canonical frame
    rollout_value: np.ndarray  # float32[P] mean of `value_rollouts` random playouts for the mover (0 when off)
    full_search: np.ndarray  # uint8[P] 1: the policy target came from a full search; 0: a fast one (not a target)
    cpu_seconds: float = 0.0
    leaf_evaluations: int = 0

    @property
    def n_positions(self) -> int:
        return int(self.states.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in ARRAY_FIELDS}


ARRAY_FIELDS = ("states", "target_ids", "target_probs", "offsets", "outcome", "root_value", "game_lengths",
                "game_reasons", "game_winners", "ownership", "rollout_value", "full_search")


def concat(parts: Sequence[GameData]) -> GameData:
    """One GameData from several (offsets re-based)."""
    offs = [np.zeros(1, np.int64)]
    base = 0
    for p in parts:
        offs.append(p.offsets[1:] + base)
        base += int(p.offsets[-1])
    cat = lambda k, dt: np.concatenate([getattr(p, k) for p in parts]).astype(dt) if parts else np.zeros(0, dt)
    return GameData(
        states=np.concatenate([p.states for p in parts]) if parts else np.zeros((0, STATE_LEN), np.int32),
        target_ids=cat("target_ids", np.int16), target_probs=cat("target_probs", np.float32),
        offsets=np.concatenate(offs), outcome=cat("outcome", np.float32), root_value=cat("root_value", np.float32),
        game_lengths=cat("game_lengths", np.int32), game_reasons=cat("game_reasons", np.int8),
        game_winners=cat("game_winners", np.int8),
        ownership=np.concatenate([p.ownership for p in parts]).astype(np.int8) if parts
        else np.zeros((0, N_CELLS), np.int8),
        rollout_value=cat("rollout_value", np.float32), full_search=cat("full_search", np.uint8),
        cpu_seconds=sum(p.cpu_seconds for p in parts), leaf_evaluations=sum(p.leaf_evaluations for p in parts),
    )


def outcomes(states: np.ndarray, final: ce.GameState) -> np.ndarray:
    """float32[P]: the final result (+1 won, -1 lost, 0 draw, R7.4) for the colour to move in each packed state.

    The mover is read from each state: grace (R6.3) lets one colour move several times in a row.
    """
    red, blue = final.rewards()
    return np.where(states[:, I_TO_MOVE] == 0, red, blue).astype(np.float32)


def play_games(evaluator, search_config: SearchConfig, seeds: Sequence[int], parallel: int, max_plies: int,
               rng: np.random.Generator, value_rollouts: int = 0, fast_config: SearchConfig | None = None,
               full_search_prob: float = 1.0, starts: Sequence[np.ndarray | None] | None = None) -> GameData:
    """Play one self-play game per seed (setup `new_game(seed)`), `parallel` at a time.

    `starts`, aligned with `seeds`, gives a packed position (`GameState.to_array`) that a game
    starts from instead of its setup (None: the setup; `starts.py`); its stored positions, and its
    length, begin there.

    With `value_rollouts` > 0 every stored position also gets the mean result of that many
    uniformly random playouts from it (`rollout_value`): a value target whose noise shrinks with
    the number of playouts, where the game's one result is +-1 (see `ZeroConfig.rollout_value_mix`).

    With `fast_config`, playout cap randomisation (KataGo; Wu 2019): each move gets the full
    `search_config` search with probability `full_search_prob` and the cheap `fast_config` one
    otherwise; `full_search` marks which, because only full searches are good policy targets,
    while every position still counts for the value. The full searches of all games in flight
    share their batches, and so do the fast ones.
    """
    cpu0 = time.process_time()
    full = BatchedSearch(evaluator, search_config)
    fast = BatchedSearch(evaluator, fast_config) if fast_config is not None else None
    queue = list(zip(seeds, starts if starts is not None else [None] * len(seeds)))[::-1]
    slots: list[dict] = []
    finished: list[dict] = []

    def start() -> None:
        while queue and len(slots) < parallel:
            seed, packed = queue.pop()
            state = ce.new_game(int(seed), max_plies=max_plies) if packed is None else ce.GameState.from_array(packed)
            slots.append({"state": state, "first_ply": state.ply, "states": [], "ids": [], "probs": [], "values": [],
                          "full": []})

    start()
    while slots:
        is_full = np.ones(len(slots), bool) if fast is None else rng.random(len(slots)) < full_search_prob
        results: list = [None] * len(slots)
        for search, chosen in ((full, is_full), (fast, ~is_full)):
            rows = np.flatnonzero(chosen)
            if search is not None and rows.size:
                for i, r in zip(rows, search.search([slots[i]["state"] for i in rows], rng)):
                    results[i] = r
        keep = []
        for g, r, f in zip(slots, results, is_full):
            g["states"].append(g["state"].to_array())
            g["ids"].append(r.canonical_actions.astype(np.int16))  # the tree's own ids: no conversion
            g["probs"].append(r.policy.astype(np.float32))
            g["values"].append(r.value)
            g["full"].append(bool(f))
            g["state"] = r.next_state  # from the search tree: the move came from the legal list
            (finished if g["state"].is_over else keep).append(g)
        slots = keep
        start()
    parts = []
    for g in finished:
        final = g["state"]
        states = np.stack(g["states"])
        outcome = outcomes(states, final)
        lengths = np.array([len(x) for x in g["ids"]], np.int64)
        winner = final.winner
        parts.append(GameData(
            states=states, target_ids=np.concatenate(g["ids"]), target_probs=np.concatenate(g["probs"]),
            offsets=np.concatenate([[0], np.cumsum(lengths)]), outcome=outcome,
            root_value=np.asarray(g["values"], np.float32),
            game_lengths=np.array([final.ply - g["first_ply"]], np.int32),
            game_reasons=np.array([END_REASON_CODES[final.end_reason]], np.int8),
            game_winners=np.array([-1 if winner is None else int(winner)], np.int8),
            ownership=ownership(states, final),
            rollout_value=(rollout_mover_means(states, value_rollouts, int(rng.integers(SEED_HIGH))).astype(np.float32)
                           if value_rollouts else np.zeros(len(states), np.float32)),
            full_search=np.asarray(g["full"], np.uint8),
        ))
    data = concat(parts)
    data.cpu_seconds = time.process_time() - cpu0
    data.leaf_evaluations = full.leaf_evaluations + (fast.leaf_evaluations if fast is not None else 0)
    return data


def worker_play(arch: dict, weights: dict, search_config: SearchConfig, seeds: list[int], parallel: int,
                max_plies: int, rng_seed: int, threads: int, device: str, rollout_mix: float = 0.0,
                value_rollouts: int = 0, fast_config: SearchConfig | None = None,
                full_search_prob: float = 1.0, int8: bool = False, rollout_playouts: int = 1,
                rollout_from: int = 0, starts: Sequence[np.ndarray | None] | None = None) -> GameData:
    """Entry point of a self-play process: rebuild the network from plain data (its int8 copy with `int8`
    on the CPU, `quantize.int8_copy`) and play; `rollout_*` shape the leaf values (`agents.leaf_evaluator`)."""
    torch.set_num_threads(threads)
    model = build_model({"architecture": arch, "model": weights})  # the checkpoints' own rebuild
    if int8 and torch.device(device).type == "cpu":
        model = int8_copy(model)
    return play_games(leaf_evaluator(model, device, rollout_mix, rng_seed + 1, playouts=rollout_playouts,
                                     from_connected=rollout_from), search_config, seeds, parallel,
                      max_plies, np.random.default_rng(rng_seed), value_rollouts, fast_config, full_search_prob, starts)
