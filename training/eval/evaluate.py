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

A run survives being killed: its settings go to `run.json` before the first game, each game is
appended to `games.jsonl` (flushed) as it ends, and `colony-eval --resume OUT` plays only the
games that are missing, with the same seeds, so its files equal those of an uninterrupted run.
A folder that already holds a run is never written over (docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import multiprocessing as mp
import os
import shlex
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

import colony_env as ce
from colony_env.agents import Agent
from colony_env.constants import DEFAULT_MAX_PLIES, MAX_PLIES_LIMIT

from ..cli import console_script, report_error
from ..config import SEED_MAX
from ..runlog import (LOCK_FILE, RunDirBusy, atomic_write_bytes, atomic_write_text, lock_run_dir, output_dir_problem,
                      unlock_run_dir)
from .agent_specs import SPEC_HELP, AgentSpecError, make_agent, parse_agent_spec
from .elo import DEFAULT_PRIOR_DRAWS, EloFit, PairTally, fit_elo, score_interval
from .records import GameRecord, RecordError, read_journal, record_line

SCHEDULES = ("round-robin", "gauntlet")
SETUP_STREAM = 0  # SeedSequence streams: setups are shared by every pairing, agent streams are not
AGENT_STREAM = 1
DEFAULT_GAMES = 100
DEFAULT_OUT_ROOT = Path("runs") / "eval"
RUN_FILE = "run.json"  # the settings of a run, written before its first game: what --resume plays on with
RUN_FORMAT = "colony-eval-run"
RUN_VERSION = 1
RECORDS_FILE = "games.jsonl"  # every finished game, appended as it ends
HIDDEN_RECORDS_FILE = ".games.partial.jsonl"  # the same under --no-records, removed when the run is complete
RESULT_FILES = ("pairs.csv", "elo.csv", "eval.json")  # written when the run is complete, eval.json last


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

    @property
    def key(self) -> tuple[int, int, int]:
        """Which game of the run this is; also the order of games.jsonl."""
        return (self.pairing, self.setup, self.swapped)

    def pairing_name(self) -> str:
        """'a vs b' in the order of the pairing (a is red unless swapped)."""
        a, b = (self.blue, self.red) if self.swapped else (self.red, self.blue)
        return f"{a} vs {b}"

    def record(self, seed: int, max_plies: int) -> GameRecord:
        """The game as a record of games.jsonl (the same bytes whenever and wherever it was played)."""
        meta = {"seed": seed, "setup": self.setup, "swapped": self.swapped, "pairing": self.pairing_name()}
        return GameRecord.from_game(setup_state(seed, self.setup, max_plies), self.actions,
                                    {"red": self.red, "blue": self.blue}, meta)


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
    done: Sequence[GameResult] = (),
    on_games: Callable[[list[GameResult]], None] | None = None,
) -> EvalResult:
    """Play every pairing `games` times (paired seeds) and fit Elo; see the module docstring.

    `batch` games of the job list are played side by side in one worker (`_run_group`): an
    `az` agent then searches them with one network call per simulation step. Groups are cut
    from the job list, never by worker, so a run is the same on any number of workers.

    `agents` are spec strings (built in each worker; a checkpoint is checked here
    first) or `Agent` objects (sent to the workers). `workers=1` plays in this process.

    `done` are games of this run played before (a resumed run): only the groups with a game
    missing are played, each of them whole, so every game meets the same batch as in an
    uninterrupted run; of those the games in `done` are kept, not the replayed ones.
    `on_games` gets each group's new games, in this process, as soon as the group ends.
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
    job_keys = {(j.pairing, j.setup, j.swapped) for j in jobs}
    previous = {r.key: r for r in done if r.key in job_keys}
    groups = [jobs[i: i + batch] for i in range(0, len(jobs), batch)]
    groups = [g for g in groups if any((j.pairing, j.setup, j.swapped) not in previous for j in g)]
    n_workers = max(1, min(workers or _cpu_count(), len(groups) or 1))

    from tqdm import tqdm

    bar = tqdm(total=len(jobs), initial=len(previous), desc="games", unit="game", disable=not progress,
               dynamic_ncols=True)
    results: list[GameResult] = list(previous.values())

    def finished(played: list[GameResult]) -> None:
        new = [r for r in played if r.key not in previous]
        results.extend(new)
        if on_games is not None and new:
            on_games(new)
        bar.update(len(new))

    try:
        if n_workers == 1:
            if groups:
                _init_worker(payload)
            for group in groups:
                finished(_run_group(group))
        else:
            # fork is fast and keeps compiled kernels; torch (checkpoints) is safer with spawn.
            ctx = mp.get_context("spawn" if needs_spawn or "fork" not in mp.get_all_start_methods() else "fork")
            with ctx.Pool(n_workers, initializer=_init_worker, initargs=(payload,)) as pool:
                for played in pool.imap_unordered(_run_group, groups, chunksize=1):
                    finished(played)
    finally:
        bar.close()
    results.sort(key=lambda r: r.key)
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
    """games.jsonl (with `records`; every game in run order), pairs.csv, elo.csv and eval.json in `out`.

    Each file is replaced atomically and eval.json comes last, so a run whose eval.json exists is
    complete, and a kill while writing leaves a run that `--resume` completes.
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if records and result.games:
        seed, max_plies = result.config["seed"], result.config["max_plies"]
        path = out / RECORDS_FILE
        data = b"".join(record_line(g.record(seed, max_plies)) for g in sorted(result.games, key=lambda g: g.key))
        if not (path.is_file() and path.read_bytes() == data):  # the journal of a one-worker run is in order already
            atomic_write_bytes(path, data)
        written.append(path)
    rows = [["a", "b", "games", "wins", "draws", "losses", "score", "ci_low", "ci_high", "a_red_score", "mean_plies"]]
    for p in result.pairs:
        rows.append([p.a, p.b, p.games, p.wins, p.draws, p.losses, f"{p.score:.4f}", f"{p.ci_low:.4f}",
                     f"{p.ci_high:.4f}", f"{p.a_red_score:.4f}", f"{p.mean_plies:.1f}"])
    written.append(atomic_write_text(out / "pairs.csv", _csv_text(rows)))
    rows = [["rank", "agent", "elo", "ci95", "anchor"]]
    for rank, (agent, rating, ci) in enumerate(result.elo.ladder(), 1):
        rows.append([rank, agent, f"{rating:.1f}", f"{ci:.1f}", int(agent == result.elo.anchor)])
    written.append(atomic_write_text(out / "elo.csv", _csv_text(rows)))
    written.append(atomic_write_text(out / "eval.json", json.dumps(result.to_json(), indent=2) + "\n"))
    return written


def _csv_text(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


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
# A run folder: never written over, resumable after a kill


@dataclass(frozen=True)
class RunSettings:
    """What decides a run's games and tables, stored in OUT/run.json before the first game."""

    agents: list[str]  # canonical spec strings, which are also the agents' names
    games: int = DEFAULT_GAMES
    seed: int = 0
    schedule: str = "round-robin"
    max_plies: int = DEFAULT_MAX_PLIES
    prior_draws: float = DEFAULT_PRIOR_DRAWS
    batch: int = 1
    records: bool = True

    def check(self) -> None:
        """`EvalError` for a value out of range (the rest is checked by `evaluate`)."""
        if not 1 <= self.max_plies <= MAX_PLIES_LIMIT:
            raise EvalError(f"--max-plies must be in 1..{MAX_PLIES_LIMIT}, got {self.max_plies}")
        if not 0 <= self.seed <= SEED_MAX:
            raise EvalError(f"--seed must be in 0..{SEED_MAX}, got {self.seed}")
        if not self.prior_draws >= 0 or not math.isfinite(self.prior_draws):
            raise EvalError(f"--prior-draws must be a finite number >= 0, got {self.prior_draws}")

    def to_json(self) -> dict[str, Any]:
        return {"format": RUN_FORMAT, "version": RUN_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, d: Any, source: str) -> "RunSettings":
        """The settings in a run.json; `EvalError` naming `source` if it is not one this code wrote."""
        if not isinstance(d, dict) or d.get("format") != RUN_FORMAT or d.get("version") != RUN_VERSION:
            raise EvalError(f"{source} is not a run file of this colony-eval (format {RUN_FORMAT!r}, version {RUN_VERSION})")
        kinds = {"agents": list, "games": int, "seed": int, "schedule": str, "max_plies": int,
                 "prior_draws": (int, float), "batch": int, "records": bool}
        for key, kind in kinds.items():
            value = d.get(key)
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise EvalError(f"{source}: field {key!r} is missing or has the wrong type")
        if not all(isinstance(a, str) for a in d["agents"]):
            raise EvalError(f"{source}: field 'agents' must be a list of agent specs")
        return cls(**{key: d[key] for key in kinds})


def used_out_problem(out: Path) -> str | None:
    """Why a new run cannot go into folder `out` (it holds colony-eval files already), or None."""
    found = [name for name in (RUN_FILE, RECORDS_FILE, HIDDEN_RECORDS_FILE, *RESULT_FILES) if (out / name).exists()]
    if not found:
        return None
    if (out / "eval.json").exists():
        return f"{str(out)!r} holds a finished colony-eval run, which is never written over; give another --out"
    if (out / RUN_FILE).exists():
        return (f"{str(out)!r} holds an unfinished colony-eval run; continue it with "
                f"`colony-eval --resume {shlex.quote(str(out))}`, or give another --out")
    return f"{str(out)!r} holds colony-eval files ({', '.join(found)}), which are never written over; give another --out"


def default_out() -> Path:
    """runs/eval/<time>, with -2, -3, ... added when a run of the same second is there already."""
    base = DEFAULT_OUT_ROOT / time.strftime("%Y%m%d-%H%M%S")
    out, k = base, 1
    while used_out_problem(out):
        k += 1
        out = base.with_name(f"{base.name}-{k}")
    return out


def load_run(out: Path) -> RunSettings:
    """The settings of the run in `out` (for `--resume`); `EvalError` in one line if there is none."""
    path = out / RUN_FILE
    if not path.is_file():
        if (out / "eval.json").is_file() or (out / RECORDS_FILE).is_file():
            raise EvalError(f"--resume: {str(out)!r} has no {RUN_FILE}: it was written by a colony-eval that could not "
                            "resume runs; start a new run with another --out")
        raise EvalError(f"--resume: {str(out)!r} holds no colony-eval run (no {RUN_FILE}); start one with --out")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise EvalError(f"--resume: cannot read {str(path)!r} ({getattr(e, 'strerror', None) or type(e).__name__})") from None
    return RunSettings.from_json(data, repr(str(path)))


def resumed_games(path: Path, settings: RunSettings) -> list[GameResult]:
    """The finished games of the run recorded in `path` (torn last line cut off), each checked to be
    one of this run's games, with its setup, and replayed with the engine to its recorded end."""
    names = settings.agents
    pairs = pairings(len(names), settings.schedule)
    index = {f"{names[a]} vs {names[b]}": p for p, (a, b) in enumerate(pairs)}
    games: dict[tuple[int, int, int], GameResult] = {}
    for n, rec in read_journal(path):
        where = f"{path}:{n}"
        meta = rec.meta
        p, setup, swapped = index.get(meta.get("pairing")), meta.get("setup"), meta.get("swapped")
        if (meta.get("seed") != settings.seed or p is None or type(setup) is not int or type(swapped) is not int
                or not 0 <= setup < settings.games // 2 or swapped not in (0, 1)):
            raise EvalError(f"{where}: not a game of the run in {RUN_FILE} (its meta: {json.dumps(meta)[:200]})")
        a, b = pairs[p]
        red, blue = (names[b], names[a]) if swapped else (names[a], names[b])
        initial = setup_state(settings.seed, setup, settings.max_plies).to_dict()
        if rec.agents != {"red": red, "blue": blue} or json.loads(json.dumps(initial)) != rec.initial_state:
            raise EvalError(f"{where}: not a game of the run in {RUN_FILE} (other agents or another setup)")
        if (p, setup, swapped) in games:
            raise EvalError(f"{where}: game {setup} ({'swapped' if swapped else 'not swapped'}) of {meta['pairing']} "
                            "is recorded twice")
        try:
            final = rec.replay()[-1]
        except RecordError as e:
            raise EvalError(f"{where}: {e}") from None
        if not final.is_over:
            raise EvalError(f"{where}: the game is not finished")
        games[(p, setup, swapped)] = GameResult(
            pairing=p, setup=setup, swapped=swapped, red=red, blue=blue, result=rec.result,
            end_reason=rec.end_reason, plies=final.ply, seconds=0.0, actions=list(rec.actions))
    return list(games.values())


class Journal:
    """The records file of a run while it plays: each finished game appended and flushed as it ends,
    so a kill loses only the games in play (and at most a torn last line, which `read_journal` cuts)."""

    def __init__(self, path: Path, seed: int, max_plies: int) -> None:
        self.path, self.seed, self.max_plies = path, seed, max_plies
        self.written = 0
        self.broken: str | None = None  # why appending stopped (the games are still written at the end)
        self._file = path.open("ab")

    def append(self, games: list[GameResult]) -> None:
        if self.broken:
            return
        try:
            self._file.write(b"".join(record_line(g.record(self.seed, self.max_plies)) for g in games))
            self._file.flush()
            self.written += len(games)
        except OSError as e:
            self.broken = e.strerror or type(e).__name__
            print(f"colony-eval: warning: cannot append to {str(self.path)!r} ({self.broken}); the games go on and "
                  "are written at the end, but a kill now would lose them", file=sys.stderr)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()


# ---------------------------------------------------------------------------------
# CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="colony-eval",
        description="Play agents against each other with paired seeds; print scores and an Elo ladder.",
        epilog=SPEC_HELP[0].upper() + SPEC_HELP[1:] + ".",
    )
    # The options that decide a run default to None here, so that --resume can tell which were given.
    parser.add_argument("agents", nargs="*", help="two or more agent specs")
    parser.add_argument("--games", type=int, default=None, help=f"games per pairing, even (default {DEFAULT_GAMES})")
    parser.add_argument("--seed", type=int, default=None, help="run seed: setups and agents' generators (default 0)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--schedule", choices=SCHEDULES, default=None,
                        help="round-robin (default): every pair; gauntlet: the first agent against each other one")
    parser.add_argument("--max-plies", type=int, default=None, help=f"ply limit per game (R6.2; default {DEFAULT_MAX_PLIES})")
    parser.add_argument("--batch", type=int, default=None,
                        help="games played side by side per worker; a network agent moves in all of them with one "
                             "network call (an az agent: one per simulation step) (default 1; try 16 for checkpoint "
                             "and az agents)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default runs/eval/<time>); one that holds a run already is refused, never written over")
    parser.add_argument("--resume", type=Path, default=None, metavar="OUT",
                        help="continue the interrupted run in OUT: play only its missing games, with its settings")
    parser.add_argument("--no-records", action="store_true", default=None, help="do not keep games.jsonl")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--prior-draws", type=float, default=None,
                        help="virtual draws per pairing in the Elo fit (keeps 100%% scores finite; default 1)")
    parser.add_argument("--combine", type=Path, nargs="+", metavar="EVAL_JSON",
                        help="instead of playing: pool the tables of earlier eval.json files and refit Elo")
    return parser


_RUN_OPTIONS = ("games", "seed", "schedule", "max_plies", "batch", "prior_draws", "no_records", "out", "combine")


@console_script
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out: Path | None = None
    journal: Journal | None = None
    made: list[Path] = []  # what a fresh run created, removed again if it fails before finishing
    done: list[GameResult] = []
    total = 0
    try:
        if args.combine:
            if args.agents or args.resume:
                raise EvalError("give either agent specs, --resume or --combine, not two of them")
            stats, elo = combine(args.combine, DEFAULT_PRIOR_DRAWS if args.prior_draws is None else args.prior_draws)
            print(format_tables(stats, elo))
            return 0
        if args.workers is not None and args.workers < 1:
            raise EvalError(f"--workers must be >= 1, got {args.workers}")
        if args.resume is not None:
            out = args.resume
            given = [f"--{k.replace('_', '-')}" for k in _RUN_OPTIONS if getattr(args, k) is not None]
            given += ["the agent specs"] if args.agents else []
            if given:
                raise EvalError(f"--resume plays on with the settings in {RUN_FILE}; drop {', '.join(given)} "
                                "(only --workers and --no-progress may change)")
            settings = load_run(out)
            settings.check()
            problem = output_dir_problem(out)
            if problem:
                raise EvalError(f"--resume: {problem}")
            if (out / "eval.json").is_file():
                print(format_tables(*combine([out / "eval.json"], settings.prior_draws)))
                print(f"\ncolony-eval: the run in {out} is finished already; nothing to play")
                return 0
        else:
            settings = RunSettings(
                agents=[parse_agent_spec(a).text for a in args.agents],
                **{k: v for k, v in (("games", args.games), ("seed", args.seed), ("schedule", args.schedule),
                                     ("max_plies", args.max_plies), ("prior_draws", args.prior_draws),
                                     ("batch", args.batch)) if v is not None},
                records=not args.no_records,
            )
            settings.check()
            out = args.out or default_out()
            problem = output_dir_problem(out) or used_out_problem(out)
            if problem:  # found before the games are played, not after
                raise EvalError(f"--out: {problem}")
        journal_path = out / (RECORDS_FILE if settings.records else HIDDEN_RECORDS_FILE)
        if args.resume is not None:
            lock_run_dir(out)  # before the journal is read (and a torn last line cut off)
            done = resumed_games(journal_path, settings)
        else:
            made = [p for p in (out, *out.parents) if not p.exists()][::-1]
            out.mkdir(parents=True, exist_ok=True)
            lock_run_dir(out)
            made += [out / LOCK_FILE]
            problem = used_out_problem(out)  # again, now that no other colony-eval can start in it
            if problem:
                raise EvalError(f"--out: {problem}")
            made += [out / RUN_FILE, journal_path]
            atomic_write_text(out / RUN_FILE, json.dumps(settings.to_json(), indent=2) + "\n")
        journal = Journal(journal_path, settings.seed, settings.max_plies)
        total = settings.games * len(pairings(len(settings.agents), settings.schedule))
        t0 = time.time()
        result = evaluate(settings.agents, games=settings.games, seed=settings.seed, workers=args.workers,
                          schedule=settings.schedule, max_plies=settings.max_plies, progress=not args.no_progress,
                          prior_draws=settings.prior_draws, batch=settings.batch, done=done, on_games=journal.append)
        elapsed = time.time() - t0
        journal.close()
        result.config["seconds"] = round(elapsed, 1)
        made = []  # the games are played: from here on nothing is removed
        try:  # the files first: a reader that stops early (`| head`) must not cost the games
            files = write_outputs(result, out, records=settings.records)
            if not settings.records:
                journal_path.unlink(missing_ok=True)
        except OSError as e:  # the folder was writable before the games: save them elsewhere, never lose them
            fallback = Path(tempfile.mkdtemp(prefix="colony-eval-"))
            files = write_outputs(result, fallback, records=settings.records)
            print(format_tables(result.pairs, result.elo))
            print(f"colony-eval: error: cannot write into {str(out)!r} ({e.strerror or type(e).__name__}); "
                  f"wrote the results to {fallback} instead", file=sys.stderr)
            return 1
        print(format_tables(result.pairs, result.elo))
        earlier = f" ({len(done)} of them played before the run was resumed)" if done else ""
        print(f"\n{len(result.games)} games{earlier} in {elapsed:.0f} s on {result.config['workers']} worker(s); "
              f"wrote {', '.join(str(f) for f in files)}")
        return 0
    except (AgentSpecError, EvalError, RecordError, RunDirBusy) as e:
        if journal is not None:
            journal.close()
        for path in reversed(made):  # a fresh run that fails leaves nothing behind (a resumed one is kept)
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink(missing_ok=True)
        return report_error("colony-eval", str(e))
    except KeyboardInterrupt:
        if out is None or journal is None:
            print("\ncolony-eval: interrupted", file=sys.stderr)
        else:
            journal.close()
            saved = len(done) + journal.written
            print(f"\ncolony-eval: interrupted; {saved} of {total} games are saved in {out}; continue with "
                  f"`colony-eval --resume {shlex.quote(str(out))}`", file=sys.stderr)
        return 130
    finally:
        if out is not None:
            unlock_run_dir(out)


if __name__ == "__main__":
    sys.exit(main())
