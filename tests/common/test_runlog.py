"""training/runlog.py: rewinding a run's CSV logs and TensorBoard events to a checkpoint,
and cleaning up after a kill (issue 13, items 3-4)."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from torch.utils.tensorboard import SummaryWriter

import pytest

from colony_training.runlog import (
    RunDir,
    append_csv,
    RunDirBusy,
    RunDirError,
    atomic_write_text,
    csv_data_rows,
    lock_run_dir,
    log_positions,
    output_dir_problem,
    output_file_problem,
    remove_temp_files,
    rewind_events,
    rewind_logs,
    truncate_csv,
    truncate_csv_after,
    unlock_run_dir,
)


def _csv(path: Path, rows: int, torn: bool = False) -> None:
    text = "iteration,loss\n" + "".join(f"{i},{i / 10}\n" for i in range(1, rows + 1))
    path.write_text(text + ("99,0." if torn else ""))


def test_rows_are_counted_without_the_header_or_a_torn_row(tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    assert csv_data_rows(f) == 0  # absent
    _csv(f, 5, torn=True)
    assert csv_data_rows(f) == 5
    assert log_positions(tmp_path, ["m.csv", "none.csv"]) == {"m.csv": 5, "none.csv": 0}


def test_a_log_begun_with_fewer_columns_keeps_its_header_when_a_newer_version_appends(tmp_path: Path) -> None:
    """A run resumed by a version that logs a new column: the file's own header stays, every row aligned to it."""
    f = tmp_path / "m.csv"
    _csv(f, 2)
    append_csv(f, ("iteration", "loss", "new_metric"), [{"iteration": 3, "loss": 0.3, "new_metric": 7}])
    assert f.read_text().splitlines() == ["iteration,loss", "1,0.1", "2,0.2", "3,0.3"]
    g = tmp_path / "n.csv"
    append_csv(g, ("iteration", "loss", "new_metric"), [{"iteration": 1, "loss": 0.1, "new_metric": 7}])
    append_csv(g, ("iteration", "loss", "new_metric"), [{"iteration": 2, "loss": 0.2, "new_metric": 8}])
    assert g.read_text().splitlines() == ["iteration,loss,new_metric", "1,0.1,7", "2,0.2,8"]


def test_truncate_keeps_the_header_and_the_first_rows(tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    _csv(f, 10, torn=True)
    assert truncate_csv(f, 7) == 3
    assert f.read_text().splitlines() == ["iteration,loss"] + [f"{i},{i / 10}" for i in range(1, 8)]
    assert truncate_csv(f, 7) == 0 and csv_data_rows(f) == 7
    assert truncate_csv(f, 0) == 7 and f.read_text() == "iteration,loss\n"
    f.write_text("iterat")  # a header torn by a kill: nothing usable, the writer starts afresh
    truncate_csv(f, 3)
    assert not f.exists()


def test_truncate_after_an_iteration_for_checkpoints_without_row_counts(tmp_path: Path) -> None:
    f = tmp_path / "eval.csv"
    f.write_text("iteration,opponent\n5,random\n5,greedy\n10,random\n10,greedy\n15,ran")
    assert truncate_csv_after(f, "iteration", 10) == 0 and csv_data_rows(f) == 4  # the torn row went
    assert truncate_csv_after(f, "iteration", 7) == 2
    assert f.read_text() == "iteration,opponent\n5,random\n5,greedy\n"


def test_rewind_logs_uses_positions_else_the_iteration_else_everything(tmp_path: Path) -> None:
    _csv(tmp_path / "metrics.csv", 12)
    _csv(tmp_path / "eval.csv", 4)
    removed = rewind_logs(tmp_path, ["metrics.csv", "eval.csv"], {"metrics.csv": 10, "eval.csv": 4})
    assert removed == {"metrics.csv": 2, "eval.csv": 0}
    assert rewind_logs(tmp_path, ["metrics.csv"], {}, last=6) == {"metrics.csv": 4}  # an older checkpoint
    assert rewind_logs(tmp_path, ["metrics.csv", "eval.csv"], None) == {"metrics.csv": 6, "eval.csv": 4}
    assert csv_data_rows(tmp_path / "metrics.csv") == 0


def _summary_steps(log_dir: Path) -> list[int]:
    steps = []
    for f in sorted(log_dir.glob("events.out.tfevents.*")):
        steps += [e.step for e in EventFileLoader(str(f)).Load() if e.HasField("summary")]
    return steps


def test_rewind_events_drops_summaries_after_the_checkpoint_step(tmp_path: Path) -> None:
    log_dir = tmp_path / "tb"
    w = SummaryWriter(str(log_dir))
    for step in range(1, 11):
        w.add_scalar("train/loss", step, step)
    w.close()
    with (next(log_dir.glob("events.out.tfevents.*"))).open("ab") as f:
        f.write(b"\x20\x00\x00")  # a record torn by a kill
    assert rewind_events(log_dir, 6) == 4
    w = SummaryWriter(str(log_dir))  # the resumed run logs 7.. again
    for step in range(7, 13):
        w.add_scalar("train/loss", step, step)
    w.close()
    assert _summary_steps(log_dir) == list(range(1, 13))  # one event per step
    assert rewind_events(log_dir, 12) == 0
    assert rewind_events(log_dir, None) == 12 and _summary_steps(log_dir) == []
    assert rewind_events(tmp_path / "absent", 3) == 0


def test_temporary_files_are_removed_and_writes_are_atomic(tmp_path: Path) -> None:
    ck = tmp_path / "checkpoints"
    ck.mkdir()
    (ck / ".latest.pt.ab12cd.tmp").write_bytes(b"half a checkpoint")
    (ck / "latest.pt").write_bytes(b"whole")
    assert [p.name for p in remove_temp_files(ck)] == [".latest.pt.ab12cd.tmp"]
    assert sorted(p.name for p in ck.iterdir()) == ["latest.pt"]
    atomic_write_text(tmp_path / "config.yaml", "seed: 1\n")
    assert (tmp_path / "config.yaml").read_text() == "seed: 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints", "config.yaml"]
    assert remove_temp_files(tmp_path / "absent") == []


def test_output_paths_are_probed_before_any_work(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    assert output_dir_problem(tmp_path / "new" / "deeper") is None
    assert not (tmp_path / "new").exists()  # the probe leaves no folder behind for a tool that fails later
    (tmp_path / "kept").mkdir()
    assert output_dir_problem(tmp_path / "kept") is None and (tmp_path / "kept").is_dir()  # nor removes one
    assert "is a file" in output_dir_problem(a_file)
    assert "cannot write into" in output_dir_problem(a_file / "sub")  # a folder below a file
    assert output_file_problem(tmp_path / "out" / "games.jsonl") is None
    assert "is a folder" in output_file_problem(tmp_path)
    assert "is a file, not a folder" in output_file_problem(a_file / "games.jsonl")
    assert output_file_problem(a_file) is None and a_file.read_text() == "x"  # appendable, untouched
    assert not list(tmp_path.rglob(".write-probe.*"))


def test_run_directory_names_are_never_shared(tmp_path: Path) -> None:
    """Two runs started in the same second get two directories (`<name>-<stamp>`, then `-2`, `-3`)."""
    from colony_training.runlog import new_run_dir

    first = new_run_dir(tmp_path, "run")
    first.mkdir()
    second = new_run_dir(tmp_path, "run")
    second.mkdir()
    third = new_run_dir(tmp_path, "run")
    assert first.parent == tmp_path and first.name.startswith("run-")
    assert len({first, second, third}) == 3 and not third.exists()
    if second.name.startswith(first.name):  # the same second (else a later stamp, also fresh)
        assert second.name == first.name + "-2" and third.name == first.name + "-3"


def test_run_dir_writes_config_logs_and_events_and_rewinds_them(tmp_path: Path) -> None:
    """`RunDir`, the helper every trainer writes through: config.yaml atomically, CSV rows appended
    under one header, TensorBoard scalars; `rewind(last)` cuts all three back to a checkpoint and
    `rewind(None)` (a fresh start) clears them."""
    import yaml

    from colony_training.ppo.config import TrainConfig
    from colony_training.runlog import RunDir

    run = RunDir(tmp_path / "r", {"metrics.csv": ("iteration", "loss")})
    run.rewind(None)
    cfg = TrainConfig(num_envs=3)
    run.write_config(cfg)
    assert yaml.safe_load((tmp_path / "r" / "config.yaml").read_text()) == cfg.to_dict()
    for i in range(1, 6):
        run.log("metrics.csv", [{"iteration": i, "loss": i / 10}])
        run.scalars("train", {"loss": i / 10, "skipped": float("nan"), "name": "x"}, step=i * 100)
    positions = run.log_positions()
    run.close()
    assert positions == {"metrics.csv": 5}
    assert (tmp_path / "r" / "metrics.csv").read_text().splitlines()[0] == "iteration,loss"
    assert _tb_steps(tmp_path / "r" / "tb", "train/loss") == [100, 200, 300, 400, 500]
    assert _tb_steps(tmp_path / "r" / "tb", "train/skipped") == []  # only finite numbers are logged
    (tmp_path / "r" / "checkpoints" / ".latest.pt.x.tmp").write_bytes(b"half")

    resumed = RunDir(tmp_path / "r", {"metrics.csv": ("iteration", "loss")})
    resumed.rewind(3, step=300, positions={"metrics.csv": 3})
    assert [line.split(",")[0] for line in (tmp_path / "r" / "metrics.csv").read_text().splitlines()] == ["iteration", "1", "2", "3"]
    assert _tb_steps(tmp_path / "r" / "tb", "train/loss") == [100, 200, 300]
    assert not list((tmp_path / "r" / "checkpoints").glob("*.tmp"))
    resumed.rewind(2, step=200)  # a checkpoint without row counts: by the iteration column
    assert (tmp_path / "r" / "metrics.csv").read_text().splitlines()[-1].startswith("2,")
    resumed.rewind(None)
    assert (tmp_path / "r" / "metrics.csv").read_text().splitlines() == ["iteration,loss"]
    assert _tb_steps(tmp_path / "r" / "tb", "train/loss") == []


def _tb_steps(log_dir: Path, tag: str) -> list[int]:
    steps = []
    for f in sorted(log_dir.glob("events.out.tfevents.*")):
        steps += [e.step for e in EventFileLoader(str(f)).Load() for v in e.summary.value if v.tag == tag]
    return steps


_HOLD = "import sys, time; from colony_training.runlog import lock_run_dir; lock_run_dir(sys.argv[1]); print('held', flush=True); time.sleep(60)"


def _holder(directory: Path):
    """A second process that holds `directory`'s lock until it is killed."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_run_directory_has_one_writer_at_a_time(tmp_path: Path) -> None:
    """A second process cannot take a run directory that a live process writes into; once that one
    ends (here killed, so it released nothing itself), the directory is free."""
    holder = _holder(tmp_path)
    try:
        with pytest.raises(RunDirBusy, match=f"in use by another process \\(pid {holder.pid}\\)"):
            lock_run_dir(tmp_path)
        with pytest.raises(RunDirBusy):  # a trainer's run directory is taken the same way
            RunDir(tmp_path, {"m.csv": ("iteration",)}).rewind(None)
    finally:
        holder.kill()
        holder.wait()
    lock_run_dir(tmp_path)
    lock_run_dir(tmp_path)  # again in the same process: nothing to wait for
    unlock_run_dir(tmp_path)
    holder = _holder(tmp_path)  # given up: another process can take it
    holder.kill()
    holder.wait()


def test_a_second_colony_eval_on_a_run_in_play_is_refused_and_changes_nothing(tmp_path: Path, capsys) -> None:
    from colony_training.eval import evaluate as ev

    out = tmp_path / "run"
    assert ev.main(["random", "greedy", "--games", "4", "--max-plies", "30", "--workers", "1", "--no-progress",
                    "--out", str(out)]) == 0
    (out / "eval.json").unlink()  # as if it were still playing
    for name in ("pairs.csv", "elo.csv"):
        (out / name).unlink()
    holder = _holder(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    try:
        assert ev.main(["--resume", str(out), "--workers", "1", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"colony-eval: error: {str(out)!r} is in use by another process (pid {holder.pid}); wait for "
                       "it to end or stop it, then run this again"]
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    finally:
        holder.kill()
        holder.wait()
    assert ev.main(["--resume", str(out), "--workers", "1", "--no-progress"]) == 0  # free again: it finishes


@pytest.mark.parametrize("tool, args", [
    ("colony_training.ppo.train", ["--config", "quickstart", "--total-steps", "100", "--run-dir"]),
    ("colony_training.zero.train", ["--config", "zero_quickstart", "--generations", "1", "--out-dir"]),
    ("colony_training.distill.train", ["--games", "2", "--out"]),
])
def test_a_run_directory_that_cannot_be_made_is_one_line_and_leaves_nothing(tool, args, tmp_path, capsys):
    """Under a file (or any folder that cannot be written) the trainers ended in a FileNotFoundError or
    NotADirectoryError traceback from the first mkdir; `RunDir` now says it in one line (`RunDirError`)."""
    import importlib

    from colony_training.shipped import shipped_checkpoint

    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    extra = ["--init", str(shipped_checkpoint("colony_zero.pt"))] if tool.endswith("distill.train") else []
    assert importlib.import_module(tool).main([*extra, *args, str(blocker / "run")]) == 2
    err = capsys.readouterr().err
    assert "error: cannot make the run directory" in err and "give a folder that can be written" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"] and blocker.read_text() == "not a folder"


def test_run_dir_error_is_raised_by_rewind_and_write_config(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("")
    files = RunDir(blocker / "run", {"metrics.csv": ("iteration",)})
    with pytest.raises(RunDirError, match="cannot make the run directory"):
        files.rewind(None)
    with pytest.raises(RunDirError, match="cannot make the run directory"):
        files.write_config(object())
    assert issubclass(RunDirBusy, RunDirError)  # the trainers catch both as one
