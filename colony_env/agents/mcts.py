"""Monte Carlo tree search (UCT) for Colony, in the shape of OpenSpiel's `MCTSBot`.

`MCTSAgent(uct_c, max_simulations, evaluator)` searches from the given state and plays
the most visited root child. The random generator is injected (`act(state, rng)`), as
in OpenSpiel (`random_state`).

Two search paths share one tree policy (UCT: Kocsis & Szepesvari, "Bandit based
Monte-Carlo Planning", ECML 2006):

* the default evaluator, `RandomRolloutEvaluator`, runs the whole search in compiled
  code (`_search.uct_search`: the tree in flat arrays, rollouts on the engine's
  kernels), which makes 1,000 simulations per move practical;
* any other `Evaluator` (e.g. a network's value and policy) runs the same search in
  Python, calling `evaluate` on new leaves and `prior` when a node is expanded; with
  `child_selection="puct"` the prior enters the tree policy as in AlphaZero (Silver
  et al., Science 2018): `Q + uct_c * P * sqrt(N_parent) / (1 + N)`.

The search never re-implements a rule: children are the engine's legal actions.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..constants import I_REASON, I_TO_MOVE
from .. import _core
from ..engine import GameState, _wrap, legal_actions
from ._search import prior_root_search, rollout_values, uct_search
from .base import MAX_SIMULATIONS, Agent, require_ongoing

# OpenSpiel's examples use 2 for returns in [-1, 1]. With about 70 legal actions and a few
# hundred simulations that spreads the visits almost evenly over the root's children;
# measured (colony-eval, 10 paired setups): mcts:200 vs random scored 0.85 with c = 2,
# 1.00 with c = 1 and c = 0.5, 0.975 with c = 0.25, and c = 0.5 / 1 / 2 scored evenly
# against each other. So 1.
DEFAULT_UCT_C = 1.0
# Exploration constant of the root's PUCT score when a root prior is given. Measured with the
# previous shipped policy (245k steps) as prior, 200 simulations, against mcts:200 (colony-eval, paired seeds):
# C = 0.5 / 1 / 2 / 4 scored 0.505 (100 games) / 0.615 (100) and 0.725 (40) / 0.637 (40) / 0.600 (40).
DEFAULT_PRIOR_C = 1.0
# Share of the root prior replaced by a uniform one. PUCT never visits a move whose prior is
# ~0 while a favoured move looks no worse than an unvisited one (Q = 0), so a confidently wrong
# policy could hide a winning move from the rollouts; a uniform floor bounds that (AlphaZero
# mixes Dirichlet noise into the root prior with the same weight, 0.25, for the same reason).
DEFAULT_UNIFORM_MIX = 0.25
SEED_HIGH = 2**62  # range of the per-search seeds drawn from the injected generator
CHILD_SELECTIONS = ("uct", "puct")
RootPrior = Callable[[GameState], tuple[np.ndarray, np.ndarray]]


class Evaluator(ABC):
    """What the search asks about positions (OpenSpiel's `Evaluator`)."""

    @abstractmethod
    def evaluate(self, state: GameState) -> np.ndarray:
        """Expected returns (red, blue) from the ongoing `state`, each in [-1, 1]."""

    @abstractmethod
    def prior(self, state: GameState) -> list[tuple[int, float]]:
        """(action, probability) for every legal action of the player to move."""


class RandomRolloutEvaluator(Evaluator):
    """Mean result of `n_rollouts` uniformly random playouts; a uniform prior.

    `MCTSAgent` recognises this evaluator and runs the search in compiled code; the
    Python methods serve the generic path and tests.
    """

    def __init__(self, n_rollouts: int = 1, random_state: np.random.Generator | int | None = None) -> None:
        if isinstance(n_rollouts, bool) or not isinstance(n_rollouts, int) or n_rollouts < 1:
            raise ValueError(f"n_rollouts must be an int >= 1, got {n_rollouts!r}")
        self.n_rollouts = n_rollouts
        self._rng = np.random.default_rng(random_state)

    def evaluate(self, state: GameState) -> np.ndarray:
        red = rollout_values(state._a, self.n_rollouts, int(self._rng.integers(SEED_HIGH)))
        return np.array([red, -red])

    def prior(self, state: GameState) -> list[tuple[int, float]]:
        legal = legal_actions(state)
        return [(int(a), 1.0 / len(legal)) for a in legal]


@dataclass
class SearchNode:
    """One node of the Python search: the action into it and its statistics.

    `player` is the colour that chose `action` (-1 at the root); `total_reward` sums
    that player's returns over `explore_count` visits.
    """

    action: int
    player: int
    prior: float
    explore_count: int = 0
    total_reward: float = 0.0
    children: list["SearchNode"] = field(default_factory=list)

    def uct_value(self, parent_explore_count: int, uct_c: float) -> float:
        if self.explore_count == 0:
            return math.inf
        return self.total_reward / self.explore_count + uct_c * math.sqrt(
            math.log(parent_explore_count) / self.explore_count
        )

    def puct_value(self, parent_explore_count: int, uct_c: float) -> float:
        q = self.total_reward / self.explore_count if self.explore_count else 0.0
        return q + uct_c * self.prior * math.sqrt(parent_explore_count) / (self.explore_count + 1)

    def sort_key(self) -> tuple[int, float]:
        """The final choice: most visits, then the larger total reward."""
        return self.explore_count, self.total_reward


class MCTSAgent(Agent):
    """UCT search; plays the most visited root child (ties: larger total reward, then the
    first in the random child order).

    Args:
        uct_c: exploration constant of the tree policy.
        max_simulations: simulations per move (each adds and evaluates one node).
        evaluator: leaf evaluator; `None` means one random rollout per leaf, compiled.
        child_selection: `"uct"` or `"puct"` (uses the evaluator's prior); the compiled
            path is UCT.
        name: shown in tables and records; default `mcts:<max_simulations>`.
        root_prior: optional `state -> (legal action ids, probabilities)`, e.g. a trained
            policy; the root then picks children by PUCT with `prior_c` while the rest of
            the search stays compiled UCT (`_search.prior_root_search`). One call per move.
        prior_c: the root's PUCT exploration constant.
        uniform_mix: share of the root prior replaced by a uniform distribution.
    """

    def __init__(
        self,
        uct_c: float = DEFAULT_UCT_C,
        max_simulations: int = 1000,
        evaluator: Evaluator | None = None,
        child_selection: str = "uct",
        name: str | None = None,
        root_prior: RootPrior | None = None,
        prior_c: float = DEFAULT_PRIOR_C,
        uniform_mix: float = DEFAULT_UNIFORM_MIX,
    ) -> None:
        if isinstance(max_simulations, bool) or not isinstance(max_simulations, int) \
                or not 1 <= max_simulations <= MAX_SIMULATIONS:
            raise ValueError(f"max_simulations must be an int in 1..{MAX_SIMULATIONS}, got {max_simulations!r}")
        if not (isinstance(uct_c, (int, float)) and math.isfinite(uct_c) and uct_c >= 0):
            raise ValueError(f"uct_c must be a finite number >= 0, got {uct_c!r}")
        if child_selection not in CHILD_SELECTIONS:
            raise ValueError(f"child_selection must be one of {CHILD_SELECTIONS}, got {child_selection!r}")
        if not (isinstance(prior_c, (int, float)) and math.isfinite(prior_c) and prior_c >= 0):
            raise ValueError(f"prior_c must be a finite number >= 0, got {prior_c!r}")
        if not (isinstance(uniform_mix, (int, float)) and 0 <= uniform_mix <= 1):
            raise ValueError(f"uniform_mix must be a number in [0, 1], got {uniform_mix!r}")
        self.uct_c = float(uct_c)
        self.root_prior = root_prior
        self.prior_c = float(prior_c)
        self.uniform_mix = float(uniform_mix)
        self.max_simulations = max_simulations
        self.evaluator = evaluator if evaluator is not None else RandomRolloutEvaluator()
        self.child_selection = child_selection
        self.name = name or f"mcts:{max_simulations}"
        if root_prior is not None and not self.compiled:
            raise ValueError("root_prior needs the compiled search: the default evaluator and child_selection='uct'")

    @property
    def compiled(self) -> bool:
        """Whether searches run in compiled code (random rollouts with UCT)."""
        return type(self.evaluator) is RandomRolloutEvaluator and self.child_selection == "uct"

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        require_ongoing(state)
        legal = legal_actions(state)
        if len(legal) == 1:  # nothing to search for (often a forced pass)
            return int(legal[0])
        root = self.mcts_search(state, rng)
        return max(root.children, key=SearchNode.sort_key).action

    def mcts_search(self, state: GameState, rng: np.random.Generator) -> SearchNode:
        """Run the search; the root with its children's statistics (OpenSpiel's `mcts_search`)."""
        require_ongoing(state)
        if self.compiled:
            assert isinstance(self.evaluator, RandomRolloutEvaluator)
            seed = int(rng.integers(SEED_HIGH))
            if self.root_prior is None:
                actions, visits, rewards, _ = uct_search(
                    state._a, self.max_simulations, self.uct_c, self.evaluator.n_rollouts, seed
                )
            else:
                ids, probs = self._checked_prior(state, rng)
                actions, visits, rewards, _ = prior_root_search(
                    state._a, self.max_simulations, self.uct_c, self.evaluator.n_rollouts, seed, ids, probs, self.prior_c
                )
            mover = int(state._a[I_TO_MOVE])
            root = SearchNode(-1, -1, 1.0, explore_count=int(visits.sum()) + 1)
            root.children = [
                SearchNode(int(a), mover, 1.0 / len(actions), int(n), float(w)) for a, n, w in zip(actions, visits, rewards)
            ]
            return root
        return self._python_search(state, rng)

    def _checked_prior(self, state: GameState, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The root prior as (ids, probabilities) in a random order; ValueError unless it covers the legal set."""
        assert self.root_prior is not None
        ids, probs = self.root_prior(state)
        ids = np.asarray(ids, np.int64)
        probs = np.asarray(probs, np.float64)
        legal = legal_actions(state)
        if ids.shape != probs.shape or ids.shape[0] != len(legal) or not np.array_equal(np.sort(ids), np.sort(legal)):
            raise ValueError(f"root_prior must give each of the {len(legal)} legal actions once, with one probability each")
        if not (np.all(np.isfinite(probs)) and np.all(probs >= 0) and probs.sum() > 0):
            raise ValueError("root_prior probabilities must be finite, >= 0 and not all 0")
        order = rng.permutation(len(ids))  # ties in the PUCT score: no bias from the prior's order
        probs = (1 - self.uniform_mix) * probs / probs.sum() + self.uniform_mix / len(probs)
        return ids[order], probs[order]

    def _python_search(self, state: GameState, rng: np.random.Generator) -> SearchNode:
        """The same tree policy as `_search.uct_search`, calling the evaluator from Python."""
        root = SearchNode(-1, -1, 1.0, explore_count=1)  # expanded at once, like the compiled path
        select = SearchNode.puct_value if self.child_selection == "puct" else SearchNode.uct_value
        for _ in range(self.max_simulations):
            node, packed, path = root, state._a, [root]
            while packed[I_REASON] == 0 and node.explore_count > 0:
                if not node.children:
                    self._expand(node, _wrap(packed), rng)
                parent_count = node.explore_count
                node = max(node.children, key=lambda c: select(c, parent_count, self.uct_c))
                packed = _core.apply_unchecked(packed, node.action)
                path.append(node)
            leaf = _wrap(packed)
            returns = np.array(leaf.rewards()) if leaf.is_over else np.asarray(self.evaluator.evaluate(leaf), float)
            for n in path:
                n.explore_count += 1
                if n.player >= 0:
                    n.total_reward += float(returns[n.player])
        return root

    def _expand(self, node: SearchNode, state: GameState, rng: np.random.Generator) -> None:
        priors = self.evaluator.prior(state)
        legal = set(int(a) for a in legal_actions(state))
        bad = [a for a, _ in priors if int(a) not in legal]
        if bad or len(priors) != len(legal):
            raise ValueError(
                f"evaluator prior must list each legal action once; got {len(priors)} entries for {len(legal)} legal actions"
                + (f", illegal {bad[:3]}" if bad else "")
            )
        order = rng.permutation(len(priors))  # as OpenSpiel: no bias from generation order
        mover = int(state.to_move)
        node.children = [SearchNode(int(priors[i][0]), mover, float(priors[i][1])) for i in order]


__all__ = ["DEFAULT_PRIOR_C", "DEFAULT_UNIFORM_MIX", "DEFAULT_UCT_C", "Evaluator", "MCTSAgent", "RandomRolloutEvaluator", "SearchNode"]
