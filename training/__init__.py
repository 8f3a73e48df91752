"""`colony_training` (the `training/` folder): Colony training and evaluation: self-play PPO, checkpoints, baselines' evaluation, game records.

Depends on `colony_env`, never the other way round (docs/architecture.md).
"""

from pathlib import Path as _Path

import colony_env as _colony_env
from colony_env._jit_cache import drop_stale_caches as _drop_stale_caches
from colony_env._jit_cache import heal_unreadable_caches as _heal_unreadable_caches

# training's kernels (teacher.py, shaping.py) call colony_env's: their caches go stale with it too
_drop_stale_caches(_Path(__file__).parent, [_Path(_colony_env.__file__).parent])
_heal_unreadable_caches(_Path(__file__).parent)  # a truncated or garbled cache file is recompiled
