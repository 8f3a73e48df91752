"""Game records: round trips, replay checks, corrupt input, and the colony-replay CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import colony_env as ce
from colony_env.agents import GreedyAgent, RandomAgent
from colony_env.render import describe_result
from colony_training.eval.evaluate import play_game
from colony_training.eval.records import (GameRecord, RecordError, read_records, replay_main, replayed_games,
                                          write_records)


@pytest.fixture(scope="module")
def played() -> tuple[ce.GameState, ce.GameState, list[int]]:
    initial = ce.new_game(21)
    final, actions = play_game(GreedyAgent(), RandomAgent(), initial, np.random.default_rng(1), np.random.default_rng(2))
    return initial, final, actions


def test_round_trip_reproduces_the_final_state(tmp_path, played):
    initial, final, actions = played
    rec = GameRecord.from_game(initial, actions, {"red": "greedy", "blue": "random"}, {"seed": 21})
    assert rec.result == ("draw" if final.winner is None else str(final.winner))
    assert rec.end_reason == final.end_reason and len(rec.moves) == len(actions)
    path = write_records(tmp_path / "g.jsonl", [rec, rec])
    back = read_records(path)
    assert len(back) == 2 and back[0].actions == actions and back[0].meta == {"seed": 21}
    states = back[0].replay()
    assert states[0] == initial and states[-1] == final and len(states) == len(actions) + 1
    # the human notation parses back to the same ids (R1.2, R8)
    assert [ce.parse_action(m, s) for m, s in zip(back[0].moves, states)] == actions


def test_a_record_holds_r9_states(played):
    initial, _, actions = played
    obj = GameRecord.from_game(initial, actions, {"red": "a", "blue": "b"}).to_json()
    assert obj["format"] == "colony-game-record" and obj["plies"] == len(actions)
    assert ce.GameState.from_dict(obj["initial_state"]) == initial
    json.dumps(obj)  # plain JSON


def test_replayed_games_gives_each_record_with_its_positions_and_names_the_game_that_does_not_replay(tmp_path, played):
    initial, final, actions = played
    rec = GameRecord.from_game(initial, actions, {"red": "greedy", "blue": "random"})
    first = write_records(tmp_path / "a.jsonl", [rec])
    second = write_records(tmp_path / "b.jsonl", [rec, rec])
    games = list(replayed_games([first, second]))
    assert len(games) == 3 and all(r.actions == actions for r, _ in games)
    assert all(states[0] == initial and states[-1] == final and len(states) == len(actions) + 1 for _, states in games)
    broken = GameRecord.from_game(initial, actions, {"red": "a", "blue": "b"}).to_json()
    broken["actions"] = [*broken["actions"][:2], 99999]
    bad = tmp_path / "c.jsonl"
    bad.write_text(json.dumps(rec.to_json()) + "\n" + json.dumps(broken) + "\n")
    seen = []
    with pytest.raises(RecordError, match="^" + re.escape(f"{bad}: game 2 does not replay: action 3 of 3: action 99999 ")):
        for r, _ in replayed_games([first, bad]):
            seen.append(r)
    assert len(seen) == 2  # the games before the broken one came through
    with pytest.raises(RecordError, match="does not exist"):
        list(replayed_games([tmp_path / "missing.jsonl"]))


def _write_line(tmp_path, obj) -> str:
    p = tmp_path / "bad.jsonl"
    p.write_text((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    return str(p)


def test_corrupt_records_give_one_line_errors(tmp_path, played):
    initial, _, actions = played
    good = GameRecord.from_game(initial, actions, {"red": "a", "blue": "b"}).to_json()
    with pytest.raises(RecordError, match="does not exist"):
        read_records(tmp_path / "missing.jsonl")
    with pytest.raises(RecordError, match=":1: not valid JSON"):
        read_records(_write_line(tmp_path, "{not json"))
    with pytest.raises(RecordError, match="missing field"):
        read_records(_write_line(tmp_path, {k: v for k, v in good.items() if k != "actions"}))
    with pytest.raises(RecordError, match="integer action ids"):
        read_records(_write_line(tmp_path, {**good, "actions": ["d10-d7"]}))
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(RecordError, match="no game records"):
        read_records(tmp_path / "empty.jsonl")
    # an action that the rules (R4) do not allow: the replay names it and the reason
    bad = {**good, "actions": [ce.PASS_ACTION] + good["actions"][1:]}
    (rec,) = read_records(_write_line(tmp_path, bad))
    with pytest.raises(RecordError, match=r"action 1 of .*pass is legal only when"):
        rec.replay()
    # a tampered result
    other = {"red": "blue", "blue": "red", "draw": "red"}[good["result"]]
    (rec,) = read_records(_write_line(tmp_path, {**good, "result": other, "final_state": None}))
    with pytest.raises(RecordError, match="the record says"):
        rec.replay()
    (rec,) = read_records(_write_line(tmp_path, {**good, "initial_state": {"board": []}}))
    with pytest.raises(RecordError, match="bad initial_state"):
        rec.replay()


def test_replay_cli_prints_the_game(tmp_path, played, capsys):
    initial, final, actions = played
    rec = GameRecord.from_game(initial, actions, {"red": "greedy", "blue": "random"})
    path = write_records(tmp_path / "g.jsonl", [rec])
    assert replay_main([str(path)]) == 0
    out = capsys.readouterr().out
    assert f"ply 1: red (greedy) plays {rec.moves[0]}" in out
    assert f"result after {len(actions)} plies: {describe_result(final)}" in out  # the result in words
    assert replay_main([str(path), "--list"]) == 0
    assert "greedy (red) vs random (blue)" in capsys.readouterr().out


def test_replay_cli_error_paths(tmp_path, played, capsys):
    initial, _, actions = played
    path = write_records(tmp_path / "g.jsonl", [GameRecord.from_game(initial, actions, {"red": "a", "blue": "b"})])
    (tmp_path / "junk.jsonl").write_bytes(b"\xff\xfe garbage")
    for args, needle in [
        ([str(tmp_path / "none.jsonl")], "does not exist"),
        ([str(tmp_path / "junk.jsonl")], "cannot read record file"),
        ([str(path), "--game", "5"], "out of range"),
        ([str(path), "--every", "0"], "--every must be an integer >= 1"),
        # nan and inf passed the old checks and ended in a traceback (int(1000 / fps), time.sleep)
        ([str(path), "--fps", "nan", "--gif", str(tmp_path / "a.gif")], "--fps must be a number in (0, 100.0]"),
        ([str(path), "--fps", "1e300", "--gif", str(tmp_path / "a.gif")], "got 1e+300"),
        ([str(path), "--delay", "nan"], "--delay must be a number of seconds in 0..3600.0, got nan"),
        ([str(path), "--delay", "inf"], "got inf"),
        # an image that cannot be written: a folder, a name PIL has no format for, a path under a file
        ([str(path), "--png", str(tmp_path)], "--png must name a png file"),
        ([str(path), "--gif", str(tmp_path / "a.png")], "--gif must name a gif file"),
        ([str(path), "--png", str(path / "x.png")], f"cannot write {path / 'x.png'}"),
        ([str(path), "--gif", str(path / "x.gif"), "--every", "50"], f"cannot write {path / 'x.gif'}: {path}: "),
    ]:
        assert replay_main(args) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_replay_cli_writes_gif_and_png_with_the_rgb_renderer(tmp_path, played, capsys):
    from PIL import Image

    initial, _, actions = played
    path = write_records(tmp_path / "g.jsonl", [GameRecord.from_game(initial, actions, {"red": "a", "blue": "b"})])
    gif, png = tmp_path / "game.gif", tmp_path / "strip.png"
    every = 50
    assert replay_main([str(path), "--gif", str(gif), "--png", str(png), "--every", str(every)]) == 0
    frames = -(-(len(actions) + 1) // every) + (len(actions) % every != 0)
    with Image.open(gif) as im:
        assert im.n_frames == frames
    with Image.open(png) as im:
        assert im.width > 0 and im.height > 0
    assert "wrote" in capsys.readouterr().out


def test_replay_cli_draws_one_position(tmp_path, played, capsys):
    from PIL import Image

    initial, final, actions = played
    path = write_records(tmp_path / "g.jsonl", [GameRecord.from_game(initial, actions, {"red": "a", "blue": "b"})])
    png = tmp_path / "end.png"
    assert replay_main([str(path), "--png", str(png), "--ply", "-1"]) == 0
    assert f"after ply {len(actions)} of {len(actions)}" in capsys.readouterr().out
    from colony_env import render

    with Image.open(png) as im:
        assert (im.height, im.width) == render.render_rgb(final).shape[:2]
    for args, needle in [(["--ply", "3"], "use it with --png"), (["--png", str(png), "--ply", str(len(actions) + 1)], "out of range")]:
        assert replay_main([str(path), *args]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1
