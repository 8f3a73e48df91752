"""Elo by maximum likelihood: known answers on synthetic tables, anchoring, finiteness, intervals."""

from __future__ import annotations

import itertools
import math

import pytest

from colony_training.eval.elo import ELO_SCALE, PairTally, expected_score, fit_elo, score_interval

TRUE = {"random": 0.0, "greedy": 250.0, "mcts:200": 600.0, "mcts:1000": 720.0}


def exact_table(ratings: dict[str, float], games: int = 100, draw_share: float = 0.0) -> list[PairTally]:
    """Fractional tallies whose scores equal the model's expectations exactly: the MLE is the truth."""
    out = []
    for a, b in itertools.combinations(ratings, 2):
        p = expected_score(ratings[a], ratings[b])
        draws = games * draw_share
        out.append(PairTally(a, b, games * p - draws / 2, draws, games * (1 - p) - draws / 2))
    return out


@pytest.mark.parametrize("draw_share", [0.0, 0.2])
def test_fit_recovers_known_ratings(draw_share):
    fit = fit_elo(exact_table(TRUE, draw_share=draw_share), prior_draws=0)
    assert fit.anchor == "random" and fit.ratings["random"] == 0.0
    for name, r in TRUE.items():
        assert fit.ratings[name] == pytest.approx(r, abs=1e-6)
    assert [a for a, _, _ in fit.ladder()] == ["mcts:1000", "mcts:200", "greedy", "random"]


def test_error_bar_of_a_single_pair_matches_the_formula():
    """One pair, N games at 75%: se = 1 / sqrt(N p (1-p)) in logistic units."""
    n, p = 200, 0.75
    fit = fit_elo([PairTally("a", "random", n * p, 0, n * (1 - p))], prior_draws=0)
    assert fit.ratings["a"] == pytest.approx(ELO_SCALE * math.log(p / (1 - p)))
    assert fit.ci95["a"] == pytest.approx(1.959964 * ELO_SCALE / math.sqrt(n * p * (1 - p)), rel=1e-5)
    assert fit.ci95["random"] == 0.0


def test_anchor_shifts_every_rating_by_a_constant():
    table = exact_table(TRUE)
    other = fit_elo(table, anchor="greedy", prior_draws=0)
    assert other.ratings["greedy"] == 0.0
    assert other.ratings["mcts:200"] == pytest.approx(TRUE["mcts:200"] - TRUE["greedy"], abs=1e-6)
    assert fit_elo([PairTally("x", "y", 3, 0, 1)]).anchor == "x"  # no random: the first agent


def test_perfect_scores_stay_finite_with_the_prior_only():
    table = [PairTally("mcts:200", "random", 200, 0, 0)]
    fit = fit_elo(table)  # one virtual draw: score 200.5 / 201
    assert fit.ratings["mcts:200"] == pytest.approx(ELO_SCALE * math.log(200.5 / 0.5), rel=1e-6)
    with pytest.raises(ValueError, match="diverged"):
        fit_elo(table, prior_draws=0)


def test_split_or_empty_tables_are_rejected():
    with pytest.raises(ValueError, match="connect"):
        fit_elo([PairTally("a", "b", 1, 0, 1), PairTally("c", "d", 1, 0, 1)])
    with pytest.raises(ValueError, match="at least two"):
        fit_elo([])
    with pytest.raises(ValueError, match="anchor"):
        fit_elo([PairTally("a", "b", 1, 0, 1)], anchor="z")


def test_score_interval():
    lo, hi = score_interval(1.0, 200)
    assert hi == 1.0 and 0.97 < lo < 1.0
    lo, hi = score_interval(0.5, 400)
    assert lo == pytest.approx(1 - hi) and hi - lo == pytest.approx(2 * 1.96 * 0.5 / math.sqrt(400), rel=0.01)
    assert score_interval(0.3, 0) == (0.0, 1.0)


def test_fixed_ratings_hold_and_the_rest_is_fitted_against_them():
    import math

    from colony_training.eval.elo import LADDER_ELO, PairTally, fit_elo, ladder_rating

    # a even against an opponent held at +400 is rated +400 (the virtual draw keeps it even)
    fit = fit_elo([PairTally("a", "b", 50, 0, 50)], fixed={"b": 400.0})
    assert fit.ratings["b"] == pytest.approx(400.0) and fit.ratings["a"] == pytest.approx(400.0) and fit.ci95["a"] > 0
    # 3 of 4 against greedy puts the agent about 191 Elo above greedy's ladder rating ...
    g = LADDER_ELO["greedy"]
    rating, ci = ladder_rating("agent", [PairTally("agent", "greedy", 300, 0, 100)])
    expected = g + 400 * math.log10(300.5 / 100.5)  # with the one virtual draw
    assert abs(rating - expected) < 1e-3 and 0 < ci < 150
    # ... and winning every game against random as well moves it only a little, where a fit with
    # random as the free anchor of a gauntlet is set by those saturated games alone
    both, _ = ladder_rating("agent", [PairTally("agent", "random", 400, 0, 0), PairTally("agent", "greedy", 300, 0, 100)])
    assert expected < both < expected + 20
    # opponents off the ladder are left out; none on it gives no rating
    assert ladder_rating("agent", [PairTally("agent", "mcts:7", 3, 0, 1), PairTally("agent", "greedy", 300, 0, 100)])[0] == rating
    assert all(math.isnan(v) for v in ladder_rating("agent", [PairTally("agent", "mcts:7", 3, 0, 1)]))
    with pytest.raises(ValueError, match="not agents"):
        fit_elo([PairTally("a", "b", 1, 0, 1)], fixed={"c": 0.0})
