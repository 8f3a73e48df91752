"""Compiled kernels of the engine-level agents: UCT search with random rollouts, greedy scoring, and an exact
depth-limited solver of late positions (for analysis: `examples/endgame_probe.py proven`).

Everything here runs on the packed state vector (`constants.py`) and calls only the
engine's own kernels (`frame.legal_into`'s legal ids, `_core.apply_unchecked`, `_core.winner`,
`_core.colony_table`), so no rule is re-implemented: legality is whatever the engine
generates. Randomness comes from numba's internal generator, seeded once per call from
the caller's `numpy.random.Generator`, so a search is reproducible from that generator.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .. import _core
from ..frame import legal_into, to_frame
from ..constants import (
    DISPLACEMENT_BASE,
    I_FINISHED,
    I_MAX_PLIES,
    I_PLY,
    I_REASON,
    I_TO_MOVE,
    I_UNLOCKED,
    MAX_COMPONENT,
    MAX_PUSH,
    MAX_STEP,
    MOVES_PER_CELL,
    N_CELLS,
    N_DIRECTIONS,
    N_SATELLITES,
    NOBODY,
    PASS_ACTION,
    STATE_LEN,
)

MAX_LEGAL = _core.MAX_LEGAL
ORTH = _core.ORTH
RAY = _core.RAY
PUSHES = N_DIRECTIONS * MAX_PUSH  # displacement ids per (satellite, landing direction)
# Initial room for the children lists of expanded nodes, per node (grows when needed).
# A typical Colony position has about 70 legal actions.
POOL_PER_NODE = 96


# ---------------------------------------------------------------------------------
# Rollouts


@njit(cache=True)
def red_value(final: np.ndarray) -> float:
    """+1 red won, -1 blue won, 0 draw (R7) for a finished state."""
    w = _core.winner(final[:N_CELLS])
    if w == 0:
        return 1.0
    if w == 1:
        return -1.0
    return 0.0


# Tries of the rejection sampler before it falls back to generating every legal action.
SAMPLE_TRIES = 64


@njit(cache=True)
def sample_legal(a: np.ndarray, sats: np.ndarray, cands: np.ndarray, buf: np.ndarray) -> int:
    """A uniformly random legal action of the ongoing state `a`, without listing them all.

    Rejection sampling: draw uniformly from a superset of the legal non-pass actions
    and keep the first draw the engine accepts (`_core.action_code`, the same check
    `apply_action` uses). The superset holds every move (s, d, k <= v) of the mover's
    unconnected satellites (R3.2, R4.1: no legal move goes further than v) and, once
    connections are unlocked (R4.2.1), every displacement whose landing cell, exactly v
    away, holds an unconnected opposing satellite (R4.2). Draws that land off the board
    or on a satellite are rejected at once; other moves go through the engine's move check
    (`_core._move_code_to`, with the contact of the target cell alone), connection moves
    and displacements through `_core.action_code`. After `SAMPLE_TRIES`
    rejections it falls back to listing the legal ids (`frame.legal_into`, which also finds a
    forced pass, R4.3).
    Either way each legal action has the same probability, so rollouts play exactly
    like uniform random play, at about twice the speed of generating every action.
    `sats`, `cands` and `buf` are scratch arrays (12, 96 and MAX_LEGAL long).
    """
    board = a[:N_CELLS]
    me = 1 if a[I_TO_MOVE] == 0 else -1
    unlocked = a[I_UNLOCKED] != 0
    n_sats = 0
    n_moves = 0
    n_cands = 0
    for i in range(N_CELLS):
        if board[i] * me > 0 and not _core._is_connected(board, i):
            sats[n_sats] = i
            n_sats += 1
            v = abs(board[i])
            n_moves += N_DIRECTIONS * v
            if unlocked:
                for d in range(N_DIRECTIONS):
                    x = RAY[i, d, v - 1]
                    if x >= 0 and board[x] * me < 0 and not _core._is_connected(board, x):
                        cands[n_cands] = N_DIRECTIONS * i + d
                        n_cands += 1
    total = n_moves + PUSHES * n_cands
    if total > 0:
        for _ in range(SAMPLE_TRIES):
            r = np.random.randint(total)
            if r < n_moves:
                j = 0
                while r >= N_DIRECTIONS * abs(board[sats[j]]):
                    r -= N_DIRECTIONS * abs(board[sats[j]])
                    j += 1
                s = sats[j]
                v = abs(board[s])
                d = r // v
                k = r % v + 1
                t = RAY[s, d, k - 1]
                if t < 0 or board[t] != 0:
                    continue
                code = _core._move_code_to(board, unlocked, _core._touches_opponent(board, me, t), s, t, k)
                if code == _core.OK:  # a normal move (R4.1), decided by the engine's own check
                    return MOVES_PER_CELL * s + MAX_STEP * d + (k - 1)
                if code != _core.CHECK_R5:
                    continue
                action = MOVES_PER_CELL * s + MAX_STEP * d + (k - 1)  # a connection move: R5 decides
            else:
                r -= n_moves
                sd = cands[r // PUSHES]
                rem = r % PUSHES
                action = DISPLACEMENT_BASE + MAX_PUSH * (N_DIRECTIONS * sd + rem // MAX_PUSH) + rem % MAX_PUSH
            if _core.action_code(a, action) == _core.OK:
                return action
    n = legal_into(a, False, buf)
    if buf[0] == PASS_ACTION:  # R4.3: pass is legal only alone; no draw, as before a pass
        return PASS_ACTION
    return buf[np.random.randint(n)]


@njit(cache=True)
def rollout(a: np.ndarray, buf: np.ndarray) -> float:
    """Uniformly random legal actions from `a` to the end; the red value of the result.

    Uses numba's generator (seed it first); `buf` is an int16 scratch of `MAX_LEGAL`.
    """
    sats = np.empty(N_SATELLITES, np.int64)
    cands = np.empty(N_SATELLITES * N_DIRECTIONS, np.int64)
    cur = a
    while cur[I_REASON] == 0:
        cur = _core.apply_unchecked(cur, sample_legal(cur, sats, cands, buf))
    return red_value(cur)


@njit(cache=True)
def random_playout(a: np.ndarray, seed: int) -> np.ndarray:
    """Like `_core.random_playout` (uniform random play to the end) with the faster sampler."""
    np.random.seed(seed)
    buf = np.empty(MAX_LEGAL, np.int16)
    sats = np.empty(N_SATELLITES, np.int64)
    cands = np.empty(N_SATELLITES * N_DIRECTIONS, np.int64)
    cur = a
    while cur[I_REASON] == 0:
        cur = _core.apply_unchecked(cur, sample_legal(cur, sats, cands, buf))
    return cur


@njit(cache=True)
def seed_numba(seed: int) -> None:
    """Seed numba's internal generator (separate from numpy's) for the calling thread."""
    np.random.seed(seed)


@njit(cache=True)
def rollout_values(a: np.ndarray, n_rollouts: int, seed: int) -> float:
    """Mean red value of `n_rollouts` random playouts from `a` (seeded)."""
    np.random.seed(seed)
    buf = np.empty(MAX_LEGAL, np.int16)
    total = 0.0
    for _ in range(n_rollouts):
        total += rollout(a, buf)
    return total / n_rollouts


@njit(cache=True)
def rollout_mover_means(states: np.ndarray, n_rollouts: int, seed: int) -> np.ndarray:
    """Mean result of `n_rollouts` uniformly random playouts from each packed state, for the colour
    to move in that state (float64[K] in [-1, 1]): a Monte Carlo value estimate, as `mcts:N` uses."""
    np.random.seed(seed)
    buf = np.empty(MAX_LEGAL, np.int16)
    out = np.empty(states.shape[0], np.float64)
    for k in range(states.shape[0]):
        out[k] = _mover_mean(states[k], n_rollouts, buf)
    return out


@njit(cache=True)
def _mover_mean(a: np.ndarray, n_rollouts: int, buf: np.ndarray) -> float:
    """Mean result of `n_rollouts` random playouts from `a` (numba's generator, seeded by the caller) for its mover."""
    total = 0.0
    for _ in range(n_rollouts):
        total += rollout(a, buf)
    mean = total / n_rollouts
    return mean if a[I_TO_MOVE] == 0 else -mean


@njit(cache=True)
def position_seeds(states: np.ndarray, salt: int) -> np.ndarray:
    """int64[K] seeds below 2**31, one per packed state, from its words and `salt` alone (FNV-1a, 64 bits)."""
    out = np.empty(states.shape[0], np.int64)
    for k in range(states.shape[0]):
        h = np.uint64(14695981039346656037) ^ np.uint64(salt & 0xFFFFFFFF)
        for w in states[k]:
            h = (h ^ np.uint64(w & 0xFFFFFFFF)) * np.uint64(1099511628211)
        out[k] = np.int64((h ^ (h >> np.uint64(33))) & np.uint64(0x7FFFFFFF))
    return out


@njit(cache=True)
def rollout_mover_means_seeded(states: np.ndarray, n_rollouts: int, seeds: np.ndarray) -> np.ndarray:
    """`rollout_mover_means` with state k's playouts seeded by `seeds[k]` alone, so that a state's mean does
    not depend on the other states of the batch or on the calls before."""
    buf = np.empty(MAX_LEGAL, np.int16)
    out = np.empty(states.shape[0], np.float64)
    for k in range(states.shape[0]):
        np.random.seed(seeds[k])
        out[k] = _mover_mean(states[k], n_rollouts, buf)
    return out


# ---------------------------------------------------------------------------------
# UCT (Kocsis & Szepesvari 2006) with the node layout of OpenSpiel's MCTSBot, in arrays.


NO_ACTIONS = np.empty(0, np.int64)  # "no root prior" for `_tree_search`
NO_PRIOR = np.empty(0, np.float64)


@njit(cache=True)
def connected_totals(states: np.ndarray) -> np.ndarray:
    """int64[K]: connected satellites of both colours (R3.1) in each packed state; 23 end the game (R6.2.1)."""
    out = np.empty(states.shape[0], np.int64)
    for k in range(states.shape[0]):
        t = _core.tally(states[k, :N_CELLS])
        out[k] = t[1] + t[3]
    return out


@njit(cache=True)
def uct_search(
    root: np.ndarray, max_simulations: int, uct_c: float, n_rollouts: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Run `max_simulations` UCT simulations from `root`; return the root's children.

    The plain search; see `_tree_search` for the tree policy.
    """
    return _tree_search(root, max_simulations, uct_c, n_rollouts, seed, NO_ACTIONS, NO_PRIOR, 0.0)


@njit(cache=True)
def prior_root_search(
    root: np.ndarray, max_simulations: int, uct_c: float, n_rollouts: int, seed: int,
    root_actions: np.ndarray, root_prior: np.ndarray, prior_c: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """`uct_search` with a prior over the root's actions (e.g. a trained policy's).

    The root's children are `root_actions` in the given order (they must be exactly the
    legal actions) and the root picks the child maximising the PUCT score (Silver et al.,
    Science 2018) `Q + prior_c * P * sqrt(N_root) / (1 + N)`, with Q = 0 for an unvisited
    child; below the root the search is plain UCT with random rollouts. One prior per move
    keeps the whole search compiled while the policy decides which moves deserve the
    simulations.
    """
    return _tree_search(root, max_simulations, uct_c, n_rollouts, seed, root_actions, root_prior, prior_c)


@njit(cache=True)
def _tree_search(
    root: np.ndarray, max_simulations: int, uct_c: float, n_rollouts: int, seed: int,
    root_actions: np.ndarray, root_prior: np.ndarray, prior_c: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The search behind `uct_search` and `prior_root_search` (an empty `root_prior`: plain UCT).

    Returns (actions, visits, total_reward, simulations run). `total_reward[i]` sums
    the returns of the player to move at the root over the visits of child `i`.

    Tree policy, as OpenSpiel's `MCTSBot` with its default `SearchNode.uct_value`:
    a node's children are the legal actions in a random order (created when the node
    is first passed through); an unvisited child is taken first, otherwise the child
    maximising `W/N + uct_c * sqrt(ln N_parent / N)`. A new child is evaluated by
    `n_rollouts` random playouts (a terminal child by its exact result), and every
    node on the path adds the return of the player who moved into it (the player to
    move in its parent: grace moves (R6.3) let one colour move twice in a row, so
    turns do not simply alternate). The root is expanded before the first simulation,
    so every simulation evaluates a new node and `max_simulations >= 1` suffices.
    """
    np.random.seed(seed)
    has_prior = root_prior.shape[0] > 0
    cap = max_simulations + 1
    states = np.empty((cap, STATE_LEN), np.int32)
    visits = np.zeros(cap, np.int64)
    reward = np.zeros(cap, np.float64)
    mover = np.full(cap, -1, np.int64)  # colour that moved into the node
    first = np.full(cap, -1, np.int64)  # start of the node's children in the pool
    n_kids = np.zeros(cap, np.int64)
    pool_cap = max(POOL_PER_NODE * cap, 2 * MAX_LEGAL)
    pool_action = np.empty(pool_cap, np.int64)
    pool_node = np.empty(pool_cap, np.int64)
    pool_n = 0
    buf = np.empty(MAX_LEGAL, np.int16)
    path = np.empty(cap + 1, np.int64)
    states[0] = root
    visits[0] = 1  # expanded right away; its own value is never used
    n_nodes = 1
    sims = 0
    if root[I_REASON] != 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64), 0
    for _ in range(max_simulations):
        node = 0
        depth = 0
        path[0] = 0
        while states[node, I_REASON] == 0 and visits[node] > 0:
            if first[node] < 0:  # expand: children in a random order (OpenSpiel shuffles too)
                if node == 0 and has_prior:  # the caller's order, matching its prior
                    n = root_actions.shape[0]
                    for i in range(n):
                        buf[i] = root_actions[i]
                else:
                    n = legal_into(states[node], False, buf)  # pass alone when nothing else (R4.3)
                    for i in range(n - 1, 0, -1):
                        j = np.random.randint(i + 1)
                        t = buf[i]
                        buf[i] = buf[j]
                        buf[j] = t
                if pool_n + n > pool_cap:
                    pool_cap = 2 * pool_cap + n
                    grown_a = np.empty(pool_cap, np.int64)
                    grown_n = np.empty(pool_cap, np.int64)
                    grown_a[:pool_n] = pool_action[:pool_n]
                    grown_n[:pool_n] = pool_node[:pool_n]
                    pool_action = grown_a
                    pool_node = grown_n
                first[node] = pool_n
                n_kids[node] = n
                for i in range(n):
                    pool_action[pool_n + i] = buf[i]
                    pool_node[pool_n + i] = -1
                pool_n += n
            base = first[node]
            pick = -1
            best = -np.inf
            if node == 0 and has_prior:  # PUCT at the root
                sqrt_n = math.sqrt(visits[0])
                for i in range(n_kids[0]):
                    c = pool_node[base + i]
                    q = reward[c] / visits[c] if c >= 0 else 0.0
                    n_c = visits[c] if c >= 0 else 0
                    u = q + prior_c * root_prior[i] * sqrt_n / (1 + n_c)
                    if u > best:
                        best = u
                        pick = i
            else:  # UCT
                log_n = math.log(visits[node])
                for i in range(n_kids[node]):
                    c = pool_node[base + i]
                    if c < 0:  # unvisited: UCT value +inf, first in the shuffled order wins
                        pick = i
                        break
                    u = reward[c] / visits[c] + uct_c * math.sqrt(log_n / visits[c])
                    if u > best:
                        best = u
                        pick = i
            child = pool_node[base + pick]
            if child < 0:
                child = n_nodes
                n_nodes += 1
                states[child] = _core.apply_unchecked(states[node], pool_action[base + pick])
                mover[child] = states[node, I_TO_MOVE]
                pool_node[base + pick] = child
            node = child
            depth += 1
            path[depth] = node
        leaf = states[node]
        if leaf[I_REASON] != 0:
            value = red_value(leaf)
        else:
            value = 0.0
            for _r in range(n_rollouts):
                value += rollout(leaf, buf)
            value /= n_rollouts
        for k in range(depth + 1):
            x = path[k]
            visits[x] += 1
            if mover[x] == 0:
                reward[x] += value
            elif mover[x] == 1:
                reward[x] -= value
        sims += 1
    base = first[0]
    n = n_kids[0]
    actions = np.empty(n, np.int64)
    child_visits = np.zeros(n, np.int64)
    child_reward = np.zeros(n, np.float64)
    for i in range(n):
        actions[i] = pool_action[base + i]
        c = pool_node[base + i]
        if c >= 0:
            child_visits[i] = visits[c]
            child_reward[i] = reward[c]
    return actions, child_visits, child_reward, sims


# ---------------------------------------------------------------------------------
# Greedy scoring: one ply of the mover, then the opponent's best colony-changing reply.

WIN_SCORE = 1000.0  # a won game outweighs any position
COLONY_WEIGHT = 10.0  # one controlled colony more than the opponent (R7.2)
LEAD_WEIGHT = 4.0  # who would win if the game ended now, tiebreak included (R7.3)
CROWN_BONUS = 2.0  # a controlled crowned colony (R3.4) can never change hands
MARGIN_WEIGHT = 0.5  # per point of value margin inside an uncrowned colony (R7.1) ...
MARGIN_CAP = 4  # ... counted up to this many points either way


@njit(cache=True)
def _quick(a: np.ndarray, p: int) -> float:
    """Colony balance for colour `p`: +-WIN_SCORE when over, else control difference and lead."""
    if a[I_REASON] != 0:
        return WIN_SCORE * (red_value(a) if p == 0 else -red_value(a))
    return _quick_of_table(_core.colony_table(a[:N_CELLS]), p)


@njit(cache=True)
def _quick_of_table(table: np.ndarray, p: int) -> float:
    """`_quick` of a game in progress whose colony table (`_core.colony_table`) is given."""
    diff = 0
    for row in range(table.shape[0]):
        ctrl = table[row, 4]
        if ctrl == p:
            diff += 1
        elif ctrl != NOBODY:
            diff -= 1
    w = _core.winner_of_table(table)  # the table above: one colony search per call
    lead = 1.0 if w == p else (-1.0 if w == 1 - p else 0.0)
    return COLONY_WEIGHT * diff + LEAD_WEIGHT * lead


@njit(cache=True)
def _margins(table: np.ndarray, p: int) -> float:
    """Safety of colony control (from the colony table): capped value margins of uncrowned colonies, a bonus for crowns."""
    total = 0.0
    for row in range(table.shape[0]):
        mine = table[row, 2] if p == 0 else table[row, 3]
        theirs = table[row, 3] if p == 0 else table[row, 2]
        if table[row, 1] == MAX_COMPONENT:
            if mine > theirs:
                total += CROWN_BONUS
            elif theirs > mine:
                total -= CROWN_BONUS
        else:
            m = min(max(mine - theirs, -MARGIN_CAP), MARGIN_CAP)
            total += MARGIN_WEIGHT * m
    return total


@njit(cache=True, inline="always")
def _is_quiet(a: np.ndarray, action: int) -> bool:
    """A normal move that changes no connection and cannot end the game.

    A move whose target touches no opposing satellite connects nothing (R3.1), and
    the satellite leaving was unconnected (R3.2), so colonies stay as they are; only
    the ply limit (R6.2.4) could end the game through it.
    """
    if action >= MOVES_PER_CELL * N_CELLS or a[I_PLY] + 1 >= a[I_MAX_PLIES]:
        return False
    s = action // MOVES_PER_CELL
    rem = action % MOVES_PER_CELL
    t = RAY[s, rem // MAX_STEP, rem % MAX_STEP]
    me = a[s]
    for j in range(4):
        n = ORTH[t, j]
        if n >= 0 and n != s and a[n] * me < 0:
            return False
    return True


@njit(cache=True, inline="always")
def may_end_game(a: np.ndarray, action: int) -> bool:
    """False only for an action that cannot end the game (R6.2) from packed state `a`.

    During grace (R6.3) every action may be the last grace move; otherwise a quiet move
    (`_is_quiet`: no connection, away from the ply limit) changes no connection, finishes
    nobody and is no pass, so none of R6.2's four ends can follow it.
    """
    return a[I_FINISHED] >= 0 or not _is_quiet(a, action)


@njit(cache=True, inline="always")
def _mover_result(after: np.ndarray, p: int) -> float:
    """The result of the finished state `after` for player `p`: +1 win, -1 loss, 0 draw (R7)."""
    v = red_value(after)
    return v if p == 0 else -v


@njit(cache=True)
def winning_action(a: np.ndarray, actions: np.ndarray, n: int, transposed: bool = False) -> int:
    """Index of the first of `actions[:n]` (legal; in the board frame, or with `transposed` in the
    transposed frame, as the search lists blue's canonical ids) that ends the game with the mover
    winning (R6.2, R7), or -1 if none: a *decisive move* (Teytaud and Teytaud, 2010)."""
    p = a[I_TO_MOVE]
    for i in range(n):
        action = to_frame(actions[i], transposed)
        if may_end_game(a, action):
            after = _core.apply_unchecked(a, action)
            if after[I_REASON] != 0 and _mover_result(after, p) == 1.0:
                return i
    return -1


@njit(cache=True)
def solve(a: np.ndarray, plies: int, budget: np.ndarray) -> int:
    """An exact, depth-limited look at ongoing packed state `a` for its mover: +1 when the mover wins within
    `plies` plies whatever the opponent does, -1 when the opponent wins within them whatever the mover does,
    0 otherwise (undecided in that depth, a draw, or `budget[0]` nodes used up: it is decremented per node).

    Plain minimax over every legal action (R4), turns as the engine gives them (grace moves, R6.3, keep the
    mover), with a decisive move tried first at each node and quiet moves (`_is_quiet`, which cannot end the
    game) after the others. Late in the game only the few unconnected satellites move (R3.2), so the tree is
    small there; early it is not, and the budget bounds the cost."""
    budget[0] -= 1
    if budget[0] < 0:
        return 0
    p = a[I_TO_MOVE]
    buf = np.empty(MAX_LEGAL, np.int16)
    n = _core.legal_into(a, buf)
    if winning_action(a, buf, n) >= 0:  # a decisive move
        return 1
    all_lost = True
    for phase in range(2):  # the moves that may end the game first, quiet ones after
        for i in range(n):
            ending = may_end_game(a, buf[i])
            if ending != (phase == 0):
                continue
            after = _core.apply_unchecked(a, buf[i])
            if after[I_REASON] != 0:
                v = int(_mover_result(after, p))
            elif plies <= 1:
                return 0  # an ongoing position at the horizon: undecided
            else:
                v = solve(after, plies - 1, budget)
                if after[I_TO_MOVE] != p:
                    v = -v
            if v == 1:
                return 1
            if v != -1:
                all_lost = False
                if budget[0] < 0:
                    return 0
    return -1 if all_lost else 0


@njit(cache=True)
def solve_actions(a: np.ndarray, actions: np.ndarray, n: int, plies: int, budget: int,
                  transposed: bool = False) -> np.ndarray:
    """`solve` of each of `actions[:n]` (legal in `a`; the board frame, or the transposed one as blue's canonical
    ids are) for `a`'s mover: int64[n] of +1 (the action wins within `plies` more plies), -1 (it loses within
    them), 0 (undecided). `budget` nodes in all; actions met after it is spent are undecided."""
    p = a[I_TO_MOVE]
    out = np.zeros(n, np.int64)
    left = np.array([budget], np.int64)
    for i in range(n):
        after = _core.apply_unchecked(a, to_frame(actions[i], transposed))
        if after[I_REASON] != 0:
            out[i] = int(_mover_result(after, p))
        elif plies > 0 and left[0] > 0:
            v = solve(after, plies, left)
            out[i] = v if after[I_TO_MOVE] == p else -v
    return out


@njit(cache=True, inline="always")
def _start_and_landing(board: np.ndarray, action: int) -> tuple[int, int]:
    """The cell a move or displacement (R4, ids R8) starts from and the cell the moving satellite lands on."""
    if action < DISPLACEMENT_BASE:
        s = action // MOVES_PER_CELL
        rem = action % MOVES_PER_CELL
        return s, RAY[s, rem // MAX_STEP, rem % MAX_STEP]
    rel = (action - DISPLACEMENT_BASE) // (MAX_PUSH * N_DIRECTIONS)
    s = rel // N_DIRECTIONS
    return s, RAY[s, rel % N_DIRECTIONS, abs(board[s]) - 1]


@njit(cache=True)
def greedy_scores(a: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Score of each of the mover's `actions` (legal) by the heuristic of `GreedyAgent`.

    score = quick(after) + margins(after) - threat(after), with `quick` and `margins`
    above and `threat` the largest drop of `quick` that one reply of the opponent can
    cause when the opponent is to move next (only replies that can change colonies or
    end the game are tried: the rest leave `quick` unchanged).

    Before connections are unlocked (R3.5) and away from the ply limit, every legal move
    is a normal move (R4.1: connection moves need the unlock) and no displacement is legal
    (R4.2.1), so the only reply that can matter is a forced pass (R4.3): the reply moves
    are generated only up to the first one. A reply that does not end the game is scored
    from the colony table after it, built from `after`'s components
    (`_core.colony_table_after_join`) instead of a new component search.
    """
    p = a[I_TO_MOVE]
    scores = np.empty(actions.shape[0], np.float64)
    buf = np.empty(MAX_LEGAL, np.int16)
    for i in range(actions.shape[0]):
        after = _core.apply_unchecked(a, actions[i])
        if after[I_REASON] != 0:
            scores[i] = _quick(after, p)
            continue
        board = after[:N_CELLS]
        label, size, red, blue, count = _core.component_sums(board)
        table = _core.colony_table_of_sums(size, red, blue, count)
        q = _quick_of_table(table, p)
        threat = 0.0
        if after[I_TO_MOVE] != p:
            moves_quiet = after[I_UNLOCKED] == 0 and after[I_PLY] + 1 < after[I_MAX_PLIES]
            # All moves quiet: the first legal id is enough. A run-time flag compiles a second
            # `_core._generate` (its other callers pass a literal False): about 6 s once per install.
            n = _core.legal_first_into(after, buf, moves_quiet)
            if moves_quiet and buf[0] != PASS_ACTION:
                n = 0  # a legal move exists, so no pass (R4.3), and every reply is quiet
            for j in range(n):
                r = buf[j]
                if r < DISPLACEMENT_BASE and _is_quiet(after, r):
                    continue
                reply = _core.apply_unchecked(after, r)
                if reply[I_REASON] != 0:
                    threat = max(threat, q - _quick(reply, p))
                elif r != PASS_ACTION:  # a pass that does not end the game changes no colony
                    start, land = _start_and_landing(board, r)
                    joined = _core.colony_table_after_join(board, label, size, red, blue, count, land, board[start])
                    threat = max(threat, q - _quick_of_table(joined, p))
        scores[i] = q + _margins(table, p) - threat
    return scores
