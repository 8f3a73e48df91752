"""Registry entries, made when `colony_env` is imported: no other import is needed.

* PettingZoo: `pettingzoo.make("aec", "colony_env/colony-v0")` (the wrapped AEC env of
  `colony_env.colony_v0`; keyword arguments go to it: `max_plies`, `render_mode`,
  `canonical`), with PettingZoo 1.27 or later: older releases have no registry, and there
  `colony_env.colony_v0.env()` is the way in.
* Gymnasium: `gymnasium.make("colony_env/ColonySingleAgent-v0")` (the single-agent
  env) and `gymnasium.make_vec(..., vectorization_mode="vector_entry_point")` (its
  batched `gymnasium.vector.VectorEnv`, `colony_env.gym_vector`).

Neither registry reads plugin entry points (PettingZoo 1.27 has none; Gymnasium 1.x
dropped them), so a program must import `colony_env` first, or name the module in the
id as Gymnasium allows: `gymnasium.make("colony_env:colony_env/ColonySingleAgent-v0")`.

The Gymnasium entry is registered without `PassiveEnvChecker` and `OrderEnforcing`:
Gymnasium 1.x wrappers no longer forward unknown attributes, so they would hide
`action_masks()` (what sb3-contrib and users call). The env checks its call order
itself (`step` before `reset` raises) and the tests run Gymnasium's `check_env` on it.
Under other wrappers (e.g. `max_episode_steps=` adds `TimeLimit`) reach it with
`env.get_wrapper_attr("action_masks")()`, as sb3-contrib does.
"""

from __future__ import annotations

import gymnasium
import pettingzoo

PETTINGZOO_ID = "colony_env/colony-v0"
GYMNASIUM_ID = "colony_env/ColonySingleAgent-v0"


def register_envs() -> None:
    """Add the ids above to both registries (idempotent: an id already there is kept)."""
    # PettingZoo's registry arrived in 1.27; the env itself needs only the AEC API (>= 1.24).
    registry = getattr(pettingzoo, "aec_registry", None)
    if registry is not None and PETTINGZOO_ID not in registry:
        pettingzoo.register("aec", PETTINGZOO_ID, entry_point="colony_env.colony_v0:env")
    if GYMNASIUM_ID not in gymnasium.registry:
        gymnasium.register(
            id=GYMNASIUM_ID,
            entry_point="colony_env.wrappers:ColonySingleAgentEnv",
            vector_entry_point="colony_env.gym_vector:ColonyGymVectorEnv",
            order_enforce=False,
            disable_env_checker=True,
        )


__all__ = ["GYMNASIUM_ID", "PETTINGZOO_ID", "register_envs"]
