"""Playout cap randomisation in colony-zero (`fast_simulations`, `full_search_prob`; KataGo, Wu 2019):
which search each move got, that only full searches teach the policy, old shards, settings, a tiny run."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env.agents.az import BatchedSearch, SearchConfig
from colony_env.constants import STATE_LEN
from colony_env.observation import OBS_CHANNELS
from colony_training.config import ConfigError
from colony_training.model import PolicyValueNet
from colony_training.zero import train as zero_train
from colony_training.zero.config import ZeroConfig
from colony_training.zero.replay import read_shard, shard_path, write_shard
from colony_training.zero.selfplay import GameData, play_games
from helpers import tiny_zero_run

# Deterministic roots (no Gumbel noise), so a stored position's search can be repeated on its own.
FULL = SearchConfig(simulations=8, max_considered=4, gumbel_scale=0.0)
FAST = SearchConfig(simulations=2, max_considered=2, gumbel_scale=0.0)


VALUE_WEIGHTS = np.random.default_rng(0).normal(size=STATE_LEN) * 0.05


def hashed_evaluator(states, obs, ids, counts):
    """A deterministic, row-independent stand-in for a network: logits from the ids, a value that
    differs from position to position (a hash of the packed state), so Q values differ too."""
    logits = np.sin(ids.astype(np.float64) * 0.37 + counts[:, None] * 0.01) * 2.0
    return logits, np.tanh(np.sin(states.astype(np.float64) @ VALUE_WEIGHTS) * 2.0)


def stored_policy(data: GameData, p: int) -> np.ndarray:
    return data.target_probs[data.offsets[p]: data.offsets[p + 1]]


def research(state_row: np.ndarray, cfg: SearchConfig) -> np.ndarray:
    r = BatchedSearch(hashed_evaluator, cfg).search([ce.GameState.from_array(state_row)], np.random.default_rng(0))[0]
    return r.policy.astype(np.float32)


def test_each_move_is_marked_with_the_search_that_made_its_target():
    data = play_games(hashed_evaluator, FULL, [1, 2, 3], 3, 60, np.random.default_rng(5), fast_config=FAST,
                      full_search_prob=0.5)
    flags = data.full_search
    assert flags.dtype == np.uint8 and flags.shape == (data.n_positions,)
    assert 0 < flags.sum() < data.n_positions  # both kinds occur at p = 0.5
    told_apart = {0: False, 1: False}
    for p in range(data.n_positions):
        mine, other = (FULL, FAST) if flags[p] else (FAST, FULL)
        np.testing.assert_array_equal(stored_policy(data, p), research(data.states[p], mine))
        if not np.array_equal(stored_policy(data, p), research(data.states[p], other)):
            told_apart[int(flags[p])] = True
    assert told_apart == {0: True, 1: True}  # the check above can tell the two searches apart


def test_without_a_fast_search_every_move_is_a_full_one():
    data = play_games(hashed_evaluator, FULL, [4], 1, 30, np.random.default_rng(0))
    assert np.all(data.full_search == 1)
    for p in range(data.n_positions):
        np.testing.assert_array_equal(stored_policy(data, p), research(data.states[p], FULL))


def _fitted_weights(data: GameData) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    net = PolicyValueNet(OBS_CHANNELS, 8, 1, False, True)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    cfg = ZeroConfig(batch_size=16).finalize()
    zero_train.fit(net, opt, data, 4, cfg, np.random.default_rng(3), torch.device("cpu"))
    return {k: v.clone() for k, v in net.state_dict().items()}


def _with_targets_flattened(data: GameData, positions: np.ndarray) -> GameData:
    """A copy whose policy targets at `positions` are uniform over the legal actions."""
    probs = data.target_probs.copy()
    for p in positions:
        a, b = data.offsets[p], data.offsets[p + 1]
        probs[a:b] = 1.0 / (b - a)
    return GameData(**{**data.arrays(), "target_probs": probs})


def test_only_full_searches_teach_the_policy():
    torch.set_num_threads(1)
    data = play_games(hashed_evaluator, FULL, [1, 2], 2, 40, np.random.default_rng(1), fast_config=FAST,
                      full_search_prob=0.5)
    fast_rows = np.flatnonzero(data.full_search == 0)
    full_rows = np.flatnonzero(data.full_search == 1)
    assert fast_rows.size and full_rows.size
    base = _fitted_weights(data)
    same = _fitted_weights(_with_targets_flattened(data, fast_rows))
    for k in base:
        torch.testing.assert_close(same[k], base[k], rtol=0, atol=0)
    changed = _fitted_weights(_with_targets_flattened(data, full_rows))
    assert any(not torch.equal(changed[k], base[k]) for k in base)  # full searches' targets do count


def test_a_shard_from_before_playout_caps_reads_as_all_full_searches(tmp_path):
    data = play_games(hashed_evaluator, FULL, [2], 1, 20, np.random.default_rng(0))
    path = shard_path(tmp_path, 0)
    write_shard(path, data)
    with np.load(path) as z:
        old = {k: z[k] for k in z.files if k != "full_search"}
    buf = io.BytesIO()
    np.savez_compressed(buf, **old)
    path.write_bytes(buf.getvalue())
    back = read_shard(path)
    assert back.full_search.dtype == np.uint8 and np.all(back.full_search == 1)
    np.testing.assert_array_equal(back.target_probs, data.target_probs)


@pytest.mark.parametrize("settings, key", [
    ({"simulations": 16, "fast_simulations": 16}, "fast_simulations"),
    ({"simulations": 16, "fast_simulations": -1}, "fast_simulations"),
    ({"fast_simulations": 4, "full_search_prob": 0.0}, "full_search_prob"),
    ({"fast_simulations": 4, "full_search_prob": 1.5}, "full_search_prob"),
    ({"fast_simulations": 4, "full_search_prob": float("nan")}, "full_search_prob"),
])
def test_playout_cap_settings_are_checked(settings, key):
    with pytest.raises(ConfigError, match=f"'{key}'"):
        ZeroConfig(**settings).finalize()
    assert ZeroConfig(simulations=16, fast_simulations=4, full_search_prob=0.25).finalize().fast_simulations == 4


def test_tiny_run_with_playout_caps(tmp_path):
    run = tiny_zero_run(tmp_path / "runs", "--simulations", "4", "--max-considered", "4", "--fast-simulations", "2",
                        "--full-search-prob", "0.5")
    shard = read_shard(shard_path(run, 0))
    assert 0 < shard.full_search.sum() < shard.n_positions
    assert (run / "checkpoints" / "latest.pt").is_file()
