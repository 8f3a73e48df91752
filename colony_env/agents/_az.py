"""Compiled kernels of the batched network-guided search (AlphaZero PUCT, Gumbel root).

B search trees live side by side in flat arrays (mctx's layout, Danihelka et al. 2022):
one simulation step walks every tree from its root to a leaf (`select_leaves`), the caller
evaluates all new leaves of all trees in ONE network call, and `expand_backup` stores the
priors and backs the values up. The tree walk never leaves compiled code; only the forward
pass happens in Python. Nodes are created on the walk; a node is *expanded* (children and
priors known) once its evaluation came back. Children are per-node lists of the legal
actions (about 70 of 16,001), kept in a per-tree pool as *canonical* ids of the colour to move
at the node (`frame.py`: blue's transposed), the ids the network scores; only the move the
walk takes is mapped back to the board frame, when its child is created.

Values are stored from red's point of view (`wred` sums red values over a node's visits);
the player choosing at a node is the colour to move there, which during grace (R6.3) may
be the same colour several times in a row, so signs are taken from the state, never from
the depth.

No rule is written here: children are the engine's legal actions (`frame.observe_mover`) and
states come from `_core.apply_unchecked`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .. import _core
from ..constants import I_REASON, I_TO_MOVE
from ..frame import observe_mover, to_frame
from ._search import red_value, winning_action

ROOT_PUCT = 0
ROOT_GUMBEL = 1
NO_NODE = -1
NEG_INF = -np.inf
LOW_LOGIT = -1e9  # mctx's floor for a considered action's score (keeps -inf for the rest)


@njit(cache=True)
def considered_visits_table(max_considered: int, num_simulations: int) -> np.ndarray:
    """table[m, i]: visits a root action must have to be chosen at simulation i (m actions considered).

    Sequential halving (Karnin et al. 2013) as Gumbel MuZero's `get_table_of_considered_visits`
    (mctx `seq_halving.py`): the m best actions by Gumbel + logit get visits in rounds, the
    budget split evenly over log2(m) phases, and each phase keeps the better half.
    """
    table = np.zeros((max_considered + 1, max(num_simulations, 1)), np.int64)
    for m in range(max_considered + 1):
        if m <= 1:
            for i in range(num_simulations):
                table[m, i] = i
            continue
        log2max = int(math.ceil(math.log2(m)))
        visits = np.zeros(m, np.int64)
        n = 0
        considered = m
        while n < num_simulations:
            extra = max(1, int(num_simulations / (log2max * considered)))
            for _ in range(extra):
                for i in range(considered):
                    if n < num_simulations:
                        table[m, n] = visits[i]
                        n += 1
                for i in range(considered):
                    visits[i] += 1
            considered = max(2, considered // 2)
    return table


@njit(cache=True, inline="always")
def _sign(colour: int) -> float:
    return 1.0 if colour == 0 else -1.0


@njit(cache=True)
def completed_q(
    b: int, node: int, node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray,
    node_raw: np.ndarray, node_first: np.ndarray, node_nkids: np.ndarray,
    pool_logit: np.ndarray, pool_child: np.ndarray, c_visit: float, c_scale: float, rescale: bool,
) -> np.ndarray:
    """sigma(completed Q) of a node's children, from the chooser's view (mctx `qtransform_completed_by_mix_value`).

    Visited children keep their mean value; unvisited ones get the mixed value (the node's raw
    network value averaged with the prior-weighted Q of the visited children); all are mapped
    to [0, 1], by their min and max (`rescale`, mctx's default) or as the value scale [-1, 1]
    itself, then scaled by (c_visit + max child visits) * c_scale. Min-max rescaling makes the
    best child worth the full bonus however small the differences are; with a network whose
    values barely differ between siblings that amplifies noise into a confident target.
    """
    base = node_first[b, node]
    n = node_nkids[b, node]
    sgn = _sign(node_state[b, node, I_TO_MOVE])
    q = np.empty(n, np.float64)
    sum_n = 0.0
    sum_p = 0.0
    weighted = 0.0
    max_n = 0
    for i in range(n):
        c = pool_child[b, base + i]
        if c >= 0 and node_visits[b, c] > 0:
            nv = node_visits[b, c]
            qi = sgn * node_wred[b, c] / nv
            q[i] = qi
            p = max(math.exp(pool_logit[b, base + i]), 1e-38)
            sum_n += nv
            sum_p += p
            weighted += p * qi
            max_n = max(max_n, nv)
    raw = sgn * node_raw[b, node]
    mixed = raw if sum_n == 0 else (raw + sum_n * weighted / sum_p) / (sum_n + 1.0)
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        c = pool_child[b, base + i]
        if not (c >= 0 and node_visits[b, c] > 0):
            q[i] = mixed
        lo = min(lo, q[i])
        hi = max(hi, q[i])
    scale = (c_visit + max_n) * c_scale
    span = max(hi - lo, 1e-8)
    if not rescale:
        lo = -1.0
        span = 2.0
    for i in range(n):
        q[i] = scale * (q[i] - lo) / span
    return q


@njit(cache=True)
def _puct_pick(
    b: int, node: int, node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray,
    node_first: np.ndarray, node_nkids: np.ndarray, pool_logit: np.ndarray, pool_child: np.ndarray, c_puct: float,
) -> int:
    """PUCT (Silver et al. 2018): argmax Q + c_puct * P * sqrt(N_node) / (1 + N_child).

    An unvisited child's Q is the node's own mean value for the chooser (first-play urgency =
    parent value, as KataGo without the reduction): it neither shuns nor favours the unknown.
    Ties go to the first child in the list (the caller's order).
    """
    base = node_first[b, node]
    sgn = _sign(node_state[b, node, I_TO_MOVE])
    nv = node_visits[b, node]
    fpu = sgn * node_wred[b, node] / nv if nv > 0 else 0.0
    sqrt_n = math.sqrt(nv)
    best = NEG_INF
    pick = 0
    for i in range(node_nkids[b, node]):
        c = pool_child[b, base + i]
        n_c = 0
        q = fpu
        if c >= 0 and node_visits[b, c] > 0:
            n_c = node_visits[b, c]
            q = sgn * node_wred[b, c] / n_c
        u = q + c_puct * math.exp(pool_logit[b, base + i]) * sqrt_n / (1 + n_c)
        if u > best:
            best = u
            pick = i
    return pick


@njit(cache=True)
def forced_child(
    b: int, node_visits: np.ndarray, node_first: np.ndarray, node_nkids: np.ndarray,
    pool_logit: np.ndarray, pool_child: np.ndarray, forced_k: float,
) -> int:
    """KataGo's forced playouts at the root (Wu 2019, section 3.2): the root child that has been visited
    but has fewer than n_forced = sqrt(k * P(c) * sum of the root's child visits) visits, the furthest
    below its n_forced; -1 if there is none (then PUCT chooses)."""
    base = node_first[b, 0]
    n = node_nkids[b, 0]
    total = node_visits[b, 0] - 1  # every simulation after the root's own evaluation went through one child
    pick = -1
    worst = 0.0
    for i in range(n):
        c = pool_child[b, base + i]
        if c >= 0 and node_visits[b, c] > 0:
            short = math.sqrt(forced_k * math.exp(pool_logit[b, base + i]) * total) - node_visits[b, c]
            if short > worst:
                worst = short
                pick = i
    return pick


@njit(cache=True)
def _gumbel_interior_pick(
    b: int, node: int, node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray,
    node_raw: np.ndarray, node_first: np.ndarray, node_nkids: np.ndarray,
    pool_logit: np.ndarray, pool_child: np.ndarray, c_visit: float, c_scale: float, rescale: bool,
) -> int:
    """Gumbel MuZero's deterministic interior choice: argmax pi'(a) - N(a) / (1 + sum N).

    pi' = softmax(logit + sigma(completed Q)), the improved policy; the rule makes visit counts
    track pi' without any noise (Danihelka et al. 2022, section 5).
    """
    base = node_first[b, node]
    n = node_nkids[b, node]
    sq = completed_q(b, node, node_state, node_visits, node_wred, node_raw, node_first, node_nkids,
                     pool_logit, pool_child, c_visit, c_scale, rescale)
    top = NEG_INF
    for i in range(n):
        sq[i] += pool_logit[b, base + i]
        top = max(top, sq[i])
    total = 0.0
    for i in range(n):
        sq[i] = math.exp(sq[i] - top)
        total += sq[i]
    sum_n = 0
    for i in range(n):
        c = pool_child[b, base + i]
        if c >= 0:
            sum_n += node_visits[b, c]
    best = NEG_INF
    pick = 0
    for i in range(n):
        c = pool_child[b, base + i]
        n_c = node_visits[b, c] if c >= 0 else 0
        u = sq[i] / total - n_c / (1.0 + sum_n)
        if u > best:
            best = u
            pick = i
    return pick


@njit(cache=True)
def gumbel_scores(
    b: int, considered_visit: int, node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray,
    node_raw: np.ndarray, node_first: np.ndarray, node_nkids: np.ndarray,
    pool_logit: np.ndarray, pool_child: np.ndarray, root_gumbel: np.ndarray, c_visit: float, c_scale: float,
    rescale: bool,
) -> np.ndarray:
    """Root scores g + logit + sigma(completed Q) of the children with exactly `considered_visit` visits; -inf for the rest."""
    base = node_first[b, 0]
    n = node_nkids[b, 0]
    sq = completed_q(b, 0, node_state, node_visits, node_wred, node_raw, node_first, node_nkids,
                     pool_logit, pool_child, c_visit, c_scale, rescale)
    out = np.empty(n, np.float64)
    for i in range(n):
        c = pool_child[b, base + i]
        n_c = node_visits[b, c] if c >= 0 else 0
        if n_c == considered_visit:
            out[i] = max(LOW_LOGIT, root_gumbel[b, i] + pool_logit[b, base + i] + sq[i])
        else:
            out[i] = NEG_INF
    return out


@njit(cache=True)
def select_leaves(
    active: np.ndarray, root_mode: int, c_puct: float, forced_k: float, c_visit: float, c_scale: float, rescale: bool,
    table: np.ndarray, n_considered: np.ndarray, root_gumbel: np.ndarray,
    node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray, node_raw: np.ndarray,
    node_first: np.ndarray, node_nkids: np.ndarray, node_win: np.ndarray, n_nodes: np.ndarray,
    pool_action: np.ndarray, pool_logit: np.ndarray, pool_child: np.ndarray,
    leaf: np.ndarray, path: np.ndarray, depth: np.ndarray,
) -> None:
    """Walk each active tree from its root to a node that is terminal or not yet expanded.

    A child is created (its state computed) the first time the walk chooses it; it is then
    the leaf. The root chooses by sequential halving over Gumbel-perturbed logits
    (`root_mode == ROOT_GUMBEL`, with Gumbel MuZero's interior rule below) or by PUCT, where with
    `forced_k` > 0 the root first gives each visited child its forced playouts (`forced_child`).
    Below the root, a node with a decisive move (`node_win`, set by `expand_backup`) always
    chooses it: its mover wins there, so the walk ends on that exact result.
    """
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        node = 0
        d = 0
        path[b, 0] = 0
        while node_state[b, node, I_REASON] == 0 and node_first[b, node] >= 0:
            if node > 0 and node_win[b, node] >= 0:
                pick = node_win[b, node]
            elif root_mode == ROOT_GUMBEL:
                if node == 0:
                    sim = node_visits[b, 0] - 1
                    sim = min(sim, table.shape[1] - 1)
                    scores = gumbel_scores(b, table[n_considered[b], sim], node_state, node_visits, node_wred,
                                           node_raw, node_first, node_nkids, pool_logit, pool_child, root_gumbel,
                                           c_visit, c_scale, rescale)
                    pick = 0
                    best = NEG_INF
                    for i in range(scores.shape[0]):
                        if scores[i] > best:
                            best = scores[i]
                            pick = i
                else:
                    pick = _gumbel_interior_pick(b, node, node_state, node_visits, node_wred, node_raw, node_first,
                                                 node_nkids, pool_logit, pool_child, c_visit, c_scale, rescale)
            else:
                pick = -1
                if node == 0 and forced_k > 0.0:
                    pick = forced_child(b, node_visits, node_first, node_nkids, pool_logit, pool_child, forced_k)
                if pick < 0:
                    pick = _puct_pick(b, node, node_state, node_visits, node_wred, node_first, node_nkids,
                                      pool_logit, pool_child, c_puct)
            slot = node_first[b, node] + pick
            child = pool_child[b, slot]
            if child < 0:
                child = n_nodes[b]
                n_nodes[b] += 1
                parent = node_state[b, node]  # the chosen move, canonical -> board (its own inverse)
                node_state[b, child] = _core.apply_unchecked(parent, to_frame(pool_action[b, slot], parent[I_TO_MOVE] == 1))
                node_visits[b, child] = 0
                node_wred[b, child] = 0.0
                node_raw[b, child] = 0.0
                node_first[b, child] = NO_NODE
                node_nkids[b, child] = 0
                pool_child[b, slot] = child
            node = child
            d += 1
            path[b, d] = node
        leaf[b] = node
        depth[b] = d


@njit(cache=True)
def leaf_inputs(
    active: np.ndarray, leaf: np.ndarray, node_state: np.ndarray,
    eval_index: np.ndarray, states: np.ndarray, obs: np.ndarray, ids: np.ndarray, counts: np.ndarray,
) -> int:
    """Gather the leaves that need the network: packed states, canonical planes and legal ids.

    Sets `eval_index[b]` to the row of tree b's leaf (or -1: inactive tree or terminal leaf,
    whose value is exact) and returns the number of rows K. Ids are in the canonical frame of
    the colour to move (blue's transposed, `symmetry.py`), as the network was trained.
    """
    k = 0
    for b in range(active.shape[0]):
        eval_index[b] = -1
        if not active[b]:
            continue
        a = node_state[b, leaf[b]]
        if a[I_REASON] != 0:
            continue
        eval_index[b] = k
        states[k] = a
        counts[k] = observe_mover(a, obs[k], ids[k])  # a forced pass is listed alone (R4.3)
        k += 1
    return k


@njit(cache=True)
def expand_backup(
    active: np.ndarray, leaf: np.ndarray, path: np.ndarray, depth: np.ndarray, eval_index: np.ndarray,
    ids: np.ndarray, counts: np.ndarray, log_priors: np.ndarray, values: np.ndarray,
    node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray, node_raw: np.ndarray,
    node_first: np.ndarray, node_nkids: np.ndarray, node_win: np.ndarray,
    pool_action: np.ndarray, pool_logit: np.ndarray, pool_child: np.ndarray, pool_n: np.ndarray,
    decisive: bool,
) -> None:
    """Expand each evaluated leaf with its legal actions (canonical ids, as `leaf_inputs` listed
    them) and log-priors; back up.

    `values[k]` is the network's value for the colour to move at leaf k; a terminal leaf is
    backed up with its exact result (R7). With `decisive`, a leaf whose mover has an action that
    ends the game with a win (`_search.winning_action`) is a won position: its value is that
    exact +1 instead of the network's, and `node_win` keeps the action's child slot (-1: none).
    Every node on the path gains one visit and the red value. The caller has made room in the
    pool (`pool_n[b] + counts[k] <= pool width`).
    """
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        node = leaf[b]
        a = node_state[b, node]
        k = eval_index[b]
        if k < 0:
            v = red_value(a)
        else:
            colour = a[I_TO_MOVE]
            start = pool_n[b]
            n = counts[k]
            for j in range(n):
                pool_action[b, start + j] = ids[k, j]
                pool_logit[b, start + j] = log_priors[k, j]
                pool_child[b, start + j] = NO_NODE
            node_first[b, node] = start
            node_nkids[b, node] = n
            pool_n[b] = start + n
            v = values[k] * _sign(colour)
            node_win[b, node] = -1
            if decisive:
                win = winning_action(a, ids[k], n, colour == 1)  # the canonical ids, mapped one by one
                if win >= 0:
                    node_win[b, node] = win
                    v = _sign(colour)
            node_raw[b, node] = v
        for i in range(depth[b] + 1):
            x = path[b, i]
            node_visits[b, x] += 1
            node_wred[b, x] += v


@njit(cache=True)
def log_softmax_rows(logits: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax over the first counts[k] entries, summed in order.

    Each row's numbers depend on that row alone (not on the batch's padded width), which keeps
    a batched search identical to one-at-a-time searches bit for bit.
    """
    out = np.zeros(logits.shape, np.float64)
    for k in range(logits.shape[0]):
        n = counts[k]
        top = -np.inf
        for j in range(n):
            top = max(top, logits[k, j])
        total = 0.0
        for j in range(n):
            total += math.exp(logits[k, j] - top)
        z = top + math.log(total)
        for j in range(n):
            out[k, j] = logits[k, j] - z
    return out


@njit(cache=True)
def root_children(
    b: int, node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray,
    node_first: np.ndarray, node_nkids: np.ndarray, pool_action: np.ndarray, pool_logit: np.ndarray,
    pool_child: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(canonical actions, log-priors, visits, mean value for the root's mover) of tree b's root children."""
    base = node_first[b, 0]
    n = node_nkids[b, 0]
    sgn = _sign(node_state[b, 0, I_TO_MOVE])
    actions = np.empty(n, np.int64)
    logits = np.empty(n, np.float64)
    visits = np.zeros(n, np.int64)
    q = np.zeros(n, np.float64)
    for i in range(n):
        actions[i] = pool_action[b, base + i]
        logits[i] = pool_logit[b, base + i]
        c = pool_child[b, base + i]
        if c >= 0 and node_visits[b, c] > 0:
            visits[i] = node_visits[b, c]
            q[i] = sgn * node_wred[b, c] / node_visits[b, c]
    return actions, logits, visits, q

