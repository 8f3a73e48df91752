"""refit: a new network fitted to finished runs' replay shards; resume is exact; errors in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env.agents.az import SearchConfig
from colony_env.observation import OBS_CHANNELS
from colony_training.agents import NetworkEvaluator, load_policy_agent
from colony_training.checkpoint import read_checkpoint
from colony_training.model import PolicyValueNet
from colony_training.zero import refit as refit_mod
from colony_training.zero.replay import shard_path, write_shard
from colony_training.zero.selfplay import play_games

SMALL = ["--channels", "8", "--blocks", "1", "--samples", "128", "--save-every", "64", "--threads", "1",
         "--no-progress"]


@pytest.fixture(scope="module")
def source_run(tmp_path_factory) -> Path:
    """A run directory with three small replay shards, as colony-zero writes them."""
    run = tmp_path_factory.mktemp("source")
    torch.manual_seed(0)
    net = PolicyValueNet(OBS_CHANNELS, 8, 1, False, True).eval()
    for g in range(3):
        data = play_games(NetworkEvaluator(net), SearchConfig(simulations=2, max_considered=2), [g, g + 10], 2, 30,
                          np.random.default_rng(g))
        write_shard(shard_path(run, g), data)
    return run


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return read_checkpoint(path)["model"]


@pytest.mark.parametrize("greedy_input", [False, True], ids=["planes-only", "greedy-input"])
def test_refit_writes_a_playable_checkpoint_and_resumes_exactly(greedy_input, source_run, tmp_path, monkeypatch, capsys):
    small = [*SMALL, "--greedy-input"] if greedy_input else SMALL
    straight = tmp_path / "straight"
    assert refit_mod.main([str(source_run), "--out", str(straight), *small]) == 0
    with (straight / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["samples"] for r in rows] == ["64", "128"]
    assert float(rows[1]["learning_rate"]) < float(rows[0]["learning_rate"])  # the cosine falls
    meta = read_checkpoint(straight / "refit.pt")["meta"]
    assert meta["sources"] == [str(source_run)] and meta["samples"] == 128
    assert meta["held_out_positions"] > 0 and meta["positions"] > 0  # the newest shard held out, the rest fitted
    assert read_checkpoint(straight / "refit.pt")["architecture"]["heuristic_prior"] == int(greedy_input)
    # --score reproduces the last logged held-out losses of the same network and writes nothing
    capsys.readouterr()
    assert refit_mod.main([str(source_run), "--score", str(straight / "refit.pt")]) == 0
    line = capsys.readouterr().out
    assert abs(float(line.split("cross-entropy ")[1].split(",")[0]) - float(rows[1]["val_policy_loss"])) < 1e-3, line
    assert abs(float(line.split("squared error ")[1].split(" ")[0]) - float(rows[1]["val_value_loss"])) < 1e-3, line
    agent = load_policy_agent(straight / "refit.pt")
    s = ce.new_game(0)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))

    # stopped after its first save, then resumed: the same weights and one metrics row per save
    stopped = tmp_path / "stopped"
    real_fit, calls = refit_mod.fit, []

    def fit_then_stop(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_fit(*a, **k)

    monkeypatch.setattr(refit_mod, "fit", fit_then_stop)
    assert refit_mod.main([str(source_run), "--out", str(stopped), *small]) == 130
    assert "continue with --resume" in capsys.readouterr().err
    monkeypatch.setattr(refit_mod, "fit", real_fit)
    assert refit_mod.main([str(source_run), "--out", str(stopped), *small]) == 2  # not silently overwritten
    assert refit_mod.main(["--resume", str(stopped), "--no-progress"]) == 0
    with (stopped / "metrics.csv").open() as f:
        assert [r["samples"] for r in csv.DictReader(f)] == ["64", "128"]
    a, b = _weights(straight / "refit.pt"), _weights(stopped / "refit.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_refit_init_fits_a_trained_network_on(source_run, tmp_path):
    """--init starts from a trained network (its shape, inputs and weights) and records it as the ancestor."""
    first = tmp_path / "first"
    assert refit_mod.main([str(source_run), "--out", str(first), *SMALL, "--greedy-input"]) == 0
    start = _weights(first / "refit.pt")
    on = tmp_path / "on"
    argv = ["--samples", "64", "--save-every", "64", "--threads", "1", "--no-progress"]
    assert refit_mod.main([str(source_run), "--out", str(on), "--init", str(first / "refit.pt"),
                           "--learning-rate", "1e-9", *argv]) == 0
    data = read_checkpoint(on / "refit.pt")
    assert (data["architecture"]["channels"], data["architecture"]["blocks"]) == (8, 1)  # the init's, not 64 x 4
    assert data["architecture"]["heuristic_prior"] == 1 and data["config"]["channels"] == 8
    assert data["meta"]["init_from"]["path"] == str(first / "refit.pt") and data["meta"]["samples"] == 64
    moved = [float((data["model"][k] - start[k]).abs().max()) for k in start]
    assert max(moved) < 1e-5 and data["model"].keys() == start.keys()  # a tiny step: still the init's weights
    fresh = tmp_path / "fresh"
    argv = [*argv, "--channels", "8", "--blocks", "1", "--seed", "1"]
    assert refit_mod.main([str(source_run), "--out", str(fresh), *argv]) == 0
    other = _weights(fresh / "refit.pt")
    assert max(float((other[k] - start[k]).abs().max()) for k in start.keys() & other.keys()) > 1e-3  # random start


def test_refit_errors_are_one_line(source_run, tmp_path, capsys):
    one_shard = tmp_path / "one"
    (one_shard / "replay").mkdir(parents=True)
    (one_shard / "replay" / "gen_000000.npz").write_bytes((source_run / "replay" / "gen_000000.npz").read_bytes())
    cases = [
        ([str(source_run)], "--out DIR"),
        ([str(one_shard), "--out", str(tmp_path / "o1")], "at least 2"),
        ([str(source_run), "--out", str(tmp_path / "o2"), "--samples", "0"], "positive"),
        (["--resume", str(tmp_path / "nothing")], "no checkpoints/latest.pt"),
        (["--score", str(tmp_path / "missing.pt")], "--score needs"),
        ([str(source_run), "--score", str(tmp_path / "missing.pt")], "missing.pt"),
        ([str(source_run), "--out", str(tmp_path / "o3"), "--rollout-value-mix", "2"], "rollout_value_mix"),
        ([str(source_run), "--out", str(tmp_path / "o4"), "--init", str(tmp_path / "none.pt")], "none.pt"),
        ([str(source_run), "--out", str(tmp_path / "o5"), "--init", str(tmp_path / "none.pt"), "--channels", "8"],
         "leave out --channels, --blocks and --greedy-input"),
        (["--resume", str(tmp_path / "o6"), "--init", str(tmp_path / "none.pt"), "--blocks", "2"],
         "its own sources, network and settings; leave out --init, --blocks"),
        ([str(source_run), "--resume", str(tmp_path / "o7")], "leave out RUN"),
    ]
    for argv, message in cases:
        assert refit_mod.main([*argv, "--no-progress"]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("refit: error:") and message in err[0], err
