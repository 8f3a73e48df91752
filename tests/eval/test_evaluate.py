"""colony-eval: paired seeds, colour alternation, bookkeeping, reproducibility, outputs, error paths."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

import colony_env as ce
from colony_env.agents import Agent
from colony_training.eval import evaluate as ev
from colony_training.eval.agent_specs import AgentSpecError, make_agent, parse_agent_spec
from colony_training.eval.records import read_records


class FirstLegal(Agent):
    """Deterministic: always the lowest legal id (ignores its generator)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def act(self, state: ce.GameState, rng: np.random.Generator) -> int:
        return int(ce.legal_actions(state)[0])


def test_deterministic_agent_against_itself_scores_exactly_half():
    """Each setup is played once with each colour; the same deterministic player on both sides
    plays the very same game twice, so one copy wins exactly when the other does."""
    res = ev.evaluate([FirstLegal("first-a"), FirstLegal("first-b")], games=6, seed=3, workers=1, progress=False)
    (pair,) = res.pairs
    assert pair.games == 6 and pair.wins == pair.losses and pair.score == 0.5
    for k in range(3):
        g0, g1 = [g for g in res.games if g.setup == k]
        assert g0.actions == g1.actions and g0.result == g1.result
        assert (g0.red, g1.red) == ("first-a", "first-b")
    assert abs(res.elo.ratings["first-b"] - res.elo.ratings["first-a"]) < 1e-6


def test_colours_alternate_over_paired_setups():
    res = ev.evaluate(["random", "greedy", "mcts:2"], games=4, seed=7, workers=1, progress=False)
    assert [(p.a, p.b) for p in res.pairs] == [("random", "greedy"), ("random", "mcts:2"), ("greedy", "mcts:2")]
    assert len(res.games) == 3 * 4
    for p, stats in enumerate(res.pairs):
        games = [g for g in res.games if g.pairing == p]
        assert [(g.setup, g.swapped) for g in games] == [(0, 0), (0, 1), (1, 0), (1, 1)]
        for g in games:
            assert (g.red, g.blue) == ((stats.a, stats.b) if not g.swapped else (stats.b, stats.a))
        assert stats.wins + stats.draws + stats.losses == 4
    # one setup per k, shared by both colour orders and every pairing (R2 placement from the run seed)
    assert ev.setup_state(7, 0, 400) == ev.setup_state(7, 0, 400) != ev.setup_state(7, 1, 400)


def test_tally_counts_from_the_first_agents_side():
    names = ["a", "b"]
    results = [
        ev.GameResult(0, 0, 0, "a", "b", "red", "grace", 10, 0.0),  # a red, wins
        ev.GameResult(0, 0, 1, "b", "a", "red", "grace", 10, 0.0),  # b red, b wins
        ev.GameResult(0, 1, 0, "a", "b", "draw", "passes", 10, 0.0),
        ev.GameResult(0, 1, 1, "b", "a", "blue", "grace", 20, 0.0),  # a blue, wins
    ]
    (s,) = ev.tally_pairs(names, [(0, 1)], results)
    assert (s.wins, s.draws, s.losses, s.score) == (2, 1, 1, 0.625)
    assert s.a_red_score == 0.75 and s.mean_plies == 12.5
    assert s.ci_low < 0.625 < s.ci_high


def test_same_seed_same_results_whatever_the_workers():
    one = ev.evaluate(["random", "greedy"], games=4, seed=11, workers=1, progress=False)
    two = ev.evaluate(["random", "greedy"], games=4, seed=11, workers=2, progress=False)
    other = ev.evaluate(["random", "greedy"], games=4, seed=12, workers=1, progress=False)
    key = lambda r: [(g.setup, g.swapped, g.result, g.actions) for g in r.games]  # noqa: E731
    assert key(one) == key(two)
    assert key(one) != key(other)


def test_games_played_side_by_side_are_the_same_games():
    """--batch plays groups of games in lockstep; each keeps its own generators, so for agents
    without a network the games are exactly those played one by one, on any number of workers."""
    agents = ["random", "greedy", "mcts:4"]
    one = ev.evaluate(agents, games=4, seed=5, workers=1, progress=False)
    side = ev.evaluate(agents, games=4, seed=5, workers=1, progress=False, batch=3)
    side2 = ev.evaluate(agents, games=4, seed=5, workers=2, progress=False, batch=5)
    key = lambda r: [(g.pairing, g.setup, g.swapped, g.result, g.actions) for g in r.games]  # noqa: E731
    assert key(side) == key(one) == key(side2)
    assert side.config["batch"] == 3 and len(side.games) == 12

    class DuckTyped:  # any object with `name` and `act` may play, as before --batch existed
        name = "duck"

        def act(self, state, rng):
            legal = ce.legal_actions(state)
            return int(legal[rng.integers(len(legal))])

    ducks = ev.evaluate([DuckTyped(), "random"], games=4, seed=5, workers=1, progress=False, batch=4)
    assert ducks.pairs[0].games == 4
    with pytest.raises(ev.EvalError, match="--batch must be an integer >= 1"):
        ev.evaluate(agents, games=4, batch=0, progress=False)


def test_play_game_plays_the_evaluators_games():
    """`play_game` (one game, for callers outside colony-eval) is the evaluator's loop on one
    game: given a job's setup and generators it replays exactly the recorded game."""
    result = ev.evaluate(["greedy", "mcts:4"], games=2, seed=9, workers=1, progress=False)
    for g in result.games:
        agents = (make_agent("greedy"), make_agent("mcts:4"))
        red, blue = (agents[1], agents[0]) if g.swapped else agents
        rngs = [ev.agent_rng(9, g.pairing, g.setup, g.swapped, c) for c in (0, 1)]
        final, actions = ev.play_game(red, blue, ev.setup_state(9, g.setup, result.config["max_plies"]), *rngs)
        assert actions == g.actions and final.ply == g.plies
        assert ("draw" if final.winner is None else str(final.winner)) == g.result


def test_outputs_json_csv_and_records(tmp_path):
    res = ev.evaluate(["random", "greedy"], games=2, seed=0, workers=1, progress=False)
    files = ev.write_outputs(res, tmp_path)
    assert {f.name for f in files} == {"eval.json", "pairs.csv", "elo.csv", "games.jsonl"}
    data = json.loads((tmp_path / "eval.json").read_text())
    assert data["pairs"][0]["games"] == 2 and data["elo"]["anchor"] == "random"
    rows = list(csv.DictReader((tmp_path / "pairs.csv").open()))
    assert rows[0]["a"] == "random" and int(rows[0]["games"]) == 2
    ladder = list(csv.DictReader((tmp_path / "elo.csv").open()))
    assert {r["agent"] for r in ladder} == {"random", "greedy"}
    records = read_records(tmp_path / "games.jsonl")
    assert len(records) == 2
    for rec, game in zip(records, res.games):
        final = rec.replay()[-1]
        assert rec.actions == game.actions and final.end_reason == game.end_reason
    table = ev.format_tables(res.pairs, res.elo)
    assert "random vs greedy" in table and "Elo" in table
    stats, elo = ev.combine([tmp_path / "eval.json", tmp_path / "eval.json"])
    assert stats[0].games == 4 and elo.anchor == "random"
    assert stats[0].a_red_score == pytest.approx(res.pairs[0].a_red_score)
    # the same pairing seen the other way round is turned round, red score included
    flipped = json.loads((tmp_path / "eval.json").read_text())
    p = flipped["pairs"][0]
    p.update(a=p["b"], b=p["a"], wins=p["losses"], losses=p["wins"], score=1 - p["score"],
             a_red_score=1 - (2 * p["score"] - p["a_red_score"]))  # b as red = 1 - a as blue
    (tmp_path / "flipped.json").write_text(json.dumps(flipped))
    stats, _ = ev.combine([tmp_path / "eval.json", tmp_path / "flipped.json"])
    assert (stats[0].a, stats[0].games) == ("random", 4)
    assert stats[0].score == pytest.approx(res.pairs[0].score)
    assert stats[0].a_red_score == pytest.approx(res.pairs[0].a_red_score)


@pytest.mark.parametrize(
    "spec, kind",
    [("random", "random"), ("GREEDY", "greedy"), ("mcts:200", "mcts"), ("mcts:50:1.5", "mcts"),
     ("checkpoint:x.pt", "checkpoint"), ("checkpoint:x.pt:sample", "checkpoint"),
     ("checkpoint:dir/x.pt:mcts:200", "checkpoint"), ("checkpoint:x.pt:MCTS:50:0.5", "checkpoint")],
)
def test_agent_specs_parse(spec, kind):
    parsed = parse_agent_spec(spec)
    assert parsed.kind == kind
    if spec.startswith("checkpoint:"):
        assert parsed.path == ("dir/x.pt" if "dir/" in spec else "x.pt")
        assert (parsed.search_simulations, parsed.prior_c) == {
            "checkpoint:dir/x.pt:mcts:200": (200, None), "checkpoint:x.pt:MCTS:50:0.5": (50, 0.5)
        }.get(spec, (0, None))
    if spec == "mcts:50:1.5":
        assert (parsed.simulations, parsed.uct_c) == (50, 1.5)
    if spec.endswith(":sample"):
        assert parsed.path == "x.pt" and not parsed.greedy


@pytest.mark.parametrize("spec", ["", "alphazero", "mcts", "mcts:", "mcts:0", "mcts:abc", "mcts:10:x", "mcts:1:2:3",
                                  "checkpoint:", "mcts:10:-1", "checkpoint:x.pt:mcts:0", "checkpoint:x.pt:mcts:",
                                  "checkpoint::mcts:10", "checkpoint:x.pt:mcts:10:nan", "checkpoint:x.pt:mcts:10:-2"])
def test_bad_agent_specs_say_what_is_allowed(spec):
    with pytest.raises(AgentSpecError) as e:
        parse_agent_spec(spec)
    assert "\n" not in str(e.value) and ("allowed agent specs" in str(e.value) or "write mcts" in str(e.value))


@pytest.mark.parametrize("spec, said", [
    ("mcts:99999999999999999999", r"must be an integer in 1\.\.1000000, got 99999999999999999999"),
    ("mcts:1000001:1", r"in 1\.\.1000000, got 1000001"),
    ("checkpoint:x.pt:mcts:1000001", r"simulations: must be an integer in 1\.\.1000000"),
    ("checkpoint:x.pt:az:99999999999999999999", r"simulations: must be an integer in 1\.\.1000000"),
    ("checkpoint:x.pt:az:8:m=1922", r"m: must be an integer in 1\.\.1921, got 1922"),
    ("checkpoint:x.pt:az:8:rn=1001", r"rn: must be an integer in 1\.\.1000, got 1001"),
    ("checkpoint:x.pt:az:8:rfrom=23", r"rfrom: must be an integer in 1\.\.22, got 23"),
    ("zero:az:8:m=99999999999999999999", r"'zero:az:8:m=99999999999999999999': m: must be an integer in 1\.\.1921"),
])
def test_spec_numbers_past_what_a_search_can_hold_are_refused_in_one_line(spec, said):
    """Each integer of a spec has an upper end (`MAX_SIMULATIONS`, `MAX_LEGAL`, `MAX_LEAF_PLAYOUTS`, 22 connected):
    past it a search overflowed numba's integers or failed to allocate, with a traceback (or a 502 in the web app)."""
    with pytest.raises(AgentSpecError, match=said) as e:
        parse_agent_spec(spec)
    assert "\n" not in str(e.value)


def test_specs_at_the_upper_ends_parse():
    assert parse_agent_spec("mcts:1000000").simulations == 1_000_000
    az = parse_agent_spec("checkpoint:x.pt:az:1000000:m=1921:rn=1000:rfrom=22")
    assert az.az_simulations == 1_000_000
    assert dict(az.az_options)["max_considered"] == 1921
    assert (dict(az.az_options)["rollout_playouts"], dict(az.az_options)["rollout_from"]) == (1000, 22)


def test_a_search_too_big_for_memory_is_a_spec_error_not_a_checkpoint_error(monkeypatch):
    from colony_training import agents

    def no_room(*args, **kwargs):
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(agents, "load_az_agent", no_room)
    with pytest.raises(AgentSpecError, match="not enough memory for this search; use fewer simulations") as e:
        make_agent("zero:az:1000000")
    assert "cannot load checkpoint" not in str(e.value)


def test_checkpoint_errors_are_one_line(tmp_path):
    with pytest.raises(AgentSpecError, match="not found"):
        make_agent(f"checkpoint:{tmp_path / 'missing.pt'}")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"this is not a checkpoint")
    with pytest.raises(AgentSpecError, match="cannot load checkpoint") as e:
        make_agent(f"checkpoint:{corrupt}")
    assert "\n" not in str(e.value)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "colony_training.eval.evaluate", *args], capture_output=True, text=True, timeout=300)


def test_cli_error_paths(tmp_path, capsys):
    for sub, names in (("e1", ["random", "a"]), ("e2", ["b", "c"])):  # two tables that share no agent
        (tmp_path / sub).mkdir()
        row = {"a": names[0], "b": names[1], "games": 2, "wins": 1, "draws": 0, "losses": 1}
        (tmp_path / sub / "eval.json").write_text(json.dumps({"pairs": [row]}))
    for args, needle in [
        (("random", "alphazero"), "unknown agent spec 'alphazero'"),
        (("random", "greedy", "--games", "3"), "--games must be an even number"),
        (("random",), "at least two agents"),
        (("random", "random"), "distinct"),
        (("random", f"checkpoint:{tmp_path / 'nope.pt'}"), "checkpoint file not found"),
        (("--combine", str(tmp_path / "nope.json")), "does not exist"),
        (("--combine", str(tmp_path / "e1" / "eval.json"), str(tmp_path / "e2" / "eval.json")), "do not connect"),
        (("random", "greedy", "--games", "2", "--workers", "1", "--prior-draws", "0"), "diverged"),
        (("random", "greedy", "--batch", "0"), "--batch must be an integer >= 1"),
    ]:
        code = ev.main([*args, "--no-progress", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert needle in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
        assert not (tmp_path / "o").exists(), args  # a failed run leaves no empty output folder
    res = _cli("random", "alphazero")  # the real process: exit status 2, one line, no traceback
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        res.stderr.strip()
    ] and "allowed agent specs" in res.stderr


def test_cli_whose_reader_stops_early_keeps_its_results(tmp_path):
    """`colony-eval ... | head`: the closed pipe ends the tool with status 141 (as Unix tools do),
    no traceback, and the games are already written."""
    proc = subprocess.Popen([sys.executable, "-m", "colony_training.eval.evaluate", "random", "greedy", "--games", "2",
                             "--workers", "1", "--no-progress", "--out", str(tmp_path / "o")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141, err
    assert "Traceback" not in err and err == ""
    assert len(read_records(tmp_path / "o" / "games.jsonl")) == 2


def test_cli_smoke(tmp_path):
    res = _cli("random", "greedy", "--games", "2", "--workers", "2", "--no-progress", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "random vs greedy" in res.stdout and "Elo" in res.stdout
    assert (tmp_path / "eval.json").exists() and (tmp_path / "games.jsonl").exists()


def test_a_checkpoint_spec_plays_through_the_evaluator(tmp_path):
    """`checkpoint:PATH` goes through colony_training.agents.load_policy_agent (the trainer's format)."""
    from colony_env import observation
    from colony_env.agents.az import RolloutMixEvaluator
    from colony_training.agents import NetworkEvaluator
    from colony_training.checkpoint import save_checkpoint
    from colony_training.model import PolicyValueNet

    path = save_checkpoint(tmp_path / "tiny.pt", PolicyValueNet(observation.OBS_CHANNELS, 4, 1), {}, {"global_step": 0})
    spec = f"checkpoint:{path}"
    agent = make_agent(spec)
    assert agent.name == spec
    res = ev.evaluate([spec, "random"], games=2, seed=0, workers=1, progress=False)
    assert res.pairs[0].games == 2 and res.pairs[0].a == spec
    sampled = make_agent(spec + ":sample")
    state = ce.new_game(0)
    assert ce.is_legal(state, sampled.act(state, np.random.default_rng(0)))
    searcher = make_agent(spec + ":mcts:8:1.5")  # colony_training.agents.load_search_agent
    assert searcher.name == spec + ":mcts:8:1.5"
    assert (searcher.inner.max_simulations, searcher.inner.prior_c) == (8, 1.5)
    res = ev.evaluate([spec + ":mcts:8", "random"], games=2, seed=0, workers=1, progress=False)
    assert res.pairs[0].games == 2
    # an az spec searches the games handed to it together: one network call per simulation step
    az = make_agent(spec + ":az:6:noise=0")
    states = [ce.new_game(s) for s in range(4)]
    rngs = [np.random.default_rng(s) for s in range(4)]
    moves = az.act_batch(states, rngs)
    assert az.inner.search.evaluator_calls == 7  # the roots, then 6 simulation steps, for all 4 games
    assert all(ce.is_legal(s, m) for s, m in zip(states, moves))  # move-for-move equality: test_az (exact evaluator)
    res = ev.evaluate([spec + ":az:6", "random"], games=4, seed=0, workers=1, progress=False, batch=4)
    assert res.pairs[0].games == 4 and res.config["batch"] == 4
    # by default the network's leaf values are mixed with random playouts late in the game (AZ_LEAF_DEFAULT)
    late_default = az.inner.search.evaluator
    assert isinstance(late_default, RolloutMixEvaluator) and isinstance(late_default.inner, NetworkEvaluator)
    assert (late_default.mix, late_default.playouts, late_default.from_connected) == (0.75, 16, 17)
    assert isinstance(make_agent(spec + ":az:6:r=0").inner.search.evaluator, NetworkEvaluator)  # r=0: none
    assert az.inner.search.config.c_scale == 1.0  # AZ_C_SCALE_DEFAULT; cs=X: the weight of completed Q
    assert make_agent(spec + ":az:6:cs=0.3").inner.search.config.c_scale == 0.3

    def network(agent):
        return agent.inner.search.evaluator.inner

    # `bf16`: the same search with the convolutions in bfloat16 (eager, no trace); legal moves, its own name
    bf = make_agent(spec + ":az:6:noise=0:bf16")
    assert network(bf).model.bf16_trunk and not network(az).model.bf16_trunk
    assert all(ce.is_legal(s, m) for s, m in zip(states, bf.act_batch(states, rngs)))
    assert not network(bf)._trace and bf.name == spec + ":az:6:noise=0:bf16"
    # `int8`: the stem and trunk quantized (training/quantize.py); legal moves, its own name; not with bf16
    q = make_agent(spec + ":az:6:noise=0:int8")
    assert network(q).model.int8_body and not network(az).model.int8_body
    assert all(ce.is_legal(s, m) for s, m in zip(states, q.act_batch(states, rngs)))
    assert not network(q)._trace and q.name == spec + ":az:6:noise=0:int8"
    with pytest.raises(AgentSpecError, match="bf16 and int8 exclude each other"):
        make_agent(spec + ":az:6:bf16:int8")
    # late-leaf playouts and decisive moves reach the evaluator and the search
    late = make_agent(spec + ":az:6:r=0.5:rn=4:rfrom=17:decisive=1")
    ev_ = late.inner.search.evaluator
    assert (ev_.mix, ev_.playouts, ev_.from_connected) == (0.5, 4, 17) and late.inner.search.config.decisive
    assert all(ce.is_legal(s, m) for s, m in zip(states, late.act_batch(states, rngs)))
    assert not az.inner.search.config.decisive
    moved = make_agent(spec + ":az:6:rfrom=20").inner.search.evaluator  # rn / rfrom without r= change the default
    assert (moved.mix, moved.playouts, moved.from_connected) == (0.75, 16, 20)
    for bad, said in ((":az:6:r=0:rn=4", "which r=0 turns off"), (":az:6:r=0.5:rfrom=0", r"rfrom: must be an integer in 1\.\.22"),
                      (":az:6:decisive=yes", "decisive must be 0 or 1")):
        with pytest.raises(AgentSpecError, match=said):
            make_agent(spec + bad)


def test_every_console_script_ends_quietly_on_a_closed_pipe():
    """Each `[project.scripts]` entry is wrapped by `console_script` (test_cli_whose_reader_stops_early_keeps_its_results drives one)."""
    import importlib
    from pathlib import Path

    import tomllib

    from colony_training.cli import console_script

    scripts = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    unwrapped = []
    for name, target in scripts.items():
        module, attr = target.split(":")
        fn = getattr(importlib.import_module(module), attr)
        if module == "colony_web":  # a lazy shim (its worker processes import the package): the real entry
            fn = importlib.import_module("colony_web.cli").main
        if getattr(fn, "__code__", None) is not console_script(lambda: 0).__code__:
            unwrapped.append(name)
    assert not unwrapped, f"console scripts without console_script: {unwrapped}"


def _children(pid: int) -> set[int]:
    """Direct child processes of `pid` (Linux /proc)."""
    from pathlib import Path

    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids |= {int(k) for k in (task / "children").read_text().split()}
        except OSError:
            pass
    return kids


def _alive(pid: int) -> bool:
    """Running or sleeping; a zombie (exited, not yet reaped) counts as gone."""
    from pathlib import Path

    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads worker processes from /proc")
@pytest.mark.parametrize("argv, status, last_line", [
    (["-m", "colony_training.zero", "--workers", "2", "--channels", "8", "--blocks", "1", "--generations", "1",
      "--games-per-generation", "64", "--parallel-games", "32", "--simulations", "16", "--no-progress"],
     130, "colony-zero: interrupted; continue with --resume"),
    (["-m", "colony_training.eval.evaluate", "mcts:1000", "mcts:999", "--games", "8", "--workers", "2", "--no-progress"],
     130, "colony-eval: interrupted"),
])
def test_sigterm_stops_a_tool_and_its_workers(tmp_path, argv, status, last_line):
    """`kill PID` (or `timeout`, a scheduler) ends a tool as Ctrl-C does: one line, and no worker left playing."""
    import os
    import signal
    import time
    from pathlib import Path

    argv = [*argv, "--out-dir" if "colony_training.zero" in argv else "--out", str(tmp_path / "out")]
    proc = subprocess.Popen([sys.executable, *argv], cwd=Path(__file__).parents[2], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while len(_children(proc.pid)) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    workers = _children(proc.pid)
    assert len(workers) >= 2, "the tool never started its worker processes"
    time.sleep(1.0)  # into their work
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith(last_line)
    deadline = time.time() + 10
    while any(_alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(_alive(w) for w in workers), "worker processes outlived the tool"
