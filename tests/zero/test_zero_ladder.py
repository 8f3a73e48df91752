"""colony-zero's evaluations against the configured ladder (issue 31, item 1): the search agent
alone against its own opponents, and the cost of each evaluation said in one line."""

from __future__ import annotations

import csv

from colony_training.zero import train as zero_train

TINY = ["--channels", "8", "--blocks", "1", "--games-per-generation", "4", "--parallel-games", "4",
        "--simulations", "4", "--max-considered", "4", "--workers", "1", "--max-plies", "40", "--eval-games", "2",
        "--eval-every", "1", "--eval-max-plies", "20", "--batch-size", "32", "--generations", "1", "--no-progress"]


def test_search_agent_only_against_its_own_ladder_with_the_cost_said(tmp_path, capsys):
    out = tmp_path / "runs"
    assert zero_train.main(["--out-dir", str(out), *TINY, "--eval-opponents", "random", "--eval-simulations", "2",
                            "--eval-policy", "false", "--eval-search-opponents", "greedy,mcts:2"]) == 0
    run = next(out.iterdir())
    with (run / "eval.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["agent"], r["opponent"], r["games"]) for r in rows] == [("az:2", "greedy", "2"), ("az:2", "mcts:2", "2")]
    assert rows[0]["elo"] != "nan" and rows[1]["elo"] == rows[0]["elo"]  # greedy is rated, mcts:2 is not on the ladder
    cost = [ln for ln in capsys.readouterr().err.splitlines() if "evaluation of" in ln]
    assert len(cost) == 1 and "generation 0 evaluation of az:2: 4 games against greedy, mcts:2 in " in cost[0]
    assert cost[0].endswith("s a game)") and "on 1 worker(s)" in cost[0]


def test_nothing_to_evaluate_is_refused_in_one_line(tmp_path, capsys):
    assert zero_train.main(["--out-dir", str(tmp_path), *TINY, "--eval-policy", "false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "eval_policy" in err[0] and "eval_simulations > 0" in err[0]
    assert not any(tmp_path.iterdir())
