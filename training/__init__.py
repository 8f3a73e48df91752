"""Colony training and evaluation: self-play PPO, checkpoints, baselines' evaluation, game records.

Depends on `colony_env`, never the other way round (ARCHITECTURE.md).
"""
