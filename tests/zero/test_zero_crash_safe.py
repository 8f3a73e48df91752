"""colony-zero killed at each write point of a generation (issue 32, item 6): during self-play,
right after the checkpoint, during the evaluation and between eval.csv and metrics.csv; after
`--resume` every generation has exactly one metrics.csv row, its eval.csv rows once and one
TensorBoard value per tag. Before the fix a kill after the checkpoint lost the generation's rows
for good (the resume started at the next generation)."""

from __future__ import annotations

import csv
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

from colony_training.checkpoint import read_checkpoint
from helpers import run_forked_scenarios

GENERATIONS = 5
TINY = ["--channels", "8", "--blocks", "1", "--games-per-generation", "4", "--parallel-games", "4",
        "--simulations", "4", "--max-considered", "4", "--workers", "1", "--max-plies", "40", "--eval-games", "2",
        "--eval-every", "1", "--eval-opponents", "random", "--eval-max-plies", "20", "--batch-size", "32",
        "--keep-checkpoints", "1", "--generations", str(GENERATIONS), "--no-progress"]

# One interpreter imports the trainer once, then forks one child per scenario; a child SIGKILLs
# itself at the N-th pass through a write point of `colony_training.zero.train` (N counts within
# the child, over every generation it plays):
#   selfplay N -> inside self-play (nothing of that generation written yet)
#   saved N    -> right after the checkpoint was written (none of its generation's rows yet)
#   eval N     -> inside the evaluation of the generation just checkpointed
#   evalrow N  -> right after its eval.csv rows, before its metrics.csv row
# "{RUN}" in a scenario's arguments is the run directory the first scenario made under OUT;
# after each child that run directory is copied to SNAPSHOTS/<k>.
_ZYGOTE = r"""
import glob, json, os, shutil, signal, sys
import torch.utils.tensorboard
from colony_training.zero import train as tr
out, snapshots, scenarios = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def child(mode, n, argv):
    count = [0]
    def at_point():
        count[0] += 1
        if count[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
    def wrap(name, before):
        real = getattr(tr, name)
        def hooked(*args, **kwargs):
            if before:
                at_point()
            out = real(*args, **kwargs)
            if not before:
                at_point()
            return out
        setattr(tr, name, hooked)
    if mode == "selfplay":
        wrap("self_play", True)
    elif mode == "saved":
        wrap("_save", False)
    elif mode == "eval":
        wrap("evaluate_checkpoint", True)
    elif mode == "evalrow":
        real_log = tr.RunDir.log
        def log(self, name, rows):
            real_log(self, name, rows)
            if name == "eval.csv":
                at_point()
        tr.RunDir.log = log
    return tr.main(argv)

def with_run(argv):
    runs = glob.glob(os.path.join(out, "*"))
    return [runs[0] if a == "{RUN}" else a for a in argv]

def snapshot(k):
    (run,) = glob.glob(os.path.join(out, "*"))
    shutil.copytree(run, os.path.join(snapshots, str(k)))

run_all(scenarios, before=with_run, after=snapshot)
"""


def _scenarios(out: Path, snapshots: Path, scenarios: list[tuple[str, int, list[str]]]) -> list[int]:
    return run_forked_scenarios(_ZYGOTE, [str(out), str(snapshots)], scenarios)[0]


def _generations(path: Path) -> list[int]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return [int(row["generation"]) for row in csv.DictReader(f)]


def _tb_steps(run: Path) -> Counter[tuple[str, int]]:
    seen: Counter[tuple[str, int]] = Counter()
    for f in sorted((run / "tb").glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(f)).Load():
            seen.update((v.tag, event.step) for v in event.summary.value)
    return seen


def _checkpoint_generation(run: Path) -> int:
    return int(read_checkpoint(run / "checkpoints" / "latest.pt")["generation"])


def _exactly_once(run: Path, generations: int) -> None:
    assert _generations(run / "metrics.csv") == list(range(generations))
    assert _generations(run / "eval.csv") == list(range(generations))  # one opponent, one agent: a row each
    steps = _tb_steps(run)
    for tag in ("zero/policy_loss", "zero/value_loss", "eval/policy_vs_random"):
        assert sorted(step for (t, step), n in steps.items() if t == tag) == list(range(generations)), tag
    assert set(steps.values()) == {1}, [k for k, n in steps.items() if n > 1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the scenarios fork one child each")
def test_a_kill_at_each_write_point_then_resume_logs_each_generation_once(tmp_path: Path) -> None:
    out, snaps = tmp_path / "runs", tmp_path / "snapshots"
    resume = ["--resume", "{RUN}", "--no-progress"]
    codes = _scenarios(out, snaps, [
        ("saved", 2, ["--out-dir", str(out), *TINY]),  # 0: right after the checkpoint of generation 1
        ("eval", 2, resume),  # 1: resumed (generation 1 logged again), killed evaluating generation 2
        ("evalrow", 1, resume),  # 2: resumed, killed between generation 2's eval.csv and metrics.csv rows
        ("selfplay", 2, resume),  # 3: resumed, killed in generation 4's self-play (3 is done)
        ("none", 0, resume),  # 4: resumed to the end
        ("none", 0, resume),  # 5: a resume of the finished run
    ])  # fmt: skip
    killed = -signal.SIGKILL
    assert codes == [killed, killed, killed, killed, 0, 0]
    step = [snaps / str(k) for k in range(6)]
    # what each kill left: the checkpoint ahead of the logged rows, which the resume fills in
    assert _checkpoint_generation(step[0]) == 1 and _generations(step[0] / "metrics.csv") == [0]
    assert _checkpoint_generation(step[1]) == 2 and _generations(step[1] / "metrics.csv") == [0, 1]
    assert _generations(step[1] / "eval.csv") == [0, 1]
    assert _checkpoint_generation(step[2]) == 2 and _generations(step[2] / "eval.csv") == [0, 1, 2]
    assert _generations(step[2] / "metrics.csv") == [0, 1]
    assert _checkpoint_generation(step[3]) == 3
    _exactly_once(step[3], 4)  # generation 4's self-play left nothing behind
    _exactly_once(step[4], GENERATIONS)
    _exactly_once(step[5], GENERATIONS)
    assert (step[5] / "metrics.csv").read_bytes() == (step[4] / "metrics.csv").read_bytes()
    assert (step[5] / "eval.csv").read_bytes() == (step[4] / "eval.csv").read_bytes()
