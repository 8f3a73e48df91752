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
from dataclasses import dataclass, field

import numpy as np

from ..constants import I_REASON, I_TO_MOVE
from .. import _core
from ..engine import GameState, _wrap, legal_actions
from ._search import rollout_values, uct_search
from .base import Agent, require_ongoing

# OpenSpiel's examples use 2 for returns in [-1, 1]. With about 70 legal actions and a few
# hundred simulations that spreads the visits almost evenly over the root's children;
# measured (colony-eval, 10 paired setups): mcts:200 vs random scored 0.85 with c = 2,
# 1.00 with c = 1 and c = 0.5, 0.975 with c = 0.25, and c = 0.5 / 1 / 2 scored evenly
# against each other. So 1.
DEFAULT_UCT_C = 1.0
SEED_HIGH = 2**62  # range of the per-search seeds drawn from the injected generator
CHILD_SELECTIONS = ("uct", "puct")


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
    """

    def __init__(
        self,
        uct_c: float = DEFAULT_UCT_C,
        max_simulations: int = 1000,
        evaluator: Evaluator | None = None,
        child_selection: str = "uct",
        name: str | None = None,
    ) -> None:
        if isinstance(max_simulations, bool) or not isinstance(max_simulations, int) or max_simulations < 1:
            raise ValueError(f"max_simulations must be an int >= 1, got {max_simulations!r}")
        if not (isinstance(uct_c, (int, float)) and math.isfinite(uct_c) and uct_c >= 0):
            raise ValueError(f"uct_c must be a finite number >= 0, got {uct_c!r}")
        if child_selection not in CHILD_SELECTIONS:
            raise ValueError(f"child_selection must be one of {CHILD_SELECTIONS}, got {child_selection!r}")
        self.uct_c = float(uct_c)
        self.max_simulations = max_simulations
        self.evaluator = evaluator if evaluator is not None else RandomRolloutEvaluator()
        self.child_selection = child_selection
        self.name = name or f"mcts:{max_simulations}"

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
            actions, visits, rewards, _ = uct_search(
                state._a, self.max_simulations, self.uct_c, self.evaluator.n_rollouts, int(rng.integers(SEED_HIGH))
            )
            mover = int(state._a[I_TO_MOVE])
            root = SearchNode(-1, -1, 1.0, explore_count=int(visits.sum()) + 1)
            root.children = [
                SearchNode(int(a), mover, 1.0 / len(actions), int(n), float(w)) for a, n, w in zip(actions, visits, rewards)
            ]
            return root
        return self._python_search(state, rng)

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


__all__ = ["DEFAULT_UCT_C", "Evaluator", "MCTSAgent", "RandomRolloutEvaluator", "SearchNode"]
