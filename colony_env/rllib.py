"""RLlib adapter: the one wrapper between the PettingZoo AEC env and RLlib's conventions.

RLlib's action-masking RLModules (`examples/rl_modules/classes/action_masking_rlm.py`, and
`training.rllib.selfplay.ColonyRLModule`) expect each agent's observation as
`{"observations": ..., "action_mask": ...}`; PettingZoo's classic layout, which `colony_v0`
follows, names the first key `observation`. `RLlibObservationWrapper` renames it, and it
also presents every position in the **canonical view** of the agent that observes it
(`symmetry.py`: red sees the board, blue its transpose), with the action mask and the
actions in that frame too, so that one shared network can play both colours and its weights
are exactly a `training.model.PolicyValueNet` in the project's own checkpoint format.

| RLlib sees                  | from the PettingZoo env                                          |
|-----------------------------|------------------------------------------------------------------|
| `observations` float32[C,10,10] | `observation` (float32[10,10,C], board frame): channels first, transposed for blue (`symmetry.transform_planes`) |
| `action_mask` int8[16001]   | `action_mask`, permuted for blue (`symmetry.transform_mask`)     |
| action id (canonical frame) | mapped back with `symmetry.canonical_action_to_board` before `step` |

Only frames and key names change; legality, rewards and termination are the env's (and so
the engine's). This module does not import ray at import time: `make_rllib_env` imports
RLlib's `PettingZooEnv` when called.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo.utils.wrappers import BaseWrapper

from . import symmetry
from .constants import BOARD_SIZE, Colour
from .env import AGENT_COLOUR

RLLIB_OBS_KEY = "observations"
PETTINGZOO_OBS_KEY = "observation"
MASK_KEY = "action_mask"


class RLlibObservationWrapper(BaseWrapper):
    """AEC wrapper: `{"observation", "action_mask"}` -> `{"observations", "action_mask"}`.

    The planes come channels first (`float32[C, 10, 10]`, the layout of
    `colony_env.observation` and of `training.model.PolicyValueNet`), in the observing
    agent's canonical frame (`canonical=True`, the default) or in the board frame.
    """

    def __init__(self, env: Any, canonical: bool = True) -> None:
        super().__init__(env)
        self.canonical = canonical

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        inner = self.env.observation_space(agent)
        planes = inner[PETTINGZOO_OBS_KEY]
        h, w, c = planes.shape
        if (h, w) != (BOARD_SIZE, BOARD_SIZE):
            raise ValueError(f"expected channels-last planes (10, 10, C) from the env, got {planes.shape}")
        box = gym.spaces.Box(low=0.0, high=1.0, shape=(c, h, w), dtype=planes.dtype)
        return gym.spaces.Dict({RLLIB_OBS_KEY: box, MASK_KEY: inner[MASK_KEY]})

    def _swaps(self, agent: str) -> bool:
        """Whether `agent`'s canonical frame differs from the board frame (blue: the transpose)."""
        return self.canonical and AGENT_COLOUR[agent] == Colour.BLUE

    def observe(self, agent: str) -> dict[str, np.ndarray] | None:
        obs = self.env.observe(agent)
        if obs is None:
            return None
        planes = np.transpose(obs[PETTINGZOO_OBS_KEY], (2, 0, 1))
        mask = obs[MASK_KEY]
        if self._swaps(agent):
            planes = symmetry.transform_planes(planes, symmetry.TRANSPOSE)
            mask = symmetry.transform_mask(mask, symmetry.TRANSPOSE)
        return {RLLIB_OBS_KEY: np.ascontiguousarray(planes), MASK_KEY: mask}

    def step(self, action: Any) -> None:
        if action is not None:
            agent = self.env.agent_selection
            if self._swaps(agent):  # the transpose is its own inverse (symmetry.py)
                action = int(symmetry.canonical_action_to_board(int(action), Colour.BLUE))
        self.env.step(action)


def make_rllib_env(max_plies: int | None = None, canonical: bool = True, **env_kwargs: Any) -> Any:
    """`colony_v0` as an RLlib `MultiAgentEnv` (RLlib's `PettingZooEnv` over the wrapper above).

    Imports ray here, not at module import, so `colony_env` never needs ray.
    """
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    from .env import env as colony_env

    if max_plies is not None:
        env_kwargs["max_plies"] = max_plies
    return PettingZooEnv(RLlibObservationWrapper(colony_env(**env_kwargs), canonical=canonical))


__all__ = ["MASK_KEY", "RLLIB_OBS_KEY", "RLlibObservationWrapper", "make_rllib_env"]
