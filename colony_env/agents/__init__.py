"""Engine-level agents: `act(state, rng) -> action id` (board frame), never illegal.

* `RandomAgent`: uniform over the legal actions;
* `GreedyAgent`: one ply with a colony heuristic (documented in `greedy.py`);
* `MCTSAgent`: UCT with random rollouts in compiled code, OpenSpiel `MCTSBot` shape,
  with an `Evaluator` interface so a network can guide the search later;
* `PettingZooAdapter`: any of them as a policy in the PettingZoo AEC env.

Speed: `python -m colony_env.agents.bench` prints simulations per second per core.
Agent spec strings (`random`, `greedy`, `mcts:200`, `checkpoint:PATH`) are parsed in
`colony_training.eval.agent_specs`, which may also load trained policies (torch lives there).
"""

from .adapters import PettingZooAdapter
from .base import Agent, require_ongoing
from .greedy import GreedyAgent
from .mcts import DEFAULT_UCT_C, Evaluator, MCTSAgent, RandomRolloutEvaluator, SearchNode
from .random_agent import RandomAgent

__all__ = [
    "DEFAULT_UCT_C",
    "Agent",
    "Evaluator",
    "GreedyAgent",
    "MCTSAgent",
    "PettingZooAdapter",
    "RandomAgent",
    "RandomRolloutEvaluator",
    "SearchNode",
    "require_ongoing",
]
