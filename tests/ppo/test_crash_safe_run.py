"""Crash-safe training runs (issue 13, items 2-4 and 10): a tiny colony-train run is killed with
SIGKILL at several points, inside a checkpoint write included, and every resume ends with
exactly one metrics row per iteration, one TensorBoard value per step, a loadable checkpoint
and no temporary files; settings a checkpoint cannot honour are refused before anything is
written."""

from __future__ import annotations

import csv
import re
import shutil
import signal
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

from colony_training.checkpoint import load_model, read_checkpoint
from colony_training.ppo import train as tr
from helpers import run_forked_scenarios

TINY = """\
run_name: tiny
device: cpu
torch_threads: 1
total_steps: 96        # 12 iterations of 2 envs x 4 steps
num_envs: 2
rollout_steps: 4
max_plies: 30
channels: 4
blocks: 1
update_epochs: 1
num_minibatches: 1
pool_size: 2
snapshot_every: 2
eval_every: 0
final_eval_games: 0
checkpoint_every: 5
keep_checkpoints: 2
"""
ITERATIONS = 12

# One fresh interpreter imports the trainer once, then forks one child per scenario (so the
# imports are paid once); a child SIGKILLs itself at the chosen point:
#   save N  -> inside the N-th torch.save of the child, after part of the file was written
#   rows N  -> right after the N-th metrics row of the child was written
#   saved N -> right after the N-th checkpoint file of the child was written, with TensorBoard's background
#              writer slowed down (so that events still queued at the kill would be lost)
# After each child the run directory is copied to SNAPSHOTS/<k> for the test to inspect.
_ZYGOTE = r"""
import json, os, shutil, signal, sys
import io
import torch
import torch.utils.tensorboard  # everything slow to import or warm up is done once, here
from matplotlib import pyplot
from colony_training.eval import plot
from colony_training.ppo import train as tr
torch.optim.Adam([torch.zeros(1, requires_grad=True)])  # its first use imports torch._dynamo
pyplot.figure().savefig(io.BytesIO(), format="png")
run, snapshots, scenarios = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def child(mode, n, argv):
    count = [0]
    if mode == "save":
        real_save = torch.save
        def save(obj, f, *args, **kwargs):
            count[0] += 1
            if count[0] == n:
                f.write(b"PK\x03\x04 half a checkpoint")
                f.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            return real_save(obj, f, *args, **kwargs)
        torch.save = save
    elif mode == "rows":
        real_log = tr.RunDir.log
        def log(self, name, rows):
            real_log(self, name, rows)
            count[0] += name == "metrics.csv"
            if count[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
        tr.RunDir.log = log
    elif mode == "saved":
        import time
        from tensorboard.summary.writer.record_writer import RecordWriter
        real_write = RecordWriter.write
        def slow_write(self, data):
            time.sleep(0.05)
            return real_write(self, data)
        RecordWriter.write = slow_write
        real_checkpoint = tr.save_checkpoint
        def save_checkpoint(*args, **kwargs):
            out = real_checkpoint(*args, **kwargs)
            count[0] += 1
            if count[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        tr.save_checkpoint = save_checkpoint
    return tr.main(argv + ["--no-progress"])

run_all(scenarios, after=lambda k: shutil.copytree(run, os.path.join(snapshots, str(k))))
"""


def _train_scenarios(run: Path, snapshots: Path, scenarios: list[tuple[str, int, list[str]]]) -> list[int]:
    """Exit codes of the scenarios (negative: killed by that signal), run one after the other."""
    return run_forked_scenarios(_ZYGOTE, [str(run), str(snapshots)], scenarios)[0]


def _iterations(run: Path) -> list[int]:
    with (run / "metrics.csv").open(newline="") as f:
        return [int(row["iteration"]) for row in csv.DictReader(f)]


def _temp_files(run: Path) -> list[str]:
    return sorted(p.name for p in run.rglob("*.tmp"))


def _tb_steps(run: Path, tag: str) -> list[int]:
    steps = []
    for f in sorted((run / "tb").glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(f)).Load():
            steps += [event.step for v in event.summary.value if v.tag == tag]
    return steps


def test_sigkill_at_several_points_then_resume_gives_one_row_per_iteration(tmp_path: Path) -> None:
    cfg, run, snaps = tmp_path / "tiny.yaml", tmp_path / "run", tmp_path / "snapshots"
    cfg.write_text(TINY)
    fresh, resume = ["--config", str(cfg), "--run-dir", str(run)], ["--resume", str(run)]
    codes = _train_scenarios(run, snaps, [
        ("save", 1, fresh),  # 0: killed inside the first checkpoint write (no checkpoint yet)
        ("rows", 7, fresh),  # 1: started again in the same directory, killed between checkpoints
        ("save", 1, resume),  # 2: resumed, killed inside the next write of latest.pt (iteration 10)
        ("none", 0, resume),  # 3: resumed to the end
        ("none", 0, resume),  # 4: a resume of the finished run
    ])  # fmt: skip
    killed = -signal.SIGKILL
    assert codes == [killed, killed, killed, 0, 0]
    step = [snaps / str(k) for k in range(5)]

    assert _iterations(step[0]) == [1, 2, 3, 4, 5] and not (step[0] / "checkpoints" / "latest.pt").exists()
    assert _temp_files(step[0]), "the kill should have left the temporary checkpoint file"

    assert _iterations(step[1]) == list(range(1, 8)) and _temp_files(step[1]) == []  # the old rows are gone
    assert read_checkpoint(step[1] / "checkpoints" / "latest.pt")["meta"]["iteration"] == 5

    assert _iterations(step[2]) == list(range(1, 11)) and _temp_files(step[2])

    assert _iterations(step[3]) == list(range(1, ITERATIONS + 1))  # exactly one row per iteration
    assert _temp_files(step[3]) == []
    _model, data = load_model(step[3] / "checkpoints" / "latest.pt")
    assert data["meta"]["iteration"] == ITERATIONS and data["meta"]["final"]
    assert _tb_steps(step[3], "train/policy_loss") == [8 * i for i in range(1, ITERATIONS + 1)]  # one value per step

    assert _iterations(step[4]) == list(range(1, ITERATIONS + 1))  # resuming a finished run changes nothing
    assert _tb_steps(step[4], "train/policy_loss") == [8 * i for i in range(1, ITERATIONS + 1)]


def test_events_logged_before_a_checkpoint_survive_a_kill_right_after_it(tmp_path: Path) -> None:
    """TensorBoard writes events from a queue in a background thread; a resume starts after the
    checkpoint, so the events before it must be on disk when it is written (issue 32, item 6)."""
    cfg, run, snaps = tmp_path / "tiny.yaml", tmp_path / "run", tmp_path / "snapshots"
    cfg.write_text(TINY)
    codes = _train_scenarios(run, snaps, [
        ("saved", 1, ["--config", str(cfg), "--run-dir", str(run)]),  # 0: right after latest.pt of iteration 5
        ("none", 0, ["--resume", str(run)]),  # 1
    ])  # fmt: skip
    assert codes == [-signal.SIGKILL, 0]
    assert _tb_steps(snaps / "0", "train/policy_loss") == [8 * i for i in range(1, 6)]
    assert _tb_steps(snaps / "1", "train/policy_loss") == [8 * i for i in range(1, ITERATIONS + 1)]


def _snapshot(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("finished")
    cfg = base / "tiny.yaml"
    cfg.write_text(TINY.replace("total_steps: 96", "total_steps: 16"))
    assert tr.main(["--config", str(cfg), "--run-dir", str(base / "run"), "--no-progress"]) == 0
    return base / "run"


@pytest.mark.parametrize(
    "override, match",
    [
        (["--channels", "64"], r"network cannot change \(channels: 4 there, 64 here\)"),
        (["--blocks", "3", "--heuristic-prior", "true"], r"blocks: 1 there, 3 here, heuristic_prior: 0 there, 1 here"),
        (["--total-steps", "8"], r"total_steps 8 is below the 16 steps"),
        (["--seed", "-5"], r"'seed' = -5 is invalid"),
        (["--learning-rate", "inf"], r"'learning_rate' must be a finite number"),
    ],
)
def test_a_resume_the_checkpoint_cannot_honour_is_refused_before_any_write(
    finished_run: Path, capsys: pytest.CaptureFixture[str], override: list[str], match: str
) -> None:
    before = _snapshot(finished_run)
    assert tr.main(["--resume", str(finished_run), *override, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("colony-train: error: ") and "\n" not in err
    assert re.search(match, err), err
    assert _snapshot(finished_run) == before  # config.yaml included: a plain --resume still works
    assert tr.main(["--resume", str(finished_run), "--no-progress"]) == 0


def test_an_unreadable_latest_checkpoint_points_to_the_numbered_ones(finished_run: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "copy"
    shutil.copytree(finished_run, run)
    (run / "checkpoints" / "latest.pt").write_bytes(b"garbage")
    assert tr.main(["--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a readable checkpoint" in err and "step_000000016.pt over checkpoints/latest.pt" in err and "\n" not in err


@pytest.mark.parametrize("override", [["--seed", "-5"], ["--seed", "1e30"], ["--init-from", "NOTES.txt"], ["--ent-coef", "inf"],
                                      ["--max-plies", "2147483648"]])
def test_a_refused_new_run_leaves_no_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], override: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "NOTES.txt").write_text("not a checkpoint\n" * 30)
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    assert tr.main(["--config", str(cfg), "--no-progress", *override]) == 2
    assert capsys.readouterr().err.startswith("colony-train: error: ")
    assert not (tmp_path / "runs").exists()
