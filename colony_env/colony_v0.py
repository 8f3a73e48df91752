"""`colony_v0`, the versioned module in PettingZoo's layout (as `pettingzoo.classic.chess_v6`).

    from colony_env import colony_v0
    env = colony_v0.env()                 # or colony_v0.raw_env(); options: max_plies, render_mode, canonical

The same env is `pettingzoo.make("aec", "colony_env/colony-v0")` once `colony_env` is
imported. The documentation is the `colony_env.env` module docstring; a change of the
env's behaviour gets a new module (`colony_v1`) and id, and this one keeps its meaning.
"""

from .env import env, raw_env

__all__ = ["env", "raw_env"]
