"""colony-distill (expert iteration): recorded search targets, slot alignment, resume, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import colony_env as ce
from colony_env import observation
from colony_training.distill import train as distill
from colony_training.agents import load_policy_agent
from colony_training.checkpoint import read_checkpoint, save_checkpoint
from colony_training.distill.config import DistillConfig
from colony_training.distill.train import Dataset, DistillError, fit, load_shards
from colony_training.model import PolicyValueNet

SIMS = 4


def _tiny(tmp_path, name="tiny.pt"):
    torch.manual_seed(0)  # the starting weights, and so the fit's path, are the same in every run
    net = PolicyValueNet(observation.OBS_CHANNELS, 4, 1, heuristic_prior=True, target_features=True)
    return save_checkpoint(tmp_path / name, net, {"channels": 4}, {"global_step": 0})


def _run(tmp_path, *extra: str) -> int:
    return distill.main(["--init", str(_tiny(tmp_path)), "--games", "4", "--simulations", str(SIMS),
                         "--shard-games", "2", "--epochs", "1", "--workers", "1", "--no-progress",
                         "--out", str(tmp_path / "run"), *extra])


def test_end_to_end_records_visit_targets_and_writes_a_loadable_checkpoint(tmp_path):
    assert _run(tmp_path) == 0
    run = tmp_path / "run"
    shards = sorted((run / "data").glob("shard_*.npz"))
    assert [p.name for p in shards] == ["shard_0000.npz", "shard_0001.npz"]
    data = load_shards(shards)
    assert len(data) > 0 and set(np.unique(data.game)) <= {0, 1, 2, 3}
    for r in range(len(data)):
        state = ce.engine._wrap(data.states[r].copy())
        visits = data.visits[data.offsets[r]: data.offsets[r + 1]]
        # one count per legal action (R8.4), and every simulation passes through one root child
        assert len(visits) == len(ce.legal_actions(state)) > 1
        assert visits.sum() == SIMS and (visits >= 0).all()
    agent = load_policy_agent(run / "distilled.pt")
    summary = json.loads((run / "summary.json").read_text())
    assert read_checkpoint(run / "distilled.pt")["meta"]["distill"]["positions"] == len(data) == summary["positions"]
    assert (run / "metrics.csv").read_text().startswith("epoch,train_ce,val_ce,val_agree")
    state = ce.new_game(5)
    assert ce.is_legal(state, agent.act(state, np.random.default_rng(0)))


def test_the_az_expert_records_the_improved_policy_over_the_sorted_legal_ids(tmp_path):
    """`--expert az`: every searched position holds the Gumbel root's improved policy, one probability per legal
    action in increasing id order (the slots the fit reads, R8.4), in games against greedy and self-play alike."""
    from colony_env import symmetry
    from colony_training.agents import load_az_agent

    assert _run(tmp_path, "--expert", "az", "--max-considered", "4", "--greedy-share", "0.5") == 0
    run = tmp_path / "run"
    data = load_shards(sorted((run / "data").glob("shard_*.npz")))
    assert set(np.unique(data.game)) == {0, 1, 2, 3}
    assert {distill.game_plan(DistillConfig(init="x", games=4, greedy_share=0.5), g)[1] for g in range(4)} == {
        True, False}  # the seeds above play both kinds of game
    search = load_az_agent(run.parent / "tiny.pt", SIMS, max_considered=4).search
    for r in range(len(data)):
        state = ce.engine._wrap(data.states[r].copy())
        target = data.visits[data.offsets[r]: data.offsets[r + 1]]
        legal = np.sort(ce.legal_actions(state))
        assert len(target) == len(legal) > 1 and (target >= 0).all() and abs(target.sum() - 1) < 1e-5
        if r % 10 == 0:  # the search's arrays are over the legal ids in increasing order, as stored
            result = search.search([state], np.random.default_rng(r))[0]
            np.testing.assert_array_equal(result.canonical_actions,
                                          symmetry.board_action_to_canonical(legal, int(state.to_move)))
    assert read_checkpoint(run / "distilled.pt")["meta"]["distill"]["positions"] == len(data)


@pytest.mark.parametrize("expert", ["mcts", "az"])
def test_resume_regenerates_only_missing_shards_and_the_same_data(tmp_path, expert):
    assert _run(tmp_path, "--expert", expert) == 0
    run = tmp_path / "run"
    first = load_shards([run / "data" / "shard_0001.npz"])
    kept = (run / "data" / "shard_0000.npz").stat().st_mtime_ns
    (run / "data" / "shard_0001.npz").unlink()
    assert distill.main(["--resume", str(run), "--no-progress"]) == 0
    again = load_shards([run / "data" / "shard_0001.npz"])
    assert (run / "data" / "shard_0000.npz").stat().st_mtime_ns == kept
    np.testing.assert_array_equal(first.states, again.states)  # fixed game seeds: the same games
    np.testing.assert_array_equal(first.visits, again.visits)


def test_a_run_made_before_config_yaml_resumes_from_its_config_json(tmp_path):
    """Runs made before colony-distill had a YAML config wrote `config.json` (the old DistillConfig's
    fields); `--resume` reads it, plays the missing shard with the same seeds and writes config.yaml."""
    import yaml

    assert _run(tmp_path) == 0
    run = tmp_path / "run"
    first = load_shards([run / "data" / "shard_0001.npz"])
    values = yaml.safe_load((run / "config.yaml").read_text())
    old = {k: values[k] for k in ("init", "games", "simulations", "prior_c", "greedy_share", "shard_games", "epochs",
                                  "batch_size", "lr", "augment_symmetry", "seed", "workers")}
    (run / "config.yaml").unlink()
    (run / "config.json").write_text(json.dumps(old, indent=2) + "\n")
    (run / "data" / "shard_0001.npz").unlink()
    assert distill.main(["--resume", str(run), "--no-progress"]) == 0
    again = load_shards([run / "data" / "shard_0001.npz"])
    np.testing.assert_array_equal(first.visits, again.visits)
    assert yaml.safe_load((run / "config.yaml").read_text()) == values


def test_a_yaml_config_and_overrides_decide_the_run(tmp_path, capsys):
    """`--config FILE` as for the other trainers, keys on the command line override it; a bad key is one line."""
    import yaml

    cfg = tmp_path / "d.yaml"
    cfg.write_text(f"init: {_tiny(tmp_path)}\ngames: 4\nsimulations: {SIMS}\nshard_games: 4\nepochs: 1\nworkers: 1\n")
    assert distill.main(["--config", str(cfg), "--shard-games", "2", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    written = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert written["shard_games"] == 2 and written["games"] == 4
    assert len(list((tmp_path / "run" / "data").glob("shard_*.npz"))) == 2
    assert distill.main(["--config", str(cfg), "--lr", "-1", "--out", str(tmp_path / "r2")]) == 2
    assert "config key 'lr' = -1.0 is invalid; allowed: a finite number > 0" in capsys.readouterr().err
    assert not (tmp_path / "r2").exists()  # refused before anything is written


def _one_hot_dataset(states: list[np.ndarray], picks: list[int]) -> Dataset:
    """Each state twice (games 0 and 1, so one is held out) with all visits on legal slot `pick`."""
    rows, visits, offsets, game = [], [], [0], []
    for g in (0, 1):
        for s, pick in zip(states, picks):
            n = len(ce.legal_actions(ce.engine._wrap(s.copy())))
            v = np.zeros(n, np.int32)
            v[pick] = 10
            rows.append(s)
            visits.append(v)
            offsets.append(offsets[-1] + n)
            game.append(g)
    return Dataset(np.stack(rows), np.concatenate(visits), np.asarray(offsets, np.int64), np.asarray(game, np.int64))


def test_fit_moves_the_policy_to_the_target_action_for_both_colours(tmp_path):
    """Slot j of the targets is the j-th legal id in increasing order for red and blue (canonical view) alike."""
    rng = np.random.default_rng(1)
    red = ce.new_game(3)
    blue = ce.apply_action(red, int(rng.choice(ce.legal_actions(red))))
    assert (red.to_move, blue.to_move) == (ce.RED, ce.BLUE)
    states = [red._a, blue._a]
    picks = [7, len(ce.legal_actions(blue)) - 3]
    init = _tiny(tmp_path)
    cfg = DistillConfig(init=str(init), epochs=60, batch_size=8, lr=3e-2, seed=0)
    summary = fit(cfg, _one_hot_dataset(states, picks), tmp_path, progress=False)
    assert summary["val_ce_after"] < summary["val_ce_before"]
    agent = load_policy_agent(tmp_path / "distilled.pt")
    for s, pick in zip((red, blue), picks):
        ids, probs, _ = agent.policy(s)
        assert ids[int(np.argmax(probs))] == np.sort(ce.legal_actions(s))[pick]


def test_az_fits_are_validated_in_symmetric_frames(tmp_path):
    """The az target is softmax(the network's own logits + the search's terms): held out in the identity frame,
    the untouched weights would match it by construction and win the choice of epoch. So an az fit shows its
    held-out positions in random board symmetries (R1.3's colour-preserving ones), where no network is exactly
    symmetric; an mcts fit, whose targets are visit counts, holds them out as they are."""
    torch.manual_seed(1)
    net = PolicyValueNet(observation.OBS_CHANNELS, 4, 1, heuristic_prior=False, target_features=True)
    with torch.no_grad():
        for w in net.parameters():
            w.normal_(0.0, 0.5)  # a policy far from uniform, as a trained one is
    init = save_checkpoint(tmp_path / "sharp.pt", net, {"channels": 4}, {"global_step": 0})
    policy = load_policy_agent(init)
    rng = np.random.default_rng(2)
    states, targets = [], []
    state = ce.new_game(7)
    while len(states) < 12:
        ids, probs, _ = policy.policy(state)  # the network's own policy, ids ascending
        assert (np.diff(ids) > 0).all()
        states.append(state._a.copy())
        targets.append(probs.astype(np.float32))
        state = ce.apply_action(state, int(rng.choice(ids)))
    games = 10  # every game the same positions, so the held-out ones are these whichever games are held out
    n = [len(t) for t in targets]
    data = Dataset(np.stack(states * games), np.concatenate(targets * games),
                   np.concatenate([[0], np.cumsum(n * games)]).astype(np.int64), np.repeat(np.arange(games), len(states)))
    entropy = float(np.mean([-(t * np.log(t)).sum() for t in targets]))
    ce_before = {}
    for expert in ("mcts", "az"):
        cfg = DistillConfig(init=str(init), expert=expert, epochs=1, batch_size=8, seed=0)
        ce_before[expert] = fit(cfg, data, tmp_path / expert, progress=False)["val_ce_before"]
    assert ce_before["mcts"] == pytest.approx(entropy, rel=1e-4)  # the identity frame: the target itself
    assert ce_before["az"] > entropy + 0.01  # the same weights, seen in other frames, are not the target


def test_errors_say_what_is_wrong(tmp_path, capsys):
    assert distill.main(["--init", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "r")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert distill.main(["--init", str(_tiny(tmp_path)), "--games", "1", "--out", str(tmp_path / "r")]) == 2
    assert "config key 'games' = 1 is invalid; allowed: an integer >= 2" in capsys.readouterr().err
    assert distill.main(["--init", str(_tiny(tmp_path)), "--greedy-share", "1.5", "--out", str(tmp_path / "r")]) == 2
    assert "config key 'greedy_share' = 1.5 is invalid; allowed: a number in [0, 1]" in capsys.readouterr().err
    assert distill.main(["--init", str(_tiny(tmp_path)), "--expert", "alphazero", "--out", str(tmp_path / "r")]) == 2
    assert "config key 'expert' = 'alphazero' is invalid; allowed: mcts, az" in capsys.readouterr().err
    assert distill.main(["--resume", str(tmp_path)]) == 2
    assert "no config.json" in capsys.readouterr().err
    assert distill.main(["--resume", str(tmp_path), "--games", "8"]) == 2
    assert "drop --games" in capsys.readouterr().err
    assert distill.main([]) == 2
    assert "--init" in capsys.readouterr().err
    bad = tmp_path / "shard_0000.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(DistillError, match="is not a colony-distill-shard file"):
        load_shards([bad])
    with pytest.raises(SystemExit):
        distill.main(["--no-such-option"])


def test_the_search_target_noise_example_compares_two_searches_and_the_policy(tmp_path):
    """examples/search_target_noise.py (docs/zero.md, "Three more levers, measured"), tiny settings: two
    independent searches' targets on a run's positions, and the policy scored against them."""
    from helpers import load_example

    assert _run(tmp_path, "--expert", "az", "--max-considered", "4") == 0
    noise = load_example("search_target_noise.py")
    r = noise.measure(tmp_path / "run", tmp_path / "tiny.pt", positions=5, simulations=SIMS, considered=4)
    assert r["positions"] == 5 and 0 <= r["same_move"] <= 1
    assert r["ce_search_to_search"] >= r["entropy"] - 1e-9 >= -1e-9  # Gibbs: no target predicts another better
    assert r["ce_policy_to_search"] > 0 and r["ce_policy_to_mean"] > 0
    with pytest.raises(SystemExit, match="no data/shard"):
        noise.measure(tmp_path, tmp_path / "tiny.pt", positions=5, simulations=SIMS, considered=4)
