"""The ladder's anchors (issue 31, item 1): every rating has the command and output it came from,
unrated anchors give no Elo (and say what rating them costs), and the rating command fits a
colony-eval run's agents with the rated anchors held fixed."""

from __future__ import annotations

import math
import re

import pytest

from colony_training.eval import elo
from colony_training.eval.elo import ANCHORS, LADDER_ELO, UNRATED_ANCHORS, PairTally, ladder_rating


def test_every_rating_is_recorded_with_its_command_and_output():
    assert LADDER_ELO["random"] == 0.0 and LADDER_ELO["greedy"] == 607.0 and LADDER_ELO["mcts:200"] == 692.0
    assert {"mcts:200", "mcts:1000"} <= {a.spec for a in ANCHORS}
    for a in ANCHORS:
        if a.elo is None:
            assert a.spec in UNRATED_ANCHORS and a.spec not in LADDER_ELO
            assert a.command.startswith("colony-eval ") and a.cost  # how to rate it, and what that costs
        else:
            assert LADDER_ELO[a.spec] == a.elo and a.output  # a rating comes with its recorded output
            assert a.spec == "random" or a.command.startswith("colony-eval ")


def test_an_unrated_anchor_scores_but_gives_no_elo():
    for spec in (*UNRATED_ANCHORS, "mcts:5000"):  # the recorded ones, and one that is not on the ladder at all
        assert all(math.isnan(v) for v in ladder_rating("agent", [PairTally("agent", spec, 30, 0, 10)])), spec
        # with a rated anchor beside it, only the rated one's games count
        both = ladder_rating("agent", [PairTally("agent", spec, 0, 0, 40), PairTally("agent", "greedy", 20, 0, 20)])
        assert both == ladder_rating("agent", [PairTally("agent", "greedy", 20, 0, 20)])


def write_pairs(path, rows):
    lines = ["a,b,games,wins,draws,losses,score,ci_low,ci_high,a_red_score,mean_plies"]
    for a, b, w, d, l in rows:
        n = w + d + l
        lines.append(f"{a},{b},{n},{w},{d},{l},{(w + d / 2) / n:.4f},0,1,0.5,100.0")
    path.write_text("\n".join(lines) + "\n")


def test_rating_a_new_anchor_from_a_colony_eval_run(tmp_path, capsys):
    write_pairs(tmp_path / "pairs.csv", [("mcts:100", "greedy", 600, 0, 400)])
    (rated,) = elo.rate_from_pairs(tmp_path)
    name, rating, ci, games = rated
    # the same fit colony-zero's evaluations use: greedy held at its rating
    want, want_ci = ladder_rating("mcts:100", [PairTally("mcts:100", "greedy", 600, 0, 400)])
    assert name == "mcts:100" and games == 1000
    assert rating == pytest.approx(want) and ci == pytest.approx(want_ci)
    assert LADDER_ELO["greedy"] + 60 < rating < LADDER_ELO["greedy"] + 80 and 15 < ci < 30  # 1,000 games: about +-22
    assert elo.main([str(tmp_path / "pairs.csv")]) == 0
    out = capsys.readouterr().out
    assert "greedy +607" in out and "mcts:100" in out and "(1000 games)" in out


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    ("not,a,pairs,file\n1,2,3,4\n", "not a colony-eval pairs.csv"),
    ([("mcts:7", "mcts:9", 3, 0, 1)], "no games against a rated anchor"),
])
def test_the_rating_command_refuses_in_one_line(content, message, tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        write_pairs(path, content)
    assert elo.main([str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.parametrize("spec", [a.spec for a in ANCHORS if a.spec.startswith("mcts:") and a.elo is not None])
def test_a_recorded_search_anchor_rating_is_the_fit_of_its_recorded_games(spec):
    """A search anchor's recorded output (its wins / draws / losses against the anchor its command names)
    gives its recorded rating, with that anchor held at its own, inside the ladder's +-25."""
    (anchor,) = [a for a in ANCHORS if a.spec == spec]
    opponent = anchor.command.split()[2]
    assert anchor.command.split()[1] == spec and opponent in LADDER_ELO
    wins, draws, losses = (int(x.replace(",", "")) for x in re.search(r"([\d,]+) / ([\d,]+) / ([\d,]+)", anchor.output).groups())
    assert wins + draws + losses == 1000
    rating, ci = ladder_rating("new", [PairTally("new", opponent, wins, draws, losses)])
    assert rating == pytest.approx(anchor.elo, abs=0.05) and ci == pytest.approx(anchor.ci95, abs=0.05)
    assert ci < 25  # the ladder's bar for an anchor's interval
