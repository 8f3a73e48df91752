"""Where does an agent lose? Results by end reason, and a network's value against playouts by game phase.

    python examples/endgame_probe.py results RUN/games.jsonl --agent zero:az:200
    python examples/endgame_probe.py values checkpoints/colony_zero.pt RUN/games.jsonl [MORE.jsonl ...]
    python examples/endgame_probe.py cost RUN/games.jsonl --agents zero:az:200 mcts:1000 --positions 200
    python examples/endgame_probe.py sample checkpoints/resume/zero-pcr-int8.pt [--network NET]
    python examples/endgame_probe.py choices RUN/games.jsonl --from 17 --playouts 64
    python examples/endgame_probe.py paired RUN_A/games.jsonl RUN_B/games.jsonl --opponent mcts:1000
    python examples/endgame_probe.py proven RUN/games.jsonl --agent zero:az:200 --plies 5 --from 18

`results` reads a `colony-eval` run's game records and counts the agent's wins, draws and losses
by how the game ended (R6.2: `connected23`, `grace`, `passes`, `ply_limit`), and in how many
lost games the agent made a move after which the opponent could win at once (and whether any of
its moves there avoided that: a position where none does is lost already).

`values` replays the records and, at every third position, compares two judges of the position
with the game's result for the colour to move: the network's value (its value head, read as its
trainer fitted it) and the mean of 16 uniformly random playouts. It prints their mean squared
error and how often their sign is the result's, by the number of connected satellites (23 end
the game, R6.2.1), with the best mix of the two per phase.

`sample` prints the `values` table for the positions of a colony-zero resume point's replay sample
(its run's own recent self-play, `colony-zero --export-resume`), where the playouts' mean is the one
stored as the value target (16 playouts at the time) and the network is the resume point's own
(or `--network`): how well the network fits its own games, against how well it judges others'.

`choices` scores the moves the records' agents played from `--from` connected satellites on (every
second position with a choice): every legal move there is judged by the mean of `--playouts` random
playouts after it (exactly where it ends the game), twice with independent seeds; the first judge
picks the best move, the second scores it, and a move's regret is the second judge's value of that
best move less its value of the move (so that the first judge's luck in picking its maximum does not
count). Per agent and phase it prints the mean regret of the moves played and of a uniformly random
legal move: how much a one-ply look with playouts finds wrong with each agent's late moves.

`paired` compares two agents that played the same opponent on the same games (two `colony-eval` runs
with the same --seed: each game is known by its seed, setup and colours): on the games both runs hold,
each agent's score, the mean difference game by game with its 95% interval, and how many games each
won that the other lost. Pairing removes the setups' own luck, which two separate intervals keep.

`proven` looks at the agent's late positions (`--from` connected satellites on) with the exact, depth-limited
solver of the search (`_search.solve`, `--plies` deep): per result, in how many games the agent moved from a
position not proven lost into one proven lost (within `--plies` - 1 more plies), in how many its position was
proven lost before any such move, and how many proven wins it did not keep. A move into a proven loss is one a
root solver in the search would not have played (docs/zero.md, "An exact solver at the root"); whether the game was
lost already, deeper than the solver sees, it cannot tell.

`cost` times agents on the same positions (every k-th position of the records, so that all phases
are in it): the CPU seconds of one move each, one process, one game at a time, by phase and in all.
docs/zero.md ("Where the agent loses"; `choices` in "Playouts from 12 connected satellites")
has one run of each.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import numpy as np

import colony_env as ce
from colony_env.agents._search import (connected_totals, rollout_mover_means, rollout_values, solve, solve_actions,
                                       winning_action)
from colony_env.agents.az import SEED_HIGH
from colony_env.engine import GameState

PHASES = ((0, 10), (11, 16), (17, 19), (20, 21), (22, 23))  # connected satellites, both colours (inclusive)
MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)  # share of the playouts' mean in a mixed judge


def _games(paths: list[str]) -> list[dict]:
    """The records of colony-eval `games.jsonl` files, each checked field by field (`GameRecord.from_json`), so
    that a damaged line is a one-line error naming its file and line, not a KeyError in a subcommand."""
    from colony_training.eval.records import GameRecord, RecordError

    games = []
    for path in paths:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as e:
            raise SystemExit(f"endgame_probe: cannot read {path}: {e.strerror}") from None
        for n, line in enumerate(lines, 1):
            try:
                game = json.loads(line)
            except json.JSONDecodeError:
                raise SystemExit(f"endgame_probe: {path} line {n} is not a game record (JSON)") from None
            try:
                GameRecord.from_json(game)
            except RecordError as e:
                raise SystemExit(f"endgame_probe: {path} line {n} is not a game record: {e}") from None
            games.append(game)
    return games


def _result_for(game: dict, colour: int) -> str:
    res = game["result"]
    return "D" if res not in ("red", "blue") else ("W" if res == ("red", "blue")[colour] else "L")


def _positions(game: dict):
    """(ply, state before it, action played) for every ply of a record, replayed from its initial state
    (`GameRecord.replay`, which checks every action and the recorded end)."""
    from colony_training.eval.records import GameRecord, RecordError

    try:
        states = GameRecord.from_json(game).replay()
    except RecordError as e:  # a damaged record: one line, not a traceback
        raise SystemExit(f"endgame_probe: a game record does not replay: {e}") from None
    for i, a in enumerate(game["actions"]):
        yield i, states[i], a


def immediate_win(state: GameState) -> bool:
    """Whether the colour to move has an action that ends the game with its win (the search's compiled check)."""
    legal = ce.legal_actions(state).astype(np.int64)
    return winning_action(state._a, legal, len(legal)) >= 0


def _hands_over(after: GameState, mover: int) -> bool:
    """Whether `after` (the position after `mover`'s action) lets the opponent win at once."""
    return not after.is_over and after.to_move != mover and immediate_win(after)


def results(games: list[dict], agent: str) -> dict:
    """{(result, end reason): games} and the lost games' hand-overs, for `agent` (a spec as the records name it)."""
    table: collections.Counter = collections.Counter()
    handed = collections.Counter()
    for g in games:
        names = g["agents"]
        if agent not in names.values():
            continue
        colour = 0 if names["red"] == agent else 1
        result = _result_for(g, colour)
        table[(result, g["end_reason"])] += 1
        if result != "L":
            continue
        worst = None
        for _, s, a in _positions(g):
            if s.to_move == colour and _hands_over(ce.apply_action(s, a), colour):
                avoidable = any(not (n := ce.apply_action(s, int(b))).is_over and not _hands_over(n, colour)
                                for b in ce.legal_actions(s))
                worst = "avoidable" if avoidable or worst == "avoidable" else "forced"
        handed[worst or "none"] += 1
    return {"table": table, "handed": handed}


def proven(games: list[dict], agent: str, plies: int, from_connected: int, budget: int = 2_000_000) -> dict:
    """{(result, 'into a loss' | 'lost before' | 'neither'): games}, the positions looked at, and where the 'lost
    before' games were first proven lost (connected satellites: games), for `agent`'s
    moves from `from_connected` connected satellites on (`_search.solve`, `plies` deep; `budget` positions per
    look, past which it says undecided)."""
    table: collections.Counter = collections.Counter()
    first_lost: collections.Counter = collections.Counter()  # connected satellites where a game was first proven lost
    looked = missed = 0
    for g in games:
        names = g["agents"]
        if agent not in names.values():
            continue
        colour = 0 if names["red"] == agent else 1
        kind = "neither"
        for _, s, a in _positions(g):
            connected = int(connected_totals(s._a[None, :])[0])
            if s.to_move != colour or connected < from_connected:
                continue
            before = solve(s._a, plies, np.array([budget], np.int64))
            after = int(solve_actions(s._a, np.array([a], np.int64), 1, plies - 1, budget)[0])
            looked += 1
            missed += before == 1 and after != 1
            if kind == "neither" and before == -1:
                kind = "lost before"
                first_lost[connected] += 1
            elif kind == "neither" and after == -1:
                kind = "into a loss"
        table[(_result_for(g, colour), kind)] += 1
    return {"table": table, "looked": looked, "missed": missed, "first_lost": first_lost}


def paired(first: list[dict], second: list[dict], opponent: str) -> dict:
    """On the games both record sets played against `opponent` with the same (seed, setup, colours): the number
    of games `n`, each side's mean score, the mean difference `diff` and its 95% half-width `ci`, and the games
    each side won that the other lost (`first_only`, `second_only`)."""
    def scores(games: list[dict]) -> dict[tuple, float]:
        out = {}
        for g in games:  # checked by `_games`
            names, meta = g["agents"], g.get("meta") if isinstance(g.get("meta"), dict) else {}
            if opponent not in names.values() or names["red"] == names["blue"]:
                continue
            colour = 1 if names["red"] == opponent else 0
            out[(meta.get("seed"), meta.get("setup"), meta.get("swapped"))] = {"W": 1.0, "D": 0.5, "L": 0.0}[
                _result_for(g, colour)]
        return out

    a, b = scores(first), scores(second)
    keys = sorted(set(a) & set(b), key=repr)
    d = np.array([a[k] - b[k] for k in keys], np.float64)
    return {"n": len(keys), "first": float(np.mean([a[k] for k in keys])) if keys else float("nan"),
            "second": float(np.mean([b[k] for k in keys])) if keys else float("nan"),
            "diff": float(d.mean()) if len(d) else float("nan"),
            "ci": float(1.96 * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan"),
            "first_only": int((d == 1).sum()), "second_only": int((d == -1).sum())}


def values(checkpoint: str, games: list[dict], seed: int = 0) -> list[tuple]:
    """(connected, result, network value, playouts' mean) at every third position with a choice."""
    from colony_training.agents import load_az_agent

    judge = load_az_agent(checkpoint, 1)  # one simulation: the root's raw value is the network's
    rng = np.random.default_rng(seed)
    rows = []
    for g in games:
        for i, s, _ in _positions(g):
            if i % 3 == 0 and len(ce.legal_actions(s)) > 1:
                z = {"W": 1.0, "L": -1.0, "D": 0.0}[_result_for(g, int(s.to_move))]
                v = judge.analyse(s, rng).raw_value
                mean = float(rollout_mover_means(s._a[None].astype(np.int32), 16, int(rng.integers(SEED_HIGH)))[0])
                rows.append((sum(ce.connected_counts(s)), z, v, mean))
    return rows


def sample_values(point: str, checkpoint: str | None = None, seed: int = 0) -> list[tuple]:
    """(connected, result, network value, stored playouts' mean) at every position of a resume point's replay sample."""
    from colony_training.agents import load_az_agent
    from colony_training.zero.resume_point import replay_sample_of

    data = replay_sample_of(point)
    judge = load_az_agent(checkpoint or point, 1)  # one simulation: the root's raw value is the network's
    rng = np.random.default_rng(seed)
    rows = []
    for k, packed in enumerate(data.states):
        s = GameState.from_array(packed)
        rows.append((sum(ce.connected_counts(s)), float(data.outcome[k]), judge.analyse(s, rng).raw_value,
                     float(data.rollout_value[k])))
    return rows


def _print_values(rows: np.ndarray) -> None:
    """The `values` table: per phase, each judge's error against the results and the best mix of the two."""
    print("connected  positions  MSE network  MSE playouts  sign network  sign playouts  "
          "best mix (share of playouts: MSE)")
    for lo, hi in PHASES:
        m = (rows[:, 0] >= lo) & (rows[:, 0] <= hi)
        if not m.any():
            continue
        z, net, play = rows[m, 1], rows[m, 2], rows[m, 3]
        mse = {w: float(np.mean(((1 - w) * net + w * play - z) ** 2)) for w in MIXES}
        best = min(mse, key=mse.get)
        print(f"{lo:>4}-{hi:<4}  {int(m.sum()):9d}  {mse[0.0]:11.3f}  {mse[1.0]:12.3f}  "
              f"{np.mean(np.sign(net) == np.sign(z)):12.3f}  {np.mean(np.sign(play) == np.sign(z)):13.3f}  "
              f"{best:.2f}: {mse[best]:.3f}")


def _playout_judge(after: list[GameState], mover: int, playouts: int, seed: int) -> np.ndarray:
    """float64[n]: each position's mean result of `playouts` random playouts for `mover` (exact where it is
    over; each position's own seed, `seed` + its index)."""
    sign = 1.0 if mover == 0 else -1.0
    return np.array([sign * rollout_values(n._a, playouts, seed + k) for k, n in enumerate(after)])


def choices(games: list[dict], from_connected: int, playouts: int,
            seed: int = 0) -> list[tuple[str, int, float, float]]:
    """(agent, connected satellites, regret of the move played, mean regret of a random legal move) at every
    second position with a choice from `from_connected` on; judges as the module docstring says."""
    rows = []
    for g, game in enumerate(games):
        for i, s, a in _positions(game):
            connected = sum(ce.connected_counts(s))
            if i % 2 or connected < from_connected:
                continue
            legal = [int(b) for b in ce.legal_actions(s)]
            if len(legal) < 2:
                continue
            mover = int(s.to_move)
            after = [ce.apply_action(s, b) for b in legal]
            base = int(np.random.default_rng([seed, g, i]).integers(SEED_HIGH // 2))
            pick = _playout_judge(after, mover, playouts, base)
            score = _playout_judge(after, mover, playouts, base + SEED_HIGH // 2)
            best = score[int(np.argmax(pick))]
            rows.append((game["agents"][("red", "blue")[mover]], connected,
                         float(best - score[legal.index(int(a))]), float(best - score.mean())))
    return rows


def cost(specs: list[str], games: list[dict], positions: int, seed: int = 0) -> dict[str, list[tuple[int, float]]]:
    """{spec: [(connected satellites, CPU seconds of its move)]} on `positions` positions spread over the records
    (`main` runs torch on one thread, as colony-eval's workers do, so that CPU time is the move's own work)."""
    import time

    from colony_training.eval.agent_specs import make_agent

    states = [s for g in games for _, s, _ in _positions(g) if len(ce.legal_actions(s)) > 1]
    picked = states[:: max(1, len(states) // positions)][:positions]
    out = {}
    for spec in specs:
        agent = make_agent(spec)
        agent.act(picked[0], np.random.default_rng(seed))  # load and compile before timing
        rows = []
        for k, s in enumerate(picked):
            t0 = time.process_time()
            agent.act(s, np.random.default_rng([seed, k]))
            rows.append((sum(ce.connected_counts(s)), time.process_time() - t0))
        out[spec] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    import torch

    torch.set_num_threads(1)  # one position at a time: a thread pool only spins (and on a busy machine, 15x the CPU)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("results", help="the agent's results by end reason")
    r.add_argument("records", nargs="+", help="games.jsonl files of colony-eval runs")
    r.add_argument("--agent", required=True, help="the agent's spec, as the records name it (e.g. zero:az:200)")
    v = sub.add_parser("values", help="a network's value and random playouts against the results, by phase")
    v.add_argument("checkpoint")
    v.add_argument("records", nargs="+", help="games.jsonl files of colony-eval runs")
    c = sub.add_parser("cost", help="CPU seconds per move of agents on the same positions, by phase")
    c.add_argument("records", nargs="+", help="games.jsonl files of colony-eval runs")
    c.add_argument("--agents", nargs="+", required=True, help="agent specs (colony-eval's)")
    c.add_argument("--positions", type=int, default=200, help="positions to time each agent on (default 200)")
    ch = sub.add_parser("choices", help="late moves played, judged by a one-ply look with random playouts")
    ch.add_argument("records", nargs="+", help="games.jsonl files of colony-eval runs")
    ch.add_argument("--from", dest="from_connected", type=int, default=17,
                    help="only positions with this many connected satellites or more (default 17)")
    ch.add_argument("--playouts", type=int, default=64, help="random playouts per move and judge (default 64)")
    pa = sub.add_parser("paired", help="two agents' scores against one opponent on the same games, game by game")
    pa.add_argument("first", help="games.jsonl of the first agent's colony-eval run")
    pa.add_argument("second", help="games.jsonl of the second agent's run, with the same --seed")
    pa.add_argument("--opponent", required=True, help="the opponent's spec, as the records name it (e.g. mcts:1000)")
    pr = sub.add_parser("proven", help="late moves into positions an exact solver proves lost, per result")
    pr.add_argument("records", nargs="+", help="games.jsonl files of colony-eval runs")
    pr.add_argument("--agent", required=True, help="the agent's spec, as the records name it (e.g. zero:az:200)")
    pr.add_argument("--plies", type=int, default=5, help="the solver's depth from the agent's position (default 5)")
    pr.add_argument("--from", dest="from_connected", type=int, default=18,
                    help="only positions with this many connected satellites or more (default 18)")
    p = sub.add_parser("sample", help="the values table on a colony-zero resume point's own replay sample")
    p.add_argument("point", help="a resume point file (colony-zero --export-resume)")
    p.add_argument("--network", help="judge with this checkpoint instead of the resume point's own network")
    args = ap.parse_args(argv)
    from colony_training.checkpoint import CheckpointError
    from colony_training.zero.resume_point import ResumePointError

    try:
        return _run(args, ap)
    except (CheckpointError, ResumePointError, OSError) as e:  # a missing, foreign or damaged file: one line
        raise SystemExit(f"endgame_probe: {e}") from None


def _run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
    """The chosen subcommand; its tables on stdout, 0, or 2 when there is nothing to show."""
    if args.command == "sample":
        _print_values(np.array(sample_values(args.point, args.network), np.float64))
        return 0
    if args.command == "paired":
        out = paired(_games([args.first]), _games([args.second]), args.opponent)
        if out["n"] < 2:
            print(f"endgame_probe: the two runs share {out['n']} game(s) against {args.opponent!r}; pairing needs "
                  "at least 2 (two colony-eval runs with the same --seed and opponent)", file=sys.stderr)
            return 2
        print(f"{out['n']} shared games against {args.opponent}: first {out['first']:.3f}, second {out['second']:.3f}; "
              f"difference {out['diff']:+.3f} +-{out['ci']:.3f} (95%); the first won {out['first_only']} that the "
              f"second lost, the second won {out['second_only']} that the first lost")
        return 0
    games = _games(args.records)
    if args.command == "choices":
        if args.playouts < 1 or not 0 <= args.from_connected <= 23:
            ap.error("--playouts must be >= 1 and --from in 0..23 (23 connected satellites end the game, R6.2.1)")
        rows = choices(games, args.from_connected, args.playouts)
        if not rows:
            print("endgame_probe: the records hold no such position with a choice", file=sys.stderr)
            return 2
        print("agent                                    connected  positions  regret of its moves  of a random move")
        for agent in sorted({r[0] for r in rows}):
            for lo, hi in PHASES:
                x = np.array([r[2:] for r in rows if r[0] == agent and lo <= r[1] <= hi], np.float64).reshape(-1, 2)
                if len(x):
                    print(f"{agent:40s} {f'{lo}-{hi}':>9}  {len(x):9d}  {x[:, 0].mean():19.3f}  {x[:, 1].mean():16.3f}")
        return 0
    if args.command == "cost":
        from colony_training.eval.agent_specs import AgentSpecError

        try:
            timed = cost(args.agents, games, max(1, args.positions))
        except AgentSpecError as e:
            ap.error(str(e))
        print("agent" + " " * 36 + "".join(f"{f'{lo}-{hi}':>10}" for lo, hi in PHASES) + "       all  (CPU ms a move)")
        for spec, rows in timed.items():
            r = np.array(rows, np.float64)
            cells = [r[(r[:, 0] >= lo) & (r[:, 0] <= hi), 1] for lo, hi in PHASES]
            print(f"{spec:40s} " + "".join(f"{1e3 * x.mean():10.1f}" if len(x) else f"{'-':>10}" for x in cells)
                  + f"{1e3 * r[:, 1].mean():10.1f}")
        return 0
    if args.command == "proven":
        if not 1 <= args.plies <= 9 or not 0 <= args.from_connected <= 23:
            ap.error("--plies must be in 1..9 (the cost grows as a power of it) and --from in 0..23 (23 connected "
                     "satellites end the game, R6.2.1)")
        out = proven(games, args.agent, args.plies, args.from_connected)
        if not out["table"]:
            print(f"endgame_probe: no game of {args.agent!r} in the records", file=sys.stderr)
            return 2
        print(f"result  games  moved into a proven loss  proven lost before  neither   ({out['looked']} positions, "
              f"{args.plies} plies, from {args.from_connected} connected)")
        for res in "WDL":
            row = [out["table"][(res, k)] for k in ("into a loss", "lost before", "neither")]
            if sum(row):
                print(f"{res:6s}  {sum(row):5d}  {row[0]:24d}  {row[1]:18d}  {row[2]:7d}")
        print(f"proven wins not kept: {out['missed']}")
        where = ", ".join(f"{c}: {n}" for c, n in sorted(out["first_lost"].items())) or "none"
        print(f"games proven lost before a move into a loss, by connected satellites there: {where}")
        return 0
    if args.command == "results":
        out = results(games, args.agent)
        if not out["table"]:
            print(f"endgame_probe: no game of {args.agent!r} in the records", file=sys.stderr)
            return 2
        print("result  end reason    games")
        for (res, reason), n in sorted(out["table"].items()):
            print(f"{res:6s}  {reason:12s} {n:6d}")
        h = out["handed"]
        print(f"lost games with a move after which the opponent could win at once: {h['avoidable'] + h['forced']} "
              f"(avoidable by another move that does not end the game: {h['avoidable']}); without: {h['none']}")
        return 0
    rows = np.array(values(args.checkpoint, games), np.float64)
    if not len(rows):
        print("endgame_probe: the records hold no position with a choice", file=sys.stderr)
        return 2
    _print_values(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
