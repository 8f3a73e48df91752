"""Self-play PPO for Colony with RLlib (Ray): `colony-train-rllib --config configs/rllib_ppo.yaml`.

The distributed path: the same game, network and checkpoint format as `colony-train`, but
sampling and learning run on RLlib's current API stack (EnvRunners, Learners, RLModules,
connectors), so the run scales from this machine to a Ray cluster by changing
`num_env_runners` / `num_learners` and passing `--address`.

How the pieces map onto RLlib:

| piece                  | here                                                                     |
|------------------------|--------------------------------------------------------------------------|
| env                    | the PettingZoo AEC env `colony_v0` through `colony_env.rllib` (one adapter: PettingZoo's `observation` key becomes RLlib's `observations`, canonical frame of the mover) and RLlib's `PettingZooEnv` |
| agents -> modules      | both colours (`player_0`, `player_1`) map to the one trained module `main` (parameter sharing); in a `pool_share` of the games one colour is a frozen snapshot `main_vN` |
| RLModule               | `ColonyRLModule`: the project's `PolicyValueNet` (training/model.py) with action masking as in RLlib's `ActionMaskingTorchRLModule` example, but with a finite masked logit (no NaN, sb3-contrib #81/#247) |
| self-play              | `SnapshotSelfPlayCallback`, RLlib's self-play callback pattern: every `snapshot_every` iterations a frozen copy of `main` joins the pool (`Algorithm.add_module`), the oldest leaves past `pool_size` |
| checkpoints            | RLlib checkpoints (`<run>/rllib/iter_N`: the whole algorithm, learners and snapshots) and, exported from them, the project's own format (`<run>/checkpoints/latest.pt`) that `colony-eval` / `colony-play` load as `checkpoint:PATH` |

Because the module *is* a `PolicyValueNet` in the canonical view, exporting is a rename of
the weights (`export_state_dict`), and a checkpoint from either trainer plays the same way.
"""

from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import functools
import inspect
import math
import platform
import re
import shutil
import sys
import textwrap
import time
import typing
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import yaml

from colony_env.constants import N_ACTIONS
from colony_env.env import AGENTS, ILLEGAL_ACTION
from colony_env.rllib import ENV_NAME, MASK_KEY, PACKED_MASK_BYTES, RLLIB_OBS_KEY

from .. import config as config_lib
from ..checkpoint import CheckpointError, save_checkpoint
from ..cli import console_script
from ..config import ConfigError
from ..model import PolicyValueNet, masked_log_probs
from ..runlog import RunDir, new_run_dir

try:  # ray is an optional extra: `pip install -e ".[rllib]"`
    import gymnasium as gym
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.core.rl_module.torch import TorchRLModule

    from colony_env.rllib import register_rllib_env

    from .cluster import ClusterError, env_runner_health, ray_session
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"the RLlib path needs ray[rllib]: pip install -e \".[rllib]\" ({_e})"
    ) from None

MAIN_MODULE = "main"
SNAPSHOT_PREFIX = "main_v"
NET_PREFIX = "net."  # ColonyRLModule keeps the PolicyValueNet as `self.net`
RLLIB_DIR = "rllib"  # RLlib checkpoints inside a run directory
MODULE_DIR = Path("learner_group") / "learner" / "rl_module"  # the modules' weights inside an RLlib checkpoint
LATEST = "latest.pt"
METRIC_FIELDS = (
    "iteration", "env_steps", "wall_time", "steps_per_s", "episodes", "episode_len_mean", "policy_loss",
    "vf_loss", "entropy", "pool_size", "pool_win_rate", "illegal_games", "env_runners", "nodes",
)  # fmt: skip
GUMBEL_EPS = 1e-20  # keeps -log(-log(u)) finite for u drawn as 0
# Keys `--resume` may change: where and how wide the run goes on, and how long; the rest
# (network, PPO, self-play, seed) is what the checkpoint was trained with.
RESUME_KEYS = frozenset({
    "address", "num_cpus", "torch_threads", "num_env_runners", "num_envs_per_env_runner", "num_cpus_per_env_runner",
    "num_learners", "num_gpus_per_learner", "rollout_fragment_length", "total_steps", "checkpoint_every",
    "keep_checkpoints", "final_eval_games", "eval_opponents",
})  # fmt: skip


# --- config ------------------------------------------------------------------------------------
@dataclass
class RllibConfig:
    """Everything that defines an RLlib run. Every field can be set from YAML or the CLI."""

    # --- run bookkeeping ---
    run_name: str = "rllib"
    """Prefix of the run directory `<out_dir>/<run_name>-<timestamp>`."""
    out_dir: str = "runs"
    """Where run directories are created."""
    seed: int = 0
    """Seeds RLlib (env runners, module init) and the final evaluation."""
    torch_threads: int = 1
    """torch intra-op threads per process (driver, learner, each env runner)."""

    # --- Ray ---
    address: str = ""
    """'' starts a private Ray instance on this machine (loopback only); 'auto' or 'HOST:6379'
    joins a running cluster (`ray start --head` on one node, `ray start --address` on the others)."""
    num_cpus: int = 0
    """CPUs a private local instance may use (0 = all of this machine's); ignored with `address`."""

    # --- scale ---
    num_env_runners: int = 2
    """Sampling actors; spread across a cluster's nodes by Ray. 0 samples in the driver."""
    num_envs_per_env_runner: int = 1
    """Games each env runner steps together (batched inference per runner)."""
    num_cpus_per_env_runner: int = 1
    """CPUs Ray reserves for each env runner (one per core is the usual layout)."""
    num_learners: int = 0
    """0 learns in the driver; N >= 1 starts N learner actors (data-parallel, e.g. one per GPU)."""
    num_gpus_per_learner: float = 0.0
    """GPUs per learner actor (or for the driver's learner when num_learners is 0)."""
    rollout_fragment_length: int = 0
    """Steps per env runner per sample call; 0 lets RLlib derive it from the batch size."""

    # --- budget ---
    total_steps: int = 200_000
    """Environment steps (single moves, both colours) to train for."""
    max_plies: int = 400
    """Ply limit per game (R6.2.4); reported as a truncation."""

    # --- network (training/model.py PolicyValueNet) ---
    channels: int = 32
    """Width of the PolicyValueNet's residual trunk."""
    blocks: int = 2
    """Residual blocks in the trunk."""

    # --- PPO (RLlib's names in brackets) ---
    train_batch_size: int = 2048
    """Env steps per training iteration, per learner [train_batch_size_per_learner]."""
    minibatch_size: int = 256
    """Env steps per gradient step."""
    update_epochs: int = 3
    """[num_epochs]"""
    learning_rate: float = 3e-4
    """[lr]"""
    gamma: float = 0.995
    """Discount per env step."""
    gae_lambda: float = 0.95
    """[lambda_]"""
    clip_coef: float = 0.2
    """[clip_param]"""
    vf_clip: float = 10.0
    """[vf_clip_param] clip of the squared value error; values live in [-1, 1]."""
    ent_coef: float = 0.01
    """[entropy_coeff]"""
    vf_coef: float = 0.5
    """[vf_loss_coeff]"""
    max_grad_norm: float = 0.5
    """[grad_clip]"""

    # --- self-play ---
    pool_share: float = 0.25
    """Share of the games in which one colour is a frozen snapshot (once the pool has one)."""
    pool_size: int = 4
    """Snapshots kept (oldest removed first); each is a module on every env runner."""
    snapshot_every: int = 5
    """Iterations between snapshots of `main` added to the pool."""

    # --- checkpoints, evaluation ---
    checkpoint_every: int = 10
    """Iterations between RLlib checkpoints (each also exported to the project format)."""
    keep_checkpoints: int = 3
    """RLlib checkpoint directories kept (older ones deleted); 0 keeps all."""
    final_eval_games: int = 40
    """Games per opponent at the end, with the exported network (0 disables)."""
    eval_opponents: list[str] = dataclasses.field(default_factory=lambda: ["random"])
    """Agent specs for the final evaluation: random, greedy, mcts:N."""

    # --- derived (set by `finalize`) ---
    num_iterations: int = dataclasses.field(default=0, init=False)

    def finalize(self) -> "RllibConfig":
        """Check ranges, compute derived fields; returns self."""
        _check_ranges(self)
        per_iteration = self.train_batch_size * max(1, self.num_learners)
        self.num_iterations = max(1, math.ceil(self.total_steps / per_iteration))
        return self

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}


_SPEC_RE = re.compile(r"^(random|greedy|mcts:[1-9][0-9]*)$")


def _check_ranges(c: RllibConfig) -> None:
    def need(ok: bool, key: str, allowed: str) -> None:
        if not ok:
            raise ConfigError(f"config key '{key}' = {getattr(c, key)!r} is invalid; allowed: {allowed}")

    for key in ("torch_threads", "num_envs_per_env_runner", "num_cpus_per_env_runner", "total_steps", "max_plies",
                "channels", "blocks", "train_batch_size", "minibatch_size", "update_epochs", "pool_size",
                "snapshot_every", "checkpoint_every"):
        need(getattr(c, key) >= 1, key, "an integer >= 1")
    for key in ("num_cpus", "num_env_runners", "num_learners", "rollout_fragment_length", "keep_checkpoints",
                "final_eval_games"):
        need(getattr(c, key) >= 0, key, "an integer >= 0")
    need(c.minibatch_size <= c.train_batch_size, "minibatch_size", "at most train_batch_size")
    need(c.learning_rate > 0, "learning_rate", "a number > 0")
    for key in ("gamma", "gae_lambda", "pool_share"):
        need(0.0 <= getattr(c, key) <= 1.0, key, "a number in [0, 1]")
    for key in ("num_gpus_per_learner", "clip_coef", "vf_clip", "ent_coef", "vf_coef", "max_grad_norm"):
        need(getattr(c, key) >= 0, key, "a number >= 0")
    need(bool(re.fullmatch(r"[A-Za-z0-9_.-]+", c.run_name)), "run_name", "letters, digits, '_', '.', '-'")
    need(bool(re.fullmatch(r"|auto|(ray://)?[A-Za-z0-9_.-]+:[0-9]+", c.address)), "address",
         "'' (local instance), 'auto', 'HOST:PORT' or 'ray://HOST:PORT'")
    for spec in c.eval_opponents:
        if not _SPEC_RE.match(spec):
            raise ConfigError(f"config key 'eval_opponents' has {spec!r}; allowed agent specs: random, greedy, mcts:N")


def config_from_dict(values: dict[str, Any]) -> RllibConfig:
    """A validated config from a mapping of keys to values (unknown keys are an error)."""
    return config_lib.config_from_dict(values, cls=RllibConfig)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RllibConfig:
    """Read a YAML config, apply CLI overrides, validate."""
    return config_lib.load_config(path, overrides, cls=RllibConfig)


# --- the RLModule ------------------------------------------------------------------------------
_BIT_SHIFTS = torch.arange(7, -1, -1, dtype=torch.uint8)  # np.packbits order: the first action is the top bit


def unpack_mask(packed: torch.Tensor) -> torch.Tensor:
    """uint8[..., 2001] packed action masks (`colony_env.rllib`, `packed_mask=True`) -> bool[..., 16001]."""
    bits = (packed.to(torch.uint8).unsqueeze(-1) >> _BIT_SHIFTS.to(packed.device)) & 1
    return bits.reshape(*packed.shape[:-1], -1)[..., :N_ACTIONS].bool()


class ColonyRLModule(TorchRLModule, ValueFunctionAPI):
    """The project's `PolicyValueNet` as an RLlib RLModule, with action masking.

    Observations are `{"observations": float32[C, 10, 10], "action_mask": int8[16001]}` in the
    mover's canonical view (`colony_env.rllib`). The logits are the network's full R8 layout;
    illegal actions get the finite `MASKED_LOGIT` through `model.masked_log_probs`, the same
    NaN-safe masking the project's trainer uses. RLlib's example adds `log(mask)` clamped to
    FLOAT_MIN instead; a finite replacement keeps entropy and KL finite even for a row with
    no legal action (the final observation of a game, R8.4), where adding to the logits would
    leave a uniform but arbitrary distribution.

    `_forward_train` passes the value head's output as the "embeddings", so PPO's loss
    (`compute_values(batch, embeddings)`) reuses one trunk pass instead of running it twice.
    """

    def setup(self) -> None:
        space = self.observation_space
        if not isinstance(space, gym.spaces.Dict) or set(space.spaces) != {RLLIB_OBS_KEY, MASK_KEY}:
            raise ValueError(
                f"ColonyRLModule needs a Dict observation space with keys '{RLLIB_OBS_KEY}' and '{MASK_KEY}' "
                f"(wrap the env with colony_env.rllib), got {space}"
            )
        mask_shape = tuple(space[MASK_KEY].shape)
        if mask_shape not in ((N_ACTIONS,), (PACKED_MASK_BYTES,)):
            raise ValueError(f"ColonyRLModule needs an action mask of {N_ACTIONS} entries or {PACKED_MASK_BYTES} "
                             f"packed bytes, got shape {mask_shape}")
        self.packed_mask = mask_shape == (PACKED_MASK_BYTES,)
        mc = self.model_config or {}
        in_channels = int(space[RLLIB_OBS_KEY].shape[0])
        self.net = PolicyValueNet(in_channels, int(mc.get("channels", 32)), int(mc.get("blocks", 2)))
        # The module is built inside every env runner and learner process: one place to cap their
        # torch threads (one env runner per core is the usual layout).
        if mc.get("torch_threads"):
            torch.set_num_threads(int(mc["torch_threads"]))

    def _legal(self, mask: torch.Tensor) -> torch.Tensor:
        """bool[B, 16001] from the observation's mask (plain 0/1, or packed 8 actions per byte)."""
        if not self.packed_mask:
            return mask > 0
        return unpack_mask(mask)

    def _masked_logits_and_value(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        obs = batch[Columns.OBS]
        logits, value = self.net.full_logits(obs[RLLIB_OBS_KEY].float())
        return masked_log_probs(logits, self._legal(obs[MASK_KEY])), value

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, _ = self._masked_logits_and_value(batch)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Sample here (Gumbel-max over the masked log-probs) and hand RLlib the action and its log-prob.

        RLlib's default samples from `ACTION_DIST_INPUTS` and stores those inputs with every
        step, which is 16,001 float32 values (64 KB) per step sent from each env runner to the
        learner. PPO's loss needs only the action and its log-prob from sampling time; it
        builds the old distribution from `ACTION_DIST_INPUTS` for the KL term alone, which this
        trainer leaves off (`use_kl_loss=False`), so a one-value placeholder goes in its place.
        """
        logp, _ = self._masked_logits_and_value(batch)
        noise = -torch.log(-torch.log(torch.rand_like(logp).clamp_(min=GUMBEL_EPS)))
        actions = torch.argmax(logp + noise, dim=-1)
        return {
            Columns.ACTIONS: actions,
            Columns.ACTION_LOGP: logp.gather(-1, actions[:, None])[:, 0],
            Columns.ACTION_DIST_INPUTS: logp.new_zeros((logp.shape[0], 1)),
        }

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, value = self._masked_logits_and_value(batch)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: value}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is not None:
            return embeddings
        return self.net._trunk(batch[Columns.OBS][RLLIB_OBS_KEY].float())[1]


def export_state_dict(module_state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """A `ColonyRLModule` state (torch or numpy values) -> the `PolicyValueNet` state_dict."""
    out = {k[len(NET_PREFIX):]: torch.as_tensor(np.asarray(v)) for k, v in module_state.items() if k.startswith(NET_PREFIX)}
    if not out:
        raise CheckpointError(f"not a ColonyRLModule state: no '{NET_PREFIX}*' weights among {sorted(module_state)[:5]}")
    return out


def net_from_module_state(module_state: dict[str, Any], channels: int, blocks: int, in_channels: int) -> PolicyValueNet:
    """Rebuild the `PolicyValueNet` held by a `ColonyRLModule` state."""
    net = PolicyValueNet(in_channels, channels, blocks)
    try:
        net.load_state_dict(export_state_dict(module_state))
    except RuntimeError as e:
        raise CheckpointError(f"RLlib module weights do not fit PolicyValueNet({in_channels}, {channels}, {blocks}): "
                              f"{str(e).splitlines()[0][:200]}") from None
    return net.eval()


# --- self-play: agents -> modules, snapshots ---------------------------------------------------
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
    """RLlib's self-play callback pattern (examples/multi_agent/utils/self_play_callback.py), on a schedule.

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
        _push_to_env_runners(algorithm, new_id, main_state)
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


def _push_to_env_runners(algorithm: Any, module_id: str, state: dict[str, Any]) -> None:
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


# --- building the algorithm --------------------------------------------------------------------
def build_ppo_config(cfg: RllibConfig) -> PPOConfig:
    """The RLlib `PPOConfig` of a run (new API stack, multi-agent with one shared module)."""
    from colony_env.env import raw_env
    from colony_env.rllib import RLlibObservationWrapper

    register_rllib_env()  # the driver registers it with the running Ray instance for the env runners
    spaces_env = RLlibObservationWrapper(raw_env(max_plies=cfg.max_plies), packed_mask=True)
    # Explicit spaces, so that snapshots added later (SnapshotSelfPlayCallback) can be built from this spec.
    module_spec = RLModuleSpec(
        module_class=ColonyRLModule,
        observation_space=spaces_env.observation_space(AGENTS[0]),
        action_space=spaces_env.action_space(AGENTS[0]),
        model_config={"channels": cfg.channels, "blocks": cfg.blocks, "torch_threads": cfg.torch_threads},
    )
    config = (
        PPOConfig()
        # RLlib's env check steps random (mostly illegal) actions; the env is tested by its own suite.
        .environment(ENV_NAME, env_config={"max_plies": cfg.max_plies, "packed_mask": True},
                     disable_env_checking=True)
        .framework("torch")
        .env_runners(
            num_env_runners=cfg.num_env_runners,
            num_envs_per_env_runner=cfg.num_envs_per_env_runner,
            num_cpus_per_env_runner=cfg.num_cpus_per_env_runner,
            rollout_fragment_length=cfg.rollout_fragment_length or "auto",
        )
        .learners(num_learners=cfg.num_learners, num_gpus_per_learner=cfg.num_gpus_per_learner)
        .multi_agent(
            policies={MAIN_MODULE},
            policy_mapping_fn=SnapshotMapping([], cfg.pool_share),
            policies_to_train=[MAIN_MODULE],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={MAIN_MODULE: module_spec}))
        .training(
            train_batch_size_per_learner=cfg.train_batch_size,
            minibatch_size=cfg.minibatch_size,
            num_epochs=cfg.update_epochs,
            lr=cfg.learning_rate,
            gamma=cfg.gamma,
            lambda_=cfg.gae_lambda,
            clip_param=cfg.clip_coef,
            vf_clip_param=cfg.vf_clip,
            entropy_coeff=cfg.ent_coef,
            vf_loss_coeff=cfg.vf_coef,
            grad_clip=cfg.max_grad_norm,
            use_kl_loss=False,  # as the project's PPO: clipping only
            kl_coeff=0.0,
        )
        .callbacks(functools.partial(SnapshotSelfPlayCallback, snapshot_every=cfg.snapshot_every,
                                     pool_size=cfg.pool_size, pool_share=cfg.pool_share))
        .debugging(seed=cfg.seed)
    )
    return config


# --- export to the project's checkpoint format -------------------------------------------------
def export_algorithm(algorithm: Any, cfg: RllibConfig, path: str | Path, meta: dict[str, Any]) -> Path:
    """Write `main`'s current weights as a project checkpoint (loadable by `checkpoint:PATH`)."""
    from colony_env.observation import OBS_CHANNELS

    net = net_from_module_state(learner_module_state(algorithm, MAIN_MODULE), cfg.channels, cfg.blocks, OBS_CHANNELS)
    return save_checkpoint(path, net, config={"trainer": "rllib", **cfg.to_dict()}, meta=meta)


# --- the run -----------------------------------------------------------------------------------
def _get(d: dict, *keys: str, default: float = float("nan")) -> float:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    try:
        return float(d)
    except (TypeError, ValueError):
        return default


def _count(result: dict[str, Any], *keys: str) -> int:
    """A summed count from an RLlib result dict, 0 where there is none.

    RLlib reports a sum over no event as NaN: in an iteration in which no game ends (every
    runner's share of the batch shorter than a game, once a game has ended somewhere),
    `illegal_games` is NaN, and `int(nan)` crashed the run (issue 16).
    """
    value = _get(result, *keys, default=0.0)
    return int(value) if math.isfinite(value) else 0


def metrics_row(result: dict[str, Any], t0: float, prev: dict[str, Any], prev_t: float,
                health: tuple[int, int, int] = (0, 0, 1)) -> dict[str, Any]:
    """One `metrics.csv` row from an RLlib result dict, the previous row (`prev`, {} at the start)
    and `env_runner_health` (configured, healthy, nodes)."""
    steps = _count(result, "env_runners", "num_env_steps_sampled_lifetime")
    now = time.perf_counter()
    return {
        "iteration": int(result.get("training_iteration", 0)),
        "env_steps": steps,
        "wall_time": round(now - t0, 2),
        "steps_per_s": round((steps - int(prev.get("env_steps", 0))) / max(1e-9, now - prev_t), 1),
        "episodes": _count(result, "env_runners", "num_episodes_lifetime"),
        "episode_len_mean": _get(result, "env_runners", "episode_len_mean"),
        "policy_loss": _get(result, "learners", MAIN_MODULE, "policy_loss"),
        "vf_loss": _get(result, "learners", MAIN_MODULE, "vf_loss"),
        "entropy": _get(result, "learners", MAIN_MODULE, "entropy"),
        "pool_size": int(result.get("pool_size", 0)),
        "pool_win_rate": _get(result, "env_runners", "pool_win_rate"),
        "illegal_games": _count(result, "env_runners", "illegal_games"),
        "env_runners": health[1],
        "nodes": health[2],
    }


def rllib_checkpoints(run_dir: Path) -> list[Path]:
    """The run's complete RLlib checkpoints, oldest first."""
    return [c for c in sorted((run_dir / RLLIB_DIR).glob("iter_*")) if (c / MODULE_DIR).is_dir()]


def _restore(algo: Any, checkpoint: Path) -> int:
    """Load an RLlib checkpoint of this trainer into a freshly built `algo`; returns its iteration.

    The snapshot modules (`main_vN`) are added first, so that the checkpoint's weights have a
    module to go to, and the self-play callback takes up its pool where the run left it.
    """
    ids = [d.name for d in (checkpoint / MODULE_DIR).iterdir() if re.fullmatch(rf"{SNAPSHOT_PREFIX}\d+", d.name)]
    ids.sort(key=lambda m: int(m[len(SNAPSHOT_PREFIX):]))
    callback = algo.callbacks[0] if isinstance(algo.callbacks, list) else algo.callbacks
    callback.resume_pool(algo, ids)
    algo.restore_from_path(str(checkpoint.resolve()))
    for module_id in ids:
        _push_to_env_runners(algo, module_id, learner_module_state(algo, module_id))
    return int(algo.iteration)


def train(cfg: RllibConfig, run_dir: Path | None = None, progress: bool = True,
          on_iteration: Callable[[Any, dict[str, Any]], None] | None = None, resume: bool = False) -> Path:
    """Train with RLlib; returns the run directory (config.yaml, metrics.csv, rllib/, checkpoints/).

    Uses the running Ray instance if there is one (the caller owns it), else starts one per
    `cfg.address` and shuts it down at the end. `on_iteration(algorithm, metrics_row)` runs
    after every iteration (notebooks, tests: the live `Algorithm` can be inspected there).
    `resume=True` continues the run in `run_dir` from its newest RLlib checkpoint.

    The run directory is created once Ray is up and the algorithm is built, and removed again
    if the run fails before its first checkpoint, so a failed start leaves nothing behind.
    """
    from tqdm import tqdm

    torch.set_num_threads(cfg.torch_threads)
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(cfg.out_dir, cfg.run_name)
    files = RunDir(run_dir, {"metrics.csv": METRIC_FIELDS})
    created = not run_dir.exists()
    with ray_session(cfg.address, cfg.num_cpus):
        algo = build_ppo_config(cfg).build_algo()
        try:
            first = 1
            if resume:
                checkpoint = rllib_checkpoints(run_dir)[-1]
                first = _restore(algo, checkpoint) + 1
                files.rewind(first - 1)  # rows past the checkpoint
                print(f"resuming {run_dir} from {checkpoint.name} (iteration {first - 1} of {cfg.num_iterations})",
                      flush=True)
            else:
                files.rewind(None)
                files.write_config(cfg)
            configured, lowest = _iterate(algo, cfg, files, first, progress, on_iteration, tqdm)
        except BaseException:
            if created and not rllib_checkpoints(run_dir):
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        finally:
            algo.stop()
    if configured:
        lost = configured - lowest
        print(f"env runners: lost {lost} of {configured} env runners during the run (their games in flight were "
              "dropped; the others went on)" if lost else f"env runners: all {configured} healthy to the end",
              flush=True)
    if cfg.final_eval_games:
        _final_eval(cfg, run_dir)
    return run_dir


def _iterate(algo: Any, cfg: RllibConfig, files: RunDir, first: int, progress: bool,
             on_iteration: Callable[[Any, dict[str, Any]], None] | None, tqdm: Any) -> tuple[int, int]:
    """Iterations `first..num_iterations`; returns (env runners configured, fewest healthy seen)."""
    run_dir = files.path
    t0 = prev_t = time.perf_counter()
    rows = list(csv.DictReader(open(run_dir / "metrics.csv"))) if first > 1 else []
    row: dict[str, Any] = rows[-1] if rows else {}
    saved = rllib_checkpoints(run_dir)
    configured, lowest = 0, None
    bar = tqdm(total=cfg.num_iterations, initial=first - 1, desc="rllib ppo", unit="it", disable=not progress)
    for iteration in range(first, cfg.num_iterations + 1):
        result = algo.train()
        health = env_runner_health(algo)
        configured = health[0]
        lowest = health[1] if lowest is None else min(lowest, health[1])
        row = metrics_row(result, t0, row, prev_t, health)
        prev_t = time.perf_counter()
        files.log("metrics.csv", [row])
        if on_iteration is not None:
            on_iteration(algo, row)
        if iteration % cfg.checkpoint_every == 0 or iteration == cfg.num_iterations:
            saved.append(_checkpoint(algo, cfg, run_dir, row))
            while cfg.keep_checkpoints and len(saved) > cfg.keep_checkpoints:
                shutil.rmtree(saved.pop(0), ignore_errors=True)
        bar.update(1)
        bar.set_postfix({"steps": row["env_steps"], "sps": f"{row['steps_per_s']:.0f}",
                         "ent": f"{row['entropy']:.2f}", "runners": row["env_runners"]}, refresh=False)
    bar.close()
    return configured, lowest or 0


def _checkpoint(algo: Any, cfg: RllibConfig, run_dir: Path, row: dict[str, Any]) -> Path:
    """An RLlib checkpoint of the whole algorithm plus its export to `checkpoints/latest.pt`."""
    it = row["iteration"]
    rllib_path = run_dir / RLLIB_DIR / f"iter_{it:06d}"
    partial = rllib_path.with_name(rllib_path.name + ".partial")  # renamed when complete: a kill leaves no half checkpoint
    shutil.rmtree(partial, ignore_errors=True)
    algo.save_to_path(str(partial.resolve()))
    partial.rename(rllib_path)
    meta = {
        "trainer": "rllib", "ray_version": ray.__version__, "iteration": it, "global_step": row["env_steps"],
        "rllib_checkpoint": str(rllib_path), "hardware": platform.platform(),
    }  # fmt: skip
    export_algorithm(algo, cfg, run_dir / "checkpoints" / LATEST, meta)
    return rllib_path


def _final_eval(cfg: RllibConfig, run_dir: Path) -> None:
    from ..checkpoint import load_model
    from ..ppo.train import evaluate_model

    model, _ = load_model(run_dir / "checkpoints" / LATEST)
    res = evaluate_model(model, cfg.eval_opponents, cfg.final_eval_games, seed=cfg.seed + 10_000_019)
    with open(run_dir / "eval.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["opponent", "games", "win_rate", "draw_rate", "loss_rate", "seconds"])
        for spec, r in res.items():
            w.writerow([spec, r["games"], r["win_rate"], r["draw_rate"], r["loss_rate"], round(r["seconds"], 2)])
            print(f"final evaluation vs {spec}: win {r['win_rate']:.3f} draw {r['draw_rate']:.3f} "
                  f"loss {r['loss_rate']:.3f} over {r['games']} games", flush=True)


# --- CLI ---------------------------------------------------------------------------------------
def config_key_help(cls: type = None) -> str:
    """Every config key of `cls` (default `RllibConfig`) with its type, default and the docstring under its field."""
    cls = cls or RllibConfig
    docs: dict[str, str] = {}
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    lines = []
    hints = typing.get_type_hints(cls)
    defaults = cls()
    for key in config_lib.config_keys(cls):
        kind = getattr(hints[key], "__name__", str(hints[key]))
        lines.append(f"  --{key.replace('_', '-'):<28} {kind} = {getattr(defaults, key)!r}. {docs.get(key, '')}".rstrip())
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="colony-train-rllib",
        description="Self-play PPO for Colony on RLlib, on a private Ray instance on this machine (loopback only) "
                    "or on a Ray cluster (--address). Any config key can be overridden: --num-env-runners 8 "
                    "--total-steps 1e6.",
        epilog="config keys (YAML, or --key VALUE on the command line):\n" + config_key_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="YAML config (configs/rllib_ppo.yaml); required unless --resume")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue the run in RUN_DIR from its newest RLlib checkpoint (RUN_DIR/config.yaml decides "
                        f"the run; only {', '.join(sorted(RESUME_KEYS))} may be overridden)")
    p.add_argument("--address", help="join a running Ray cluster ('auto' or HOST:PORT); default: a local instance")
    p.add_argument("--run-dir", help="write the run here instead of <out_dir>/<run_name>-<timestamp>")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    return p


def _resume_config(run_dir: Path, overrides: dict[str, Any]) -> RllibConfig:
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"--resume {str(run_dir)!r} is not a colony-train-rllib run directory (no config.yaml)")
    if not rllib_checkpoints(run_dir):
        raise ConfigError(f"--resume {str(run_dir)!r} has no complete RLlib checkpoint (rllib/iter_*) to resume from")
    fixed = sorted(set(overrides) - RESUME_KEYS)
    if fixed:
        raise ConfigError(f"--resume: config key '{fixed[0]}' is decided by {str(run_dir / 'config.yaml')!r}; "
                          f"keys that may change on resume: {', '.join(sorted(RESUME_KEYS))}")
    return load_config(run_dir / "config.yaml", overrides)


@console_script
def main(argv: list[str] | None = None) -> int:
    args, rest = build_parser().parse_known_args(argv)
    try:
        overrides = config_lib.split_overrides(rest, RllibConfig, "--num-env-runners 4")
        if args.address is not None:
            overrides["address"] = args.address
        if args.resume:
            if args.config or args.run_dir:
                raise ConfigError("--resume RUN_DIR takes the config and the directory from RUN_DIR; "
                                  "drop --config and --run-dir")
            run_dir = Path(args.resume)
            cfg = _resume_config(run_dir, overrides)
        else:
            if not args.config:
                raise ConfigError("--config is required (e.g. --config configs/rllib_ppo.yaml), or --resume RUN_DIR")
            cfg = load_config(args.config, overrides)
            run_dir = Path(args.run_dir) if args.run_dir else None
            if run_dir is not None and (run_dir / "checkpoints" / LATEST).exists():
                raise ConfigError(f"--run-dir {str(run_dir)!r} already holds a run; continue it with --resume "
                                  f"{str(run_dir)!r} or choose a new directory")
        out = train(cfg, run_dir=run_dir, progress=not args.no_progress, resume=bool(args.resume))
    except (ConfigError, CheckpointError, ClusterError) as e:
        print(f"colony-train-rllib: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("colony-train-rllib: interrupted; continue with colony-train-rllib --resume RUN_DIR (checkpoints saved so "
              "far are in RUN_DIR/rllib, the newest exported to RUN_DIR/checkpoints/latest.pt)", file=sys.stderr)
        return 130
    print(f"run directory: {out}")
    print(f"exported checkpoint: {out / 'checkpoints' / LATEST}  (colony-eval/colony-play: checkpoint:PATH)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
