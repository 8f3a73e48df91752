"""RLlib integration: the observation adapter, ColonyRLModule, config/CLI errors, and one real
self-play run on a private local Ray instance (2 env runners, loopback only) with checkpoint,
export to the project's format and play through `colony-eval`'s agent specs."""

from __future__ import annotations

import csv
import functools
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import observation, symmetry
from colony_env.env import env as colony_pz_env
from colony_env.rllib import MASK_KEY, PACKED_MASK_BYTES, RLLIB_OBS_KEY, RLlibObservationWrapper
from colony_training.agents import PolicyAgent
from colony_training.checkpoint import read_checkpoint
from colony_training.config import ConfigError
from colony_training.model import PolicyValueNet

from ray.rllib.core.columns import Columns
from colony_training.rllib import selfplay as rllib_selfplay
from colony_training.rllib.callbacks import MAIN_MODULE
from colony_training.rllib.config import config_from_dict, load_config
from colony_training.rllib.module import ColonyRLModule, export_state_dict
from colony_training.rllib.selfplay import main, train

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "rllib_ppo.yaml"


def _walk(env, seed: int, plies: int):
    """Yield (wrapped obs, state) at each decision of a random game through the wrapper."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        agent = env.agent_selection
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            return
        state = env.unwrapped.game_state
        yield agent, obs, state
        env.step(int(rng.choice(np.flatnonzero(obs[MASK_KEY]))))


# --- the adapter ---------------------------------------------------------------------------------
def test_adapter_renames_key_and_shows_the_canonical_view():
    env = RLlibObservationWrapper(colony_pz_env(max_plies=80))
    space = env.observation_space("player_1")
    assert set(space.spaces) == {RLLIB_OBS_KEY, MASK_KEY}
    assert space[RLLIB_OBS_KEY].shape == observation.OBS_SHAPE
    colours = set()
    for agent, obs, state in _walk(env, seed=5, plies=80):
        colour = state.to_move
        colours.add(colour)
        assert space[RLLIB_OBS_KEY].contains(obs[RLLIB_OBS_KEY]) and space[MASK_KEY].contains(obs[MASK_KEY])
        np.testing.assert_array_equal(obs[RLLIB_OBS_KEY], observation.encode_observation(state, colour, canonical=True))
        canonical_legal = np.sort(symmetry.board_action_to_canonical(ce.legal_actions(state), colour))
        np.testing.assert_array_equal(np.flatnonzero(obs[MASK_KEY]), canonical_legal)
    assert colours == {ce.Colour.RED, ce.Colour.BLUE}


def test_adapter_maps_blue_canonical_actions_to_the_board():
    env = RLlibObservationWrapper(colony_pz_env())
    env.reset(seed=2)
    env.step(int(np.flatnonzero(env.last()[0][MASK_KEY])[0]))  # red moves; blue (transposed view) is next
    assert env.agent_selection == "player_1"
    state = env.unwrapped.game_state
    canonical = int(np.flatnonzero(env.last()[0][MASK_KEY])[-1])
    board = int(symmetry.canonical_action_to_board(canonical, ce.Colour.BLUE))
    assert board != canonical  # the frames really differ for this action
    env.step(canonical)
    assert env.unwrapped.game_state == ce.apply_action(state, board)


# --- the RLModule ----------------------------------------------------------------------------------
def _module(channels: int = 8, blocks: int = 1) -> ColonyRLModule:
    space_env = RLlibObservationWrapper(colony_pz_env())
    torch.manual_seed(0)
    return ColonyRLModule(observation_space=space_env.observation_space("player_0"),
                          action_space=space_env.action_space("player_0"),
                          model_config={"channels": channels, "blocks": blocks})


def _batch(n: int = 12):
    env = RLlibObservationWrapper(colony_pz_env(max_plies=200))
    items = list(_walk(env, seed=11, plies=n))
    obs = {RLLIB_OBS_KEY: torch.from_numpy(np.stack([o[RLLIB_OBS_KEY] for _, o, _ in items])),
           MASK_KEY: torch.from_numpy(np.stack([o[MASK_KEY] for _, o, _ in items]))}
    return {Columns.OBS: obs}, [s for _, _, s in items]


def test_module_masks_to_legal_actions_without_nan():
    module = _module()
    batch, _ = _batch()
    mask = batch[Columns.OBS][MASK_KEY].bool()
    out = module.forward_inference(batch)
    logits = out[Columns.ACTION_DIST_INPUTS]
    assert logits.shape == mask.shape and torch.isfinite(logits).all()
    dist = module.get_exploration_action_dist_cls().from_logits(logits)
    assert torch.all(dist.to_deterministic().sample() >= 0)
    probs = torch.softmax(logits, -1)
    assert torch.all(probs[~mask] == 0) and torch.allclose(probs.sum(-1), torch.ones(len(probs)))
    for _ in range(20):
        a = dist.sample()
        assert mask.gather(1, a[:, None]).all()
    assert torch.isfinite(dist.entropy()).all()
    # The final observation of a game has no legal action (R8.4): still finite, no NaN.
    empty = {Columns.OBS: {RLLIB_OBS_KEY: batch[Columns.OBS][RLLIB_OBS_KEY][:2], MASK_KEY: torch.zeros(2, ce.N_ACTIONS, dtype=torch.int8)}}
    assert torch.isfinite(module.forward_inference(empty)[Columns.ACTION_DIST_INPUTS]).all()
    # Exploration samples in the module: legal actions, their exact log-probs, and a one-value
    # placeholder instead of the 16,001 distribution inputs (they would travel with every step).
    torch.manual_seed(1)
    with torch.no_grad():  # as RLlib's env runners call it
        draws = [module.forward_exploration(batch) for _ in range(200)]
        logits = logits.detach()
    for d in draws:
        assert mask.gather(1, d[Columns.ACTIONS][:, None]).all()
        np.testing.assert_allclose(d[Columns.ACTION_LOGP], logits.gather(1, d[Columns.ACTIONS][:, None])[:, 0],
                                   rtol=1e-5)
        assert d[Columns.ACTION_DIST_INPUTS].shape == (len(mask), 1)
    # Gumbel-max draws follow the policy: frequencies of the first row against its probabilities.
    first = np.bincount([int(d[Columns.ACTIONS][0]) for d in draws], minlength=ce.N_ACTIONS) / len(draws)
    np.testing.assert_allclose(first, probs[0].detach().numpy(), atol=0.1)
    # The train pass hands the value as embeddings; compute_values agrees with a fresh pass.
    train_out = module.forward_train(batch)
    assert torch.allclose(module.compute_values(batch, train_out[Columns.EMBEDDINGS]), module.compute_values(batch))


def test_packed_mask_adapter_and_module_agree_with_the_plain_mask():
    """`packed_mask=True` (what colony-train-rllib sends): 2,001 bytes per step instead of 16,001, same legal set."""
    from colony_training.rllib.module import unpack_mask

    plain = RLlibObservationWrapper(colony_pz_env(max_plies=60))
    packed = RLlibObservationWrapper(colony_pz_env(max_plies=60), packed_mask=True)
    space = packed.observation_space("player_0")
    assert space[MASK_KEY].shape == (PACKED_MASK_BYTES,) and space[MASK_KEY].dtype == np.uint8
    plain.reset(seed=3)
    packed.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(60):
        obs, _, term, trunc, _ = plain.last()
        if term or trunc:
            break
        mine = packed.observe(packed.agent_selection)
        assert space[MASK_KEY].contains(mine[MASK_KEY])
        np.testing.assert_array_equal(unpack_mask(torch.from_numpy(mine[MASK_KEY])[None])[0].numpy(),
                                      obs[MASK_KEY].astype(bool))
        np.testing.assert_array_equal(mine[RLLIB_OBS_KEY], obs[RLLIB_OBS_KEY])
        action = int(rng.choice(np.flatnonzero(obs[MASK_KEY])))
        plain.step(action)
        packed.step(action)
    assert plain.unwrapped.game_state == packed.unwrapped.game_state and plain.unwrapped.game_state.ply > 10


def test_exported_weights_play_exactly_as_the_module():
    """Export is a rename: a PolicyAgent on the exported net ranks the legal moves as the module does."""
    module = _module(channels=8, blocks=2)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.3 * torch.randn_like(p))  # away from the near-uniform init, so rankings are distinct
    net = PolicyValueNet(observation.OBS_CHANNELS, 8, 2)
    net.load_state_dict(export_state_dict({k: v.numpy() for k, v in module.state_dict().items()}))
    agent = PolicyAgent(net, name="exported")
    batch, states = _batch(8)
    with torch.no_grad():
        logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        values = module.compute_values(batch)
    for i, state in enumerate(states):
        ids, probs, value = agent.policy(state)
        canonical = symmetry.board_action_to_canonical(ids, state.to_move)
        module_probs = torch.softmax(logits[i], -1)[torch.from_numpy(canonical)].double().numpy()
        np.testing.assert_allclose(probs, module_probs, rtol=1e-4, atol=1e-6)
        assert value == pytest.approx(float(values[i]), abs=1e-5)


def test_metrics_row_survives_an_iteration_in_which_no_game_ends():
    """RLlib reports a sum over no event as NaN; `int(nan)` crashed `colony-train-rllib` at such an iteration."""
    from colony_training.rllib.selfplay import metrics_row

    nan = float("nan")
    result = {"training_iteration": 4, "pool_size": 2,
              "env_runners": {"num_env_steps_sampled_lifetime": 128, "num_episodes_lifetime": 2, "num_episodes": nan,
                              "illegal_games": nan, "episode_len_mean": nan, "pool_win_rate": nan},
              "learners": {MAIN_MODULE: {"policy_loss": 0.1, "vf_loss": 0.2, "entropy": 3.0}}}
    row = metrics_row(result, t0=0.0, prev={"env_steps": 96, "episodes": 2}, prev_t=0.0, health=(2, 2, 1))
    assert row["illegal_games"] == 0 and row["episodes"] == 2 and row["env_steps"] == 128
    assert row["env_runners"] == 2 and row["nodes"] == 1 and math.isnan(row["pool_win_rate"])


# --- config and CLI --------------------------------------------------------------------------------
def test_shipped_config_loads():
    cfg = load_config(CONFIG)
    assert cfg.num_env_runners >= 1 and cfg.address == "" and cfg.num_iterations >= 1


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"num_env_runnerz": 2}, "unknown config key 'num_env_runnerz'; allowed keys:"),
        ({"minibatch_size": 4096, "train_batch_size": 64}, "'minibatch_size' = 4096 is invalid; allowed: at most train_batch_size"),
        ({"pool_share": 1.5}, "'pool_share' = 1.5 is invalid; allowed: a number in [0, 1]"),
        ({"num_env_runners": 1.5}, "'num_env_runners' must be an integer"),
        ({"address": "not an address"}, "'address' = 'not an address' is invalid"),
        ({"eval_opponents": ["nobody"]}, "'eval_opponents' has 'nobody'"),
    ],
)
def test_bad_config_values_name_the_key(values, message):
    with pytest.raises(ConfigError) as err:
        config_from_dict(values)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_cli_errors_are_one_line(capsys, tmp_path):
    assert main(["--config", str(tmp_path / "missing.yaml")]) == 2
    assert main(["--config", str(CONFIG), "--learning-rate", "-1"]) == 2
    assert main(["--config", str(CONFIG), "--bogus", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("colony-train-rllib: error: ") for line in err)
    assert "does not exist" in err[0] and "'learning_rate'" in err[1] and "unknown config key 'bogus'" in err[2]


def test_cli_passes_overrides_and_address_to_train(monkeypatch, tmp_path):
    seen = {}

    def fake_train(cfg, run_dir=None, progress=True, resume=False):
        seen.update(cfg=cfg, run_dir=run_dir, progress=progress, resume=resume)
        return tmp_path

    monkeypatch.setattr(rllib_selfplay, "train", fake_train)
    rc = main(["--config", str(CONFIG), "--address", "auto", "--num-env-runners", "8", "--total-steps=1e5",
               "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert rc == 0
    assert seen["cfg"].address == "auto" and seen["cfg"].num_env_runners == 8 and seen["cfg"].total_steps == 100_000
    assert seen["run_dir"] == tmp_path / "run" and seen["progress"] is False and seen["resume"] is False


def test_resume_and_help_errors(capsys, tmp_path):
    """--resume refuses what its run directory decides; --help lists every config key with type and default."""
    run = tmp_path / "run"
    (run / "rllib" / "iter_000002" / "learner_group" / "learner" / "rl_module").mkdir(parents=True)
    (run / "config.yaml").write_text("channels: 8\n")
    assert main(["--resume", str(run), "--channels", "16"]) == 2
    assert main(["--resume", str(tmp_path / "nothing")]) == 2
    assert main(["--resume", str(run), "--config", str(CONFIG)]) == 2
    assert main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("colony-train-rllib: error: ") for line in err)
    assert "config key 'channels' is decided by" in err[0] and "not a colony-train-rllib run directory" in err[1]
    assert "drop --config" in err[2] and "--config is required" in err[3]
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for key in rllib_selfplay.config_lib.config_keys(rllib_selfplay.RllibConfig):
        assert f"--{key.replace('_', '-')} " in text
    assert re.search(r"--num-env-runners INT  \(default: 2\)\n +Sampling actors", text)  # the one --help format


def test_unreachable_cluster_is_one_line_and_leaves_no_run_directory(capsys, tmp_path, no_ray_left):
    """Nothing listens at the address: the probe says so in seconds (Ray itself retries for minutes)."""
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["--config", str(CONFIG), "--address", f"127.0.0.1:{port}", "--out-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"colony-train-rllib: error: cannot reach the Ray cluster at 127.0.0.1:{port}")
    assert not (tmp_path / "runs").exists() and not no_ray_left.is_initialized()


def test_bench_rejects_bad_arguments(capsys):
    from colony_training.rllib.bench import main as bench_main

    assert bench_main(["--steps", "0"]) == 2
    assert capsys.readouterr().err.strip() == "bench: error: --envs-per-runner, --steps and --repeats must be >= 1"


def test_importing_the_adapter_registers_the_env_for_fresh_processes():
    """`Algorithm.from_checkpoint` in a new process finds `colony_v0_rllib` after `import colony_env.rllib`."""
    import subprocess
    import sys

    code = ("import colony_env.rllib as r; from ray.tune.registry import _global_registry, ENV_CREATOR; "
            "assert _global_registry.contains(ENV_CREATOR, r.ENV_NAME); print('registered')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "registered" in out.stdout, out.stderr[-2000:]


# --- one real run on a local Ray instance -------------------------------------------------------
@pytest.fixture
def no_ray_left():
    """The run starts and stops its own private Ray instance; make sure none outlives the test."""
    import ray

    assert not ray.is_initialized()
    try:
        yield ray
    finally:
        if ray.is_initialized():  # only after a failure inside the run
            ray.shutdown()


def test_rllib_selfplay_trains_resumes_checkpoints_and_exports(no_ray_left, monkeypatch, tmp_path, capsys):
    """`colony-train-rllib --config configs/rllib_ppo.yaml` (tiny overrides) on a private local Ray
    instance with 2 env runners, then `--resume RUN_DIR` for one more iteration: PPO iterations on
    RLlib's new API stack, snapshots reach the env runners with the learner's weights, no illegal
    action is ever played, every Ray port listens on loopback only, an iteration in which no game
    ends does not crash the run (it did: NaN in `illegal_games`), Ray is shut down afterwards, and
    the exported checkpoint is a project checkpoint that colony-eval and colony-play load."""
    from colony_training.eval.agent_specs import make_agent
    from colony_training.eval.evaluate import main as eval_main
    from colony_training.cluster import beyond_loopback, inet_sockets
    from colony_training.rllib.export import main as export_main

    checks, sockets = [], []

    def on_iteration(algo, row):
        # The callback snapshotted `main` at the end of this iteration; the env runners must hold
        # exactly the learner's weights in the new module (PPO syncs only the trained module).
        snap = f"main_v{row['iteration']}"
        learner = algo.learner_group.get_state(components=f"learner/rl_module/{MAIN_MODULE}")
        learner = learner["learner"]["rl_module"][MAIN_MODULE]
        runners = algo.env_runner_group.foreach_env_runner(lambda r, m=snap: r.module[m].get_state(),
                                                           local_env_runner=False)
        same = all(np.array_equal(np.asarray(s[k]), np.asarray(learner[k])) for s in runners for k in s)
        modules = algo.env_runner_group.foreach_env_runner(lambda r: sorted(r.module.keys()), local_env_runner=False)
        checks.append((len(runners), same, modules[0]))
        sockets.append(inet_sockets())  # this process and the private Ray instance it started

    monkeypatch.setattr(rllib_selfplay, "train", functools.partial(train, on_iteration=on_iteration))
    run_dir = tmp_path / "run"
    # 16 steps per env runner and iteration against games cut at 40 plies: iteration 3 ends a game
    # on each runner, iteration 4 ends none, the case that crashed the run.
    tiny = ["--no-progress", "--num-cpus", "2", "--final-eval-games", "2", "--num-envs-per-env-runner", "1"]
    rc = main(["--config", str(CONFIG), "--run-dir", str(run_dir), *tiny, "--num-env-runners", "2",
               "--train-batch-size", "32", "--minibatch-size", "32", "--update-epochs", "1", "--total-steps", "128",
               "--max-plies", "40", "--channels", "8", "--blocks", "1", "--snapshot-every", "1", "--pool-share", "1.0",
               "--pool-size", "2", "--checkpoint-every", "2", "--keep-checkpoints", "1"])
    assert rc == 0
    assert not no_ray_left.is_initialized()  # the CLI shut down the instance it started
    out = capsys.readouterr().out
    assert f"exported checkpoint: {run_dir / 'checkpoints' / 'latest.pt'}" in out
    assert "env runners: all 2 healthy to the end" in out
    rows = list(csv.DictReader(open(run_dir / "metrics.csv")))
    assert [int(r["episodes"]) for r in rows] == [0, 0, 2, 2]  # iteration 4 ended no game

    # Resume for five more iterations, with the snapshot pool and the step count where the run left
    # them (the games in flight at the checkpoint are lost: new games begin, against the restored pool).
    assert main(["--resume", str(run_dir), *tiny, "--total-steps", "288"]) == 0
    assert "resuming" in capsys.readouterr().out

    listening = [a for ls, _ in sockets for a in ls]
    assert listening and beyond_loopback(listening) == []
    assert beyond_loopback([a for _, remote in sockets for a in remote]) == []
    assert [c[0] for c in checks] == [2] * 9 and all(c[1] for c in checks)
    assert checks[-1][2] == ["main", "main_v8", "main_v9"]  # pool_size 2: older snapshots were dropped
    rows = list(csv.DictReader(open(run_dir / "metrics.csv")))
    assert [int(r["iteration"]) for r in rows] == list(range(1, 10))
    steps = [int(r["env_steps"]) for r in rows]
    assert steps == sorted(steps) and steps[3] == 128 and steps[-1] == 288  # counted on across the resume
    assert [int(r["env_runners"]) for r in rows] == [2] * 9 and [int(r["nodes"]) for r in rows] == [1] * 9
    assert all(int(r["illegal_games"]) == 0 for r in rows)
    assert all(math.isfinite(float(r[k])) for r in rows for k in ("policy_loss", "vf_loss", "entropy"))
    # RLlib checkpoints (only the newest kept) and their export in the project's format.
    assert [p.name for p in sorted((run_dir / "rllib").iterdir())] == ["iter_000009"]
    latest = run_dir / "checkpoints" / "latest.pt"
    data = read_checkpoint(latest)
    assert data["meta"]["trainer"] == "rllib" and data["meta"]["global_step"] == 288
    assert (run_dir / "eval.csv").is_file() and (run_dir / "config.yaml").is_file()
    # colony-rllib-export of the same RLlib checkpoint (no Ray running) gives the same weights.
    exported = tmp_path / "exported.pt"
    assert export_main([str(run_dir / "rllib" / "iter_000009"), str(exported)]) == 0
    again = read_checkpoint(exported)
    assert again["architecture"] == data["architecture"] and again["meta"]["iteration"] == 9
    assert all(torch.equal(again["model"][k], data["model"][k]) for k in data["model"])
    assert export_main([str(run_dir), str(tmp_path / "x.pt"), "--module", "main_v1"]) == 2
    assert "has no module 'main_v1'; it has: main, main_v8, main_v9" in capsys.readouterr().err
    # The exported file plays through the project's agent specs (what colony-eval/colony-play use).
    agent = make_agent(f"checkpoint:{exported}")
    state, rng = ce.new_game(7), np.random.default_rng(0)
    for _ in range(6):
        action = agent.act(state, rng)
        assert ce.is_legal(state, action)
        state = ce.apply_action(state, action)
    assert eval_main([f"checkpoint:{latest}", "random", "--games", "2", "--workers", "1", "--max-plies", "30",
                      "--no-progress", "--no-records", "--out", str(tmp_path / "eval")]) == 0
