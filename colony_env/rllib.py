"""RLlib adapter: the one wrapper between the PettingZoo AEC env and RLlib's conventions.

RLlib's action-masking RLModules (`rllib/examples/rl_modules/classes/action_masking_rlm.py` in Ray's repository, and
`colony_training.rllib.selfplay.ColonyRLModule`) expect each agent's observation as
`{"observations": ..., "action_mask": ...}`; PettingZoo's classic layout, which `colony_v0`
follows, names the first key `observation`. `RLlibObservationWrapper` renames it, and it
also presents every position in the **canonical view** of the agent that observes it
(`symmetry.py`: red sees the board, blue its transpose), with the action mask and the
actions in that frame too, so that one shared network can play both colours and its weights
are exactly a `colony_training.model.PolicyValueNet` in the project's own checkpoint format.

| RLlib sees                  | from the PettingZoo env                                          |
|-----------------------------|------------------------------------------------------------------|
| `observations` float32[C,10,10] | `observation` (float32[10,10,C], board frame): channels first, transposed for blue (`symmetry.transform_planes`) |
| `action_mask` int8[16001]   | `action_mask`, permuted for blue (`symmetry.transform_mask`)     |
| or, `packed_mask=True`, uint8[2001] | the same mask, 8 actions per byte (`np.packbits`: action 8k+j is bit 7-j of byte k) |
| action id (canonical frame) | mapped back with `symmetry.canonical_action_to_board` before `step` |

Only frames and key names change; legality, rewards and termination are the env's (and so
the engine's). The packed mask is what `colony-train-rllib` uses: each step's observation
travels from an env runner to the learner, and 2 KB instead of 16 KB per step is most of
what it sends (`ColonyRLModule` unpacks it in one tensor operation).

Importing this module registers the env with Ray Tune's registry as `colony_v0_rllib`
(when ray is installed), so an RLlib checkpoint of `colony-train-rllib` loads in a fresh
process with nothing else to set up:

    import colony_env.rllib  # registers "colony_v0_rllib"
    from ray.rllib.algorithms.algorithm import Algorithm
    algo = Algorithm.from_checkpoint("runs/rllib-<time>/rllib/iter_000010")

`colony_env` itself never imports ray; RLlib's `PettingZooEnv` is imported when an env is made.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo.utils.wrappers import BaseWrapper

from . import symmetry
from .constants import BOARD_SIZE, N_ACTIONS, Colour
from .env import AGENT_COLOUR

RLLIB_OBS_KEY = "observations"
PETTINGZOO_OBS_KEY = "observation"
MASK_KEY = "action_mask"
ENV_NAME = "colony_v0_rllib"  # the name `colony-train-rllib` configures and its checkpoints refer to
PACKED_MASK_BYTES = (N_ACTIONS + 7) // 8  # 2001


class RLlibObservationWrapper(BaseWrapper):
    """AEC wrapper: `{"observation", "action_mask"}` -> `{"observations", "action_mask"}`.

    The planes come channels first (`float32[C, 10, 10]`, the layout of
    `colony_env.observation` and of `colony_training.model.PolicyValueNet`), in the observing
    agent's canonical frame (`canonical=True`, the default) or in the board frame. With
    `packed_mask=True` the mask is `uint8[2001]`, 8 actions per byte (`np.packbits` order).
    """

    def __init__(self, env: Any, canonical: bool = True, packed_mask: bool = False) -> None:
        super().__init__(env)
        self.canonical = canonical
        self.packed_mask = packed_mask

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        inner = self.env.observation_space(agent)
        planes = inner[PETTINGZOO_OBS_KEY]
        h, w, c = planes.shape
        if (h, w) != (BOARD_SIZE, BOARD_SIZE):
            raise ValueError(f"expected channels-last planes (10, 10, C) from the env, got {planes.shape}")
        box = gym.spaces.Box(low=0.0, high=1.0, shape=(c, h, w), dtype=planes.dtype)
        mask = inner[MASK_KEY]
        if self.packed_mask:
            mask = gym.spaces.Box(low=0, high=255, shape=(PACKED_MASK_BYTES,), dtype=np.uint8)
        return gym.spaces.Dict({RLLIB_OBS_KEY: box, MASK_KEY: mask})

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
        if self.packed_mask:
            mask = np.packbits(mask.astype(bool))
        return {RLLIB_OBS_KEY: np.ascontiguousarray(planes), MASK_KEY: mask}

    def step(self, action: Any) -> None:
        if action is not None:
            agent = self.env.agent_selection
            if self._swaps(agent):  # the transpose is its own inverse (symmetry.py)
                action = int(symmetry.canonical_action_to_board(int(action), Colour.BLUE))
        self.env.step(action)


def make_rllib_env(max_plies: int | None = None, canonical: bool = True, packed_mask: bool = False,
                   **env_kwargs: Any) -> Any:
    """`colony_v0` as an RLlib `MultiAgentEnv` (RLlib's `PettingZooEnv` over the wrapper above)."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    from .env import env as colony_env

    if max_plies is not None:
        env_kwargs["max_plies"] = max_plies
    return PettingZooEnv(RLlibObservationWrapper(colony_env(**env_kwargs), canonical=canonical,
                                                 packed_mask=packed_mask))


def env_creator(env_config: dict[str, Any]) -> Any:
    """The creator registered as `colony_v0_rllib`: `env_config` holds `max_plies`, `packed_mask`, `canonical`."""
    allowed = {"max_plies", "packed_mask", "canonical"}
    unknown = sorted(set(env_config) - allowed)
    if unknown:
        raise ValueError(f"unknown env_config key {unknown[0]!r} for {ENV_NAME}; allowed: {', '.join(sorted(allowed))}")
    return make_rllib_env(max_plies=int(env_config.get("max_plies", 400)),
                          canonical=bool(env_config.get("canonical", True)),
                          packed_mask=bool(env_config.get("packed_mask", False)))


def register_rllib_env() -> bool:
    """Register `env_creator` as `colony_v0_rllib` with Ray Tune; False if ray is not installed."""
    try:
        from ray.tune.registry import register_env
    except ImportError:
        return False
    register_env(ENV_NAME, env_creator)
    return True


register_rllib_env()

__all__ = ["ENV_NAME", "MASK_KEY", "PACKED_MASK_BYTES", "RLLIB_OBS_KEY", "RLlibObservationWrapper", "env_creator",
           "make_rllib_env", "register_rllib_env"]
