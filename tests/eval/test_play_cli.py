"""colony-play: scripted sessions (moves, help, illegal moves, undo, quit, a whole game) and CLI errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import colony_env as ce
from colony_env.agents import GreedyAgent, RandomAgent
from colony_training.eval.play import PlaySession, main
from colony_training.eval.records import read_records


def scripted(lines: list[str]):
    it = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def session(lines: list[str], human=ce.RED, seed=3) -> tuple[PlaySession, list[str]]:
    out: list[str] = []
    return PlaySession(GreedyAgent(), human, seed=seed, read=scripted(lines), write=out.append), out


def first_legal_text(state: ce.GameState) -> str:
    return ce.action_to_str(int(ce.legal_actions(state)[0]), state)


def test_commands_illegal_moves_and_quit():
    s, out = session([])
    opening = s.state
    s.read = scripted(["help", "moves", "zz", "a1-a2", "pass", first_legal_text(opening), "quit"])
    rec = s.run()
    text = "\n".join(out)
    assert "commands:" in text and f"{len(ce.legal_actions(opening))} legal moves:" in text
    assert "cannot read 'zz'" in text
    assert "illegal action" in text and "a1 is empty" in text  # the engine's reason
    assert "pass is legal only when no other action is (R4.3)" in text
    assert "(greedy) plays" in text and "game abandoned" in text
    assert rec.meta["abandoned"] and rec.actions[0] == int(ce.legal_actions(opening)[0])
    assert rec.agents == {"red": "human", "blue": "greedy"}


def test_undo_takes_back_the_human_move_and_the_reply():
    s, out = session([])
    opening = s.state
    s.read = scripted(["undo", first_legal_text(opening), "undo", "quit"])
    rec = s.run()
    assert "nothing to undo" in "\n".join(out)
    assert any(line.startswith("undone") for line in out)
    assert rec.actions == [] and s.state == opening


def test_human_as_blue_and_eof_ends_cleanly():
    s, out = session([], human=ce.BLUE)
    rec = s.run()  # the agent moves first as red, then input ends (EOF)
    assert len(rec.actions) == 1 and out[-1] == "game abandoned"


def test_a_whole_game_is_recorded_and_replays(tmp_path):
    rng = np.random.default_rng(0)
    out: list[str] = []
    holder: dict[str, PlaySession] = {}

    def read(prompt: str) -> str:  # a "human" who types random legal moves in notation
        st = holder["s"].state
        legal = ce.legal_actions(st)
        return ce.action_to_str(int(legal[rng.integers(len(legal))]), st)

    s = PlaySession(RandomAgent(), ce.RED, seed=5, read=read, write=out.append)
    holder["s"] = s
    rec = s.run()
    assert s.state.is_over and not rec.meta["abandoned"]
    assert out[-1].startswith(f"game over ({s.state.end_reason})")
    assert rec.replay()[-1] == s.state


def test_cli_saves_the_record_and_rejects_bad_specs(tmp_path, capsys, monkeypatch):
    assert main(["alphazero"]) == 2
    err = capsys.readouterr().err
    assert "unknown agent spec 'alphazero'" in err and len(err.strip().splitlines()) == 1
    assert main(["alphazero", "--record", str(tmp_path / "sub" / "game.jsonl")]) == 2
    assert not (tmp_path / "sub").exists()  # the record's folder, probed before the spec failed, is not left behind
    capsys.readouterr()
    assert main([f"checkpoint:{tmp_path / 'none.pt'}"]) == 2
    assert "checkpoint file not found" in capsys.readouterr().err
    record = tmp_path / "game.jsonl"
    res = subprocess.run(
        [sys.executable, "-m", "colony_training.eval.play", "random", "--seed", "1", "--record", str(record)],
        input="moves\nquit\n", capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "legal moves:" in res.stdout and f"saved the game to {record}" in res.stdout
    (rec,) = read_records(record)
    assert rec.agents["red"] == "human" and rec.meta["seed"] == 1


def test_help_lists_every_agent_spec_form_with_a_working_example(capsys):
    import pytest

    from colony_training.eval.agent_specs import parse_agent_spec
    from colony_training.eval.play import spec_forms

    forms = spec_forms()
    texts = [f for f, _, _ in forms]
    assert {"random", "greedy", "mcts:N", "mcts:N:C", "checkpoint:PATH", "checkpoint:PATH:sample",
            "checkpoint:PATH:mcts:N", "checkpoint:PATH:mcts:N:C"} <= set(texts)
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for form, meaning, example in forms:
        assert form in out and meaning in out
        parse_agent_spec(example)  # every example is a spec the tools accept
        assert example == form or f"e.g. colony-play {example}" in out


def test_unreachable_cell_points_to_moves():
    s, out = session([])
    s.read = scripted(["a10-j1", "e4 to e5", "quit"])  # a10-j1: not along one line within 4 cells
    s.run()
    text = "\n".join(out)
    assert "is not 1..4 cells from a10" in text and "type 'moves' for the legal ones" in text
    assert "cannot read 'e4 to e5'" in text and "type 'help' for the commands" in text
