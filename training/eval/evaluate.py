"""`colony-eval` (also `python -m colony_training.eval.evaluate`): matches between agents, score tables, Elo.

    colony-eval mcts:200 random --games 200 --seed 0
    colony-eval checkpoint:runs/x/final.pt random greedy mcts:200 --schedule gauntlet --games 200

Every pairing plays `--games` games over `games / 2` setups (R2 random placements):
each setup is played twice with the colours swapped (paired seeds), so neither agent
profits from a lucky placement or from moving first. Setup `k` is the same for every
pairing of one run (drawn from `--seed` and `k` only), and each game's agents get
their own generators derived from (seed, pairing, k, colour), so a run is reproducible
whatever the number of worker processes. Games run in parallel over the machine's
cores with a progress bar.

The table per pairing shows wins, draws and losses of the first agent, its score
(draw = 1/2) with a Wilson 95% interval, and an Elo ladder fitted by maximum likelihood
over all games (`colony_training.eval.elo`, `random` anchored at 0, 95% error bars). The same is
written as JSON and CSV in `--out`, with every game as a JSON-lines record
(`colony_training.eval.records`, view one with `colony-replay`).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import colony_env as ce
from colony_env.agents import Agent
from colony_env.constants import DEFAULT_MAX_PLIES, MAX_PLIES_LIMIT

from ..cli import console_script
from ..config import SEED_MAX
from ..runlog import output_dir_problem
from .agent_specs import SPEC_HELP, AgentSpecError, make_agent, parse_agent_spec
from .elo import DEFAULT_PRIOR_DRAWS, EloFit, PairTally, fit_elo, score_interval
from .records import GameRecord, RecordError, write_records

SCHEDULES = ("round-robin", "gauntlet")
SETUP_STREAM = 0  # SeedSequence streams: setups are shared by every pairing, agent streams are not
AGENT_STREAM = 1
DEFAULT_GAMES = 100
DEFAULT_OUT_ROOT = Path("runs") / "eval"


class EvalError(ValueError):
    """Bad evaluation request (the message is one line)."""


# ---------------------------------------------------------------------------------
# One game


def play_game(
    red: Agent, blue: Agent, initial: ce.GameState, rng_red: np.random.Generator, rng_blue: np.random.Generator
) -> tuple[ce.GameState, list[int]]:
    """Play from `initial` to the end; (final state, actions). The engine checks every action."""
    game = _Game(state=initial, agents=(red, blue), rngs=(rng_red, rng_blue))
    _play_side_by_side([game])
    return game.state, game.actions


@dataclass
class _Game:
    """One game in flight: its position, its (red, blue) agents and their generators."""

    state: ce.GameState
    agents: tuple[Agent, Agent]
    rngs: tuple[np.random.Generator, np.random.Generator]
    actions: list[int] = field(default_factory=list)
    seconds: float = 0.0  # wall time from the start of the group to this game's end


def _play_side_by_side(games: Sequence[_Game]) -> None:
    """Play every game of `games` to its end, in place.

    At every turn the games waiting for the same agent go to it together (`Agent.act_batch`), so
    a network search evaluates the leaves of all of them in one call. Each game keeps its own
    generators, so a game's moves do not depend on the others beyond the network's
    floating-point sums.
    """
    t0 = time.perf_counter()
    while True:
        waiting: dict[int, list[_Game]] = {}
        for g in games:
            if not g.state.is_over:
                waiting.setdefault(id(g.agents[int(g.state.to_move)]), []).append(g)
        if not waiting:
            return
        for group in waiting.values():
            agent = group[0].agents[int(group[0].state.to_move)]
            states = [g.state for g in group]
            rngs = [g.rngs[int(g.state.to_move)] for g in group]
            batched = getattr(agent, "act_batch", None)  # any object with act() may play (duck-typed agents)
            actions = batched(states, rngs) if batched else [agent.act(s, r) for s, r in zip(states, rngs)]
            for g, action in zip(group, actions):
                g.state = ce.apply_action(g.state, action)  # raises IllegalActionError: an agent bug, never silent
                g.actions.append(int(action))
                if g.state.is_over:
                    g.seconds = time.perf_counter() - t0


def setup_state(seed: int, setup: int, max_plies: int) -> ce.GameState:
    """The initial position of setup `setup` of a run (the same for every pairing)."""
    return ce.new_game(np.random.default_rng(np.random.SeedSequence([seed, SETUP_STREAM, setup])), max_plies=max_plies)


def agent_rng(seed: int, pairing: int, setup: int, swapped: int, colour: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, AGENT_STREAM, pairing, setup, swapped, colour]))


@dataclass(frozen=True)
class Job:
    """Game `2*setup + swapped` of pairing (a, b): `a` is red unless `swapped`."""

    pairing: int
    a: int
    b: int
    setup: int
    swapped: int
    seed: int
    max_plies: int


@dataclass
class GameResult:
    pairing: int
    setup: int
    swapped: int
    red: str
    blue: str
    result: str  # red | blue | draw
    end_reason: str
    plies: int
    seconds: float
    actions: list[int] = field(repr=False, default_factory=list)

    def score_of_red(self) -> float:
        return {"red": 1.0, "blue": 0.0, "draw": 0.5}[self.result]


_WORKER_AGENTS: list[Agent] = []


def _init_worker(payload: Sequence[str | Agent]) -> None:
    """Build each worker's agents once (checkpoints load here); one torch thread per worker."""
    global _WORKER_AGENTS
    _WORKER_AGENTS = [make_agent(p) if isinstance(p, str) else p for p in payload]
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _run_group(jobs: Sequence[Job]) -> list[GameResult]:
    """Play the games of `jobs` side by side (`_play_side_by_side`) with this worker's agents."""
    agents = _WORKER_AGENTS
    games = []
    for job in jobs:
        red_i, blue_i = (job.b, job.a) if job.swapped else (job.a, job.b)
        games.append(_Game(
            state=setup_state(job.seed, job.setup, job.max_plies), agents=(agents[red_i], agents[blue_i]),
            rngs=(agent_rng(job.seed, job.pairing, job.setup, job.swapped, 0),
                  agent_rng(job.seed, job.pairing, job.setup, job.swapped, 1)),
        ))
    _play_side_by_side(games)
    results = []
    for job, g in zip(jobs, games):
        w = g.state.winner
        results.append(GameResult(
            pairing=job.pairing, setup=job.setup, swapped=job.swapped, red=g.agents[0].name, blue=g.agents[1].name,
            result="draw" if w is None else str(w), end_reason=str(g.state.end_reason), plies=g.state.ply,
            seconds=g.seconds, actions=g.actions,
        ))
    return results


# ---------------------------------------------------------------------------------
# A whole evaluation


@dataclass
class PairStats:
    """Results of pairing `a` vs `b`, counted from `a`'s side."""

    a: str
    b: str
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    ci_low: float
    ci_high: float
    a_red_score: float  # a's score in the games where a was red (first to move)
    mean_plies: float
    end_reasons: dict[str, int]

    def tally(self) -> PairTally:
        """The counts the Elo fit takes."""
        return PairTally(self.a, self.b, self.wins, self.draws, self.losses)


@dataclass
class EvalResult:
    agents: list[str]
    config: dict[str, Any]
    games: list[GameResult]
    pairs: list[PairStats]
    elo: EloFit

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "pairs": [asdict(p) for p in self.pairs],
            "elo": {
                "anchor": self.elo.anchor,
                "prior_draws": self.elo.prior_draws,
                "ladder": [
                    {"agent": a, "elo": round(r, 1), "ci95": round(c, 1)} for a, r, c in self.elo.ladder()
                ],
            },
        }


def pairings(n_agents: int, schedule: str) -> list[tuple[int, int]]:
    """Round robin: every pair once; gauntlet: the first agent against each of the others."""
    if schedule == "gauntlet":
        return [(0, j) for j in range(1, n_agents)]
    return [(i, j) for i in range(n_agents) for j in range(i + 1, n_agents)]


def make_jobs(pairs: list[tuple[int, int]], games: int, seed: int, max_plies: int) -> list[Job]:
    """Games of every pairing, interleaved so that the progress bar moves evenly."""
    jobs = []
    for setup in range(games // 2):
        for p, (a, b) in enumerate(pairs):
            for swapped in (0, 1):
                jobs.append(Job(p, a, b, setup, swapped, seed, max_plies))
    return jobs


def tally_pairs(names: list[str], pairs: list[tuple[int, int]], results: list[GameResult]) -> list[PairStats]:
    out = []
    for p, (a, b) in enumerate(pairs):
        mine = [r for r in results if r.pairing == p]
        wins = draws = losses = 0
        red_points = red_games = 0.0
        for r in mine:
            a_colour = "blue" if r.swapped else "red"
            if r.result == "draw":
                draws += 1
            elif r.result == a_colour:
                wins += 1
            else:
                losses += 1
            if not r.swapped:
                red_games += 1
                red_points += r.score_of_red()
        n = len(mine)
        score = (wins + 0.5 * draws) / n if n else float("nan")
        lo, hi = score_interval(score, n)
        out.append(
            PairStats(
                a=names[a],
                b=names[b],
                games=n,
                wins=wins,
                draws=draws,
                losses=losses,
                score=score,
                ci_low=lo,
                ci_high=hi,
                a_red_score=red_points / red_games if red_games else float("nan"),
                mean_plies=float(np.mean([r.plies for r in mine])) if mine else float("nan"),
                end_reasons=dict(Counter(r.end_reason for r in mine)),
            )
        )
    return out


def evaluate(
    agents: Sequence[str | Agent],
    games: int = DEFAULT_GAMES,
    seed: int = 0,
    workers: int | None = None,
    schedule: str = "round-robin",
    max_plies: int = DEFAULT_MAX_PLIES,
    progress: bool = True,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    batch: int = 1,
) -> EvalResult:
    """Play every pairing `games` times (paired seeds) and fit Elo; see the module docstring.

    `batch` games of the job list are played side by side in one worker (`_run_group`): an
    `az` agent then searches them with one network call per simulation step. Groups are cut
    from the job list, never by worker, so a run is the same on any number of workers.

    `agents` are spec strings (built in each worker; a checkpoint is checked here
    first) or `Agent` objects (sent to the workers). `workers=1` plays in this process.
    """
    if isinstance(games, bool) or not isinstance(games, int) or games < 2 or games % 2:
        raise EvalError(f"--games must be an even number >= 2 (each setup is played once with each colour), got {games}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise EvalError(f"--batch must be an integer >= 1 (games played side by side per worker), got {batch}")
    if schedule not in SCHEDULES:
        raise EvalError(f"--schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    if len(agents) < 2:
        raise EvalError("give at least two agents to evaluate")
    payload: list[str | Agent] = []
    names: list[str] = []
    needs_spawn = False
    for a in agents:
        if isinstance(a, str):
            spec = parse_agent_spec(a)
            built = make_agent(spec)  # fails early, in one line, for a bad checkpoint
            payload.append(spec.text)
            names.append(built.name)
            needs_spawn |= spec.kind == "checkpoint"
        else:
            payload.append(a)
            names.append(a.name)
    if len(set(names)) != len(names):
        raise EvalError(f"agents must have distinct names, got {names}")
    pairs = pairings(len(names), schedule)
    jobs = make_jobs(pairs, games, seed, max_plies)
    groups = [jobs[i: i + batch] for i in range(0, len(jobs), batch)]
    n_workers = max(1, min(workers or _cpu_count(), len(groups)))

    from tqdm import tqdm

    bar = tqdm(total=len(jobs), desc="games", unit="game", disable=not progress, dynamic_ncols=True)
    results: list[GameResult] = []
    try:
        if n_workers == 1:
            _init_worker(payload)
            for group in groups:
                results.extend(_run_group(group))
                bar.update(len(group))
        else:
            # fork is fast and keeps compiled kernels; torch (checkpoints) is safer with spawn.
            ctx = mp.get_context("spawn" if needs_spawn or "fork" not in mp.get_all_start_methods() else "fork")
            with ctx.Pool(n_workers, initializer=_init_worker, initargs=(payload,)) as pool:
                for done in pool.imap_unordered(_run_group, groups, chunksize=1):
                    results.extend(done)
                    bar.update(len(done))
    finally:
        bar.close()
    results.sort(key=lambda r: (r.pairing, r.setup, r.swapped))
    stats = tally_pairs(names, pairs, results)
    try:
        elo = fit_elo([s.tally() for s in stats], agents=names, prior_draws=prior_draws)
    except ValueError as e:  # e.g. --prior-draws 0 with a 100% score
        raise EvalError(str(e)) from None
    config = {
        "agents": names,
        "games_per_pairing": games,
        "seed": seed,
        "schedule": schedule,
        "max_plies": max_plies,
        "workers": n_workers,
        "prior_draws": prior_draws,
        "batch": batch,
    }
    return EvalResult(agents=names, config=config, games=results, pairs=stats, elo=elo)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------------
# Output


def format_tables(pairs: Sequence[PairStats], elo: EloFit) -> str:
    """The pairing table and the Elo ladder as fixed-width text (also used in the README)."""
    w = max([len(f"{p.a} vs {p.b}") for p in pairs] + [len("pairing")])
    lines = [f"{'pairing':<{w}}  games    W    D    L   score   95% CI          first-agent score as red"]
    for p in pairs:
        lines.append(
            f"{p.a + ' vs ' + p.b:<{w}}  {p.games:5d} {p.wins:4d} {p.draws:4d} {p.losses:4d}  {p.score:6.3f}"
            f"   [{p.ci_low:.3f}, {p.ci_high:.3f}]  " + ("     -" if np.isnan(p.a_red_score) else f"{p.a_red_score:6.3f}")
        )
    aw = max(len(a) for a in elo.agents + ("agent",))
    lines.append("")
    lines.append(f"Elo (maximum likelihood over all games, {elo.anchor} = 0, 95% intervals, {elo.prior_draws:g} virtual draw per pairing)")
    lines.append(f"{'rank':>4}  {'agent':<{aw}}  {'Elo':>7}  {'+-95%':>6}")
    for rank, (agent, rating, ci) in enumerate(elo.ladder(), 1):
        ci_text = "anchor" if agent == elo.anchor else f"{ci:6.0f}"
        lines.append(f"{rank:>4}  {agent:<{aw}}  {rating:+7.0f}  {ci_text:>6}")
    return "\n".join(lines)


def write_outputs(result: EvalResult, out: Path, records: bool = True) -> list[Path]:
    """eval.json, pairs.csv, elo.csv and (with `records`) games.jsonl in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    path = out / "eval.json"
    path.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    written.append(path)
    path = out / "pairs.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "games", "wins", "draws", "losses", "score", "ci_low", "ci_high", "a_red_score", "mean_plies"])
        for p in result.pairs:
            w.writerow([p.a, p.b, p.games, p.wins, p.draws, p.losses, f"{p.score:.4f}", f"{p.ci_low:.4f}",
                        f"{p.ci_high:.4f}", f"{p.a_red_score:.4f}", f"{p.mean_plies:.1f}"])
    written.append(path)
    path = out / "elo.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["rank", "agent", "elo", "ci95", "anchor"])
        for rank, (agent, rating, ci) in enumerate(result.elo.ladder(), 1):
            w.writerow([rank, agent, f"{rating:.1f}", f"{ci:.1f}", int(agent == result.elo.anchor)])
    written.append(path)
    if records and result.games:
        recs = []
        for g in result.games:
            initial = setup_state(result.config["seed"], g.setup, result.config["max_plies"])
            meta = {"seed": result.config["seed"], "setup": g.setup, "swapped": g.swapped,
                    "pairing": f"{result.pairs[g.pairing].a} vs {result.pairs[g.pairing].b}"}
            recs.append(GameRecord.from_game(initial, g.actions, {"red": g.red, "blue": g.blue}, meta))
        written.append(write_records(out / "games.jsonl", recs))
    return written


def combine(paths: Sequence[Path], prior_draws: float = DEFAULT_PRIOR_DRAWS) -> tuple[list[PairStats], EloFit]:
    """Pool the pairing tallies of several `eval.json` files and refit Elo over all their games.

    A pairing met again in the other order (b vs a) is turned round. The first agent's score
    as red is pooled too: with paired seeds half of a pairing's games have each colour, so
    `a`'s score as red is 1 minus `b`'s score as blue, `2 * score_b - red_score_b`.
    """
    pooled: dict[tuple[str, str], list[float]] = {}
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            for row in data["pairs"]:
                a, b = str(row["a"]), str(row["b"])
                w, d, l, n = int(row["wins"]), int(row["draws"]), int(row["losses"]), int(row["games"])
                red = float(row.get("a_red_score", float("nan")))
                if (b, a) in pooled:
                    a, b, w, l = b, a, l, w
                    red = 1.0 - (2.0 * float(row["score"]) - red)
                acc = pooled.setdefault((a, b), [0, 0, 0, 0.0, 0.0, 0.0])
                acc[0] += w
                acc[1] += d
                acc[2] += l
                acc[3] += float(row.get("mean_plies", 0.0)) * n
                acc[4] += red * n / 2
                acc[5] += n / 2
        except FileNotFoundError:
            raise EvalError(f"--combine: {str(path)!r} does not exist") from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise EvalError(f"--combine: {str(path)!r} is not an eval.json written by colony-eval ({type(e).__name__})") from None
    stats = []
    for (a, b), (w, d, l, plies, red_points, red_games) in pooled.items():
        n = w + d + l
        score = (w + 0.5 * d) / n
        lo, hi = score_interval(score, n)
        red = red_points / red_games if red_games else float("nan")
        stats.append(PairStats(a, b, n, w, d, l, score, lo, hi, red, plies / n, {}))
    try:
        elo = fit_elo([s.tally() for s in stats], prior_draws=prior_draws)
    except ValueError as e:
        raise EvalError(f"--combine: {e}") from None
    return stats, elo


# ---------------------------------------------------------------------------------
# CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="colony-eval",
        description="Play agents against each other with paired seeds; print scores and an Elo ladder.",
        epilog=SPEC_HELP[0].upper() + SPEC_HELP[1:] + ".",
    )
    parser.add_argument("agents", nargs="*", help="two or more agent specs")
    parser.add_argument("--games", type=int, default=DEFAULT_GAMES, help=f"games per pairing, even (default {DEFAULT_GAMES})")
    parser.add_argument("--seed", type=int, default=0, help="run seed: setups and agents' generators (default 0)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--schedule", choices=SCHEDULES, default="round-robin",
                        help="round-robin: every pair; gauntlet: the first agent against each other one")
    parser.add_argument("--max-plies", type=int, default=DEFAULT_MAX_PLIES, help="ply limit per game (R6.2)")
    parser.add_argument("--batch", type=int, default=1,
                        help="games played side by side per worker; an az agent searches them with one network "
                             "call per simulation step (default 1; try 16 for az agents)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default runs/eval/<time>)")
    parser.add_argument("--no-records", action="store_true", help="do not write games.jsonl")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--prior-draws", type=float, default=DEFAULT_PRIOR_DRAWS,
                        help="virtual draws per pairing in the Elo fit (keeps 100%% scores finite; default 1)")
    parser.add_argument("--combine", type=Path, nargs="+", metavar="EVAL_JSON",
                        help="instead of playing: pool the tables of earlier eval.json files and refit Elo")
    return parser


@console_script
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.combine:
            if args.agents:
                raise EvalError("give either agent specs or --combine, not both")
            stats, elo = combine(args.combine, args.prior_draws)
            print(format_tables(stats, elo))
            return 0
        if args.workers is not None and args.workers < 1:
            raise EvalError(f"--workers must be >= 1, got {args.workers}")
        if not 1 <= args.max_plies <= MAX_PLIES_LIMIT:
            raise EvalError(f"--max-plies must be in 1..{MAX_PLIES_LIMIT}, got {args.max_plies}")
        if not 0 <= args.seed <= SEED_MAX:
            raise EvalError(f"--seed must be in 0..{SEED_MAX}, got {args.seed}")
        if not args.prior_draws >= 0 or not math.isfinite(args.prior_draws):
            raise EvalError(f"--prior-draws must be a finite number >= 0, got {args.prior_draws}")
        out = args.out or DEFAULT_OUT_ROOT / time.strftime("%Y%m%d-%H%M%S")
        problem = output_dir_problem(out)
        if problem:  # found before the games are played, not after
            raise EvalError(f"--out: {problem}")
        t0 = time.time()
        result = evaluate(args.agents, games=args.games, seed=args.seed, workers=args.workers,
                          schedule=args.schedule, max_plies=args.max_plies, progress=not args.no_progress,
                          prior_draws=args.prior_draws, batch=args.batch)
        elapsed = time.time() - t0
        result.config["seconds"] = round(elapsed, 1)
        try:  # the files first: a reader that stops early (`| head`) must not cost the games
            files = write_outputs(result, out, records=not args.no_records)
        except OSError as e:  # the folder was writable before the games: save them elsewhere, never lose them
            fallback = Path(tempfile.mkdtemp(prefix="colony-eval-"))
            files = write_outputs(result, fallback, records=not args.no_records)
            print(format_tables(result.pairs, result.elo))
            print(f"colony-eval: error: cannot write into {str(out)!r} ({e.strerror or type(e).__name__}); "
                  f"wrote the results to {fallback} instead", file=sys.stderr)
            return 1
        print(format_tables(result.pairs, result.elo))
        print(f"\n{len(result.games)} games in {elapsed:.0f} s on {result.config['workers']} worker(s); "
              f"wrote {', '.join(str(f) for f in files)}")
        return 0
    except (AgentSpecError, EvalError, RecordError) as e:
        print(f"colony-eval: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ncolony-eval: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
