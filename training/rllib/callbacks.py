"""Self-play on RLlib: both colours map to the trained module `main`, in a share of the games one
colour is a frozen snapshot `main_vN` (`SnapshotMapping`), added on a schedule (`SnapshotSelfPlayCallback`).

Needs ray[rllib] (`pip install "colony-rl[rllib]"`); used by `colony-train-rllib` (selfplay.py).
"""

from __future__ import annotations

import zlib
from typing import Any

import ray
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE

from colony_env.env import AGENTS, ILLEGAL_ACTION

MAIN_MODULE = "main"
SNAPSHOT_PREFIX = "main_v"


class SnapshotMapping:
    """Agent -> module mapping: `main` for both colours, except in a `pool_share` of the episodes
    where one colour (alternating by episode) is played by one of the frozen snapshots.

    Decisions hash the episode id (crc32, stable across processes), so every call for the
    same episode agrees; a plain object rather than a closure so it pickles to env runners.
    """

    def __init__(self, snapshots: list[str], pool_share: float) -> None:
        self.snapshots = list(snapshots)
        self.pool_share = float(pool_share)

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        if not self.snapshots:
            return MAIN_MODULE
        h = zlib.crc32(str(episode.id_).encode())
        if (h % 10_000) / 10_000 >= self.pool_share:
            return MAIN_MODULE
        main_agent = AGENTS[(h >> 14) % 2]
        if agent_id == main_agent:
            return MAIN_MODULE
        return self.snapshots[(h >> 15) % len(self.snapshots)]


class SnapshotSelfPlayCallback(RLlibCallback):
    """RLlib's self-play callback pattern (rllib/examples/multi_agent/utils/self_play_callback.py in Ray's repository), on a schedule.

    Every `snapshot_every` iterations a frozen copy of `main` is added as `main_vN`; past
    `pool_size` the oldest is removed. Like the example it copies `main`'s weights into the new
    module on the learners, and unlike it also into the env runners' copies: PPO only syncs the
    modules it trained, so otherwise the env runners would play a randomly initialised snapshot
    (the RLlib test checks the weights on every env runner). It logs `pool_win_rate`, the learner's score (win 1, draw 0.5) in pool games.
    """

    def __init__(self, snapshot_every: int = 5, pool_size: int = 4, pool_share: float = 0.25) -> None:
        super().__init__()
        self.snapshot_every = snapshot_every
        self.pool_size = pool_size
        self.pool_share = pool_share
        self.snapshots: list[str] = []
        self.count = 0

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        if metrics_logger is None:
            return
        agents = episode.agent_episodes
        illegal = any(
            len(ep) and isinstance(ep.get_infos(-1), dict) and ep.get_infos(-1).get("end_reason") == ILLEGAL_ACTION
            for ep in agents.values()
        )
        # Must stay 0: the module only samples masked actions (checked by the tests).
        metrics_logger.log_value("illegal_games", int(illegal), reduce="sum")
        modules = {aid: episode.module_for(aid) for aid in agents}
        if len(modules) != 2 or set(modules.values()) == {MAIN_MODULE}:
            return
        main_agent = next(aid for aid, m in modules.items() if m == MAIN_MODULE)
        final = float(agents[main_agent].get_return())  # rewards come only at the end (R7.4)
        metrics_logger.log_value("pool_win_rate", (final + 1.0) / 2.0, reduce="mean", window=100)

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        result["pool_size"] = len(self.snapshots)
        if algorithm.iteration % self.snapshot_every != 0:
            return
        self.count += 1
        new_id = f"{SNAPSHOT_PREFIX}{self.count}"
        self.snapshots.append(new_id)
        removed = self.snapshots[: max(0, len(self.snapshots) - self.pool_size)]
        self.snapshots = self.snapshots[len(removed):]
        mapping = SnapshotMapping(self.snapshots, self.pool_share)
        main_state = learner_module_state(algorithm, MAIN_MODULE)
        spec = algorithm.config.rl_module_spec.rl_module_specs[MAIN_MODULE]
        algorithm.add_module(module_id=new_id, module_spec=spec, new_agent_to_module_mapping_fn=mapping)
        algorithm.learner_group.set_state(
            {COMPONENT_LEARNER: {COMPONENT_RL_MODULE: {new_id: main_state}}}
        )
        push_to_env_runners(algorithm, new_id, main_state)
        for old in removed:
            algorithm.remove_module(old, new_agent_to_module_mapping_fn=mapping)
        result["pool_size"] = len(self.snapshots)

    def resume_pool(self, algorithm: Any, snapshot_ids: list[str]) -> None:
        """Re-create the snapshot modules of a checkpoint (`--resume`), before its weights are loaded."""
        self.snapshots = list(snapshot_ids)
        self.count = max((int(m[len(SNAPSHOT_PREFIX):]) for m in snapshot_ids), default=0)
        mapping = SnapshotMapping(self.snapshots, self.pool_share)
        spec = algorithm.config.rl_module_spec.rl_module_specs[MAIN_MODULE]
        for module_id in snapshot_ids:
            algorithm.add_module(module_id=module_id, module_spec=spec, new_agent_to_module_mapping_fn=mapping)


def push_to_env_runners(algorithm: Any, module_id: str, state: dict[str, Any]) -> None:
    """Set one module's weights on every env runner.

    Not `env_runner_group.sync_weights`: it skips env runners whose weights sequence number
    already matches the learner's, which it does right after an update, so a new snapshot
    module would keep its random initial weights there.
    """
    state_ref = ray.put(state)

    def _set(runner: Any, _id: str = module_id, _ref: Any = state_ref) -> None:
        module = getattr(runner, "module", None)
        if module is not None and _id in module:
            module[_id].set_state(ray.get(_ref))

    algorithm.env_runner_group.foreach_env_runner(_set, local_env_runner=True)


def learner_module_state(algorithm: Any, module_id: str) -> dict[str, Any]:
    """The learners' current weights of one module (local or remote learners alike)."""
    state = algorithm.learner_group.get_state(components=f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}/{module_id}")
    return state[COMPONENT_LEARNER][COMPONENT_RL_MODULE][module_id]
