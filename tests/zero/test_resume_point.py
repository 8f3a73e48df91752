"""Resume points (issue 31, item 2): a colony-zero run exported to one file after two
generations and continued in a fresh folder carries on with the next generation, its rows,
config, weights and optimizer intact; with a sample as large as the buffer it continues exactly
as the run resumed in place; a bounded sample is seeded and made of the buffer's positions;
corrupt and foreign files are refused in one line."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from colony_training.checkpoint import read_checkpoint
from colony_training.config import load_config
from colony_training.zero import resume_point
from colony_training.zero import train as zero_train
from colony_training.zero.config import ZeroConfig
from colony_training.zero.replay import ReplayBuffer, read_shard, shard_bytes, shard_path
from helpers import ROOT

TINY = ["--channels", "8", "--blocks", "1", "--games-per-generation", "8", "--parallel-games", "4",
        "--simulations", "4", "--max-considered", "4", "--workers", "1", "--max-plies", "80", "--eval-games", "2",
        "--eval-every", "1", "--eval-opponents", "random", "--eval-max-plies", "40", "--batch-size", "32",
        "--no-progress"]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def same_tensors(a: dict, b: dict) -> bool:
    """Two state dicts (nested, as an optimizer's) equal bit for bit."""
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, dict):
            if not (isinstance(y, dict) and same_tensors(x, y)):
                return False
        elif isinstance(x, torch.Tensor):
            if not (isinstance(y, torch.Tensor) and torch.equal(x, y)):
                return False
        elif x != y:
            return False
    return True


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny run of two generations (0 and 1)."""
    out = tmp_path_factory.mktemp("runs")
    assert zero_train.main(["--out-dir", str(out), "--generations", "2", *TINY]) == 0
    return next(out.iterdir())


def test_export_then_resume_from_continues_like_the_run_resumed_in_place(run, tmp_path, capsys):
    point = tmp_path / "point.pt"
    assert zero_train.main(["--export-resume", str(run), str(point), "--resume-positions", "1000000"]) == 0
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and "generation 1" in said[0] and "--resume-from" in said[0]
    data = resume_point.read(point)
    info = data["resume_point"]["replay_info"]
    assert info["sampled_positions"] == info["buffer_positions"] > 0  # the whole buffer fits in the bound
    # the restored directory's checkpoint is the run's: weights, optimizer, generation, RNG
    original = read_checkpoint(run / "checkpoints" / "latest.pt")
    fresh = tmp_path / "moved" / "run"
    resume_point.restore(point, fresh, zero_train.TB_KEYS)
    restored = read_checkpoint(fresh / "checkpoints" / "latest.pt")
    assert restored["generation"] == original["generation"] == 1
    assert same_tensors(restored["model"], original["model"])
    assert same_tensors(restored["optimizer"], original["optimizer"])
    assert restored["rng_state"] == original["rng_state"] and restored["config"] == original["config"]
    assert rows(fresh / "metrics.csv") == rows(run / "metrics.csv")
    assert rows(fresh / "eval.csv") == rows(run / "eval.csv")
    assert (fresh / "tb").is_dir()
    shutil.rmtree(fresh)

    # the same run continued two ways: in place (a copy) and from the resume point in a new folder
    in_place = tmp_path / "in_place"
    shutil.copytree(run, in_place)
    assert zero_train.main(["--resume", str(in_place), "--generations", "4", "--no-progress"]) == 0
    assert zero_train.main(["--resume-from", str(point), "--run-dir", str(fresh), "--generations", "4",
                            "--no-progress"]) == 0
    got, want = rows(fresh / "metrics.csv"), rows(in_place / "metrics.csv")
    assert [r["generation"] for r in got] == ["0", "1", "2", "3"]
    assert got[:2] == rows(run / "metrics.csv")  # the exported rows, unchanged
    drop = ("selfplay_s", "fit_s", "cpu_hours", "wall_hours", "leaf_evals_per_s")  # timings differ run to run
    assert [{k: v for k, v in r.items() if k not in drop} for r in got] == \
        [{k: v for k, v in r.items() if k not in drop} for r in want]
    assert [r["generation"] for r in rows(fresh / "eval.csv")] == [r["generation"] for r in rows(in_place / "eval.csv")]
    a, b = read_checkpoint(fresh / "checkpoints" / "latest.pt"), read_checkpoint(in_place / "checkpoints" / "latest.pt")
    assert a["generation"] == b["generation"] == 3
    assert same_tensors(a["model"], b["model"]) and same_tensors(a["optimizer"], b["optimizer"])
    assert (fresh / "config.yaml").read_text() == (in_place / "config.yaml").read_text()
    assert a["meta"]["games"] == b["meta"]["games"] == 32
    assert a["meta"]["restored_from"]["generation"] == 1


def test_a_bounded_sample_is_seeded_and_made_of_the_buffers_positions(run, tmp_path, capsys):
    first, second = tmp_path / "a.pt", tmp_path / "b.pt"
    for out in (first, second):
        assert zero_train.main(["--export-resume", str(run), str(out), "--resume-positions", "50"]) == 0
    a, b = resume_point.read(first), resume_point.read(second)
    assert a["resume_point"]["replay_info"]["sampled_positions"] == 50
    assert torch.equal(a["resume_point"]["replay_npz"], b["resume_point"]["replay_npz"])  # same seed, same sample
    fresh = tmp_path / "fresh"
    resume_point.restore(first, fresh)
    sample = read_shard(shard_path(fresh, 1))
    buffer = ReplayBuffer.load(run, 10**9, 1).flat()
    assert sample.n_positions == 50 < buffer.n_positions
    # each kept position is a row of the buffer, in buffer order, with its own targets
    index = {buffer.states[i].tobytes(): i for i in range(buffer.n_positions)}
    picked = [index[s.tobytes()] for s in sample.states]
    assert picked == sorted(picked)
    for j, i in enumerate(picked):
        lo, hi = buffer.offsets[i], buffer.offsets[i + 1]
        np.testing.assert_array_equal(sample.target_ids[sample.offsets[j]:sample.offsets[j + 1]], buffer.target_ids[lo:hi])
        np.testing.assert_array_equal(sample.target_probs[sample.offsets[j]:sample.offsets[j + 1]], buffer.target_probs[lo:hi])
        assert sample.outcome[j] == buffer.outcome[i]
    # a smaller bound makes a smaller file
    assert zero_train.main(["--export-resume", str(run), str(tmp_path / "full.pt")]) == 0
    assert first.stat().st_size < (tmp_path / "full.pt").stat().st_size
    # `replay_sample_of` reads the same sample back; the endgame probe judges its positions against their targets
    kept = resume_point.replay_sample_of(first)
    np.testing.assert_array_equal(kept.states, sample.states)
    np.testing.assert_array_equal(kept.outcome, sample.outcome)
    from helpers import load_example

    probe = load_example("endgame_probe.py")
    rows = probe.sample_values(str(first))
    assert len(rows) == 50
    assert [r[1] for r in rows] == list(kept.outcome) and [r[3] for r in rows] == list(kept.rollout_value)
    assert all(-1.0 <= r[2] <= 1.0 for r in rows)
    capsys.readouterr()
    assert probe.main(["sample", str(first)]) == 0
    assert "MSE network" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not a colony-zero resume point"):
        probe.main(["sample", str(run / "checkpoints" / "latest.pt")])
    with pytest.raises(SystemExit, match="^endgame_probe: checkpoint .* does not exist$"):
        probe.main(["sample", str(first), "--network", str(tmp_path / "none.pt")])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("colony-zero: error:"), err
    return err[0]


def test_corrupt_and_foreign_files_are_refused_in_one_line(run, tmp_path, capsys, monkeypatch):
    point = tmp_path / "point.pt"
    assert zero_train.main(["--export-resume", str(run), str(point), "--resume-positions", "40"]) == 0
    capsys.readouterr()
    raw = point.read_bytes()
    cases = {
        "flipped": (raw[: len(raw) // 2] + bytes([raw[len(raw) // 2] ^ 0xFF]) + raw[len(raw) // 2 + 1:], "CRC"),
        "truncated": (raw[: len(raw) // 3], "not a readable checkpoint"),
        "text": (b"hello, not a resume point\n", "not a readable checkpoint"),
        "checkpoint": ((run / "checkpoints" / "latest.pt").read_bytes(), "not a colony-zero resume point"),
    }
    for name, (content, message) in cases.items():
        bad = tmp_path / f"{name}.pt"
        bad.write_bytes(content)
        target = tmp_path / f"run_{name}"
        assert zero_train.main(["--resume-from", str(bad), "--run-dir", str(target), "--no-progress"]) == 2, name
        assert message in one_line_error(capsys), name
        assert not target.exists(), name  # nothing built from a refused file
    # a resume point whose replay arrays do not fit together (valid archive, damaged content)
    data = torch.load(point, weights_only=True)
    sample = resume_point._replay(data["resume_point"], "x")
    sample.offsets = sample.offsets[:-1]
    data["resume_point"]["replay_npz"] = torch.frombuffer(bytearray(shard_bytes(sample)), dtype=torch.uint8)
    torch.save(data, tmp_path / "ragged.pt")
    assert zero_train.main(["--resume-from", str(tmp_path / "ragged.pt"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "do not fit together" in one_line_error(capsys)
    # a sample that unpacks to more than the bound (here lowered below this small one's size)
    monkeypatch.setattr(resume_point, "MAX_SAMPLE_BYTES", 1000)
    assert zero_train.main(["--resume-from", str(point), "--run-dir", str(tmp_path / "r")]) == 2
    assert "unpacks to" in one_line_error(capsys) and not (tmp_path / "r").exists()
    monkeypatch.undo()
    data["resume_point"]["replay_npz"] = torch.zeros(100, dtype=torch.uint8)
    torch.save(data, tmp_path / "garbage.pt")
    assert zero_train.main(["--resume-from", str(tmp_path / "garbage.pt"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "replay sample cannot be read" in one_line_error(capsys)
    # what a resume cannot honour, and misuse of the flags
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("mine")
    for argv, message in [
        (["--resume-from", str(point), "--run-dir", str(taken)], "not empty"),
        (["--resume-from", str(point), "--run-dir", str(tmp_path / "n"), "--channels", "16"], "cannot change channels"),
        (["--resume-from", str(point), "--resume", str(run)], "cannot be combined"),
        (["--run-dir", str(tmp_path / "n")], "goes with --resume-from"),
        (["--export-resume", str(tmp_path / "nope"), str(tmp_path / "o.pt")], "no config.yaml"),
        (["--export-resume", str(run), str(run / "inside.pt")], "outside the run directory"),
        (["--export-resume", str(run), str(tmp_path / "o.pt"), "--resume-positions", "-1"], ">= 0"),
        (["--export-resume", str(run), str(taken / "x" / "o.pt")], "is a file, not a folder"),
        (["--export-resume", str(run), str(tmp_path)], "is a folder"),
        (["--resume-from", str(point), "--run-dir", str(taken / "x" / "run")], "is a file, not a folder"),
    ]:
        assert zero_train.main([*argv, "--no-progress"]) == 2, argv
        assert message in one_line_error(capsys), argv
    assert (taken / "x").read_text() == "mine" and not (tmp_path / "n").exists()


def test_a_run_killed_before_logging_its_last_generation_logs_it_once_after_the_move(run, tmp_path):
    """The checkpoint of generation 1 is written but its rows are not (killed during its evaluation):
    the resume point carries the pending log, and the continued run logs generation 1 exactly once."""
    killed = tmp_path / "killed"
    shutil.copytree(run, killed)
    for name in ("metrics.csv", "eval.csv"):
        lines = (killed / name).read_text().splitlines(keepends=True)
        (killed / name).write_text("".join(ln for ln in lines if not ln.startswith("1,")))
    assert [r["generation"] for r in rows(killed / "metrics.csv")] == ["0"]
    point = tmp_path / "point.pt"
    assert zero_train.main(["--export-resume", str(killed), str(point)]) == 0
    assert "pending_log" in resume_point.read(point)
    fresh = tmp_path / "fresh"
    assert zero_train.main(["--resume-from", str(point), "--run-dir", str(fresh), "--generations", "3",
                            "--no-progress"]) == 0
    assert [r["generation"] for r in rows(fresh / "metrics.csv")] == ["0", "1", "2"]
    assert [r["generation"] for r in rows(fresh / "eval.csv")] == ["0", "1", "2"]
    assert rows(fresh / "metrics.csv")[1] == rows(run / "metrics.csv")[1]  # the pending row, as the run had it


COMMITTED = sorted((ROOT / "checkpoints" / "resume").glob("*.pt"))


@pytest.mark.parametrize("point", COMMITTED, ids=[p.name for p in COMMITTED])
def test_each_committed_resume_point_rebuilds_its_run(point, tmp_path):
    """A resume point kept in git (checkpoints/resume/) rebuilds a run directory whose config,
    checkpoint, rows and replay sample agree: the config `--resume` reads back is the point's, one
    metrics row per finished generation, the shard of the last."""
    data = resume_point.read(point)
    gen = data["generation"]
    cfg = resume_point.restore(point, tmp_path / "run")
    assert load_config(tmp_path / "run" / "config.yaml", cls=ZeroConfig).to_dict() == cfg.to_dict()
    assert [int(r["generation"]) for r in rows(tmp_path / "run" / "metrics.csv")] == list(range(gen + 1))
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["generation"] == gen
    info = data["resume_point"]["replay_info"]
    assert read_shard(shard_path(tmp_path / "run", gen)).n_positions == info["sampled_positions"] > 0
