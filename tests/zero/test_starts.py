"""Self-play games started from recorded positions (`start_records`, `start_share`; training/zero/starts.py):
the positions a record file gives, the games that start from them, the settings and a tiny run."""

from __future__ import annotations

import json

import numpy as np
import pytest

import colony_env as ce
from colony_env.agents.az import SearchConfig
from colony_training.config import ConfigError
from colony_training.eval.records import GameRecord
from colony_training.zero import train as zero_train
from colony_training.zero.config import ZeroConfig
from colony_training.zero.replay import read_shard, shard_path
from colony_training.zero.selfplay import play_games
from colony_training.zero.starts import generation_starts, load_positions
from helpers import tiny_zero_run

SEARCH = SearchConfig(simulations=4, max_considered=4, gumbel_scale=0.0)


def uniform_evaluator(states, obs, ids, counts):
    return np.zeros(ids.shape), np.zeros(len(states))


def random_game(seed: int, max_plies: int = 400) -> tuple[ce.GameState, list[int], list[ce.GameState]]:
    rng = np.random.default_rng(seed)
    s0 = s = ce.new_game(seed, max_plies=max_plies)
    actions, states = [], [s0]
    while not s.is_over:
        actions.append(int(rng.choice(ce.legal_actions(s))))
        s = ce.apply_action(s, actions[-1])
        states.append(s)
    return s0, actions, states


def write_games(path, seeds, max_plies: int = 400) -> list[list[ce.GameState]]:
    games, lines = [], []
    for seed in seeds:
        s0, actions, states = random_game(seed, max_plies)
        lines.append(json.dumps(GameRecord.from_game(s0, actions, {"red": "a", "blue": "b"}).to_json()) + "\n")
        games.append(states)
    path.write_text("".join(lines))
    return games


def test_the_positions_are_every_unfinished_position_of_the_records_under_the_ply_limit(tmp_path):
    games = write_games(tmp_path / "games.jsonl", [1, 2], max_plies=400)
    positions = load_positions([str(tmp_path / "games.jsonl")], max_plies=50)
    want = [s for states in games for s in states if not s.is_over and s.ply < 50]
    assert len(positions) == len(want) and 0 < len(want) < sum(len(g) for g in games)
    for row, ref in zip(positions, want):
        got = ce.GameState.from_array(row)
        assert got.max_plies == 50 and ref.max_plies == 400
        d = ref.to_dict()
        d["max_plies"] = 50
        assert got == ce.GameState.from_dict(d)


def test_games_start_from_the_given_positions_and_store_from_there(tmp_path):
    games = write_games(tmp_path / "games.jsonl", [3])
    start = games[0][len(games[0]) // 2]
    assert start.ply > 0 and not start.is_over
    data = play_games(uniform_evaluator, SEARCH, [7, 8], 2, 400, np.random.default_rng(0),
                      starts=[start.to_array(), None])
    firsts = data.states[np.concatenate([[0], np.cumsum(data.game_lengths)[:-1]])]
    started = [i for i, row in enumerate(firsts) if np.array_equal(row, start.to_array())]
    fresh = [i for i, row in enumerate(firsts) if np.array_equal(row, ce.new_game(8).to_array())]
    assert len(started) == 1 and len(fresh) == 1  # one game from the position, one from seed 8's setup
    assert data.game_lengths.sum() == data.n_positions  # lengths count the plies played, not the position's ply


def test_which_games_start_where_is_fixed_by_seed_and_generation(tmp_path):
    positions = np.stack([s.to_array() for states in write_games(tmp_path / "g.jsonl", [4]) for s in states
                          if not s.is_over])
    a = generation_starts(5, 2, 200, 0.5, positions)
    b = generation_starts(5, 2, 200, 0.5, positions)
    assert [x is None for x in a] == [x is None for x in b]
    assert all(np.array_equal(x, y) for x, y in zip(a, b) if x is not None)
    assert 60 < sum(x is not None for x in a) < 140  # about half of them
    assert [x is None for x in generation_starts(5, 3, 200, 0.5, positions)] != [x is None for x in a]
    assert all(x is None for x in generation_starts(5, 2, 10, 0.0, positions))
    assert all(x is not None for x in generation_starts(5, 2, 10, 1.0, positions))


def test_start_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="'start_records' has 'nowhere.jsonl'"):
        ZeroConfig(start_records=["nowhere.jsonl"], start_share=0.5).finalize()
    write_games(tmp_path / "g.jsonl", [5])
    with pytest.raises(ConfigError, match="'start_share' = 0.0 is invalid; allowed: 0 without start_records"):
        ZeroConfig(start_records=[str(tmp_path / "g.jsonl")]).finalize()
    with pytest.raises(ConfigError, match="'start_share'"):
        ZeroConfig(start_share=0.5).finalize()
    assert ZeroConfig(start_records=[str(tmp_path / "g.jsonl")], start_share=0.5).finalize().start_share == 0.5


def test_a_record_that_does_not_replay_is_one_line_from_colony_zero(tmp_path, capsys):
    write_games(tmp_path / "g.jsonl", [6])
    rec = json.loads((tmp_path / "g.jsonl").read_text())
    rec["actions"][3] = 99999
    (tmp_path / "bad.jsonl").write_text(json.dumps(rec) + "\n")
    code = zero_train.main(["--out-dir", str(tmp_path / "runs"), "--generations", "1", "--no-progress",
                            "--start-records", f"[{tmp_path / 'bad.jsonl'}]", "--start-share", "0.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == (f"colony-zero: error: start_records: {tmp_path / 'bad.jsonl'}: game 1 does not replay: "
                       f"action 4 of {len(rec['actions'])}: action 99999 is outside the action space 0..16000 (R8)")


def test_tiny_run_from_recorded_positions(tmp_path):
    games = write_games(tmp_path / "g.jsonl", [9, 10])
    starts = {s.to_array().tobytes() for states in games for s in states}
    run = tiny_zero_run(tmp_path / "runs", "--start-records", f"[{tmp_path / 'g.jsonl'}]", "--start-share", "1.0")
    shard = read_shard(shard_path(run, 0))
    firsts = shard.states[np.concatenate([[0], np.cumsum(shard.game_lengths)[:-1]])]
    assert len(firsts) == 2
    for row in firsts:  # each game began at a recorded position (its ply limit set to the run's 40)
        d = ce.GameState.from_array(row).to_dict()
        assert d["max_plies"] == 40
        assert any(ce.GameState.from_dict({**d, "max_plies": 400}).to_array().tobytes() == s for s in starts)
