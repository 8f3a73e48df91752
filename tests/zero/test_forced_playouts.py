"""The self-play search's settings in colony-zero: KataGo's forced playouts and policy target pruning, and root
Dirichlet noise (`forced_playouts`, `root_dirichlet`, PUCT root), and the Gumbel root's weight of values (`c_scale`):
checks, what self-play stores, a tiny run."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from colony_env.agents.az import SearchConfig
from colony_training.config import ConfigError
from colony_training.zero import train as zero_train
from colony_training.zero.config import ZeroConfig
from colony_training.zero.replay import read_shard, shard_path
from colony_training.zero.selfplay import play_games
from helpers import tiny_zero_run


@pytest.mark.parametrize("settings, key", [
    ({"root": "gumbel", "forced_playouts": 2.0}, "forced_playouts"),
    ({"root": "puct", "forced_playouts": -1.0}, "forced_playouts"),
    ({"root": "gumbel", "root_dirichlet": 0.25}, "root_dirichlet"),
    ({"root": "puct", "root_dirichlet": 1.5}, "root_dirichlet"),
    ({"root": "puct", "root_dirichlet": float("nan")}, "root_dirichlet"),
    ({"root": "gumbel", "c_scale": 0.0}, "c_scale"),
    ({"root": "gumbel", "c_scale": float("inf")}, "c_scale"),
    ({"root": "puct", "c_scale": 1.0}, "c_scale"),
])
def test_self_play_search_settings_are_checked(settings, key):
    with pytest.raises(ConfigError, match=f"'{key}'"):
        ZeroConfig(**settings).finalize()


def test_the_self_play_search_gets_the_settings():
    cfg = ZeroConfig(root="puct", forced_playouts=2.0, root_dirichlet=0.25, simulations=32).finalize()
    search = zero_train.search_config(cfg)
    assert (search.root, search.forced_playouts, search.root_dirichlet) == ("puct", 2.0, 0.25)
    fast = zero_train.fast_search_config(ZeroConfig(root="puct", forced_playouts=2.0, simulations=32,
                                                    fast_simulations=4).finalize())
    assert fast.forced_playouts == 2.0 and fast.simulations == 4
    gumbel = ZeroConfig(c_scale=1.0, simulations=32, fast_simulations=4).finalize()
    assert zero_train.search_config(gumbel).c_scale == 1.0 and zero_train.fast_search_config(gumbel).c_scale == 1.0
    assert zero_train.search_config(ZeroConfig().finalize()).c_scale == 0.1


def _evaluator(states, obs, ids, counts):
    logits = np.sin(ids.astype(np.float64) * 0.37 + counts[:, None] * 0.01) * 2.0
    return logits, np.tanh(0.05 * (obs[:, :4].sum(axis=(1, 2, 3)) - obs[:, 4:8].sum(axis=(1, 2, 3))))


def test_pruned_targets_are_sparser_than_visit_counts():
    """The same setups with and without forced playouts and pruning: the pruned targets put weight on fewer
    actions per position than the visit counts do, and each still sums to 1."""
    plain = play_games(_evaluator, SearchConfig(simulations=48, root="puct"), [5, 6], 2, 30, np.random.default_rng(0))
    pruned = play_games(_evaluator, SearchConfig(simulations=48, root="puct", forced_playouts=2.0), [5, 6], 2, 30,
                        np.random.default_rng(0))
    support = lambda d: float(np.mean([(d.target_probs[d.offsets[p]: d.offsets[p + 1]] > 0).sum()
                                       for p in range(d.n_positions)]))
    assert support(pruned) < support(plain)
    for p in range(pruned.n_positions):
        t = pruned.target_probs[pruned.offsets[p]: pruned.offsets[p + 1]]
        assert t.sum() == pytest.approx(1.0, abs=1e-5)


def test_a_larger_weight_of_values_sharpens_the_gumbel_targets():
    """The same setups searched with `c_scale` 0.1 and 1: the improved-policy targets at 1 follow the values more,
    so they are more peaked (lower entropy) on average, and each still sums to 1."""
    def entropy(d):
        ts = [d.target_probs[d.offsets[p]: d.offsets[p + 1]] for p in range(d.n_positions)]
        assert all(t.sum() == pytest.approx(1.0, abs=1e-5) for t in ts)
        return float(np.mean([-(t[t > 0] * np.log(t[t > 0])).sum() for t in ts]))

    def evaluator(states, obs, ids, counts):   # a value that depends on where the pieces stand
        logits, _ = _evaluator(states, obs, ids, counts)
        weights = np.random.default_rng(3).normal(size=obs.shape[1:])
        return logits, np.tanh((obs * weights).sum(axis=(1, 2, 3)) * 0.2)

    games = [(SearchConfig(simulations=32, root="gumbel", c_scale=c), np.random.default_rng(0)) for c in (0.1, 1.0)]
    low, high = (entropy(play_games(evaluator, search, [5, 6], 2, 30, rng)) for search, rng in games)
    assert high < low - 0.1, (low, high)


def test_tiny_run_with_forced_playouts_and_noise(tmp_path):
    run = tiny_zero_run(tmp_path / "runs", "--simulations", "8", "--root", "puct", "--forced-playouts", "2",
                        "--root-dirichlet", "0.25")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["forced_playouts"] == 2.0 and saved["root_dirichlet"] == 0.25
    assert read_shard(shard_path(run, 0)).n_positions > 0
