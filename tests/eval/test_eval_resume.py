"""colony-eval keeps what it played (issue 32, item 7): a used --out is never written over, every
game is in games.jsonl as soon as it ends, and `--resume OUT` after a SIGKILL or SIGTERM plays only
the missing games, ending with the same bytes as a run that was never interrupted."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from colony_training.eval import evaluate as ev
from helpers import run_forked_scenarios

AGENTS = ["random", "greedy", "mcts:4"]  # three pairings, so that a resume has games of each to find
TINY = [*AGENTS, "--games", "4", "--max-plies", "40", "--no-progress"]  # 12 games, about a second
GAMES = 12

# One interpreter imports colony-eval once, then forks one child per scenario; a child kills
# itself right after the N-th append to games.jsonl (the write point of a finished game):
#   kill N -> SIGKILL, after writing half of the next game's line (a torn last line)
#   term N -> SIGTERM (what `kill PID` or a scheduler sends): the tool's own interrupt handling
#   none 0 -> run to the end
_ZYGOTE = r"""
import json, os, signal, sys
from colony_training.eval import evaluate as ev
scenarios = json.loads(sys.argv[1])

def child(mode, n, argv):
    real = ev.Journal.append
    count = [0]
    def append(self, games):
        real(self, games)
        count[0] += 1
        if count[0] == n and mode == "kill":
            self._file.write(b'{"format":"colony-game-record","agents":{"red"')
            self._file.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if count[0] == n and mode == "term":
            os.kill(os.getpid(), signal.SIGTERM)
    ev.Journal.append = append
    return ev.main(argv)

run_all(scenarios)
"""


def _scenarios(scenarios: list[tuple[str, int, list[str]]]) -> tuple[list[int], str]:
    """Exit codes of the scenarios (negative: killed by that signal), run one after the other, and stderr."""
    return run_forked_scenarios(_ZYGOTE, [], scenarios, timeout=600)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the scenarios fork one child each")
def test_resume_after_sigkill_or_sigterm_gives_the_games_of_an_uninterrupted_run(tmp_path: Path) -> None:
    full, killed, termed, hidden = (tmp_path / name for name in ("full", "killed", "termed", "hidden"))
    codes, err = _scenarios([
        ("none", 0, [*TINY, "--workers", "1", "--out", str(full)]),  # 0: the run nobody interrupted
        ("kill", 5, [*TINY, "--workers", "1", "--out", str(killed)]),  # 1: SIGKILL after 5 games, mid-write
        ("kill", 3, ["--resume", str(killed), "--workers", "1", "--no-progress"]),  # 2: again, 3 games later
        ("none", 0, ["--resume", str(killed), "--workers", "1", "--no-progress"]),  # 3
        ("term", 3, [*TINY, "--workers", "2", "--out", str(termed)]),  # 4: SIGTERM after 3 games, two workers
        ("term", 2, ["--resume", str(termed), "--workers", "2", "--no-progress"]),  # 5: ... and again
        ("none", 0, ["--resume", str(termed), "--workers", "1", "--no-progress"]),  # 6
        ("kill", 4, [*TINY, "--workers", "1", "--no-records", "--out", str(hidden)]),  # 7: no games.jsonl kept
        ("none", 0, ["--resume", str(hidden), "--workers", "1", "--no-progress"]),  # 8
    ])  # fmt: skip
    assert codes == [0, -signal.SIGKILL, -signal.SIGKILL, 0, 130, 130, 0, -signal.SIGKILL, 0], err[-3000:]
    expected = (full / "games.jsonl").read_bytes()
    assert len(expected.splitlines()) == GAMES
    assert (killed / "games.jsonl").read_bytes() == expected  # byte-identical, the torn line cut off and replayed
    assert (termed / "games.jsonl").read_bytes() == expected  # two workers finish out of order: sorted at the end
    for out in (killed, termed):
        assert json.loads((out / "eval.json").read_text())["pairs"] == json.loads((full / "eval.json").read_text())["pairs"]
        assert (out / "elo.csv").read_bytes() == (full / "elo.csv").read_bytes()
        assert (out / "pairs.csv").read_bytes() == (full / "pairs.csv").read_bytes()
    assert f"interrupted; 3 of {GAMES} games are saved in {termed}; continue with `colony-eval --resume {termed}`" in err
    assert f"interrupted; 5 of {GAMES} games are saved in {termed}" in err  # 3 from before + 2 new
    assert not (hidden / "games.jsonl").exists() and not (hidden / ev.HIDDEN_RECORDS_FILE).exists()
    assert json.loads((hidden / "eval.json").read_text())["pairs"] == json.loads((full / "eval.json").read_text())["pairs"]


def test_finished_games_are_in_games_jsonl_as_they_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each group's games are appended (and flushed) before the next group is played."""
    seen: list[int] = []
    real = ev._run_group

    def run_group(jobs):  # counts the complete lines on disk when each game starts
        text = (tmp_path / "o" / "games.jsonl").read_bytes()
        seen.append(text.count(b"\n"))
        return real(jobs)

    monkeypatch.setattr(ev, "_run_group", run_group)
    assert ev.main([*TINY, "--workers", "1", "--out", str(tmp_path / "o")]) == 0
    assert seen == list(range(GAMES))


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("colony-eval: error: ") and "Traceback" not in err, err
    return lines[0]


def test_a_used_out_is_never_written_over(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert ev.main([*TINY, "--workers", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert ev.main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 2
    assert "holds a finished colony-eval run, which is never written over" in _one_line(capsys.readouterr().err)
    (out / "eval.json").unlink()  # as a kill while writing the tables leaves it: unfinished
    assert ev.main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 2
    assert f"continue it with `colony-eval --resume {out}`" in _one_line(capsys.readouterr().err)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "eval.json"} == {
        k: v for k, v in before.items() if k != "eval.json"}
    assert ev.main(["--resume", str(out), "--no-progress"]) == 0  # plays nothing, writes the tables again
    assert "12 games (12 of them played before the run was resumed)" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "eval.json"} == {
        k: v for k, v in before.items() if k != "eval.json"}
    assert json.loads((out / "eval.json").read_text())["pairs"] == json.loads(before["eval.json"])["pairs"]
    assert ev.main(["--resume", str(out), "--no-progress"]) == 0  # a finished run: nothing to play, nothing written
    assert "finished already; nothing to play" in capsys.readouterr().out
    old = tmp_path / "old"  # results of a colony-eval from before run.json
    old.mkdir()
    (old / "games.jsonl").write_bytes(before["games.jsonl"])
    assert ev.main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(old)]) == 2
    assert "holds colony-eval files (games.jsonl)" in _one_line(capsys.readouterr().err)
    assert ev.main(["--resume", str(old)]) == 2
    assert "could not resume runs" in _one_line(capsys.readouterr().err)
    assert (old / "games.jsonl").read_bytes() == before["games.jsonl"]


def test_the_default_out_of_the_same_second_goes_beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ev.time, "strftime", lambda fmt: "20260101-000000")
    for _ in range(2):
        assert ev.main(["random", "greedy", "--games", "2", "--workers", "1", "--no-progress"]) == 0
    assert sorted(p.name for p in (tmp_path / "runs" / "eval").iterdir()) == ["20260101-000000", "20260101-000000-2"]


@pytest.mark.parametrize("args, match", [
    (["--games", "2"], "drop --games (only --workers and --no-progress may change)"),
    (["random", "greedy", "--seed", "3", "--out", "x"], "drop --seed, --out, the agent specs"),
])
def test_resume_refuses_settings_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                            match: str) -> None:
    assert ev.main(["--resume", str(tmp_path), *args]) == 2
    assert match in _one_line(capsys.readouterr().err)


def test_resume_refuses_a_folder_without_a_run_or_with_foreign_games(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert ev.main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "holds no colony-eval run (no run.json)" in _one_line(capsys.readouterr().err)
    a, b = tmp_path / "a", tmp_path / "b"
    assert ev.main([*TINY, "--workers", "1", "--out", str(a)]) == 0
    assert ev.main([*TINY, "--workers", "1", "--seed", "1", "--out", str(b)]) == 0
    capsys.readouterr()
    (a / "eval.json").unlink()
    good = (a / "games.jsonl").read_bytes()
    (a / "games.jsonl").write_bytes(good + (b / "games.jsonl").read_bytes().splitlines(keepends=True)[0])
    assert ev.main(["--resume", str(a), "--no-progress"]) == 2
    assert f"games.jsonl:{GAMES + 1}: not a game of the run in run.json" in _one_line(capsys.readouterr().err)
    (a / "games.jsonl").write_bytes(good + good.splitlines(keepends=True)[3])
    assert ev.main(["--resume", str(a), "--no-progress"]) == 2
    assert "is recorded twice" in _one_line(capsys.readouterr().err)
    lines = good.splitlines(keepends=True)
    rec = json.loads(lines[2])
    rec["actions"][0], rec["actions"][1] = rec["actions"][1], rec["actions"][0]  # an edited game: illegal or another end
    (a / "games.jsonl").write_bytes(b"".join(lines[:2]) + json.dumps(rec).encode() + b"\n")
    assert ev.main(["--resume", str(a), "--no-progress"]) == 2
    assert "games.jsonl:3: " in _one_line(capsys.readouterr().err)
    (a / "run.json").write_text("{not json")
    assert ev.main(["--resume", str(a)]) == 2
    assert "cannot read" in _one_line(capsys.readouterr().err)
    (a / "run.json").write_text(json.dumps({"format": "colony-eval-run", "version": 1, "agents": ["random"]}))
    assert ev.main(["--resume", str(a)]) == 2
    assert "field 'games' is missing or has the wrong type" in _one_line(capsys.readouterr().err)


def test_a_resumed_batch_is_played_whole_and_keeps_its_recorded_games(monkeypatch: pytest.MonkeyPatch) -> None:
    """With --batch B an az agent searches B games together, so a game's moves can depend on its batch:
    a batch with a game missing is played whole again (the same batch as before), and only the missing
    games are taken from it."""
    full = ev.evaluate(AGENTS, games=4, seed=5, workers=1, max_plies=30, progress=False, batch=5)  # 12 games, 3 batches
    missing = {full.games[1].key, full.games[7].key, full.games[8].key}  # in the first two batches of the job list
    done = [g for g in full.games if g.key not in missing]
    played: list[list[tuple[int, int, int]]] = []
    new: list[tuple[int, int, int]] = []
    real = ev._run_group

    def run_group(jobs):
        played.append([(j.pairing, j.setup, j.swapped) for j in jobs])
        return real(jobs)

    monkeypatch.setattr(ev, "_run_group", run_group)
    again = ev.evaluate(AGENTS, games=4, seed=5, workers=1, max_plies=30, progress=False, batch=5, done=done,
                        on_games=lambda games: new.extend(g.key for g in games))
    order = [g.key for g in sorted(full.games, key=lambda g: (g.setup, g.pairing, g.swapped))]  # the job list's order
    assert played == [order[0:5], order[5:10]]  # the third batch is complete: not played
    assert sorted(new) == sorted(missing)
    assert [g.key for g in again.games] == [g.key for g in full.games]
    assert all(a is b for a, b in zip(again.games, full.games) if a.key not in missing)  # the recorded games kept
    assert [g.actions for g in again.games] == [g.actions for g in full.games]
