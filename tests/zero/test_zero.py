"""colony-zero: value targets, replay buffer, a tiny end-to-end run with resume, the az agent spec, errors."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import symmetry
from colony_env.agents.az import SearchConfig
from colony_env.constants import I_TO_MOVE
from colony_env.observation import OBS_CHANNELS, encode_observation
from colony_training.agents import NetworkEvaluator, load_policy_agent
from colony_training.checkpoint import CheckpointError, read_checkpoint
from colony_training.config import ConfigError, load_config
from colony_training.eval.agent_specs import (AZ_C_SCALE_DEFAULT, AZ_LEAF_DEFAULT, AgentSpecError, make_agent,
                                              parse_agent_spec)
from colony_training.eval.evaluate import main as evaluate_main
from colony_training.model import PolicyValueNet
from colony_training.zero import train as zero_train
from colony_training.zero.config import ZeroConfig
from colony_training.zero.plot import plot_runs
from colony_training.zero.replay import ReplayBuffer, ReplayError, make_batch, read_shard, shard_path, write_shard
from colony_training.zero.selfplay import outcomes, play_games

REPO = Path(__file__).resolve().parents[2]
TINY = ["--channels", "8", "--blocks", "1", "--games-per-generation", "4", "--parallel-games", "4",
        "--simulations", "4", "--max-considered", "4", "--workers", "1", "--max-plies", "40", "--eval-games", "2",
        "--eval-every", "0", "--batch-size", "32", "--keep-checkpoints", "1"]


def random_game(seed: int) -> tuple[np.ndarray, ce.GameState]:
    """Packed states of a uniformly random game and its final state."""
    rng = np.random.default_rng(seed)
    s = ce.new_game(seed)
    states = []
    while not s.is_over:
        states.append(s._a.copy())
        legal = ce.legal_actions(s)
        s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    return np.stack(states), s


def test_value_targets_follow_the_mover_in_grace_endings():
    """R6.3: during grace one colour moves several times in a row; each position's target is its mover's result."""
    found = 0
    for seed in range(60):
        states, final = random_game(seed)
        if final.end_reason != "grace" or final.winner is None:
            continue
        z = outcomes(states, final)
        movers = states[:, I_TO_MOVE]
        winner = int(final.winner)
        assert np.all(z[movers == winner] == 1.0) and np.all(z[movers != winner] == -1.0)
        repeats = np.flatnonzero(movers[1:] == movers[:-1])
        assert len(repeats) > 0  # the grace colour moved twice in a row
        assert np.all(z[repeats] == z[repeats + 1])  # same mover, same target (not alternating signs)
        found += 1
        if found >= 3:
            break
    assert found >= 3, "random play should end by grace with a winner within 60 games"


def test_value_targets_for_red_and_blue_wins():
    seen = set()
    for seed in range(40):
        states, final = random_game(seed)
        if final.winner is None:
            continue
        z = outcomes(states, final)
        red = states[:, I_TO_MOVE] == 0
        sign = 1.0 if final.winner == ce.Colour.RED else -1.0
        assert np.all(z[red] == sign) and np.all(z[~red] == -sign)
        seen.add(int(final.winner))
    assert seen == {0, 1}


def tiny_net(seed: int = 0) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(OBS_CHANNELS, 8, 1, False, True).eval()


def test_self_play_records_consistent_positions():
    data = play_games(NetworkEvaluator(tiny_net()), SearchConfig(simulations=4, max_considered=4), [1, 2, 3], 2, 40,
                      np.random.default_rng(0))
    assert len(data.game_lengths) == 3 and data.n_positions == int(data.game_lengths.sum())
    assert data.offsets[-1] == len(data.target_ids) and np.all(np.diff(data.offsets) >= 1)
    for p in range(data.n_positions):
        s = ce.GameState.from_array(data.states[p])
        colour = int(s.to_move)
        ids = data.target_ids[data.offsets[p]: data.offsets[p + 1]].astype(np.int64)
        board = ce.symmetry.canonical_action_to_board(ids, colour)
        assert np.array_equal(np.sort(board), ce.legal_actions(s))  # one target entry per legal action
        probs = data.target_probs[data.offsets[p]: data.offsets[p + 1]]
        assert abs(probs.sum() - 1) < 1e-5
    assert set(np.unique(data.outcome)) <= {-1.0, 0.0, 1.0}


def test_selfplay_int8_plays_with_the_int8_copy_in_process_and_in_workers(monkeypatch):
    """`selfplay_int8`: self-play's searches use `quantize.int8_copy` of the network (in the trainer's own
    process and in a worker's), the games are ordinary games; the learner's network stays float32."""
    from colony_training.zero import selfplay

    used = []
    real = selfplay.play_games

    def spy(evaluator, *args, **kwargs):
        used.append(evaluator.model.int8_body)
        return real(evaluator, *args, **kwargs)

    monkeypatch.setattr(selfplay, "play_games", spy)
    monkeypatch.setattr(zero_train, "play_games", spy)
    net = tiny_net()
    cfg = ZeroConfig(channels=8, blocks=1, games_per_generation=2, parallel_games=2, simulations=2, max_considered=2,
                     max_plies=30, workers=1, selfplay_int8=True)
    data = zero_train.self_play(net, cfg, 0, None, torch.device("cpu"))
    weights = {k: v.detach().clone() for k, v in net.state_dict().items()}
    worker = selfplay.worker_play(net.architecture(), weights, SearchConfig(simulations=2, max_considered=2), [5], 1,
                                  30, 0, 1, "cpu", 0.0, 0, None, 1.0, True)
    plain = selfplay.worker_play(net.architecture(), weights, SearchConfig(simulations=2, max_considered=2), [5], 1,
                                 30, 0, 1, "cpu")
    assert used == [True, True, False] and not net.int8_body
    assert data.game_lengths.size == 2 and worker.n_positions > 0 and plain.n_positions > 0
    for d in (data, worker):
        for row in d.states:
            state = ce.GameState.from_array(row)
            assert not state.is_over and len(ce.legal_actions(state)) > 0


def test_selfplay_late_leaf_playouts_reach_the_evaluator_in_process_and_in_workers(monkeypatch):
    """`rollout_playouts` / `rollout_from` shape self-play's leaf mix as `az:N:r=X:rn=N:rfrom=K` shapes the agent's."""
    from colony_env.agents.az import RolloutMixEvaluator
    from colony_training.zero import selfplay

    used = []
    real = selfplay.play_games

    def spy(evaluator, *args, **kwargs):
        used.append((type(evaluator), getattr(evaluator, "mix", None), getattr(evaluator, "playouts", None),
                     getattr(evaluator, "from_connected", None)))
        return real(evaluator, *args, **kwargs)

    monkeypatch.setattr(selfplay, "play_games", spy)
    monkeypatch.setattr(zero_train, "play_games", spy)
    net = tiny_net()
    cfg = ZeroConfig(channels=8, blocks=1, games_per_generation=2, parallel_games=2, simulations=2, max_considered=2,
                     max_plies=30, workers=1, rollout_mix=0.75, rollout_playouts=3, rollout_from=17).finalize()
    data = zero_train.self_play(net, cfg, 0, None, torch.device("cpu"))
    weights = {k: v.detach().clone() for k, v in net.state_dict().items()}
    worker = selfplay.worker_play(net.architecture(), weights, SearchConfig(simulations=2, max_considered=2), [5], 1,
                                  30, 0, 1, "cpu", 0.75, 0, None, 1.0, False, 3, 17)
    assert used == [(RolloutMixEvaluator, 0.75, 3, 17)] * 2
    assert data.game_lengths.size == 2 and worker.n_positions > 0
    for bad, said in (({"rollout_playouts": 0}, r"integer in 1\.\.1000"), ({"rollout_from": -1}, r"integer in 0\.\.22"),
                      ({"rollout_mix": 0.5, "rollout_playouts": 1001}, r"integer in 1\.\.1000"),
                      ({"rollout_mix": 0.5, "rollout_from": 23}, r"integer in 0\.\.22"),
                      ({"simulations": 1_000_001}, r"integer in 1\.\.1000000"), ({"max_considered": 1922}, "1921"),
                      ({"eval_simulations": 1_000_001}, r"integer in 0\.\.1000000"),
                      ({"eval_opponents": ["mcts:1000001"]}, r"mcts:N \(N in 1\.\.1000000\)"),
                      ({"rollout_playouts": 16}, "unless rollout_mix > 0"), ({"rollout_from": 17}, "unless rollout_mix")):
        with pytest.raises(ConfigError, match=said):
            ZeroConfig(**bad).finalize()


def test_replay_shards_round_trip_and_buffer_resume(tmp_path):
    net = tiny_net()
    parts = [play_games(NetworkEvaluator(net), SearchConfig(simulations=2, max_considered=2), [g], 1, 30,
                        np.random.default_rng(g)) for g in range(4)]
    for g, d in enumerate(parts):
        write_shard(shard_path(tmp_path, g), d)
    back = read_shard(shard_path(tmp_path, 2))
    for k, v in parts[2].arrays().items():
        np.testing.assert_array_equal(getattr(back, k), v)
    # capacity: whole generations, newest kept; up_to ignores later shards (a generation whose fit never ran)
    cap = parts[1].n_positions + parts[2].n_positions
    buf = ReplayBuffer.load(tmp_path, cap, up_to=2)
    assert len(buf) == cap
    np.testing.assert_array_equal(buf.flat().states, np.concatenate([parts[1].states, parts[2].states]))
    live = ReplayBuffer(cap)
    for d in parts[:3]:
        live.add(d)
    np.testing.assert_array_equal(live.flat().states, buf.flat().states)
    # a minibatch: padded ids align with the stored targets
    _, obs, ids, probs, valid, z = make_batch(buf.flat(), np.array([0, 1, 5]), 0.0)
    assert obs.shape[1] == OBS_CHANNELS and ids.shape == probs.shape == valid.shape
    assert set(np.unique(z)) <= {-1.0, 0.0, 1.0}
    assert np.allclose(probs.sum(1), 1, atol=1e-5) and np.all(probs[~valid] == 0)
    # a damaged shard is refused in one line
    shard_path(tmp_path, 3).write_bytes(b"not a shard")
    with pytest.raises(ReplayError, match="gen_000003"):
        ReplayBuffer.load(tmp_path, 10**6, up_to=3)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_tiny_run_resume_and_evaluate(tmp_path, capsys):
    out = tmp_path / "runs"
    assert zero_train.main(["--out-dir", str(out), "--generations", "2", "--no-progress", *TINY]) == 0
    run = next(out.iterdir())
    latest = run / "checkpoints" / "latest.pt"
    data = read_checkpoint(latest)
    assert data["generation"] == 1 and data["meta"]["trainer"] == "colony-zero"
    assert [r["generation"] for r in rows(run / "metrics.csv")] == ["0", "1"]
    assert {r["opponent"] for r in rows(run / "eval.csv")} == {"random", "greedy"}
    # a generation played but never fitted (killed): its shard is dropped and the generation replayed
    stray = shard_path(run, 2)
    stray.write_bytes(b"half")
    assert zero_train.main(["--resume", str(run), "--generations", "3", "--no-progress"]) == 0
    assert [r["generation"] for r in rows(run / "metrics.csv")] == ["0", "1", "2"]
    assert read_checkpoint(latest)["generation"] == 2
    assert read_shard(stray).n_positions > 0
    # every tool loads it: the policy alone and the network-guided search
    agent = load_policy_agent(latest)
    s = ce.new_game(0)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))
    az = make_agent(f"checkpoint:{latest}:az:8")
    assert ce.is_legal(s, az.act(s, np.random.default_rng(0)))
    assert evaluate_main([f"checkpoint:{latest}:az:4:puct", "random", "--games", "2", "--workers", "1",
                          "--no-progress", "--out", str(tmp_path / "ev")]) == 0
    assert "az:4:puct" in capsys.readouterr().out
    png = plot_runs([run], tmp_path / "curve.png")
    assert png.stat().st_size > 10_000
    # the learnability probe (examples/) reads the run's shards and fits both targets
    probe = subprocess.run([sys.executable, str(REPO / "examples" / "zero_learnability_probe.py"), str(run),
                            "--steps", "2"], capture_output=True, text=True, check=False, cwd=REPO)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert "greedy one-hot  step    0" in probe.stdout and "search targets  step    2" in probe.stdout
    # a run started from this one records its starting point, through its own resume, so that a
    # card can add up the compute behind an agent
    child_out = tmp_path / "child"
    assert zero_train.main(["--out-dir", str(child_out), "--generations", "1", "--no-progress",
                            "--init-from", str(latest), *TINY]) == 0
    child = next(child_out.iterdir())
    assert zero_train.main(["--resume", str(child), "--generations", "2", "--no-progress"]) == 0
    meta = read_checkpoint(child / "checkpoints" / "latest.pt")["meta"]
    assert meta["generation"] == 1 and meta["games"] == 8
    assert meta["init_from"]["path"] == str(latest) and meta["init_from"]["generation"] == 2
    assert meta["init_from"]["games"] == data["meta"]["games"] + 4


@pytest.mark.parametrize("argv, message", [
    (["--generations", "0"], "generations"),
    (["--root", "alpha"], "root"),
    (["--learning-rate", "inf"], "learning_rate"),
    (["--eval-opponents", "checkpoint:x"], "eval_opponents"),
    (["--no-such-key", "1"], "unknown config key"),
    (["--init-from", "missing.pt"], "init_from"),
])
def test_bad_settings_fail_in_one_line(argv, message, capsys, tmp_path):
    assert zero_train.main(["--out-dir", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("colony-zero: error:") and message in err[0]
    assert not any(tmp_path.iterdir())  # nothing written for a run that never started


def test_resume_refuses_what_it_cannot_honour(tmp_path, capsys):
    assert zero_train.main(["--resume", str(tmp_path / "nope"), "--no-progress"]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    out = tmp_path / "runs"
    assert zero_train.main(["--out-dir", str(out), "--generations", "1", "--no-progress", *TINY]) == 0
    run = next(out.iterdir())
    before = (run / "config.yaml").read_text()
    assert zero_train.main(["--resume", str(run), "--channels", "16"]) == 2
    assert "cannot change channels" in capsys.readouterr().err
    assert (run / "config.yaml").read_text() == before


def test_az_spec_parsing():
    spec = parse_agent_spec("checkpoint:a/b.pt:az:50:puct:c=2:m=8:noise=0:r=0.5")
    assert spec.path == "a/b.pt" and spec.az_simulations == 50
    assert dict(spec.az_options) == {"root": "puct", "c_puct": 2.0, "max_considered": 8, "gumbel_scale": 0.0,
                                     "rollout_mix": 0.5}
    play = {**AZ_LEAF_DEFAULT, "c_scale": AZ_C_SCALE_DEFAULT}  # what az:N plays with unless told otherwise
    assert dict(parse_agent_spec("zero:az:200:BF16").az_options) == {**play, "bf16": True}
    assert dict(parse_agent_spec("zero:az:200:rn=4").az_options) == {**play, "rollout_playouts": 4}
    assert dict(parse_agent_spec("zero:az:200:r=0").az_options) == {"rollout_mix": 0.0, "c_scale": 1.0}
    assert dict(parse_agent_spec("zero:az:200:cs=0.05").az_options) == {**play, "c_scale": 0.05}
    for bad in ("checkpoint:a.pt:az:5:bf16=1", "checkpoint:a.pt:az:5:bf17"):
        with pytest.raises(AgentSpecError, match="bf16 \\(bfloat16 convolutions\\)"):
            parse_agent_spec(bad)
    for bad in ("checkpoint:a.pt:az:0", "checkpoint:a.pt:az:x", "checkpoint:a.pt:az:5:zz", "checkpoint::az:5",
                "checkpoint:a.pt:az:5:c=-1", "checkpoint:a.pt:az:5:r=1.5", "checkpoint:a.pt:az:5:r=-0.1",
                "checkpoint:a.pt:az:5:cs=-1", "checkpoint:a.pt:az:5:cs=x"):
        with pytest.raises(AgentSpecError):
            parse_agent_spec(bad)
    with pytest.raises(AgentSpecError, match="not found"):
        make_agent("checkpoint:missing.pt:az:5")


def test_rollout_mix_schedule():
    """The playout share falls linearly to 0 over rollout_mix_generations (0: constant)."""
    cfg = ZeroConfig(rollout_mix=0.8, rollout_mix_generations=4).finalize()
    assert [cfg.rollout_mix_at(g) for g in range(6)] == pytest.approx([0.8, 0.6, 0.4, 0.2, 0.0, 0.0])
    assert ZeroConfig(rollout_mix=0.5).finalize().rollout_mix_at(100) == 0.5
    with pytest.raises(ConfigError, match="rollout_mix"):
        ZeroConfig(rollout_mix=1.5).finalize()


def test_traced_evaluator_matches_eager_at_every_batch_shape():
    """The frozen trace (made at the first call's shapes) serves other batch sizes and widths with eager's numbers."""
    torch.manual_seed(0)
    model = PolicyValueNet(OBS_CHANNELS, 8, 1, False, True)
    for p in model.parameters():
        p.data.normal_(0.0, 0.1)  # non-trivial logits and values
    states = [ce.new_game(s) for s in range(5)]
    fast, eager = NetworkEvaluator(model), NetworkEvaluator(model, trace=False)
    for n, width in [(3, 40), (5, None), (1, 7)]:  # the first call fixes the trace's example shapes
        packed = np.stack([s._a for s in states[:n]]).astype(np.int32)
        obs = np.stack([encode_observation(s, s.to_move) for s in states[:n]]).astype(np.float32)
        legal = [symmetry.board_action_to_canonical(ce.legal_actions(s), s.to_move) for s in states[:n]]
        w = width or max(len(x) for x in legal)
        ids = np.zeros((n, w), np.int16)
        for k, x in enumerate(legal):
            ids[k, : min(w, len(x))] = x[:w]
        la, va = fast(packed, obs, ids, np.full(n, w, np.int32))
        lb, vb = eager(packed, obs, ids, np.full(n, w, np.int32))
        assert la.shape == (n, w) and va.shape == (n,)
        np.testing.assert_allclose(la, lb, atol=1e-5)
        np.testing.assert_allclose(va, vb, atol=1e-6)
    assert fast._traced is not None and eager._traced is None


def test_value_reading_follows_each_trainer_and_reaches_the_az_search():
    """colony-zero's head reads through tanh; a PPO head is linear and, with shaping, learns V - Phi (V = head + Phi,
    clipped); `load_az_agent` and the web analysis read a checkpoint's head its trainer's way."""
    from colony_training.agents import ValueReading, load_az_agent
    from colony_training.bench_zero import leaf_batch
    from colony_training.checkpoint import load_model
    from colony_training.ppo.shaping import mover_potential

    zero, ppo = REPO / "checkpoints" / "colony_zero.pt", REPO / "checkpoints" / "colony_ppo.pt"
    assert ValueReading.of_checkpoint(read_checkpoint(zero)) == ValueReading(tanh=True)
    assert ValueReading.of_checkpoint(read_checkpoint(ppo)) == ValueReading(tanh=False, shaping_scale=0.5)
    assert ValueReading.of_checkpoint({"config": {"trainer": "rllib"}, "meta": {}}) == ValueReading(tanh=False)
    states = []
    for seed in range(40):  # positions where someone already controls a colony, so Phi is not 0
        state, rng = ce.new_game(seed), np.random.default_rng(seed)
        for _ in range(60):
            if state.is_over:
                break
            state = ce.apply_action(state, int(rng.choice(ce.legal_actions(state))))
        if not state.is_over:
            states.append(state)
    packed = np.stack([s._a for s in states]).astype(np.int32)
    phi = mover_potential(packed, 0.5)
    assert np.count_nonzero(phi) >= 5 and set(np.sign(phi[phi != 0])) == {-1.0, 1.0}
    heads = np.linspace(-1.5, 1.5, len(states))
    np.testing.assert_allclose(ValueReading(tanh=True)(heads, packed), np.tanh(heads))
    np.testing.assert_allclose(ValueReading(tanh=False)(heads, packed), np.clip(heads, -1, 1))
    np.testing.assert_allclose(ValueReading(tanh=False, shaping_scale=0.5)(heads, packed), np.clip(heads + phi, -1, 1))

    model, _ = load_model(ppo)  # the shipped PPO network through the az search's evaluator
    evaluator = load_az_agent(ppo, 4).search.evaluator
    inputs = leaf_batch(states)  # the evaluator's inputs as the search builds them
    with torch.no_grad():
        head = model.value(torch.from_numpy(inputs[1])).double().numpy()
    _, values = evaluator(*inputs)
    np.testing.assert_allclose(values, np.clip(head + phi, -1, 1), atol=1e-5)


def test_ownership_targets_follow_the_movers_frame():
    """Who controls each cell's colony at the end (R7.1), +1 for the mover, in the mover's canonical frame."""
    from colony_training.augment import AUG_SYMS, augment_cells, augment_planes
    from colony_training.ownership import ownership

    for seed in range(40):
        _, final = random_game(seed)
        if any(c.controller is not None for c in ce.colonies(final)):
            break
    else:
        pytest.fail("no random game with a controlled colony")
    red_pos, blue_pos = final._a.copy(), final._a.copy()
    red_pos[I_TO_MOVE], blue_pos[I_TO_MOVE] = 0, 1
    own = ownership(np.stack([red_pos, blue_pos]).astype(np.int32), final)
    assert own.dtype == np.int8 and own.shape == (2, 100)
    for colony in ce.colonies(final):
        mark = 0 if colony.controller is None else (1 if int(colony.controller) == 0 else -1)
        for r, c in colony.cells:
            assert own[0, r * 10 + c] == mark  # red's frame is the board
            assert own[1, c * 10 + r] == -mark  # blue's is the transposed board, and blue's sign
    assert np.count_nonzero(own[0]) == sum(c.size for c in ce.colonies(final) if c.controller is not None)
    for colour, row in ((0, own[0]), (1, own[1])):  # lines up with the planes the network sees, in every symmetry
        planes = encode_observation(ce.engine._wrap(final._a.copy()), colour)
        occupied = planes[:8].sum(axis=0).reshape(-1) > 0
        assert np.all(occupied[row != 0])
        for sym in AUG_SYMS:  # `augment_cells` moves a target as `augment_planes` moves the planes
            syms = np.array([sym])
            moved = augment_cells(row[None], syms)[0]
            assert np.array_equal(moved, row[symmetry.CELL_GATHER[sym]])
            moved_occupied = augment_planes(planes[None], syms)[0, :8].sum(axis=0).reshape(-1) > 0
            assert np.all(moved_occupied[moved != 0]) and np.count_nonzero(moved) == np.count_nonzero(row)


def test_playout_value_targets_are_the_movers_mean_and_leave_the_games_alone():
    """`value_rollouts`: each position's target is the mean playout result for its mover (red's
    `rollout_values` for red, its negative for blue), and drawing them changes no game."""
    from colony_env.agents._search import rollout_mover_means, rollout_values

    states, _ = random_game(3)
    red = next(s for s in states if s[I_TO_MOVE] == 0)
    blue = next(s for s in states if s[I_TO_MOVE] == 1)
    for s, sign in ((red, 1.0), (blue, -1.0)):
        got = rollout_mover_means(s[None, :].astype(np.int32), 12, 77)[0]
        assert got == sign * rollout_values(s.astype(np.int32), 12, 77)
    cfg = SearchConfig(simulations=4, max_considered=4)
    plain = play_games(NetworkEvaluator(tiny_net()), cfg, [1, 2], 2, 120, np.random.default_rng(0))
    with_mc = play_games(NetworkEvaluator(tiny_net()), cfg, [1, 2], 2, 120, np.random.default_rng(0), value_rollouts=8)
    np.testing.assert_array_equal(plain.states, with_mc.states)
    np.testing.assert_array_equal(plain.target_probs, with_mc.target_probs)
    assert np.all(plain.rollout_value == 0)
    v = with_mc.rollout_value
    assert v.dtype == np.float32 and np.all(np.abs(v) <= 1) and np.any(v != 0)
    assert np.all(np.isclose(v * 8, np.round(v * 8)))  # a mean of 8 results in {-1, 0, +1}
    # the fit's value target mixes result, root value and playout mean by the configured shares
    idx = np.arange(min(6, with_mc.n_positions))
    *_, z = make_batch(with_mc, idx, 0.25, 0.5)
    want = 0.25 * with_mc.outcome[idx] + 0.25 * with_mc.root_value[idx] + 0.5 * v[idx]
    np.testing.assert_allclose(z, want, rtol=1e-6, atol=1e-6)


def test_playout_value_settings_are_checked():
    with pytest.raises(ConfigError, match="rollout_value_mix.*value_rollouts >= 1"):
        ZeroConfig(rollout_value_mix=0.5).finalize()
    with pytest.raises(ConfigError, match="rollout_value_mix.*1 - root_value_mix"):
        ZeroConfig(value_rollouts=4, rollout_value_mix=0.8, root_value_mix=0.5).finalize()
    with pytest.raises(ConfigError, match="value_rollouts"):
        ZeroConfig(value_rollouts=-1).finalize()
    assert ZeroConfig(value_rollouts=4, rollout_value_mix=1.0).finalize().rollout_value_mix == 1.0


@pytest.mark.parametrize("offset", ["-1", "nan", "inf"])
def test_plot_refuses_a_bad_offset(offset, capsys, tmp_path):
    from colony_training.zero.plot import main as plot_main

    assert plot_main([str(tmp_path), "--offset", offset, "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--offset takes finite CPU hours >= 0" in err[0]
    assert not (tmp_path / "c.png").exists()


def test_plot_reads_an_evaluation_csv_and_names_a_missing_column(capsys, tmp_path):
    """The shipped agent's recorded stages plot from their CSV; a CSV without W/D/L is one line."""
    from colony_training.zero.plot import main as plot_main

    out = tmp_path / "lineage.png"
    assert plot_main([str(REPO / "docs" / "shipped_lineage.csv"), "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000
    bad = tmp_path / "bad.csv"
    bad.write_text("cpu_hours,agent,opponent,wins,draws\n1.0,policy,greedy,3,1\n")
    assert plot_main([str(bad), "--out", str(tmp_path / "b.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lacks the column(s) losses" in err[0]
    assert not (tmp_path / "b.png").exists()
    for row in ("1.0,policy,greedy,0,0,0", "1.0,policy,greedy,3,-1,2", "nan,policy,greedy,3,1,2", "x,policy,greedy,1,1,1"):
        bad.write_text("cpu_hours,agent,opponent,wins,draws,losses\n" + row + "\n")
        assert plot_main([str(bad), "--out", str(tmp_path / "b.png")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("python -m colony_training.zero.plot: error:"), err
        assert not (tmp_path / "b.png").exists()


def test_shipped_lineage_rates_as_its_card_says():
    """docs/shipped_lineage.csv holds the card's games: refitted on the ladder they give the card's Elo."""
    import csv

    from colony_training.eval.elo import PairTally, ladder_rating

    with (REPO / "docs" / "shipped_lineage.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["network"] == "checkpoints/colony_zero.pt"]
    for r in rows:
        assert int(r["wins"]) + int(r["draws"]) + int(r["losses"]) == int(r["games"])

    def rating(agent):
        return ladder_rating(agent, [PairTally(agent, r["opponent"], int(r["wins"]), int(r["draws"]), int(r["losses"]))
                                     for r in rows if r["agent"] == agent])

    assert rating("policy")[0] == pytest.approx(842, abs=1)    # docs/zero.md, "On the fixed ladder"
    assert rating("az:200")[0] == pytest.approx(1079, abs=1)


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("zero*.yaml")), ids=lambda p: p.name)
def test_shipped_zero_configs_load(path):
    """Every colony-zero config loads; one that starts from a network the user makes first (its comment
    says how) is checked with that file replaced by a shipped checkpoint."""
    import yaml

    init = yaml.safe_load(path.read_text()).get("init_from", "")
    overrides = {} if not init or (REPO / init).is_file() else {"init_from": str(REPO / "checkpoints" / "colony_zero.pt")}
    if init.startswith("checkpoints/"):
        overrides = {"init_from": str(REPO / init)}
    cfg = load_config(path, overrides, cls=ZeroConfig)
    assert cfg.generations >= 1 and cfg.games_per_generation >= cfg.workers


@pytest.mark.parametrize("path", ["9" * 5000, "a\0b.pt"], ids=["too-long", "nul-byte"])
def test_a_path_the_os_cannot_look_up_is_a_one_line_error(path, tmp_path, capsys):
    """Found by tests/common/test_fuzz_config.py: a 5,000-character init_from raised OSError (name too long)."""
    assert zero_train.main(["--out-dir", str(tmp_path), "--init-from", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "init_from" in err[0]
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(path)


def test_bench_zero_times_shapes_and_bf16_and_int8_fidelity(tmp_path, capsys):
    """`--shape` adds a network to the timings (with a g: global pooling); a checkpoint gets the bf16- and
    int8-against-float32 lines; a bad shape is one line."""
    from colony_env import observation
    from colony_training import bench_zero
    from colony_training.checkpoint import save_checkpoint
    from colony_training.model import PolicyValueNet

    torch.manual_seed(0)
    path = save_checkpoint(tmp_path / "tiny.pt", PolicyValueNet(observation.OBS_CHANNELS, 8, 1, False, True), {}, {})
    assert bench_zero.main(["--games", "2", "--repeats", "1", "--simulations", "1", "--no-compile",
                            "--checkpoint", str(path), "--shape", "8x1", "--shape", "8x1g"]) == 0
    out = capsys.readouterr().out
    assert "shape 8x1: leaf evals/s batched(2)" in out and "shape 8x1g: leaf evals/s batched(2)" in out
    assert f"checkpoint {path} int8: leaf evals/s batched(2)" in out
    for kind in ("bf16", "int8"):  # bfloat16 keeps about 3 significant digits; int8 about 2
        line = next(x for x in out.splitlines() if f"{kind} against float32 on 256 positions" in x)
        same = float(line.split("most likely move the same in ")[1].split("%")[0])
        change = float(line.split("value change mean ")[1].split()[0])
        assert 50.0 <= same <= 100.0 and 0.0 <= change < 0.1
    with pytest.raises(SystemExit):
        bench_zero.main(["--shape", "8by1"])
    assert "--shape takes CHANNELSxBLOCKS" in capsys.readouterr().err


def test_greedy_imitation_probe_labels_greedys_best_set_and_writes_a_playable_checkpoint(tmp_path):
    """examples/greedy_imitation_probe.py: each label is uniform over greedy's tied best moves, in the mover's frame."""
    import importlib.util

    from colony_env.agents.greedy import TIE_TOLERANCE, GreedyAgent
    from colony_env.frame import to_frame

    spec = importlib.util.spec_from_file_location("greedy_imitation_probe", REPO / "examples" / "greedy_imitation_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    data = probe.greedy_labelled_positions(3, 0.3, 60, np.random.default_rng(5))
    assert data.n_positions > 60 and data.full_search.all()
    greedy, blue_seen = GreedyAgent(), 0
    for i in range(data.n_positions):
        state = ce.GameState.from_array(data.states[i])
        legal, scores = greedy.scores(state)
        transposed = int(data.states[i, I_TO_MOVE]) == 1
        blue_seen += transposed
        ids = data.target_ids[data.offsets[i]:data.offsets[i + 1]]
        probs = data.target_probs[data.offsets[i]:data.offsets[i + 1]]
        assert [int(x) for x in ids] == [to_frame(int(a), transposed) for a in legal]
        best = scores >= scores.max() - TIE_TOLERANCE
        assert np.allclose(probs[best], 1.0 / best.sum()) and not probs[~best].any()
    assert 0 < blue_seen < data.n_positions
    out = subprocess.run([sys.executable, str(REPO / "examples" / "greedy_imitation_probe.py"), "--games", "2",
                          "--steps", "3", "--eval-games", "2", "--out", str(tmp_path)],
                         capture_output=True, text=True, check=False, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "step 3 (" in out.stdout and "against greedy:" in out.stdout
    agent = load_policy_agent(tmp_path / "imitation.pt")
    s = ce.new_game(0)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))
    assert "the policy's move in greedy's best set" in out.stdout and "all legal moves" in out.stdout
    assert "the value after one of greedy's best moves" in out.stdout
    check = subprocess.run([sys.executable, str(REPO / "examples" / "greedy_imitation_probe.py"), "--check",
                            str(tmp_path / "missing.pt")], capture_output=True, text=True, check=False, cwd=REPO)
    assert check.returncode == 2 and "does not exist" in check.stderr and "Traceback" not in check.stderr


def test_best_set_agreement_counts_the_policys_moves_against_greedys_best_set():
    """The probe's check: greedy itself (ties at random) is always in its own best set; a uniformly random
    player hits it as often as the uniform share says, up to noise; every position lands in one bucket."""
    from colony_env.agents.greedy import GreedyAgent
    from colony_env.agents.random_agent import RandomAgent
    from helpers import load_example

    probe = load_example("greedy_imitation_probe.py")
    full = probe.greedy_labelled_positions(4, 0.3, 80, np.random.default_rng(3))
    informative = probe.greedy_labelled_positions(4, 0.3, 80, np.random.default_rng(3), skip_ties=True)
    label = lambda d, i: d.target_probs[d.offsets[i]:d.offsets[i + 1]]
    keep = [i for i in range(full.n_positions) if label(full, i).min() < label(full, i).max()]
    assert 0 < informative.n_positions == len(keep) < full.n_positions  # the same games, the tied positions left out
    np.testing.assert_array_equal(informative.states, full.states[keep])
    positions = probe.check_positions(4, 0.3, 80)
    rows = probe.best_set_agreement(GreedyAgent(), positions)
    assert {name for name, *_ in rows} <= {name for name, _ in probe.BEST_SET_BUCKETS}
    assert all(hit == 1.0 for _, _, hit, _ in rows)
    assert dict((name, uniform) for name, _, _, uniform in rows)["all legal moves"] == 1.0
    rows = probe.best_set_agreement(RandomAgent(), positions)
    n, hits, expected = (sum(r[1] for r in rows), sum(r[1] * r[2] for r in rows), sum(r[1] * r[3] for r in rows))
    assert abs(hits - expected) < 4 * 0.5 * np.sqrt(n)  # 4 standard deviations of a sum of n coin flips at most
    net = PolicyValueNet(OBS_CHANNELS, channels=4, blocks=1, target_features=True)
    ranking = probe.value_ranking(net, positions)  # a fresh value head: every value about 0, ties count half
    assert ranking and all(name != "all legal moves" for name, *_ in ranking)
    assert all(0.0 <= r <= 1.0 for *_, r in ranking)
    playouts = probe.playout_ranking(positions, 2)
    assert playouts == probe.playout_ranking(positions, 2)  # its own generator: the same pairs and playouts
    assert [(name, n) for name, n, _ in playouts] == [(name, n) for name, n, _ in ranking]
    assert all(0.0 <= r <= 1.0 for *_, r in playouts)


def test_greedy_imitation_probe_ranks_by_playouts_alone():
    """`--check-playouts N` without a network prints only the playouts' ranking; a bad N is one line, exit 2."""
    probe = [sys.executable, str(REPO / "examples" / "greedy_imitation_probe.py"), "--check-games", "1"]
    out = subprocess.run(probe + ["--check-playouts", "2"], capture_output=True, text=True, check=False, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "the mean of 2 random playouts" in out.stdout and "the policy's move" not in out.stdout
    bad = subprocess.run(probe + ["--check-playouts", "-1"], capture_output=True, text=True, check=False, cwd=REPO)
    assert bad.returncode == 2 and "--check-playouts >= 0" in bad.stderr and "Traceback" not in bad.stderr


def test_probe_mover_values_score_finished_games_exactly_and_turn_the_sign_for_the_other_colour():
    """The probe's `mover_values`: a finished child gets its result for the mover (R7.4), an ongoing one the
    evaluator's value for its own colour to move, negated when the other colour moves next (R6.3: in grace the same
    colour may move again); `share_above` counts ties half."""
    from helpers import load_example

    probe = load_example("greedy_imitation_probe.py")
    rng = np.random.default_rng(11)
    state, children = ce.new_game(0), []
    while not state.is_over:  # one random game's positions: both colours to move, and its finished end
        children.append(state)
        state = ce.apply_action(state, int(rng.choice(ce.legal_actions(state))))
    children.append(state)
    seen = []
    values = probe.mover_values(0, children, lambda ongoing: seen.extend(ongoing) or np.arange(1.0, len(ongoing) + 1))
    assert seen == children[:-1]  # the evaluator sees the ongoing positions only, in order
    expected = [(k + 1.0) * (1 if c.to_move == 0 else -1) for k, c in enumerate(children[:-1])]
    assert values.tolist() == expected + [state.rewards()[0]]
    assert {int(c.to_move) for c in children[:-1]} == {0, 1}
    assert probe.share_above(np.array([1.0, 0.0]), np.array([0.0])) == 0.75
