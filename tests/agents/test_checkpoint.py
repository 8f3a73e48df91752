"""Checkpoint round trip, atomic writes, safe loading and the error paths."""

from __future__ import annotations

import collections
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import observation
from colony_training import agents
from colony_training import checkpoint as ck
from colony_training.agents import load_policy_agent
from colony_training.checkpoint import CheckpointError, load_model, read_checkpoint, save_checkpoint
from colony_training.model import PolicyValueNet


def _net() -> PolicyValueNet:
    torch.manual_seed(0)
    net = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return net


def test_round_trip_keeps_weights_config_and_meta(tmp_path: Path) -> None:
    net = _net()
    path = save_checkpoint(tmp_path / "a.pt", net, {"channels": 8}, {"global_step": 123, "iteration": 4})
    loaded, data = load_model(path)
    for k, v in net.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k])
    assert data["config"] == {"channels": 8}
    assert data["meta"]["global_step"] == 123
    assert data["observation"] == list(observation.PLANE_NAMES)
    assert data["num_actions"] == ce.N_ACTIONS
    obs = torch.rand(2, observation.OBS_CHANNELS, 10, 10)
    ids = torch.tensor([[0, 5, 16000]] * 2)
    assert torch.equal(net.eval()(obs, ids)[0], loaded(obs, ids)[0])


def test_a_network_of_the_first_planes_reads_only_those(tmp_path: Path) -> None:
    """A network trained before planes were appended (e.g. the 26 before the reach planes) records the names it
    reads, loads, and ignores the rest; a name list that is not the encoder's first planes, or that disagrees
    with the network's input width, is refused in one line."""
    torch.manual_seed(1)
    net = PolicyValueNet(26, channels=8, blocks=1)
    path = save_checkpoint(tmp_path / "old.pt", net, {}, {})
    loaded, data = load_model(path)
    assert data["observation"] == list(observation.PLANE_NAMES[:26]) and loaded.in_channels == 26
    obs = torch.rand(2, observation.OBS_CHANNELS, 10, 10)
    other = obs.clone()
    other[:, 26:] = torch.rand(2, observation.OBS_CHANNELS - 26, 10, 10)
    ids = torch.tensor([[0, 5, 16000]] * 2)
    for a, b in zip(loaded(obs, ids), loaded(other, ids)):  # logits and value
        assert torch.equal(a, b)
    raw = torch.load(path, weights_only=True)
    short = "reads 26 observation planes, its 'observation' names 25"
    for names, words in ((list(reversed(observation.PLANE_NAMES[:26])), "another format: observation"),
                         (list(observation.PLANE_NAMES[:25]), short)):
        raw["observation"] = names
        bad = tmp_path / "bad.pt"
        torch.save(raw, bad)
        with pytest.raises(CheckpointError, match=words) as e:
            load_model(bad)
        assert "\n" not in str(e.value)


def test_policy_agent_plays_legal_moves(tmp_path: Path) -> None:
    path = save_checkpoint(tmp_path / "a.pt", _net(), {}, {"global_step": 7})
    for greedy in (True, False):
        agent = load_policy_agent(path, greedy=greedy)
        assert "a.pt" in agent.name
        s = ce.new_game(1)
        rng = np.random.default_rng(0)
        for _ in range(30):
            a = agent.act(s, rng)
            assert ce.is_legal(s, a)
            s = ce.apply_action(s, a)
    # Greedy play takes one of the most probable actions (near-ties within NEAR_TIE_NATS).
    agent = load_policy_agent(path, greedy=True)
    s = ce.new_game(2)
    ids, probs, _ = agent.policy(s)
    assert probs.sum() == pytest.approx(1.0) and sorted(ids) == sorted(ce.legal_actions(s))
    chosen = {agent.act(s, np.random.default_rng(k)) for k in range(20)}
    best = np.log(probs).max()
    assert all(np.log(probs[list(ids).index(a)]) >= best - agents.NEAR_TIE_NATS for a in chosen)


def test_near_tie_width_bounds_greedy_play(tmp_path: Path) -> None:
    """`tie_nats` 0 plays the single most likely action; a wide one spreads over several; bad widths are refused."""
    path = save_checkpoint(tmp_path / "a.pt", _net(), {}, {})
    model, _ = load_model(path)
    s = ce.new_game(2)
    strict = agents.PolicyAgent(model, "strict", tie_nats=0.0)
    ids, probs, _ = strict.policy(s)
    assert {strict.act(s, np.random.default_rng(k)) for k in range(10)} == {int(ids[np.argmax(probs)])}
    wide = agents.PolicyAgent(model, "wide", tie_nats=50.0)
    assert len({wide.act(s, np.random.default_rng(k)) for k in range(40)}) > 1
    for bad in (-0.1, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(ValueError, match="tie_nats must be a finite number >= 0"):
            agents.PolicyAgent(model, "bad", tie_nats=bad)


def test_policy_play_probe_averages_over_symmetries_and_runs(tmp_path: Path, capsys) -> None:
    """examples/policy_play_probe.py (docs/zero.md, "Play-time settings of the shipped agent"): the symmetry-averaged
    policy gives a position and its mirror image the same probabilities (the plain one, on a random network, does
    not), and the probe plays one row per variant."""
    from helpers import load_example

    from colony_env import symmetry

    probe = load_example("policy_play_probe.py")
    torch.manual_seed(1)
    net = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1, heuristic_prior=True)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    averaged, plain = probe.SymmetricPolicyAgent(net, "sym"), agents.PolicyAgent(net, "plain")
    s = ce.new_game(5)
    rng = np.random.default_rng(0)
    for _ in range(7):  # blue to move, off the opening
        s = ce.apply_action(s, int(rng.choice(ce.legal_actions(s))))
    assert s.to_move == ce.BLUE
    mirrored = symmetry.transform_state(s, symmetry.FLIP_EW)
    for agent, equal in ((averaged, True), (plain, False)):
        ids, probs, _ = agent.policy(s)
        ids_m, probs_m = agent.policy(mirrored)[:2]
        image = dict(zip(symmetry.transform_action(ids, symmetry.FLIP_EW).tolist(), probs))
        assert sorted(image) == sorted(ids_m.tolist())
        assert np.allclose([image[a] for a in ids_m.tolist()], probs_m, atol=1e-9) is equal
        assert probs.sum() == pytest.approx(1.0)
    path = save_checkpoint(tmp_path / "h.pt", net, {}, {})
    rows = probe.main([str(path), "--games", "2", "--seed", "3", "--ties", "0,0.5", "--sample", "--symmetries", "0.5"])
    assert [r[0] for r in rows] == ["ties 0", "ties 0.5", "sampled", "4 symmetries, ties 0.5"]
    assert all(r[1] == 2 == r[2] + r[3] + r[4] and 0 <= r[5] <= 1 for r in rows)
    assert len(capsys.readouterr().out.splitlines()) == 5
    for argv, said in (([str(path), "--ties", "abc"], "widths are numbers >= 0 in nats, got 'abc'"),
                       ([str(path), "--games", "3"], "--games must be an even number >= 2"),
                       ([str(tmp_path / "nope.pt")], "does not exist")):
        with pytest.raises(SystemExit):
            probe.main(argv)
        assert said in capsys.readouterr().err


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        load_policy_agent(tmp_path / "nope.pt")


def test_corrupt_and_truncated_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        read_checkpoint(junk)
    good = save_checkpoint(tmp_path / "good.pt", _net(), {}, {})
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        read_checkpoint(cut)


def test_other_file_kinds_and_formats_are_rejected(tmp_path: Path) -> None:
    plain = tmp_path / "plain.pt"
    torch.save({"weights": torch.zeros(3)}, plain)
    with pytest.raises(CheckpointError, match="is not a colony-ppo-checkpoint file"):
        read_checkpoint(plain)
    path = save_checkpoint(tmp_path / "x.pt", _net(), {}, {})
    data = torch.load(path, weights_only=True)
    for key, value, match in [
        ("format_version", 999, "format_version is 999"),
        ("observation", ["opp_1"], "observation is 1 planes"),  # not the encoder's first plane
        ("num_actions", 42, "num_actions is 42"),
    ]:
        bad = dict(data)
        bad[key] = value
        torch.save(bad, tmp_path / "bad.pt")
        with pytest.raises(CheckpointError, match=match):
            read_checkpoint(tmp_path / "bad.pt")
    bad = dict(data)
    bad["architecture"] = {"in_channels": observation.OBS_CHANNELS, "channels": 16, "blocks": 1}
    torch.save(bad, tmp_path / "arch.pt")
    with pytest.raises(CheckpointError, match="do not match its architecture"):
        load_model(tmp_path / "arch.pt")


class _Evil:
    """Unpickling this would run code; weights_only loading must refuse it."""

    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_loading_never_unpickles_arbitrary_objects(tmp_path: Path) -> None:
    path = save_checkpoint(tmp_path / "x.pt", _net(), {}, {})
    data = torch.load(path, weights_only=True)
    data["meta"] = {"payload": _Evil()}
    torch.save(data, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match="unsafe"):
        read_checkpoint(tmp_path / "evil.pt")


def test_crash_mid_save_keeps_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save_checkpoint(tmp_path / "latest.pt", _net(), {"v": 1}, {})
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(ck.torch, "save", boom)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, _net(), {"v": 2}, {})
    assert path.read_bytes() == before
    assert read_checkpoint(path)["config"] == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["latest.pt"]  # no temporary files left behind


def test_target_features_round_trip_and_older_checkpoints_still_load(tmp_path: Path) -> None:
    """A net with the landing-cell head (`policy_target_features`) round-trips; a file saved before
    the option existed (no `target_features` in its architecture) loads without it; the shipped
    agent loads and plays."""
    torch.manual_seed(0)
    net = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1, target_features=True)
    path = save_checkpoint(tmp_path / "t.pt", net, {}, {"global_step": 1})
    loaded, _ = load_model(path)
    assert loaded.target_features and torch.equal(loaded.target_planes.weight, net.target_planes.weight)
    plain = save_checkpoint(tmp_path / "old.pt", PolicyValueNet(observation.OBS_CHANNELS, 8, 1), {}, {"global_step": 1})
    data = torch.load(plain, weights_only=True)
    del data["architecture"]["target_features"]  # as written before the option existed
    torch.save(data, plain)
    old, data = load_model(plain)
    assert "target_features" not in data["architecture"] and not old.target_features
    shipped = Path(__file__).resolve().parents[2] / "checkpoints" / "colony_ppo.pt"
    agent = load_policy_agent(shipped)
    s = ce.new_game(4)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))


def test_global_pool_round_trips_and_files_without_the_flag_load_without_it(tmp_path: Path) -> None:
    """A net with global pooling round-trips (weights and flag); a file written before the flag existed
    loads as a net without it; a file whose flag disagrees with its weights is refused in one line."""
    torch.manual_seed(0)
    net = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=2, global_pool=True)
    path = save_checkpoint(tmp_path / "g.pt", net, {}, {"global_step": 1})
    loaded, data = load_model(path)
    assert loaded.global_pool and data["architecture"]["global_pool"] == 1
    assert torch.equal(loaded.trunk[1].pool_fc.weight, net.trunk[1].pool_fc.weight)
    plain = save_checkpoint(tmp_path / "old.pt", PolicyValueNet(observation.OBS_CHANNELS, 8, 1), {}, {"global_step": 1})
    data = torch.load(plain, weights_only=True)
    del data["architecture"]["global_pool"]  # as written before the option existed
    torch.save(data, plain)
    assert not load_model(plain)[0].global_pool
    data = torch.load(path, weights_only=True)
    data["architecture"]["global_pool"] = 0  # the weights still hold the pooling layers
    torch.save(data, tmp_path / "lie.pt")
    with pytest.raises(CheckpointError, match="do not match its architecture"):
        load_model(tmp_path / "lie.pt")


def test_saved_checkpoint_has_the_usual_file_mode(tmp_path: Path) -> None:
    """Written through mkstemp (0600) but readable like any file this process creates (0666 - umask)."""
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    path = save_checkpoint(tmp_path / "shared.pt", _net(), {}, {})
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_shipped_zero_agent_loads_in_every_form() -> None:
    """checkpoints/colony_zero.pt (docs/zero.md card): generation 7 of configs/zero_pcr.yaml, which
    continued the refitted 64 x 4 network; a checkpoint in the usual format, playable alone and with
    the az search by every tool that takes agent specs."""
    from colony_training.eval.agent_specs import make_agent

    shipped = Path(__file__).resolve().parents[2] / "checkpoints" / "colony_zero.pt"
    assert shipped.stat().st_size < 5_000_000
    data = torch.load(shipped, weights_only=True)
    meta, arch = data["meta"], data["architecture"]
    assert (meta["trainer"], meta["generation"], meta["games"], meta["positions"]) == ("colony-zero", 7, 512, 57_491)
    start = meta["init_from"]  # the numbers the card quotes, down to the refit it started from
    assert (start["trainer"], start["positions"], start["held_out_positions"], start["samples"],
            len(start["sources"])) == ("refit", 393_851, 24_346, 600_000, 3)
    assert (arch["channels"], arch["blocks"], arch["heuristic_prior"], arch["ownership_head"]) == (64, 4, 1, 1)
    s = ce.new_game(11)
    for spec in ("checkpoint:checkpoints/colony_zero.pt", "checkpoint:checkpoints/colony_zero.pt:az:8"):
        agent = make_agent(spec.replace("checkpoints/", f"{shipped.parent}/"))
        assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))


def test_endgame_probe_pairs_two_runs_game_by_game(tmp_path: Path, capsys) -> None:
    """examples/endgame_probe.py `paired`: two agents against one opponent, scored on the games that share seed,
    setup and colours (either colour), the mean difference with its interval, and the games one won and the other
    lost; runs without a shared game are refused on one line."""
    import json

    from helpers import load_example

    probe = load_example("endgame_probe.py")

    def run(agent: str, outcomes: list[str], seed: int = 7) -> list[dict]:
        """Records of `agent` against "opp": game i at setup i // 2, colours swapped on odd i; W/D/L for the agent."""
        games = []
        for i, o in enumerate(outcomes):
            names = {"red": "opp", "blue": agent} if i % 2 else {"red": agent, "blue": "opp"}
            mine = "blue" if i % 2 else "red"
            result = {"W": mine, "L": "blue" if mine == "red" else "red", "D": "draw"}[o]
            games.append({"agents": names, "result": result, "end_reason": "grace", "actions": [],
                          "initial_state": {}, "meta": {"seed": seed, "setup": i // 2, "swapped": i % 2}})
        return games

    a = run("a", ["W", "W", "L", "D", "W", "W"])
    b = run("b", ["W", "L", "W", "L", "W", "D"])
    out = probe.paired(a, b, "opp")
    diffs = np.array([0, 1, -1, 0.5, 0, 0.5])
    assert out["n"] == 6 and out["first"] == pytest.approx(4.5 / 6) and out["second"] == pytest.approx(3.5 / 6)
    assert out["diff"] == pytest.approx(diffs.mean())
    assert out["ci"] == pytest.approx(1.96 * diffs.std(ddof=1) / np.sqrt(6))
    assert (out["first_only"], out["second_only"]) == (1, 1)
    # only the shared games count: b's extra setup and a's games on another seed are left out
    out = probe.paired(a + run("a", ["L", "L"], seed=8), b + run("b", ["W"] * 8)[6:], "opp")
    assert out["n"] == 6 and out["diff"] == pytest.approx(diffs.mean())
    fa, fb = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    fa.write_text("".join(json.dumps(g) + "\n" for g in a))
    fb.write_text("".join(json.dumps(g) + "\n" for g in b))
    capsys.readouterr()
    assert probe.main(["paired", str(fa), str(fb), "--opponent", "opp"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("6 shared games against opp: first 0.750, second 0.583; difference +0.167 +-")
    assert line.endswith("the first won 1 that the second lost, the second won 1 that the first lost")
    fb.write_text("".join(json.dumps(g) + "\n" for g in run("b", ["W"] * 6, seed=9)))
    assert probe.main(["paired", str(fa), str(fb), "--opponent", "opp"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["endgame_probe: the two runs share 0 game(s) against 'opp'; pairing needs at least 2 (two "
                   "colony-eval runs with the same --seed and opponent)"]
    fb.write_text(json.dumps({k: v for k, v in b[0].items() if k != "agents"}) + "\n")
    missing = r"^endgame_probe: .*b\.jsonl line 1 is not a game record: record is missing field\(s\) \['agents'\]"
    with pytest.raises(SystemExit, match=missing):
        probe.main(["paired", str(fa), str(fb), "--opponent", "opp"])


def test_endgame_probe_counts_results_by_end_reason_and_hand_overs(tmp_path: Path, capsys) -> None:
    """examples/endgame_probe.py (docs/zero.md, "Where the agent loses"): `results` counts each game of the agent
    once under its result and end reason (either colour), finds the lost games where it let the opponent win at
    once, and `values` prints one row per phase the games reached."""
    import json

    from helpers import load_example, minimax, minimax_after

    from colony_training.eval.records import GameRecord

    probe = load_example("endgame_probe.py")
    records, want = [], {}
    for seed in range(12):
        rng = np.random.default_rng(seed)
        s0 = s = ce.new_game(seed)
        actions = []
        while not s.is_over:
            a = int(rng.choice(ce.legal_actions(s)))
            actions.append(a)
            s = ce.apply_action(s, a)
        names = {"red": "rnd", "blue": "other"} if seed % 2 else {"red": "other", "blue": "rnd"}
        rec = GameRecord.from_game(s0, actions, names).to_json()
        records.append(rec)
        mine = "red" if names["red"] == "rnd" else "blue"
        res = "D" if rec["result"] not in ("red", "blue") else ("W" if rec["result"] == mine else "L")
        want[(res, rec["end_reason"])] = want.get((res, rec["end_reason"]), 0) + 1
    path = tmp_path / "games.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = probe.results(probe._games([str(path)]), "rnd")
    assert dict(out["table"]) == want
    lost = sum(n for (res, _), n in want.items() if res == "L")
    assert sum(out["handed"].values()) == lost > 0
    assert out["handed"]["avoidable"] + out["handed"]["forced"] >= 1  # random play hands over wins
    assert probe.main(["results", str(path), "--agent", "rnd"]) == 0
    assert probe.main(["results", str(path), "--agent", "nobody"]) == 2
    # `proven`: the compiled solver's verdicts, per game, against plain minimax over the public engine
    kinds = collections.Counter()
    for rec in records:
        mine = ce.Colour.RED if rec["agents"]["red"] == "rnd" else ce.Colour.BLUE
        kind = "neither"
        for _, st, a in probe._positions(rec):
            if st.to_move != mine or sum(ce.connected_counts(st)) < 20:
                continue
            before, after = minimax(st, 2), minimax_after(st, a, 1)
            if kind == "neither":
                kind = "lost before" if before == -1 else ("into a loss" if after == -1 else kind)
        res = "D" if rec["result"] not in ("red", "blue") else ("W" if rec["result"] == mine.name.lower() else "L")
        kinds[(res, kind)] += 1
    got = probe.proven(probe._games([str(path)]), "rnd", 2, 20)
    assert dict(got["table"]) == dict(kinds) and got["looked"] > 0
    assert sum(got["first_lost"].values()) == sum(n for (_, k), n in kinds.items() if k == "lost before")
    assert all(20 <= c <= 22 for c in got["first_lost"])
    assert kinds[("L", "into a loss")] + kinds[("W", "into a loss")] >= 1  # random moves walk into losses
    assert probe.main(["proven", str(path), "--agent", "rnd", "--plies", "2", "--from", "20"]) == 0
    assert "moved into a proven loss" in capsys.readouterr().out
    net = PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1)
    ck = save_checkpoint(tmp_path / "n.pt", net, {}, {})
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    capsys.readouterr()
    assert probe.main(["values", str(ck), str(few)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\s*\d+-\d+ ", line)]
    assert len(rows) >= 3  # random games pass through the phases up to their end
    with pytest.raises(SystemExit, match="^endgame_probe: checkpoint .* does not exist$"):  # one line
        probe.main(["values", str(tmp_path / "none.pt"), str(few)])
    timed = probe.cost(["greedy", "random"], probe._games([str(few)]), positions=9)
    assert [len(r) for r in timed.values()] == [9, 9] and all(t >= 0 for r in timed.values() for _, t in r)
    assert probe.main(["cost", str(few), "--agents", "greedy", "--positions", "4"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("greedy")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(SystemExit, match="line 1 is not a game record"):
        probe.main(["results", str(bad), "--agent", "rnd"])
    broken = dict(records[0], actions=[*records[0]["actions"][:3], 99999])
    bad.write_text(json.dumps(broken) + "\n")
    replay_error = "^endgame_probe: a game record does not replay: "
    with pytest.raises(SystemExit, match=replay_error + "action 4 of 4: action 99999 .*R8"):
        probe.main(["choices", str(bad), "--from", "0"])
    bad.write_text(json.dumps({k: v for k, v in records[0].items() if k != "actions"}) + "\n")
    missing = r"^endgame_probe: .*bad\.jsonl line 1 is not a game record: record is missing field\(s\) \['actions'\]"
    for command in (["results", str(bad), "--agent", "rnd"], ["choices", str(bad)]):
        with pytest.raises(SystemExit, match=missing):  # checked on reading, before any subcommand uses it
            probe.main(command)
    bad.write_text(json.dumps({k: v for k, v in records[0].items() if k != "agents"}) + "\n")
    with pytest.raises(SystemExit, match=missing.replace("actions", "agents")):  # was a KeyError in `results`
        probe.main(["results", str(bad), "--agent", "rnd"])
    # choices: one row per second late position with a choice, the mover's name, reproducible
    games = probe._games([str(path)])
    want_rows = []
    for game in games:
        for i, s, _ in probe._positions(game):
            if i % 2 == 0 and sum(ce.connected_counts(s)) >= 15 and len(ce.legal_actions(s)) > 1:
                want_rows.append((game["agents"][("red", "blue")[int(s.to_move)]], sum(ce.connected_counts(s))))
    rows = probe.choices(games, 15, 8)
    assert [r[:2] for r in rows] == want_rows and len(rows) > 20
    assert rows == probe.choices(games, 15, 8)
    assert np.mean([r[3] for r in rows]) > 0  # a random move is worse than the judged best on average
    assert probe.main(["choices", str(path), "--from", "15", "--playouts", "4"]) == 0
    assert {line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]} == {"rnd", "other"}
    with pytest.raises(SystemExit):
        probe.main(["choices", str(path), "--from", "24"])
    assert "--from in 0..23" in capsys.readouterr().err


def test_value_refit_changes_the_value_head_alone(tmp_path: Path, capsys) -> None:
    """examples/value_refit.py (docs/zero.md, "The candidate's search, and the value head refitted"): fitted to
    recorded games and a resume point's sample, only the value head's weights move (the policy is the start's,
    exactly), each epoch is written with the held-out table, and bad input is one line."""
    import json

    from helpers import load_example, tiny_zero_run

    from colony_training.eval.agent_specs import make_agent
    from colony_training.eval.records import GameRecord
    from colony_training.zero import train as zero_train

    refit = load_example("value_refit.py")
    run = tiny_zero_run(tmp_path / "runs")
    point = tmp_path / "point.pt"
    assert zero_train.main(["--export-resume", str(run), str(point), "--resume-positions", "40"]) == 0
    records = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        s0 = s = ce.new_game(seed, max_plies=60)
        actions = []
        while not s.is_over:
            actions.append(int(rng.choice(ce.legal_actions(s))))
            s = ce.apply_action(s, actions[-1])
        records.append(GameRecord.from_game(s0, actions, {"red": "a", "blue": "b"}).to_json())
    fit, held = tmp_path / "fit.jsonl", tmp_path / "held.jsonl"
    fit.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    held.write_text(json.dumps(records[3]) + "\n")
    states, results, connected, movers = refit.record_positions([str(fit)])
    assert len(states) == len(results) == len(connected) == len(movers) > 100
    assert set(np.unique(results)) <= {-1.0, 0.0, 1.0} and set(movers) == {"a", "b"}
    rows = refit.by_mover(results, results, connected, movers, up_to=23)  # a "head" that knows the results
    assert [(name, n) for name, n, _, _ in rows] == [(m, int((movers == m).sum())) for m in ("a", "b")]
    assert all(v == z for _, _, v, z in rows)
    start = run / "checkpoints" / "latest.pt"
    capsys.readouterr()
    assert refit.main([str(start), "--records", str(fit), "--held-out", str(held), "--anchor", str(point),
                       "--epochs", "2", "--batch", "32", "--playouts", "2", "--threads", "1",
                       "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "+ 40 of the anchor's sample" in printed and len(re.findall(r"^epoch \d", printed, re.M)) == 2
    before, _ = load_model(start)
    after, data = load_model(tmp_path / "out" / "epoch_1.pt")
    moved = {n for n, p in before.state_dict().items() if not torch.equal(p, after.state_dict()[n])}
    assert moved and all(n.startswith(refit.VALUE_PARTS) for n in moved)  # nothing outside the value head
    assert data["meta"]["value_head"] == "tanh" and data["meta"]["value_refit"]["epoch"] == 1
    s = ce.new_game(3)
    for spec in ("checkpoint:{}", "checkpoint:{}:az:4"):  # an ordinary checkpoint for every tool
        agent = make_agent(spec.format(tmp_path / "out" / "epoch_1.pt"))
        assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))
    with pytest.raises(SystemExit, match="^value_refit: --out .* exists and is not an empty folder"):  # one line
        refit.main([str(start), "--records", str(fit), "--held-out", str(held), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit, match=r"^value_refit: --mix 2\.0 is out of range: a number in \[0, 1\]$"):
        refit.main([str(start), "--records", str(fit), "--held-out", str(held), "--mix", "2",
                    "--out", str(tmp_path / "o2")])
    ppo = save_checkpoint(tmp_path / "ppo.pt", PolicyValueNet(observation.OBS_CHANNELS, channels=8, blocks=1), {}, {})
    with pytest.raises(SystemExit, match="^value_refit: .* is not a colony-zero network"):
        refit.main([str(ppo), "--records", str(fit), "--held-out", str(held), "--out", str(tmp_path / "o3")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(dict(records[0], actions=[*records[0]["actions"][:3], 99999])) + "\n")
    with pytest.raises(SystemExit, match="^value_refit: .*bad.jsonl: game 1 does not replay: action 4 of 4"):
        refit.main([str(start), "--records", str(bad), "--held-out", str(held), "--out", str(tmp_path / "o4")])
