"""Let an engine-level agent play in the PettingZoo AEC env (`colony_env.env()`).

`env.unwrapped.game_state` is the engine's `GameState`, so the adapter only reads the
position, asks the agent for a board-frame action (R8) and returns it in the agent's
frame (`env.unwrapped.env_action`: transposed for `player_1` when the env was made with
`canonical=True`); it checks nothing itself (the env and the engine do).

    env = colony_env.env()
    env.reset(seed=0)
    players = {"player_0": PettingZooAdapter(GreedyAgent(), seed=1),
               "player_1": PettingZooAdapter(MCTSAgent(max_simulations=200), seed=2)}
    for name in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        env.step(players[name](env, name))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Agent

# Map of the env (colony_env.env.AGENTS): player_0 plays red (0), player_1 blue (1).
AGENT_COLOUR_INDEX = {"player_0": 0, "player_1": 1}


class PettingZooAdapter:
    """Callable `(env, agent_name) -> action or None`, the usual PettingZoo policy shape.

    Returns None for an agent whose game is over (AEC: dead agents step None).
    """

    def __init__(self, agent: Agent, seed: int | np.random.Generator | None = None) -> None:
        self.agent = agent
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def __call__(self, env: Any, agent_name: str | None = None) -> int | None:
        base = env.unwrapped
        state = base.game_state
        if state.is_over:
            return None
        name = agent_name if agent_name is not None else env.agent_selection
        if AGENT_COLOUR_INDEX.get(name) != int(state.to_move):
            raise ValueError(f"{name} is not to move: the env's position has {state.to_move} to move")
        return base.env_action(name, self.agent.act(state, self.rng))
