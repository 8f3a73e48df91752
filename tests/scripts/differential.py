"""Differential check: the compiled engine (`colony_env`) against the plain-Python
reference engine (`reference_engine.py`), position by position.

At each compared position it checks, through the public API only:
  * the end reason, and the winner the board would give (R7) on every position, not
    only final ones (a copy of the position marked over by two passes is scored);
  * the colonies, their totals and controllers (R3.4, R7.1);
  * the legal set (R4, R8.4) from `legal_actions`, and the per-action check `is_legal`
    (a separate code path in the engine) on every legal id and on near misses (ids of the
    mover's own satellites that are illegal), which must raise and leave the state alone;
  * the next state (every R9 field, end reason, winner) after every rare legal action
    (displacement, connection move, pass) and a sample of normal moves (R6).

Positions come from whole games, uniformly random or biased towards the rare actions
(displacements are legal in well under 1% of uniform positions), and from random
boards. The CI test (`test_differential.py`) runs a few seconds of this under
hypothesis; the slow run is this file as a script:

    python tests/scripts/differential.py --positions 100000        # about an hour on one core
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import reference_engine as ref

import colony_env as ce

MODES = ("uniform", "biased", "board")
NORMAL_NEXT_STATES = 3  # normal moves whose next state is compared per position (all rare kinds are)
NEAR_MISSES = 12  # illegal near-miss ids checked per position
CORPUS = Path(__file__).resolve().parents[1] / "data" / "differential_corpus.json"


class Mismatch(AssertionError):
    """The two engines disagree; the message holds the position (R9 JSON) and the action."""


@dataclass
class Stats:
    positions: int = 0
    next_states: int = 0
    kinds: Counter = field(default_factory=Counter)  # legal actions seen, by kind
    ends: Counter = field(default_factory=Counter)  # end reasons reached
    unlocked: int = 0
    with_displacement: int = 0
    in_grace: int = 0

    def line(self) -> str:
        k = dict(self.kinds)
        return (
            f"{self.positions} positions ({self.unlocked} unlocked, {self.with_displacement} with a legal displacement, {self.in_grace} in grace), "
            f"{self.next_states} next states; legal actions seen {k}; end reasons {dict(self.ends)}"
        )


def _fail(what: str, state: ce.GameState, action: int | None = None, detail: str = "") -> None:
    act = "" if action is None else f"\naction {action}: {ref.decode(action)}"
    raise Mismatch(f"{what}{act}\n{detail}\nposition: {state.to_dict()}\n{state}")


def _check_scoring(pub: ce.GameState, r: ref.RefState) -> None:
    pub_cols = sorted(
        (frozenset(c.cells), c.red_total, c.blue_total, None if c.controller is None else str(c.controller))
        for c in ce.colonies(pub)
    )
    ref_cols = sorted(
        (frozenset(divmod(i, ref.SIZE) for i in cells), red, blue, ctrl)
        for cells, red, blue, ctrl in ref.colony_totals(r.board)
    )
    if pub_cols != ref_cols:
        _fail("colonies differ", pub, detail=f"engine {pub_cols}\nreference {ref_cols}")
    ended = pub if pub.is_over else ce.GameState.from_dict({**pub.to_dict(), "passes": ref.PASSES_TO_END})
    w = None if ended.winner is None else str(ended.winner)
    if w != ref.winner(r.board):
        _fail("winner differs", pub, detail=f"engine {w}, reference {ref.winner(r.board)}")


def _check_next(pub: ce.GameState, r: ref.RefState, a: int) -> None:
    nxt = ce.apply_action(pub, a)
    want = ref.apply(r, a)
    if nxt.to_dict() != want.to_dict() or nxt.end_reason != want.end_reason:
        _fail(
            "next state differs",
            pub,
            a,
            f"engine {nxt.to_dict()} {nxt.end_reason}\nreference {want.to_dict()} {want.end_reason}",
        )
    if nxt.is_over:
        w = None if nxt.winner is None else str(nxt.winner)
        if w != ref.winner(want.board):
            _fail("winner after the action differs", pub, a)


def check_position(pub: ce.GameState, rng: np.random.Generator, stats: Stats) -> list[int]:
    """Compare everything at `pub`; return the legal ids (they agree)."""
    r = ref.from_dict(pub.to_dict())
    if r.end_reason != pub.end_reason:
        _fail("end reason differs", pub, detail=f"engine {pub.end_reason}, reference {r.end_reason}")
    _check_scoring(pub, r)
    legal = ref.legal_actions(r)
    got = ce.legal_actions(pub).tolist()
    if got != legal:
        extra, missing = sorted(set(got) - set(legal)), sorted(set(legal) - set(got))
        _fail(
            "legal sets differ",
            pub,
            detail=f"only the engine allows {[(a, ref.decode(a)) for a in extra]}\nonly the reference allows {[(a, ref.decode(a)) for a in missing]}",
        )
    stats.positions += 1
    stats.unlocked += r.unlocked
    kinds = [ref.classify(r, a) for a in legal]
    stats.kinds.update(kinds)
    stats.with_displacement += "displacement" in kinds
    stats.in_grace += r.finished is not None
    for a in legal:
        if not ce.is_legal(pub, a):
            _fail("is_legal rejects a legal action", pub, a)
    near = ref.illegal_candidates(r, legal)
    for a in rng.choice(near, size=min(NEAR_MISSES, len(near)), replace=False).tolist() if near else []:
        if ce.is_legal(pub, a):
            _fail("is_legal accepts an illegal action", pub, a)
    if near:
        a = int(near[rng.integers(len(near))])
        before = pub.to_array()
        try:
            ce.apply_action(pub, a)
        except ce.IllegalActionError:
            pass
        else:
            _fail("apply_action accepted an illegal action", pub, a)
        if not np.array_equal(before, pub.to_array()):
            _fail("an illegal action changed the state", pub, a)
    if r.is_over:
        return legal
    normal = [a for a, k in zip(legal, kinds) if k == "normal"]
    chosen = [a for a, k in zip(legal, kinds) if k != "normal"]
    chosen += rng.choice(normal, size=min(NORMAL_NEXT_STATES, len(normal)), replace=False).tolist() if normal else []
    for a in chosen:
        _check_next(pub, r, a)
    stats.next_states += len(chosen)
    return legal


# --- position sources ---------------------------------------------------------------------------
def _edge_leaving(a: int) -> bool:
    """A move whose source is on an edge line (R1.3) and whose target is not: it works
    towards an empty edge, hence unlocking (R3.5)."""
    kind, args = ref.decode(a)
    if kind != "move":
        return False
    s, d, k = args
    t = ref.step(s, d, k)
    on_edge = lambda i: i // ref.SIZE in (0, ref.SIZE - 1) or i % ref.SIZE in (0, ref.SIZE - 1)
    return on_edge(s) and not on_edge(t)


def _lookahead_score(pub: ce.GameState, a: int) -> int:
    """How interesting the position after `a` is: legal displacements there, and a player
    finishing (grace moves follow, R6.3). Uses the compiled engine, so it is cheap."""
    nxt = ce.apply_action(pub, a)
    if nxt.is_over:
        return 0
    ids = ce.legal_actions(nxt)
    return int(np.count_nonzero((ids >= ref.DISPLACEMENT_BASE) & (ids < ref.PASS))) + 5 * (
        nxt.finished is not None and pub.finished is None
    )


def choose(pub: ce.GameState, legal: list[int], mode: str, rng: np.random.Generator) -> int:
    """The driver's next action. `biased` samples the rare situations on purpose: a
    displacement when there is one (80%); else (70%) an action after which the next
    player has a displacement or a player finishes (one-ply lookahead); else a connection
    move (60%); else while locked a move off an edge (70%, it hastens unlocking); else
    uniform."""
    if mode == "uniform" or len(legal) == 1:
        return legal[rng.integers(len(legal))]
    r = ref.from_dict(pub.to_dict())
    kinds = [ref.classify(r, a) for a in legal]
    pool = [a for a, k in zip(legal, kinds) if k == "displacement"]
    if pool and rng.random() < 0.8:
        return pool[rng.integers(len(pool))]
    if pub.unlocked and rng.random() < 0.7:
        scores = np.array([_lookahead_score(pub, a) for a in legal])
        if scores.max() > 0:
            best = np.flatnonzero(scores > 0)
            return legal[int(best[rng.integers(len(best))])]
    pool = [a for a, k in zip(legal, kinds) if k == "connection"]
    if pool and rng.random() < 0.6:
        return pool[rng.integers(len(pool))]
    if not pub.unlocked:
        pool = [a for a in legal if _edge_leaving(a)]
        if pool and rng.random() < 0.7:
            return pool[rng.integers(len(pool))]
    return legal[rng.integers(len(legal))]


def game_positions(seed: int, mode: str) -> Iterator[ce.GameState]:
    """Every position of one game from `new_game(seed)` driven by `choose`, the last included."""
    rng = np.random.default_rng(seed)
    pub = ce.new_game(seed)
    while True:
        yield pub
        legal = ce.legal_actions(pub).tolist()
        if not legal:
            return
        pub = ce.apply_action(pub, choose(pub, legal, mode, rng))


def play_game(seed: int, mode: str, max_positions: int, stats: Stats, skip: int = 0) -> None:
    """One game from `new_game(seed)`, comparing every position after the first `skip`
    (played without comparison, to reach deep positions quickly) and the final one, up to
    `max_positions`."""
    rng = np.random.default_rng(seed + 1)
    if ref.new_game(seed).to_dict() != ce.new_game(seed).to_dict():  # R2 setup
        _fail("setup differs", ce.new_game(seed), detail=str(ref.new_game(seed).to_dict()))
    compared = 0
    for pub in game_positions(seed, mode):
        if compared >= max_positions:
            return
        if pub.ply >= skip or pub.is_over:
            check_position(pub, rng, stats)
            compared += 1
        if pub.is_over:
            stats.ends[pub.end_reason] += 1


# --- a stored corpus of rare positions (tests/data/differential_corpus.json) ----------------------
CORPUS_KINDS = {  # tag -> how many positions of that kind the corpus keeps
    "displacement": 60,  # a displacement is legal (R4.2)
    "grace": 20,  # a player is finished, the other has grace moves (R6.3)
    "finishing": 15,  # some legal action makes a player finished (R6.3)
    "ending": 15,  # some legal action ends the game (R6.2)
    "crowded": 20,  # unlocked, 12+ satellites connected
    "board": 20,  # a random board (any field values)
}


def position_tags(pub: ce.GameState) -> set[str]:
    """Which rare kinds of CORPUS_KINDS `pub` is (judged with the compiled engine)."""
    tags = set()
    if pub.is_over:
        return tags
    ids = ce.legal_actions(pub)
    if np.any((ids >= ref.DISPLACEMENT_BASE) & (ids < ref.PASS)):
        tags.add("displacement")
    if pub.finished is not None:
        tags.add("grace")
    nxt = [ce.apply_action(pub, int(a)) for a in ids]
    if any(n.finished is not None and pub.finished is None for n in nxt):
        tags.add("finishing")
    if any(n.is_over for n in nxt):
        tags.add("ending")
    if pub.unlocked and sum(ce.connected_counts(pub)) >= 12:
        tags.add("crowded")
    return tags


def make_corpus(seed: int = 0) -> list[dict]:
    """Positions of each rare kind from biased games and random boards (R9 dicts, tagged)."""
    want = dict(CORPUS_KINDS)
    out: list[dict] = []
    rng = np.random.default_rng(seed)
    for _ in range(want.pop("board")):
        out.append({"tags": ["board"], "state": random_board_state(rng).to_dict()})
    while any(n > 0 for n in want.values()):
        for pub in game_positions(seed, "biased"):
            tags = {t for t in position_tags(pub) if want.get(t, 0) > 0}
            if tags and rng.random() < 0.5:  # not every position of one game
                out.append({"tags": sorted(tags), "state": pub.to_dict()})
                for t in tags:
                    want[t] -= 1
        seed += 1
    return out


def corner_variants(pub: ce.GameState, radius: int = 3) -> list[ce.GameState]:
    """The neighbourhood of the first legal displacement of `pub` (satellites within `radius`
    rows and columns of its landing cell), moved into each corner of the board.

    Boundary cells (index 0 and 99, the edge lines) are where off-by-one errors in bounds
    checks live, and a rare situation seldom arises there by play. Dropping satellites
    keeps a state valid (R5.1 and R5.3 can only be broken by adding contacts); the moved
    position may have lost its displacement, and is compared all the same.
    """
    ids = [int(a) for a in ce.legal_actions(pub) if ref.DISPLACEMENT_BASE <= a < ref.PASS]
    if not ids:
        return []
    _kind, (s, d, _pd, _pk) = ref.decode(ids[0])
    x = ref.step(s, d, abs(int(pub.board.flat[s])))
    xr, xc = divmod(x, ref.SIZE)
    cells = [
        i
        for i in range(ref.CELLS)
        if pub.board.flat[i] and abs(i // ref.SIZE - xr) <= radius and abs(i % ref.SIZE - xc) <= radius
    ]
    rows = [i // ref.SIZE for i in cells]
    cols = [i % ref.SIZE for i in cells]
    out = []
    for dr in (-min(rows), ref.SIZE - 1 - max(rows)):
        for dc in (-min(cols), ref.SIZE - 1 - max(cols)):
            board = [0] * ref.CELLS
            for i in cells:
                board[i + dr * ref.SIZE + dc] = int(pub.board.flat[i])
            b = tuple(board)
            d_ = {**pub.to_dict(), "board": ref.RefState(b, "red", True, None, 0, 0, 0, 1, None).to_dict()["board"]}
            d_["unlocked"] = d_["unlocked"] or ref.any_edge_empty(b)
            d_["finished"], d_["grace_left"] = None, 0  # fewer than 12 satellites: nobody is finished
            out.append(ce.GameState.from_dict(d_))
    return out


def corpus_states(path: Path = CORPUS) -> list[ce.GameState]:
    return [ce.GameState.from_dict(e["state"]) for e in json.loads(path.read_text())]


def random_board_state(rng: np.random.Generator) -> ce.GameState:
    """A random valid R9 position: random satellites (at most 3 of each value per colour) on
    random cells, random fields; boards breaking R5.1/R5.3 are redrawn."""
    while True:
        n = int(rng.integers(2, 2 * len(ref.VALUES) + 1))
        cells = rng.choice(ref.CELLS, size=n, replace=False)
        pieces = [v for v in ref.VALUES] + [-v for v in ref.VALUES]
        chosen = rng.choice(pieces, size=n, replace=False)
        board = [0] * ref.CELLS
        for i, v in zip(cells.tolist(), chosen.tolist()):
            board[i] = v
        b = tuple(board)
        to_move = "red" if rng.random() < 0.5 else "blue"
        finished = None
        for colour in ("red", "blue"):
            mine = [i for i in range(ref.CELLS) if b[i] * ref.SIGN[colour] > 0]
            if len(mine) == len(ref.VALUES) and all(ref.is_connected(b, i) for i in mine):
                finished = colour
        max_plies = int(rng.integers(1, 60))
        d = {
            "board": ref.RefState(b, "red", True, None, 0, 0, 0, 1, None).to_dict()["board"],
            "to_move": ref.OTHER[finished] if finished else to_move,
            "unlocked": ref.any_edge_empty(b) or bool(rng.random() < 0.8),
            "finished": finished,
            "grace_left": int(rng.integers(1, ref.GRACE + 1)) if finished else 0,
            "ply": int(rng.integers(0, max_plies)),
            "passes": int(rng.random() < 0.2),
            "max_plies": max_plies,
        }
        try:
            return ce.GameState.from_dict(d)
        except ValueError:
            continue  # R5.1 / R5.3 broken: draw again


def random_boards(seed: int, count: int, stats: Stats) -> None:
    """Compare `count` random boards and one step of play from each."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        check_position(random_board_state(rng), rng, stats)


def run(seed: int, mode: str, positions: int, stats: Stats, skip: int = 0) -> None:
    """Compare `positions` positions from source `mode`, starting at `seed`."""
    if mode == "board":
        random_boards(seed, positions, stats)
        return
    target = stats.positions + positions
    while stats.positions < target:
        play_game(seed, mode, target - stats.positions, stats, skip)
        seed += 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--positions", type=int, default=100_000, help="positions to compare in all (split over the sources)"
    )
    p.add_argument("--seed", type=int, default=0, help="first game seed")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated sources among {', '.join(MODES)}")
    p.add_argument(
        "--write-corpus",
        action="store_true",
        help=f"rewrite {CORPUS.relative_to(CORPUS.parents[2])} (rare positions, seeded) and stop",
    )
    args = p.parse_args(argv)
    if args.write_corpus:
        corpus = make_corpus(args.seed)
        CORPUS.parent.mkdir(exist_ok=True)
        CORPUS.write_text(json.dumps(corpus, indent=0) + "\n")
        print(f"wrote {len(corpus)} positions to {CORPUS}: {Counter(t for e in corpus for t in e['tags'])}")
        return 0
    modes = args.modes.split(",")
    bad = [m for m in modes if m not in MODES]
    if bad or args.positions < 1:
        p.error(f"--modes must name sources among {MODES} (got {bad}); --positions must be >= 1")
    stats = Stats()
    t0 = time.time()
    share = args.positions // len(modes)
    for i, mode in enumerate(modes):
        run(args.seed + 1_000_000 * i, mode, share + (args.positions % len(modes) if i == 0 else 0), stats)
        print(f"[{time.time() - t0:.0f}s] after {mode}: {stats.line()}", flush=True)
    print(f"OK: the engines agree on {stats.positions} positions ({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
