"""The command-line contract (issue 13, items 1, 9, 10, 11): colony-play, colony-eval and
colony-replay answer bad input with one line `TOOL: error: ...` and a non-zero exit, never a
traceback, and never lose a finished game."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colony_env as ce
from colony_env.agents import RandomAgent
from colony_training.eval import evaluate, play
from colony_training.eval.play import PlaySession
from colony_training.eval.records import GameRecord, read_records, replay_main


def _scripted(lines: list[str]):
    it = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def _one_error_line(err: str, tool: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{tool}: error: "), err
    assert "Traceback" not in err
    return lines[0]


def _legal_text(state: ce.GameState) -> str:
    return ce.action_to_str(int(ce.legal_actions(state)[0]), state)


# --- colony-play --------------------------------------------------------------------------
def test_undo_after_an_illegal_move_takes_back_exactly_the_last_move() -> None:
    """Item 1: an illegal move used to leave a phantom entry in the history, so `undo` popped an
    empty list or took back only the agent's reply."""
    out: list[str] = []
    s = PlaySession(RandomAgent(), ce.RED, seed=5, read=_scripted([]), write=out.append)
    initial = s.state
    s.read = _scripted(["c10-d10", "undo"])  # illegal, then undo with nothing to take back
    s.run()
    assert s.actions == [] and s.state == initial and "nothing to undo" in "\n".join(out)

    s = PlaySession(RandomAgent(), ce.RED, seed=5, read=_scripted([]), write=out.append)
    first = _legal_text(s.state)
    s._play(ce.parse_action(first, s.state))  # legal
    s.agent_turn()
    after_first = s.state
    s.read = _scripted(["c10-d10", _legal_text(after_first)])  # illegal, legal
    s.human_turn()
    s.agent_turn()
    assert len(s.actions) == 4 and len(s.movers) == 4 and len(s.states) == 5
    assert s.undo() and s.state == after_first and len(s.actions) == 2
    assert s.undo() and s.state == s.initial and s.actions == [] and s.movers == []


def test_undo_then_a_recorded_game_keeps_only_the_moves_that_stand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    opening = ce.new_game(5)
    moves = ["c10-d10", "undo", _legal_text(opening), "undo", "quit"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(moves) + "\n"))
    rec_path = tmp_path / "lost.jsonl"
    assert play.main(["random", "--seed", "5", "--record", str(rec_path)]) == 0
    (rec,) = read_records(rec_path)  # the game was written, not lost to an IndexError
    assert rec.actions == [] and rec.meta["abandoned"]


@pytest.mark.parametrize(
    "args, match",
    [
        (["random", "--seed", "-1"], "--seed must be in 0..4294967295"),
        (["random", "--seed", str(2**70)], "--seed must be in 0..4294967295"),
        (["random", "--max-plies", "2147483648"], "--max-plies must be in 1..2147483647"),
        (["random", "--max-plies", "0"], "--max-plies must be in 1..2147483647"),
        (["checkpoint:NOTES.txt"], "not a readable checkpoint"),
    ],
)
def test_play_refuses_bad_options_before_the_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str], args: list[str], match: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "NOTES.txt").write_text("not a checkpoint\n" * 20)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert play.main([*args, "--no-record"]) == 2
    assert match in _one_error_line(capsys.readouterr().err, "colony-play")


def test_play_refuses_a_record_path_it_cannot_write_before_the_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(_legal_text(ce.new_game(1)) + "\n"))  # must never be read
    assert play.main(["random", "--seed", "1", "--record", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "is a folder" in _one_error_line(captured.err, "colony-play") and "you are red" not in captured.out
    (tmp_path / "file").write_text("x")
    assert play.main(["random", "--seed", "1", "--record", str(tmp_path / "file" / "g.jsonl")]) == 2
    assert "is a file, not a folder" in _one_error_line(capsys.readouterr().err, "colony-play")


def test_a_record_that_cannot_be_written_after_all_is_saved_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The disk fills up during the game: the finished game goes to the temp folder, not nowhere."""
    real_write = play.write_records
    target = tmp_path / "games.jsonl"

    def full_disk(path: Any, records: Any, append: bool = False) -> Path:
        if Path(path) == target:
            raise OSError(28, "No space left on device")
        return real_write(path, records, append=append)

    monkeypatch.setattr(play, "write_records", full_disk)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("sys.stdin", io.StringIO(_legal_text(ce.new_game(2)) + "\nquit\n"))
    assert play.main(["random", "--seed", "2", "--record", str(target)]) == 1
    line = _one_error_line(capsys.readouterr().err, "colony-play")
    assert "No space left on device" in line and "saved it to" in line
    (saved,) = (tmp_path / "tmp").glob("colony-play-*.jsonl")
    (rec,) = read_records(saved)
    assert len(rec.actions) == 2  # the human's move and the reply


def test_a_huge_input_line_is_not_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    out: list[str] = []
    s = PlaySession(RandomAgent(), ce.RED, seed=1, read=_scripted(["x" * 10_000_000, "quit"]), write=out.append)
    s.run()
    assert max(len(line) for line in out) < 2000
    assert any("10000000 characters" in line for line in out)


# --- colony-eval --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, match",
    [
        (["random", "random", "--seed", "-1"], "--seed must be in 0..4294967295"),
        (["random", "random", "--max-plies", "2147483648"], "--max-plies must be in 1..2147483647"),
        (["checkpoint:NOTES.txt", "random", "--games", "2"], "not a readable checkpoint"),
        (["random", "random", "--prior-draws", "inf"], "--prior-draws must be a finite number"),
    ],
)
def test_eval_refuses_bad_options_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], args: list[str], match: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "NOTES.txt").write_text("notes\n" * 40)
    assert evaluate.main([*args, "--out", str(tmp_path / "out"), "--no-progress", "--workers", "1"]) == 2
    assert match in _one_error_line(capsys.readouterr().err, "colony-eval")


def test_eval_checks_the_output_folder_before_playing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    played: list[Any] = []
    monkeypatch.setattr(evaluate, "evaluate", lambda *a, **k: played.append(a))
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert evaluate.main(["random", "greedy", "--games", "2", "--out", str(blocker / "out"), "--no-progress"]) == 2
    assert "--out:" in _one_error_line(capsys.readouterr().err, "colony-eval") and played == []


def test_eval_results_survive_an_output_folder_that_breaks_after_the_games(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    real = evaluate.write_outputs
    out = tmp_path / "out"

    def broken(result: Any, where: Path, records: bool = True) -> list[Path]:
        if Path(where) == out:
            raise OSError(28, "No space left on device")
        return real(result, where, records)

    monkeypatch.setattr(evaluate, "write_outputs", broken)
    monkeypatch.setattr(evaluate.tempfile, "mkdtemp", lambda prefix="": str(tmp_path / "fallback"))
    (tmp_path / "fallback").mkdir()
    assert evaluate.main(["random", "greedy", "--games", "2", "--out", str(out), "--no-progress", "--workers", "1"]) == 1
    assert "wrote the results to" in _one_error_line(capsys.readouterr().err, "colony-eval")
    assert len(read_records(tmp_path / "fallback" / "games.jsonl")) == 2


# --- colony-replay ------------------------------------------------------------------------
def _record() -> dict[str, Any]:
    s = ce.new_game(3, max_plies=12)
    actions = []
    while not s.is_over:
        a = int(ce.legal_actions(s)[0])
        actions.append(a)
        s = ce.apply_action(s, a)
    return GameRecord.from_game(ce.new_game(3, max_plies=12), actions, {"red": "a", "blue": "b"}).to_json()


_RECORD = _record()
_WEIRD = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(),
                   st.text(max_size=8), st.lists(st.integers(-5, 20000), max_size=4), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                   st.just(["red"]), st.just(2**31))


@st.composite
def _mutated_records(draw: st.DrawFn) -> dict[str, Any]:
    d = json.loads(json.dumps(_RECORD))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "initial_state", "final_state", "delete"]))
        if where == "top":
            d[draw(st.sampled_from(sorted(d)))] = draw(_WEIRD)
        elif where == "delete":
            d.pop(draw(st.sampled_from(sorted(d))), None)
        elif isinstance(d.get(where), dict):
            d[where][draw(st.sampled_from(sorted(_RECORD["initial_state"])))] = draw(_WEIRD)
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rec=_mutated_records())
def test_replay_of_any_mutated_record_is_a_game_or_one_error_line(tmp_path: Path, rec: dict[str, Any]) -> None:
    f = tmp_path / "games.jsonl"
    f.write_text(json.dumps(rec) + "\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = replay_main([str(f)])
    if code == 0:
        assert "result" in out.getvalue()  # the game was shown to its end
    else:
        assert code == 2
        _one_error_line(err.getvalue(), "colony-replay")


@pytest.mark.parametrize("field, value", [("meta", 5), ("moves", 5), ("moves", [1, 2]), ("result", None)])
def test_replay_names_a_bad_optional_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any) -> None:
    f = tmp_path / "games.jsonl"
    f.write_text(json.dumps({**_RECORD, field: value}) + "\n")
    assert replay_main([str(f)]) == 2
    assert f"'{field}'" in _one_error_line(capsys.readouterr().err, "colony-replay")


@pytest.mark.parametrize("where, key, value", [("initial_state", "to_move", ["red"]), ("initial_state", "max_plies", 2**31)])
def test_replay_names_a_bad_state_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, key: str, value: Any) -> None:
    rec = json.loads(json.dumps(_RECORD))
    rec[where][key] = value
    f = tmp_path / "games.jsonl"
    f.write_text(json.dumps(rec) + "\n")
    assert replay_main([str(f)]) == 2
    assert f"field '{key}'" in _one_error_line(capsys.readouterr().err, "colony-replay")
