"""Network-guided search over many games at once (AlphaZero PUCT or a Gumbel root), torch-free.

`BatchedSearch` runs one search per game for B games in flight. Each simulation step walks
all B trees in compiled code (`_az.select_leaves`), hands every new leaf of every tree to
the evaluator in ONE call, then expands and backs up in compiled code. On a CPU the network
forward pass is the cost, and one call for B leaves costs far less than B calls for one
(`python -m colony_training.bench_zero` measures it), which is what makes a network at every node
affordable in self-play.

The evaluator is anything with the `LeafEvaluator` signature: the network lives in
`colony_training.agents` (torch), tests use deterministic numpy functions. Search knows
nothing of torch.

Two root rules (`SearchConfig.root`):

* `"gumbel"` (Danihelka et al., "Policy improvement by planning with Gumbel", ICLR 2022):
  Gumbel-top-k sampling of `max_considered` root actions, sequential halving over them,
  Gumbel MuZero's deterministic interior rule below, and as policy target the improved
  policy softmax(logits + sigma(completed Q)). It improves the policy even with 16-32
  simulations, so it is what self-play uses.
* `"puct"` (Silver et al. 2018): Q + c_puct * P * sqrt(N) / (1 + N_a) at every node; the
  most visited root action is played and the visit distribution is the target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .. import _core
from ..constants import CONNECTED_TO_END, I_REASON, I_TO_MOVE, STATE_LEN
from ..engine import GameState, legal_actions
from ..observation import OBS_SHAPE
from ..symmetry import TRANSPOSE_ACTIONS, canonical_action_to_board
from . import _az
from ._search import connected_totals, position_seeds, rollout_mover_means_seeded
from .base import MAX_LEAF_PLAYOUTS, MAX_SIMULATIONS, Agent, require_ongoing

ROOTS = {"puct": _az.ROOT_PUCT, "gumbel": _az.ROOT_GUMBEL}
POOL_PER_NODE = 80  # initial room for children per node (a typical position has ~70 legal actions)
MAX_LEGAL = _core.MAX_LEGAL
MAX_FROM_CONNECTED = CONNECTED_TO_END - 1
"""The most connected satellites a leaf that is still a game can have (23 end it, R6.2.1): the largest
`from_connected` of `RolloutMixEvaluator` that still mixes anywhere."""
DIRICHLET_TOTAL = 10.83
"""Concentration of the PUCT root's Dirichlet noise summed over the legal actions: alpha = this / legal count
(KataGo's 0.03 x 361 on Go's board, so the noise is as spread whatever the number of legal actions)."""


class LeafEvaluator(Protocol):
    """What the search asks of a network: priors over the legal actions and a value, for K leaves at once."""

    def __call__(
        self, states: np.ndarray, obs: np.ndarray, ids: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """states int32[K, STATE_LEN], obs float32[K, C, 10, 10] (canonical view of the mover),
        ids int16[K, W] canonical legal ids (row k valid up to counts[k]), counts int32[K]
        -> (logits float[K, >= W]: any finite numbers, normalised here over the valid slots;
        values float[K] in [-1, 1]: the expected result for the colour to move)."""
        ...


SEED_HIGH = 2**31  # playout seeds are drawn below this


class RolloutMixEvaluator:
    """A `LeafEvaluator` whose values mix the inner evaluator's with random playouts from the leaf.

    value = (1 - mix) * inner value + mix * the mean result of `playouts` uniformly random
    playouts from the leaf (AlphaGo's lambda, Silver et al. 2016). A freshly initialised value
    head knows nothing, while random playouts already carry signal (plain `mcts:N` is built on
    them), so `mix` near 1 lets a from-scratch run get useful search targets from its first
    generation; a playout costs about as much as one leaf of the small network. With
    `from_connected` > 0 only leaves with at least that many connected satellites (both colours;
    23 end the game, R6.2.1) are mixed: late in the game a few playouts judge a position better
    than a trained value head does (docs/zero.md, "Where the agent loses"), early they are noise.
    Priors are the inner evaluator's, unchanged. A leaf's playouts are seeded by its position and `seed`
    alone (`_search.position_seeds`), so a game's moves do not depend on the games searched beside it or
    before it (colony-eval's `--workers`, `--batch` and `--resume`).
    """

    def __init__(self, inner: LeafEvaluator, mix: float, seed: int = 0, playouts: int = 1,
                 from_connected: int = 0) -> None:
        if isinstance(mix, bool) or not isinstance(mix, (int, float)) or not 0.0 <= mix <= 1.0:
            raise ValueError(f"rollout mix must be a number in [0, 1], got {mix!r}")
        for name, v, low, high in (("playouts", playouts, 1, MAX_LEAF_PLAYOUTS),
                                   ("from_connected", from_connected, 0, MAX_FROM_CONNECTED)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not low <= v <= high:
                raise ValueError(f"{name} must be an int in {low}..{high}, got {v!r}")
        self.inner = inner
        self.mix = float(mix)
        self.playouts = int(playouts)
        self.from_connected = int(from_connected)
        self.seed = int(seed)

    def __call__(self, states: np.ndarray, obs: np.ndarray, ids: np.ndarray, counts: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        logits, values = self.inner(states, obs, ids, counts)
        if self.mix == 0.0:
            return logits, values
        states = np.ascontiguousarray(states, dtype=np.int32)
        values = np.asarray(values, np.float64).reshape(-1).copy()
        rows = (np.flatnonzero(connected_totals(states) >= self.from_connected) if self.from_connected
                else np.arange(len(states)))
        if rows.size:
            leaves = states[rows]  # a contiguous copy
            played = rollout_mover_means_seeded(leaves, self.playouts, position_seeds(leaves, self.seed))
            values[rows] = (1.0 - self.mix) * values[rows] + self.mix * played
        return logits, values


@dataclass(frozen=True)
class SearchConfig:
    """Settings of one search; the defaults are what `checkpoint:PATH:az:N` plays with."""

    simulations: int = 200
    """Simulations per move; each evaluates one new leaf (a terminal leaf is scored exactly)."""
    root: str = "gumbel"
    """`gumbel` (sequential halving, completed-Q target) or `puct` (visit counts)."""
    c_puct: float = 1.25
    """PUCT exploration constant (root `puct` only)."""
    max_considered: int = 16
    """Gumbel: root actions sampled for sequential halving (m)."""
    gumbel_scale: float = 1.0
    """Gumbel: scale of the root noise; 0 considers the top-m actions of the prior deterministically."""
    c_visit: float = 50.0
    """Gumbel: sigma(q) = (c_visit + max N) * c_scale * q (mctx defaults)."""
    c_scale: float = 0.1
    rescale_q: bool = True
    """Gumbel: map completed Q to [0, 1] by its min and max (mctx's default) rather than from [-1, 1]."""
    forced_playouts: float = 0.0
    """PUCT root: KataGo's k (2 in Wu 2019) for forced playouts, sqrt(k P(c) sum N) visits for every visited
    child, and the policy target pruned of them (`pruned_visits`); 0 = off."""
    root_dirichlet: float = 0.0
    """PUCT root: share of Dirichlet noise mixed into the root's priors (AlphaZero's 0.25), alpha =
    DIRICHLET_TOTAL / legal actions; 0 = off. For self-play: the reported prior stays the network's."""
    decisive: bool = False
    """Decisive moves (Teytaud and Teytaud, 2010): every expanded node whose mover has an action that
    ends the game with a win is scored as that exact win, and the walk takes that action there; at the
    root the search plays it without simulating. Costs no network evaluation, only one application of
    each action that may end the game (`_search.winning_action`)."""

    def __post_init__(self) -> None:
        if isinstance(self.simulations, bool) or not isinstance(self.simulations, (int, np.integer)) \
                or not 1 <= self.simulations <= MAX_SIMULATIONS:
            raise ValueError(f"simulations must be an int in 1..{MAX_SIMULATIONS}, got {self.simulations!r}")
        if self.root not in ROOTS:
            raise ValueError(f"root must be one of {sorted(ROOTS)}, got {self.root!r}")
        if isinstance(self.max_considered, bool) or not isinstance(self.max_considered, (int, np.integer)) \
                or not 1 <= self.max_considered <= MAX_LEGAL:
            raise ValueError(f"max_considered must be an int in 1..{MAX_LEGAL}, got {self.max_considered!r}")
        for name in ("c_puct", "gumbel_scale", "c_visit", "c_scale", "forced_playouts", "root_dirichlet"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if not isinstance(self.decisive, (bool, np.bool_)):
            raise ValueError(f"decisive must be True or False, got {self.decisive!r}")
        if self.root_dirichlet > 1:
            raise ValueError(f"root_dirichlet is a share in [0, 1], got {self.root_dirichlet!r}")
        if (self.forced_playouts or self.root_dirichlet) and self.root != "puct":
            raise ValueError("forced_playouts and root_dirichlet belong to the PUCT root: "
                             "set root='puct' or leave them 0")


def pruned_visits(visits: np.ndarray, q: np.ndarray, prior: np.ndarray, best: int, root_visits: int,
                  c_puct: float, forced_k: float) -> np.ndarray:
    """KataGo's policy target pruning (Wu 2019, section 3.2): the root's visit counts less the forced playouts.

    For every child c but c* = `best` (the move played: the most visited), up to n_forced(c) = sqrt(k P(c) sum N)
    visits are taken away as long as c's PUCT value stays below c*'s (so that they are visits PUCT alone would
    not have given it), and a child left with at most one visit is dropped. float64[n], same order; c* keeps its
    count."""
    n = visits.astype(np.float64)
    total = n.sum()
    if total <= 0:
        return n
    sqrt_n = math.sqrt(root_visits)
    explore = c_puct * prior * sqrt_n
    best_u = q[best] + explore[best] / (1.0 + n[best])
    out = n.copy()
    for c in np.flatnonzero(visits > 0):
        if c == best:
            continue
        gap = best_u - q[c]
        if gap <= 0:
            continue  # c's value alone reaches c*'s PUCT value: every visit was PUCT's own
        least = max(n[c] - math.sqrt(forced_k * prior[c] * total), explore[c] / gap - 1.0)
        out[c] = min(n[c], least)
        if out[c] <= 1.0:
            out[c] = 0.0
    return out


@dataclass
class SearchResult:
    """One root after the search. Arrays are over the root's legal actions, in the engine's order
    (ascending board ids), as the tree keeps them: canonical ids of the root's mover."""

    canonical_actions: np.ndarray  # int64[n] legal ids in the mover's canonical frame (symmetry.py)
    prior: np.ndarray  # float64[n] the network's prior
    visits: np.ndarray  # int64[n]
    q: np.ndarray  # float64[n] mean value of each visited child for the root's mover (0 if unvisited)
    policy: np.ndarray  # float64[n] the improved policy (training target)
    action: int  # the action chosen, board frame
    value: float  # the root's search value for the mover (mean over the root's visits)
    raw_value: float  # the network's value of the root for the mover
    colour: int  # the root's mover: 0 red, 1 blue
    next_state: GameState  # the position after `action`, taken from the tree (it was legal: no re-check)

    @property
    def actions(self) -> np.ndarray:
        """int64[n] the same legal actions in the board frame (mapped when asked)."""
        return canonical_action_to_board(self.canonical_actions, self.colour)


class BatchedSearch:
    """One network-guided search per game for B games, leaves evaluated in batches.

    `search(states, rng)` returns one `SearchResult` per state. Reproducible from `rng`
    (it draws only the Gumbel noise) and the evaluator.
    """

    def __init__(self, evaluator: LeafEvaluator, config: SearchConfig | None = None) -> None:
        self.evaluator = evaluator
        self.config = config or SearchConfig()
        self.leaf_evaluations = 0  # leaves sent to the evaluator (for benchmarks)
        self.evaluator_calls = 0
        self._table = _az.considered_visits_table(self.config.max_considered, self.config.simulations)

    def search(self, states: list[GameState] | np.ndarray,
               rng: np.random.Generator | Sequence[np.random.Generator]) -> list[SearchResult]:
        """One search per state. `rng` is one generator for all roots or one per root; with one per
        root each root's Gumbel noise is what a search of that state alone would draw."""
        packed = np.ascontiguousarray(
            np.stack([s._a for s in states]) if isinstance(states, list) else states, dtype=np.int32
        )
        if packed.ndim != 2 or packed.shape[1] != STATE_LEN:
            raise ValueError(f"states must be GameStates or int32[B, {STATE_LEN}], got shape {packed.shape}")
        if np.any(packed[:, I_REASON] != 0):
            raise ValueError("every game must be ongoing: a finished game has no legal action (R8.4)")
        cfg = self.config
        n_trees = packed.shape[0]
        rngs = [rng] * n_trees if isinstance(rng, np.random.Generator) else list(rng)
        if len(rngs) != n_trees:
            raise ValueError(f"give one generator or one per state ({n_trees}), got {len(rngs)}")
        cap = cfg.simulations + 2
        node_state = np.zeros((n_trees, cap, STATE_LEN), np.int32)
        node_state[:, 0] = packed
        node_visits = np.zeros((n_trees, cap), np.int64)
        node_wred = np.zeros((n_trees, cap), np.float64)
        node_raw = np.zeros((n_trees, cap), np.float64)
        node_first = np.full((n_trees, cap), _az.NO_NODE, np.int64)
        node_nkids = np.zeros((n_trees, cap), np.int64)
        node_win = np.full((n_trees, cap), -1, np.int64)
        n_nodes = np.ones(n_trees, np.int64)
        width = POOL_PER_NODE * cap
        pool_action = np.zeros((n_trees, width), np.int64)
        pool_logit = np.zeros((n_trees, width), np.float64)
        pool_child = np.full((n_trees, width), _az.NO_NODE, np.int64)
        pool_n = np.zeros(n_trees, np.int64)
        leaf = np.zeros(n_trees, np.int64)
        path = np.zeros((n_trees, cap + 1), np.int64)
        depth = np.zeros(n_trees, np.int64)
        eval_index = np.full(n_trees, -1, np.int64)
        in_states = np.zeros((n_trees, STATE_LEN), np.int32)
        in_obs = np.zeros((n_trees, *OBS_SHAPE), np.float32)
        in_ids = np.zeros((n_trees, MAX_LEGAL), np.int16)
        in_counts = np.zeros(n_trees, np.int32)
        root_gumbel = np.zeros((n_trees, MAX_LEGAL), np.float64)
        n_considered = np.zeros(n_trees, np.int64)
        active = np.ones(n_trees, np.bool_)
        root_mode = ROOTS[cfg.root]

        def step() -> None:
            nonlocal pool_action, pool_logit, pool_child
            _az.select_leaves(active, root_mode, cfg.c_puct, cfg.forced_playouts, cfg.c_visit, cfg.c_scale,
                              cfg.rescale_q, self._table, n_considered, root_gumbel, node_state, node_visits,
                              node_wred, node_raw, node_first, node_nkids, node_win,
                              n_nodes, pool_action, pool_logit, pool_child, leaf, path, depth)
            k = _az.leaf_inputs(active, leaf, node_state, eval_index, in_states, in_obs, in_ids, in_counts)
            log_priors = np.zeros((0, 1), np.float64)
            values = np.zeros(0, np.float64)
            if k:
                w = int(in_counts[:k].max())
                ids = in_ids[:k, :w].copy()
                ids[np.arange(w)[None, :] >= in_counts[:k, None]] = 0  # padding: a valid id, ignored
                logits, values = self.evaluator(in_states[:k], in_obs[:k], ids, in_counts[:k])
                values = np.clip(np.asarray(values, np.float64).reshape(k), -1.0, 1.0)
                log_priors = _az.log_softmax_rows(np.ascontiguousarray(np.asarray(logits, np.float64)[:, :w]), in_counts[:k])
                self.leaf_evaluations += k
                self.evaluator_calls += 1
                need = int(max((pool_n[b] + in_counts[eval_index[b]] for b in range(n_trees) if eval_index[b] >= 0),
                               default=0))
                if need > pool_action.shape[1]:  # grow every tree's pool (rare: big positions)
                    grow = max(need, 2 * pool_action.shape[1]) - pool_action.shape[1]
                    pool_action = np.concatenate([pool_action, np.zeros((n_trees, grow), np.int64)], axis=1)
                    pool_logit = np.concatenate([pool_logit, np.zeros((n_trees, grow), np.float64)], axis=1)
                    pool_child = np.concatenate([pool_child, np.full((n_trees, grow), _az.NO_NODE, np.int64)], axis=1)
            _az.expand_backup(active, leaf, path, depth, eval_index, in_ids, in_counts, log_priors, values,
                              node_state, node_visits, node_wred, node_raw, node_first, node_nkids, node_win,
                              pool_action, pool_logit, pool_child, pool_n, cfg.decisive)

        step()  # evaluate every root: its priors and raw value
        clean_root_logits = [None] * n_trees
        for b in range(n_trees):
            n = int(node_nkids[b, 0])
            n_considered[b] = min(cfg.max_considered, n)
            if cfg.root == "gumbel" and cfg.gumbel_scale > 0:
                root_gumbel[b, :n] = cfg.gumbel_scale * rngs[b].gumbel(size=n)
            if cfg.root_dirichlet > 0 and n > 1:
                roots = slice(node_first[b, 0], node_first[b, 0] + n)
                clean_root_logits[b] = pool_logit[b, roots].copy()
                noise = rngs[b].dirichlet(np.full(n, DIRICHLET_TOTAL / n))
                mixed = (1.0 - cfg.root_dirichlet) * np.exp(pool_logit[b, roots]) + cfg.root_dirichlet * noise
                pool_logit[b, roots] = np.log(np.maximum(mixed, 1e-300))
            if n == 1 or node_win[b, 0] >= 0:
                active[b] = False  # a forced move (often a pass) or a decisive one: nothing to search
        for _ in range(cfg.simulations):
            if not active.any():
                break
            step()
        return [self._result(b, node_state, node_visits, node_wred, node_raw, node_first, node_nkids,
                             pool_action, pool_logit, pool_child, root_gumbel, clean_root_logits[b],
                             int(node_win[b, 0]))
                for b in range(n_trees)]

    def _result(self, b: int, node_state: np.ndarray, node_visits: np.ndarray, node_wred: np.ndarray,
                node_raw: np.ndarray, node_first: np.ndarray, node_nkids: np.ndarray, pool_action: np.ndarray,
                pool_logit: np.ndarray, pool_child: np.ndarray, root_gumbel: np.ndarray,
                clean_logits: np.ndarray | None = None, decisive: int = -1) -> SearchResult:
        cfg = self.config
        actions, logits, visits, q = _az.root_children(b, node_state, node_visits, node_wred, node_first,
                                                       node_nkids, pool_action, pool_logit, pool_child)
        colour = int(node_state[b, 0, I_TO_MOVE])
        sign = 1.0 if colour == 0 else -1.0
        value = sign * node_wred[b, 0] / node_visits[b, 0]
        raw = sign * node_raw[b, 0]
        prior = np.exp(logits)
        if len(actions) == 1:
            policy = np.ones(1)
            pick = 0
        elif decisive >= 0:  # the root's mover wins with this action (SearchConfig.decisive)
            pick = decisive
            policy = np.zeros(len(actions))
            policy[pick] = 1.0
        elif cfg.root == "gumbel":
            sigma = _az.completed_q(b, 0, node_state, node_visits, node_wred, node_raw, node_first, node_nkids,
                                    pool_logit, pool_child, cfg.c_visit, cfg.c_scale, cfg.rescale_q)
            z = logits + sigma
            policy = np.exp(z - z.max())
            policy /= policy.sum()
            scores = _az.gumbel_scores(b, int(visits.max()), node_state, node_visits, node_wred, node_raw,
                                       node_first, node_nkids, pool_logit, pool_child, root_gumbel,
                                       cfg.c_visit, cfg.c_scale, cfg.rescale_q)
            pick = int(np.argmax(scores))
        else:
            best = np.flatnonzero(visits == visits.max())
            pick = int(best[int(np.argmax(q[best]))])
            target = (pruned_visits(visits, q, prior, pick, int(node_visits[b, 0]), cfg.c_puct, cfg.forced_playouts)
                      if cfg.forced_playouts else visits)
            policy = target / target.sum()
        if clean_logits is not None:
            prior = np.exp(clean_logits)  # the network's prior, not the noise the search mixed in
        action = int(TRANSPOSE_ACTIONS[actions[pick]] if colour == 1 else actions[pick])  # the one id mapped back
        child = int(pool_child[b, node_first[b, 0] + pick])
        # The chosen child was visited (a forced move was not searched): its state is in the tree.
        after = node_state[b, child] if child >= 0 else _core.apply_unchecked(node_state[b, 0], action)
        return SearchResult(actions, prior, visits, q, policy, action, float(value), float(raw), colour,
                            GameState.from_array(after))


class AZAgent(Agent):
    """An engine-level agent: one `BatchedSearch` per move (B = 1) with a network evaluator."""

    def __init__(self, evaluator: LeafEvaluator, config: SearchConfig | None = None, name: str = "az") -> None:
        self.search = BatchedSearch(evaluator, config)
        self.name = name

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        return self.act_batch([state], [rng])[0]

    def act_batch(self, states: Sequence[GameState], rngs: Sequence[np.random.Generator]) -> list[int]:
        """`act` for several games at once: their searches share each network call.

        A forced move (one legal action) is played without a search. Each game draws from its
        own generator, so only the network's floating-point sums (which can differ between
        batch sizes) separate a game played in a batch from the same game played alone."""
        out: list[int | None] = []
        todo: list[int] = []
        for k, state in enumerate(states):
            require_ongoing(state)
            legal = legal_actions(state)
            out.append(int(legal[0]) if len(legal) == 1 else None)
            if len(legal) > 1:
                todo.append(k)
        if todo:
            results = self.search.search([states[k] for k in todo], [rngs[k] for k in todo])
            for k, r in zip(todo, results):
                out[k] = r.action
        return [int(a) for a in out]

    def analyse(self, state: GameState, rng: np.random.Generator) -> SearchResult:
        """The full root statistics of one search (for analysis tools)."""
        require_ongoing(state)
        return self.search.search([state], rng)[0]


__all__ = ["AZAgent", "BatchedSearch", "LeafEvaluator", "RolloutMixEvaluator", "SearchConfig", "SearchResult"]
