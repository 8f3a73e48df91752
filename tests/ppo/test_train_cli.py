"""Smoke tests of the training CLIs with tiny settings: config -> steps -> checkpoint -> resume -> evaluation."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_training.eval import plot
from colony_training.ppo import bench as bench_train
from colony_training.ppo import train
from colony_training.agents import load_policy_agent
from colony_training.checkpoint import read_checkpoint

TINY = [
    "--num-envs", "2", "--rollout-steps", "8", "--total-steps", "32", "--channels", "4", "--blocks", "1",
    "--num-minibatches", "2", "--update-epochs", "1", "--max-plies", "40", "--eval-every", "2", "--eval-games", "2",
    "--eval-opponents", "random", "--final-eval-games", "2", "--checkpoint-every", "1", "--snapshot-every", "1",
    "--pool-share", "0.5", "--torch-threads", "1", "--no-progress",
]  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_tiny_run_resume_and_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    cfg = str(ROOT / "configs" / "quickstart.yaml")
    assert train.main(["--config", cfg, "--run-dir", str(run), *TINY]) == 0
    assert "final evaluation vs random" in capsys.readouterr().out
    latest = run / "checkpoints" / "latest.pt"
    meta = read_checkpoint(latest)["meta"]
    assert (meta["iteration"], meta["global_step"]) == (2, 32)
    assert len(_rows(run / "metrics.csv")) == 2
    evals = _rows(run / "eval.csv")
    assert [r["opponent"] for r in evals] == ["random", "random"] and evals[0]["games"] == "2"
    assert [r["global_step"] for r in evals] == ["0", "32"]  # the untrained network, then the final evaluation
    assert (run / "config.yaml").is_file() and any((run / "tb").iterdir())
    assert (run / "plots" / "training.png").is_file()

    # Resume with a larger budget: the counters continue from the checkpoint.
    assert train.main(["--resume", str(run), "--total-steps", "64", "--no-progress"]) == 0
    meta = read_checkpoint(latest)["meta"]
    assert (meta["iteration"], meta["global_step"]) == (4, 64)
    assert [int(r["iteration"]) for r in _rows(run / "metrics.csv")] == [1, 2, 3, 4]

    agent = load_policy_agent(latest, greedy=True)
    s = ce.new_game(0)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))
    assert plot.main([str(run)]) == 0


def test_greedy_opponent_games_and_init_from(tmp_path: Path) -> None:
    """`greedy_share`: those games' opponent moves are the greedy agent's best-scoring ones and are
    not trained on; `init_from` starts a new run from a checkpoint's weights, and refuses another
    architecture with a one-line error."""
    from colony_env.agents import GreedyAgent
    from colony_training.ppo.config import load_config
    from colony_training.model import PolicyValueNet
    from colony_training.ppo.opponents import OpponentPool

    cfg = load_config(ROOT / "configs" / "quickstart.yaml", {
        "num_envs": 4, "rollout_steps": 24, "channels": 4, "blocks": 1, "pool_share": 0.0, "greedy_share": 0.5,
        "max_plies": 60, "heuristic_prior": False})  # fmt: skip
    model = PolicyValueNet(ce.observation.OBS_CHANNELS, 4, 1)
    play = train.SelfPlay(cfg, model, train.resolve_device("cpu"), seed=0)
    assert play.greedy_envs.tolist() == [0, 1]
    seen_states = []
    original_step = play.env.step

    def step(actions):  # record each greedy move next to the state it was chosen in
        seen_states.append((play.env.states.copy(), play.vobs.to_move.copy(), np.asarray(actions).copy()))
        return original_step(actions)

    play.env.step = step
    stats = train.GameStats()
    ro = play.collect(OpponentPool(2), stats)
    greedy_turns = 0
    for t, (states, to_move, actions) in enumerate(seen_states):
        for i in range(4):
            opponent_turn = i < 2 and to_move[i] != play.learner_colour[i]
            assert ro.learner[t, i] == (not opponent_turn)
            if opponent_turn:
                greedy_turns += 1
                board_ids, scores = GreedyAgent().scores(ce.engine._wrap(states[i].copy()))
                colour = int(to_move[i])
                chosen = int(ce.symmetry.canonical_action_to_board(np.array([actions[i]]), colour)[0])
                assert scores[list(board_ids).index(chosen)] >= scores.max() - 1e-9
    assert greedy_turns > 10

    first = tmp_path / "first"
    tiny = [a for a in TINY if a not in ("--pool-share", "0.5")]
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(first), *tiny,
                       "--greedy-share", "0.5", "--final-eval-games", "0", "--eval-every", "0"]) == 0
    rows = _rows(first / "metrics.csv")
    assert "greedy_win_rate" in rows[0]
    start = first / "checkpoints" / "latest.pt"
    second = tmp_path / "second"
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(second), *tiny,
                       "--init-from", str(start), "--total-steps", "16", "--final-eval-games", "0", "--learning-rate", "1e-9",
                       "--eval-every", "0"]) == 0
    before, after = read_checkpoint(start)["model"], read_checkpoint(second / "checkpoints" / "latest.pt")["model"]
    assert all(torch.allclose(before[k].float(), after[k].float(), atol=1e-5) for k in before)
    assert read_checkpoint(second / "checkpoints" / "latest.pt")["meta"]["global_step"] == 16


def test_init_from_a_network_of_fewer_planes_keeps_reading_them(tmp_path: Path) -> None:
    """The shipped PPO network reads the 26 planes it was trained on (before the reach planes): a run started from
    it builds a learner of 26 planes, trains, and its checkpoints say so."""
    tiny = list(TINY)
    tiny[tiny.index("--channels") + 1], tiny[tiny.index("--blocks") + 1] = "32", "3"
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(tmp_path / "r"), *tiny,
                       "--heuristic-prior", "true",
                       "--policy-target-features", "true", "--total-steps", "16", "--final-eval-games", "0",
                       "--init-from", str(ROOT / "checkpoints" / "colony_ppo.pt")]) == 0
    data = read_checkpoint(tmp_path / "r" / "checkpoints" / "latest.pt")
    assert data["architecture"]["in_channels"] == 26 and len(data["observation"]) == 26


def test_init_from_a_colony_zero_network_leaves_its_ownership_head_out(tmp_path: Path) -> None:
    """The shipped zero network has an ownership head PPO has no loss for: a run started from it takes every other
    weight unchanged (learning rate ~0) and writes a network without that head, which still loads as an agent."""
    zero = ROOT / "checkpoints" / "colony_zero.pt"
    start = read_checkpoint(zero)
    assert start["architecture"]["ownership_head"] == 1
    tiny = list(TINY)
    tiny[tiny.index("--channels") + 1], tiny[tiny.index("--blocks") + 1] = "64", "4"
    run = tmp_path / "r"
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(run), *tiny,
                       "--heuristic-prior", "true", "--policy-target-features", "true", "--total-steps", "16",
                       "--final-eval-games", "0", "--eval-every", "0", "--learning-rate", "1e-12",
                       "--init-from", str(zero)]) == 0
    data = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert data["architecture"]["ownership_head"] == 0
    kept = {k: v for k, v in start["model"].items() if not k.startswith("ownership.")}
    assert len(kept) < len(start["model"]) and set(data["model"]) == set(kept)
    assert all(torch.allclose(kept[k].float(), data["model"][k].float(), atol=1e-5) for k in kept)
    agent = load_policy_agent(run / "checkpoints" / "latest.pt", greedy=True)
    s = ce.new_game(1)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))


def test_global_pool_and_count_inputs_train_in_two_processes_and_load(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`global_pool` and `count_inputs` build the learner (and the helper process's copy) with them; its checkpoints
    say so, resume keeps them, the file plays as an agent, and a run of the plain trunk refuses it as `init_from`."""
    run = tmp_path / "r"
    assert train.main(["--config", str(ROOT / "configs" / "ppo_halfhour.yaml"), "--run-dir", str(run), *TINY,
                       "--time-limit-minutes", "0", "--global-pool", "true", "--count-inputs", "true"]) == 0
    data = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert data["architecture"]["global_pool"] == 1 and data["architecture"]["count_inputs"] == 1
    assert any(k.endswith("pool_fc.weight") for k in data["model"])
    assert train.main(["--resume", str(run), "--total-steps", "48", "--no-progress"]) == 0
    again = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert again["meta"]["global_step"] == 48 and again["architecture"] == data["architecture"]
    agent = load_policy_agent(run / "checkpoints" / "latest.pt", greedy=True)
    s = ce.new_game(2)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))
    assert train.main(["--config", str(ROOT / "configs" / "ppo_halfhour.yaml"), "--run-dir", str(tmp_path / "p"),
                       *TINY, "--init-from", str(run / "checkpoints" / "latest.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "global_pool: 1 there, 0 here" in err and "count_inputs: 1 there, 0 here" in err and len(err.splitlines()) == 1


def test_ownership_loss_trains_the_head_and_keeps_a_zero_networks_head(tmp_path: Path) -> None:
    """`ownership_coef` > 0: the learner has the ownership head and logs its loss; started from the shipped zero
    network it keeps that network's head (learning rate ~0), and from a network without one it starts it fresh."""
    zero = ROOT / "checkpoints" / "colony_zero.pt"
    start = read_checkpoint(zero)
    tiny = list(TINY)
    tiny[tiny.index("--channels") + 1], tiny[tiny.index("--blocks") + 1] = "64", "4"
    tiny[tiny.index("--max-plies") + 1] = "12"  # games end within the 8-step rollouts, so targets are known
    run = tmp_path / "r"
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(run), *tiny,
                       "--heuristic-prior", "true", "--policy-target-features", "true", "--total-steps", "32",
                       "--final-eval-games", "0", "--eval-every", "0", "--learning-rate", "1e-12",
                       "--ownership-coef", "1.0", "--init-from", str(zero)]) == 0
    data = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert data["architecture"]["ownership_head"] == 1 and set(data["model"]) == set(start["model"])
    assert all(torch.allclose(start["model"][k].float(), data["model"][k].float(), atol=1e-5) for k in start["model"])
    losses = [float(r["ownership_loss"]) for r in _rows(run / "metrics.csv")]
    assert len(losses) == 2 and max(losses) > 0
    fresh = tmp_path / "f"
    tiny[tiny.index("--channels") + 1], tiny[tiny.index("--blocks") + 1] = "32", "3"
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(fresh), *tiny,
                       "--heuristic-prior", "true", "--policy-target-features", "true", "--total-steps", "16",
                       "--final-eval-games", "0", "--eval-every", "0", "--ownership-coef", "0.5",
                       "--init-from", str(ROOT / "checkpoints" / "colony_ppo.pt")]) == 0
    assert read_checkpoint(fresh / "checkpoints" / "latest.pt")["architecture"]["ownership_head"] == 1


def test_init_from_another_architecture_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train.main(["--config", str(ROOT / "configs" / "quickstart.yaml"), "--run-dir", str(tmp_path / "r"), *TINY,
                       "--init-from", str(ROOT / "checkpoints" / "colony_ppo.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "has another architecture (channels: 32 there, 4 here" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--config", "configs/nope.yaml"], "does not exist"),
        (["--config", "configs/quickstart.yaml", "--num-envz", "3"], "unknown config key 'num_envz'"),
        (["--config", "configs/quickstart.yaml", "--gamma", "2"], "'gamma' = 2.0 is invalid"),
        (["--resume", "/nonexistent/run"], "not a run directory"),
        ([], "give --config FILE"),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert train.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_plot_rejects_non_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert plot.main([str(tmp_path)]) == 2
    assert "no metrics.csv" in capsys.readouterr().err


@pytest.mark.parametrize("files, said", [
    ({"metrics.csv": b"a,b\n1,2\n"}, "has no column(s) ['global_step']: not a colony-train run's file"),
    ({"metrics.csv": b"\xff\xfe\x00junk"}, "is not a CSV file written by colony-train (UnicodeDecodeError)"),
    ({"metrics.csv": b"global_step,policy_loss\n8,0.5\n", "eval.csv": b"step\n1\n"},
     "eval.csv' has no column(s) ['global_step', 'opponent']"),
    ({"metrics.csv": b"global_step,policy_loss\n8,0.5\n", "plots": b"a file where the folder goes"},
     "cannot write the plots of"),
])
def test_plot_says_in_one_line_what_is_wrong_with_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        files: dict[str, bytes], said: str) -> None:
    """A metrics.csv of another tool, a binary file, an eval.csv without its columns and a plots folder that
    cannot be made were KeyError, UnicodeDecodeError and FileExistsError tracebacks."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    assert plot.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bench_train_prints_throughput(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("num_envs: 2\nrollout_steps: 8\nchannels: 4\nblocks: 1\nnum_minibatches: 2\nupdate_epochs: 1\n"
                   "torch_threads: 1\n")
    assert bench_train.main(["--config", str(cfg), "--iterations", "1"]) == 0
    assert "env steps/s" in capsys.readouterr().out


def test_plot_smooths_metrics_and_draws_evaluation_intervals(tmp_path: Path) -> None:
    """colony-plot on a synthetic 60-iteration run: a moving average that skips iterations without
    such games, Wilson intervals around every evaluation point, the step-0 point kept."""
    assert plot.smoothing_window(5) == 1 and plot.smoothing_window(60) == 3 and plot.smoothing_window(400) == 21
    v = np.array([0.0, np.nan, 1.0, 1.0, np.nan])
    smooth = plot.moving_average(v, 3)
    assert smooth[0] == 0.0 and smooth[1] == 0.5 and smooth[3] == 1.0 and smooth[4] == 1.0  # NaN neither spread nor counted
    rng = np.random.default_rng(0)
    run = tmp_path / "run"
    run.mkdir()
    fields = ["iteration", "global_step", "policy_loss", "pool_win_rate", "greedy_win_rate"]
    rows = [{"iteration": i, "global_step": 512 * i, "policy_loss": rng.normal(), "pool_win_rate": rng.random() if i % 3 else "nan",
             "greedy_win_rate": ""} for i in range(1, 61)]
    with (run / "metrics.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    evals = [(0, 40, 0.5, 0.1), (15360, 40, 1.0, 0.0), (30720, 100, 0.9, 0.05)]  # a perfect score once broke the bars
    with (run / "eval.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["iteration", "global_step", "opponent", "games", "win_rate", "draw_rate"])
        w.writeheader()
        for step, games, win, draw in evals:
            w.writerow({"iteration": step // 512, "global_step": step, "opponent": "random", "games": games,
                        "win_rate": win, "draw_rate": draw})
    points = plot.evaluation_points(plot._read(run / "eval.csv"))["random"]
    assert [p[0] for p in points] == [0, 15360, 30720] and points[0][1] == pytest.approx(0.55)
    assert all(p[2] < p[1] <= p[3] + 1e-9 for p in points) and points[2][3] - points[2][2] < points[0][3] - points[0][2]
    written = plot.plot_run(run)
    assert [p.name for p in written] == ["training.png", "evaluation.png"] and all(p.stat().st_size > 0 for p in written)


def test_training_game_scores_are_weighted_by_games() -> None:
    scores, games = np.array([1.0, 0.0, np.nan]), np.array([1, 9, 0])
    assert plot.moving_average(scores, 3, games)[1] == pytest.approx(0.1)  # 1 win in 10 games, not (1 + 0) / 2
    assert plot.moving_average(scores, 1, games)[2] != plot.moving_average(scores, 1, games)[2]  # no games: NaN
