"""Opponent pool: frozen past snapshots of the learner that play a share of the self-play games.

Pure self-play can chase its own tail (learn to beat only its current self and forget how to
beat older strategies); keeping a few past snapshots in the mix (as in OpenAI Five and AlphaStar's
league, in miniature) makes the learner stay good against them too.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import torch

from ..model import PolicyValueNet


class OpponentPool:
    """Up to `capacity` frozen copies of the network's weights, oldest dropped first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.snapshots: deque[dict[str, torch.Tensor]] = deque(maxlen=capacity)
        self.steps: deque[int] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self.snapshots)

    def add(self, model: PolicyValueNet, global_step: int) -> None:
        self.snapshots.append({k: v.detach().cpu().clone() for k, v in model.state_dict().items()})
        self.steps.append(int(global_step))

    def sample_into(self, net: PolicyValueNet, rng: np.random.Generator) -> int:
        """Load a uniformly chosen snapshot into `net` (same architecture); returns its training step."""
        i = int(rng.integers(len(self.snapshots)))
        net.load_state_dict(self.snapshots[i])
        return self.steps[i]

    def state(self) -> dict:
        """Plain data for a checkpoint (weights_only-loadable)."""
        return {"capacity": self.capacity, "snapshots": list(self.snapshots), "steps": list(self.steps)}

    @classmethod
    def from_state(cls, state: dict, capacity: int) -> "OpponentPool":
        pool = cls(capacity)
        for sd, step in zip(state.get("snapshots", []), state.get("steps", [])):
            pool.snapshots.append(sd)
            pool.steps.append(int(step))
        return pool
