"""KataGo's forced playouts and policy target pruning, and root Dirichlet noise, in colony-zero
(`forced_playouts`, `root_dirichlet`, PUCT root): settings, what self-play stores, a tiny run."""

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
])
def test_forced_playout_settings_are_checked(settings, key):
    with pytest.raises(ConfigError, match=f"'{key}'"):
        ZeroConfig(**settings).finalize()


def test_the_self_play_search_gets_the_settings():
    cfg = ZeroConfig(root="puct", forced_playouts=2.0, root_dirichlet=0.25, simulations=32).finalize()
    search = zero_train.search_config(cfg)
    assert (search.root, search.forced_playouts, search.root_dirichlet) == ("puct", 2.0, 0.25)
    fast = zero_train.fast_search_config(ZeroConfig(root="puct", forced_playouts=2.0, simulations=32,
                                                    fast_simulations=4).finalize())
    assert fast.forced_playouts == 2.0 and fast.simulations == 4


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


def test_tiny_run_with_forced_playouts_and_noise(tmp_path):
    run = tiny_zero_run(tmp_path / "runs", "--simulations", "8", "--root", "puct", "--forced-playouts", "2",
                        "--root-dirichlet", "0.25")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["forced_playouts"] == 2.0 and saved["root_dirichlet"] == 0.25
    assert read_shard(shard_path(run, 0)).n_positions > 0
