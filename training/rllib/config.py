"""Typed configuration of a `colony-train-rllib` run (one dataclass, the conventions of `colony-train`).

Importable without Ray: the config is checked before a cluster is joined. Each field declares
its meaning and its constraints once (`config.key`); loading, overrides, validation and
`--help` are the shared machinery of `colony_training.config`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from .. import config as config_lib
from ..config import LADDER_SPECS, RUN_NAME, SEED, Check, Config
from ..config import at_least, derived, key, number_at_least, positive, share

# Keys `--resume` may change: where and how wide the run goes on, and how long; the rest
# (network, PPO, self-play, seed) is what the checkpoint was trained with.
RESUME_KEYS = frozenset({
    "address", "num_cpus", "torch_threads", "num_env_runners", "num_envs_per_env_runner", "num_cpus_per_env_runner",
    "num_learners", "num_gpus_per_learner", "rollout_fragment_length", "total_steps", "checkpoint_every",
    "keep_checkpoints", "final_eval_games", "eval_opponents",
})  # fmt: skip


@dataclass
class RllibConfig(Config):
    """Everything that defines an RLlib run. Every field can be set from YAML or the CLI."""

    # --- run bookkeeping ---
    run_name: str = key("rllib", "Prefix of the run directory `<out_dir>/<run_name>-<timestamp>`.", RUN_NAME)
    out_dir: str = key("runs", "Where run directories are created.")
    seed: int = key(0, "Seeds RLlib (env runners, module init) and the final evaluation.", SEED)
    torch_threads: int = key(1, "torch intra-op threads per process (driver, learner, each env runner).", at_least(1))

    # --- Ray ---
    address: str = key(
        "",
        "'' starts a private Ray instance on this machine (loopback only); 'auto' or 'HOST:6379' joins a running cluster (`ray start --head` on one node, `ray start --address` on the others).",
        Check(lambda v, c: bool(re.fullmatch(r"|auto|(ray://)?[A-Za-z0-9_.-]+:[0-9]+", v)), "'' (local instance), 'auto', 'HOST:PORT' or 'ray://HOST:PORT'"),
    )
    num_cpus: int = key(
        0,
        "CPUs a private local instance may use (0 = all of this machine's); ignored with `address`.",
        at_least(0),
    )

    # --- scale ---
    num_env_runners: int = key(
        2,
        "Sampling actors; spread across a cluster's nodes by Ray. 0 samples in the driver.",
        at_least(0),
    )
    num_envs_per_env_runner: int = key(
        1,
        "Games each env runner steps together (batched inference per runner).",
        at_least(1),
    )
    num_cpus_per_env_runner: int = key(
        1,
        "CPUs Ray reserves for each env runner (one per core is the usual layout).",
        at_least(1),
    )
    num_learners: int = key(
        0,
        "0 learns in the driver; N >= 1 starts N learner actors (data-parallel, e.g. one per GPU).",
        at_least(0),
    )
    num_gpus_per_learner: float = key(
        0.0,
        "GPUs per learner actor (or for the driver's learner when num_learners is 0).",
        number_at_least(0),
    )
    rollout_fragment_length: int = key(
        0,
        "Steps per env runner per sample call; 0 lets RLlib derive it from the batch size.",
        at_least(0),
    )

    # --- budget ---
    total_steps: int = key(200_000, "Environment steps (single moves, both colours) to train for.", at_least(1))
    max_plies: int = key(400, "Ply limit per game (R6.2.4); reported as a truncation.", at_least(1))

    # --- network (training/model.py PolicyValueNet) ---
    channels: int = key(32, "Width of the PolicyValueNet's residual trunk.", at_least(1))
    blocks: int = key(2, "Residual blocks in the trunk.", at_least(1))

    # --- PPO (RLlib's names in brackets) ---
    train_batch_size: int = key(
        2048,
        "Env steps per training iteration, per learner [train_batch_size_per_learner].",
        at_least(1),
    )
    minibatch_size: int = key(
        256,
        "Env steps per gradient step.",
        at_least(1), Check(lambda v, c: v <= c.train_batch_size, "at most train_batch_size"),
    )
    update_epochs: int = key(3, "[num_epochs]", at_least(1))
    learning_rate: float = key(3e-4, "[lr]", positive())
    gamma: float = key(0.995, "Discount per env step.", share())
    gae_lambda: float = key(0.95, "[lambda_]", share())
    clip_coef: float = key(0.2, "[clip_param]", number_at_least(0))
    vf_clip: float = key(
        10.0,
        "[vf_clip_param] clip of the squared value error; values live in [-1, 1].",
        number_at_least(0),
    )
    ent_coef: float = key(0.01, "[entropy_coeff]", number_at_least(0))
    vf_coef: float = key(0.5, "[vf_loss_coeff]", number_at_least(0))
    max_grad_norm: float = key(0.5, "[grad_clip]", number_at_least(0))

    # --- self-play ---
    pool_share: float = key(
        0.25,
        "Share of the games in which one colour is a frozen snapshot (once the pool has one).",
        share(),
    )
    pool_size: int = key(4, "Snapshots kept (oldest removed first); each is a module on every env runner.", at_least(1))
    snapshot_every: int = key(5, "Iterations between snapshots of `main` added to the pool.", at_least(1))

    # --- checkpoints, evaluation ---
    checkpoint_every: int = key(
        10,
        "Iterations between RLlib checkpoints (each also exported to the project format).",
        at_least(1),
    )
    keep_checkpoints: int = key(3, "RLlib checkpoint directories kept (older ones deleted); 0 keeps all.", at_least(0))
    final_eval_games: int = key(
        40,
        "Games per opponent at the end, with the exported network (0 disables).",
        at_least(0),
    )
    eval_opponents: list[str] = key(
        ["random"],
        "Agent specs for the final evaluation: random, greedy, mcts:N.",
        LADDER_SPECS,
    )

    # --- derived (set by `finalize`) ---
    num_iterations: int = derived()

    def derive(self) -> None:
        per_iteration = self.train_batch_size * max(1, self.num_learners)
        self.num_iterations = max(1, math.ceil(self.total_steps / per_iteration))


# The shared machinery bound to RllibConfig (`load_config(path, overrides)` etc.).
load_config = functools.partial(config_lib.load_config, cls=RllibConfig)
config_from_dict = functools.partial(config_lib.config_from_dict, cls=RllibConfig)
