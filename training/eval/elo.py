"""Elo ratings fitted by maximum likelihood over all games, and score intervals.

Model (Bradley-Terry on the Elo scale): agent `i` scores against agent `j` with
expectation `E_ij = 1 / (1 + 10 ** ((R_j - R_i) / 400))`; a win counts 1, a draw 1/2,
a loss 0, and the log-likelihood of a results table is

    L(R) = sum over pairs of  S_ij * log E_ij + (N_ij - S_ij) * log(1 - E_ij)

with `S_ij` the score of `i` against `j` over `N_ij` games. The ratings maximise `L`
with one agent anchored at 0 (`random` when present). An agent that won or lost every
game has no finite maximum, so by default each pair that played also gets
`prior_draws` virtual drawn games (one), which keeps every rating finite and pulls
lopsided ratings slightly toward each other; pass `prior_draws=0` for the plain MLE.
Error bars are 95% normal intervals from the observed information (the inverse of the
negative Hessian of `L` at the maximum, anchor fixed).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per unit of the logistic strength
Z95 = 1.959963984540054  # two-sided 95% normal quantile
MAX_NEWTON_STEPS = 100
MAX_STEP = 2.0  # largest change of a strength per Newton step (in logistic units), for stability
TOLERANCE = 1e-10
MAX_STRENGTH = 50.0  # |strength| beyond this (about 8,700 Elo) means no finite maximum exists
DEFAULT_PRIOR_DRAWS = 1.0



@dataclass(frozen=True)
class Anchor:
    """A fixed agent of the ladder: its rating (None until rated) and where the rating comes from.

    `command` is what rates it (or would); `output` is that command's recorded result, so every
    rating can be checked by running the command again. An unrated anchor can still be played
    (its scores are logged) but gives no Elo until its rating is recorded here."""

    spec: str
    elo: float | None
    ci95: float | None
    command: str
    output: str
    cost: str = ""  # what rating it takes (measured), while it is unrated


# The fixed ladder colony-zero's evaluations are rated against (`fit_elo(..., fixed=LADDER_ELO)`),
# so that a run's Elo keeps moving once it beats `random` (then `greedy`, ...) every game. Each
# anchor is rated once against the rated anchors below it, with its command and output here; an
# anchor's rating is then taken as exact. Rating a new one: run its command, then
#   python -m colony_training.eval.elo OUT_DIR      # its Elo with the rated anchors held fixed
# and record both outputs here (docs/zero.md, "The ladder").
ANCHORS: tuple[Anchor, ...] = (
    Anchor("random", 0.0, 0.0, "", "the ladder's zero, by definition"),
    Anchor("greedy", 607.0, 64.0, "colony-eval greedy random --games 1000 --seed 31337 --workers 1",
           "greedy vs random: 1000 games, 953 / 36 / 11, score 0.971 [0.959, 0.980]: +607 +-64 Elo"),
    Anchor("mcts:200", 692.0, 22.2,
           "colony-eval mcts:200 greedy --games 1000 --seed 31338 --workers 2 --out runs/anchor-mcts200",
           "mcts:200 vs greedy: 1000 games, 609 / 22 / 369, score 0.620 [0.590, 0.650] (1452 s on 2 workers); "
           "python -m colony_training.eval.elo runs/anchor-mcts200: mcts:200 +692.0 +- 22.2 (1000 games)"),
    Anchor("mcts:1000", 856.3, 24.0,
           "colony-eval mcts:1000 mcts:200 --games 1000 --seed 31339 --workers 2 --out runs/anchor-mcts1000",
           "mcts:1000 vs mcts:200: 1000 games, 704 / 33 / 263, score 0.721 [0.692, 0.747] (the last 894 games in "
           "6284 s on 2 workers, resumed twice); python -m colony_training.eval.elo runs/anchor-mcts1000: "
           "mcts:1000 +856.3 +- 24.0 (1000 games)"),
)
LADDER_ELO: dict[str, float] = {a.spec: a.elo for a in ANCHORS if a.elo is not None}
"""The rated anchors' Elo by spec (`random` 0, `greedy` +607, ...): what `ladder_rating` holds fixed."""
UNRATED_ANCHORS: tuple[str, ...] = tuple(a.spec for a in ANCHORS if a.elo is None)


@dataclass(frozen=True)
class PairTally:
    """Results of `a` against `b`: wins, draws and losses counted from `a`'s side."""

    a: str
    b: str
    wins: float
    draws: float
    losses: float

    @property
    def games(self) -> float:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else float("nan")


@dataclass(frozen=True)
class EloFit:
    """Fitted ratings: `ratings[name]` and `ci95[name]` (half-width) in Elo points."""

    agents: tuple[str, ...]
    ratings: dict[str, float]
    ci95: dict[str, float]
    anchor: str
    prior_draws: float

    def ladder(self) -> list[tuple[str, float, float]]:
        """(agent, rating, 95% half-width), strongest first."""
        return sorted(((a, self.ratings[a], self.ci95[a]) for a in self.agents), key=lambda t: -t[1])


def fit_elo(
    tallies: Iterable[PairTally],
    agents: Sequence[str] | None = None,
    anchor: str | None = None,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    fixed: dict[str, float] | None = None,
) -> EloFit:
    """Maximum-likelihood Elo over a results table (module docstring); Newton's method.

    `agents` fixes the order (default: first appearance); `anchor` is rated 0 (default
    `random` if present, else the first agent). `fixed` holds some agents at given ratings
    instead (a reference ladder, `LADDER_ELO`); the others are fitted against them, and the
    anchor is then the first fixed agent. ValueError if an agent played no games or the
    comparison graph is split (ratings across parts would be undetermined).
    """
    tallies = [t for t in tallies if t.games > 0]
    names = list(agents) if agents is not None else list(dict.fromkeys(n for t in tallies for n in (t.a, t.b)))
    if len(names) < 2:
        raise ValueError("an Elo fit needs games between at least two agents")
    if prior_draws < 0:
        raise ValueError(f"prior_draws must be >= 0, got {prior_draws}")
    fixed = dict(fixed or {})
    if set(fixed) - set(names):
        raise ValueError(f"fixed ratings for {sorted(set(fixed) - set(names))}, which are not agents of {names}")
    if fixed:
        anchor = next(iter(fixed))
    elif anchor is None:
        anchor = "random" if "random" in names else names[0]
    if anchor not in names:
        raise ValueError(f"anchor {anchor!r} is not one of the agents {names}")
    index = {n: i for i, n in enumerate(names)}
    k = len(names)
    n_games = np.zeros((k, k))
    score = np.zeros((k, k))  # score[i, j]: points of i against j
    for t in tallies:
        if t.a not in index or t.b not in index or t.a == t.b:
            raise ValueError(f"tally {t.a!r} vs {t.b!r} does not name two different agents of {names}")
        i, j = index[t.a], index[t.b]
        n_games[i, j] += t.games
        n_games[j, i] += t.games
        score[i, j] += t.wins + 0.5 * t.draws
        score[j, i] += t.losses + 0.5 * t.draws
    played = n_games > 0
    _check_connected(names, played)
    n_fit = n_games + prior_draws * played
    s_fit = score + 0.5 * prior_draws * played

    held = set(fixed) or {anchor}
    free = [i for i in range(k) if names[i] not in held]
    diverged = "the Elo fit diverged: some agent won or lost every game; use prior_draws > 0"
    theta = np.array([fixed.get(n, 0.0) / ELO_SCALE for n in names])
    for _ in range(MAX_NEWTON_STEPS):
        grad, hess = _derivatives(theta, n_fit, s_fit)
        g, h = grad[free], hess[np.ix_(free, free)]
        try:
            step = np.linalg.solve(h, -g)
        except np.linalg.LinAlgError:  # the curvature vanished: expected scores saturated at 0 or 1
            raise ValueError(diverged) from None
        biggest = np.max(np.abs(step)) if step.size else 0.0
        if biggest > MAX_STEP:
            step *= MAX_STEP / biggest
        theta[free] += step
        if biggest < TOLERANCE:
            break
    if not np.all(np.isfinite(theta)) or np.max(np.abs(theta)) > MAX_STRENGTH:
        raise ValueError(diverged)
    _, hess = _derivatives(theta, n_fit, s_fit)
    cov = np.linalg.inv(-hess[np.ix_(free, free)])
    se = np.zeros(k)
    se[free] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return EloFit(
        agents=tuple(names),
        ratings={n: float(ELO_SCALE * theta[i]) for n, i in index.items()},
        ci95={n: float(Z95 * ELO_SCALE * se[i]) for n, i in index.items()},
        anchor=anchor,
        prior_draws=float(prior_draws),
    )


def _derivatives(theta: np.ndarray, n_games: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of the log-likelihood in the logistic strengths `theta`."""
    diff = theta[:, None] - theta[None, :]
    p = 1.0 / (1.0 + np.exp(-diff))  # expected score of i against j
    grad = np.sum(score - n_games * p, axis=1)
    w = n_games * p * (1.0 - p)  # n_games has a zero diagonal, so w does too
    hess = w - np.diag(np.sum(w, axis=1))
    return grad, hess


def _check_connected(names: list[str], played: np.ndarray) -> None:
    seen = {0}
    todo = [0]
    while todo:
        i = todo.pop()
        for j in np.flatnonzero(played[i]):
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    if len(seen) != len(names):
        lonely = [names[i] for i in range(len(names)) if i not in seen]
        raise ValueError(f"the games do not connect every agent (no path of games to {lonely}); Elo is undetermined")


def expected_score(elo_a: float, elo_b: float) -> float:
    """Expected score of a player rated `elo_a` against one rated `elo_b`."""
    return 1.0 / (1.0 + 10.0 ** ((elo_b - elo_a) / 400.0))


def score_interval(score: float, games: float, z: float = Z95) -> tuple[float, float]:
    """Wilson 95% interval for a score (draws counted as half points) over `games` games.

    Unlike the normal interval it stays inside [0, 1] and is not empty at 0% or 100%.
    """
    if games <= 0:
        return (0.0, 1.0)
    denom = 1.0 + z * z / games
    centre = (score + z * z / (2 * games)) / denom
    half = z * math.sqrt(score * (1 - score) / games + z * z / (4 * games * games)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def ladder_rating(agent: str, tallies: Iterable[PairTally]) -> tuple[float, float]:
    """`agent`'s Elo and 95% half-width from its games against members of the fixed ladder
    (`LADDER_ELO`, held at their ratings; other opponents are left out); NaN if it played none.

    The half-width is the fit's alone: the ladder's own ratings are taken as exact.
    """
    rows = [t for t in tallies if t.a == agent and t.b in LADDER_ELO and t.games > 0]
    if not rows:
        return float("nan"), float("nan")
    fit = fit_elo(rows, fixed={t.b: LADDER_ELO[t.b] for t in rows})
    return fit.ratings[agent], fit.ci95[agent]


def rate_from_pairs(path: str | Path) -> list[tuple[str, float, float, float]]:
    """(agent, Elo, 95% half-width, games) of every agent in a `colony-eval` pairs.csv that is not a
    rated anchor, fitted with the rated anchors held at `LADDER_ELO` (the way an anchor is rated)."""
    path = Path(path)
    if path.is_dir():
        path = path / "pairs.csv"
    try:
        with path.open(newline="", encoding="utf-8") as f:
            pairs = list(csv.DictReader(f))
        tallies = [PairTally(r["a"], r["b"], float(r["wins"]), float(r["draws"]), float(r["losses"])) for r in pairs]
    except FileNotFoundError:
        raise ValueError(f"{str(path)!r} does not exist (give a colony-eval --out folder or its pairs.csv)") from None
    except (OSError, UnicodeDecodeError, KeyError, TypeError, ValueError, csv.Error) as e:
        raise ValueError(f"{str(path)!r} is not a colony-eval pairs.csv ({type(e).__name__})") from None
    names = list(dict.fromkeys(n for t in tallies for n in (t.a, t.b)))
    fixed = {n: LADDER_ELO[n] for n in names if n in LADDER_ELO}
    if not fixed:
        raise ValueError(f"{str(path)!r} has no games against a rated anchor ({', '.join(LADDER_ELO)})")
    fit = fit_elo(tallies, names, fixed=fixed)
    games = {n: sum(t.games for t in tallies if n in (t.a, t.b)) for n in names}
    return [(n, fit.ratings[n], fit.ci95[n], games[n]) for n in names if n not in fixed]


def main(argv: list[str] | None = None) -> int:
    """`python -m colony_training.eval.elo OUT_DIR`: the Elo of a colony-eval run's agents on the fixed ladder."""
    import argparse

    from ..cli import report_error

    p = argparse.ArgumentParser(prog="python -m colony_training.eval.elo",
                                description="Rate the agents of a colony-eval run (its --out folder or pairs.csv) "
                                "against the fixed ladder's rated anchors, held at their ratings: how a new "
                                "anchor is rated. Anchors and their records: training/eval/elo.py ANCHORS.")
    p.add_argument("pairs", help="a colony-eval --out folder, or its pairs.csv")
    args = p.parse_args(argv)
    try:
        rated = rate_from_pairs(args.pairs)
    except ValueError as e:
        return report_error(p.prog, str(e))
    held = ", ".join(f"{k} {v:+.0f}" for k, v in LADDER_ELO.items())
    print(f"Elo on the fixed ladder ({held}; 95% intervals from these games alone)")
    for name, elo, ci, games in rated:
        print(f"{name:<24} {elo:+7.1f} +-{ci:5.1f}  ({games:.0f} games)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
