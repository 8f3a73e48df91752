"""Typed configuration of a self-play PPO run (`colony-train`): one dataclass, CleanRL style.

A run is described by a YAML file (`configs/quickstart.yaml`, `configs/selfplay_ppo.yaml`, or a
built-in config by name: `--config quickstart`) whose keys are exactly the fields of
`TrainConfig`; any key can be overridden on the command line (`colony-train --config X.yaml
--num-envs 16 --learning-rate 1e-4`). Each field declares its meaning and its constraints once
(`config.key`); loading, overrides, validation and `--help` are the shared machinery of
`colony_training.config`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import config as config_lib
from ..config import CHECKPOINT_OR_EMPTY, DEVICE, LADDER_SPECS, PRECISION, RUN_NAME, SEED, Check
from ..config import Config, at_least, derived, key, number_at_least, positive, share


@dataclass
class TrainConfig(Config):
    """Everything that defines a training run. Every field can be set from YAML or the CLI."""

    # --- run bookkeeping ---
    run_name: str = key("run", "Prefix of the run directory `<out_dir>/<run_name>-<timestamp>`.", RUN_NAME)
    out_dir: str = key("runs", "Where run directories are created.")
    seed: int = key(0, "Seeds the game setups, the sampling generators and the network initialisation.", SEED)
    device: str = key("auto", "`auto` (cuda if available), `cpu` or `cuda`.", DEVICE)
    torch_threads: int = key(2, "torch intra-op threads on CPU (the reference machine has 2 cores).", at_least(1))
    precision: str = key(
        "fp32",
        "`fp32`; `bf16`: the convolutions in bfloat16 under autocast (the weights, the heads, the losses and the "
        "optimizer stay float32), about 1.3x faster updates on a CPU that computes bf16 natively and slower on one "
        "that does not; `auto`: bf16 where the CPU (AVX512-BF16, AMX) or GPU computes it natively, else fp32 "
        "(docs/training.md, \"bf16 convolutions\").",
        PRECISION,
    )
    processes: int = key(
        1,
        "1, or 2: a helper process plays half the games and computes half of each minibatch's gradient, so both "
        "cores of a 2-core CPU work (training/ppo/parallel.py); each process uses `torch_threads`; one process on cuda.",
        Check(lambda v, c: v in (1, 2), "1 or 2"),
    )

    # --- budget ---
    total_steps: int = key(200_000, "Environment steps (single moves, both colours) to train for.", at_least(1))
    time_limit_minutes: float = key(
        0.0,
        "Also stop when the run's wall time (resumes included) reaches this many minutes, with the learning rate "
        "annealed over whichever of the step and time budgets is used up first; 0: no time limit.",
        number_at_least(0),
    )
    num_envs: int = key(32, "Games played in parallel by the vector env; inference is batched over them.", at_least(1))
    rollout_steps: int = key(64, "Steps per env per PPO iteration (batch = num_envs * rollout_steps).", at_least(1))
    max_plies: int = key(400, "Ply limit per game (R6.2.4).", at_least(1))

    # --- network ---
    channels: int = key(32, "Width of the residual trunk.", at_least(1))
    blocks: int = key(2, "Residual blocks in the trunk.", at_least(1))

    heuristic_prior: bool = key(
        False,
        "Add the greedy heuristic's score of each legal action, times a learned weight, to the policy logits (training/teacher.py).",
    )

    policy_target_features: bool = key(
        False,
        "Add a per-plane projection of the trunk features at each action's landing cell to its logit (model.py); off in old checkpoints.",
    )

    global_pool: bool = key(
        False,
        "KataGo's global pooling bias in every residual block: the board-wide mean and max of its activations added "
        "to every cell (training/model.py; a new network only).",
    )

    count_inputs: bool = key(
        False,
        "Board-wide counts as inputs (training/model.py `count_features`: connected satellites, colonies each side "
        "controls), which a 3x3 trunk cannot count (a new network only).",
    )

    # --- PPO ---
    learning_rate: float = key(3e-4, "Adam step size at the start of the run.", positive())
    anneal_lr: bool = key(True, "Linearly decay the learning rate to 0 over the run.")
    gamma: float = key(0.995, "Discount per own decision of a colour.", share())
    gae_lambda: float = key(0.95, "GAE's lambda: 0 bootstraps after one step, 1 uses the whole return.", share())
    update_epochs: int = key(3, "Passes over each rollout batch per PPO update.", at_least(1))
    num_minibatches: int = key(
        4,
        "Minibatches per epoch (minibatch size = batch / num_minibatches).",
        at_least(1), Check(lambda v, c: v <= c.num_envs * c.rollout_steps, "at most num_envs * rollout_steps"),
    )
    clip_coef: float = key(0.2, "PPO's clipping range for the probability ratio.", number_at_least(0))
    clip_vloss: bool = key(True, "Clip the value loss around the old value estimates, as the policy ratio is clipped.")
    ent_coef: float = key(0.01, "Weight of the entropy bonus (over the legal actions).", number_at_least(0))
    vf_coef: float = key(0.5, "Weight of the value loss.", number_at_least(0))
    max_grad_norm: float = key(0.5, "Global gradient-norm clip.", number_at_least(0))
    norm_adv: bool = key(True, "Normalise the advantages within each minibatch.")
    target_kl: float = key(
        0.0,
        "Stop the epochs of one update early when the approximate KL exceeds this; 0 disables it.",
        number_at_least(0),
    )

    shaping_scale: float = key(
        0.5,
        "Scale of the potential-based shaping (training/ppo/shaping.py); 0 trains on the terminal reward alone.",
        share(),
    )

    teacher_coef: float = key(
        0.0,
        "Kickstarting (training/teacher.py): initial weight of the cross-entropy towards the greedy agent's choices; 0 disables it.",
        number_at_least(0),
    )
    teacher_steps: int = key(0, "Env steps over which the kickstarting weight decays linearly to 0.", at_least(0))

    ownership_coef: float = key(
        0.0,
        "Weight of KataGo's ownership loss (training/ownership.py): the network gets colony-zero's ownership head, "
        "fitted to who controls each cell's colony at the game's end, at the learner's decisions of the games that "
        "end within the rollout; 0 = no head.",
        number_at_least(0),
    )

    lookahead_coef: float = key(
        0.0,
        "Weight of the one-ply lookahead loss (training/ppo/lookahead.py): at a `lookahead_share` of the learner's "
        "decisions every legal move is scored by the learner's own value head (or exactly, where the game ends) and "
        "-log P(moves within `lookahead_margin` of the best) is added to the loss; 0 disables it.",
        number_at_least(0),
    )
    lookahead_share: float = key(
        0.125, "Share of the learner's decisions that get one-ply lookahead targets (when `lookahead_coef` > 0).",
        share())
    lookahead_margin: float = key(
        0.1, "One-ply values within this of the best move's (on the [-1, 1] scale) are kept by the lookahead target.",
        number_at_least(0))

    # --- self-play ---
    pool_share: float = key(
        0.25,
        "Share of the games in which one colour is played by a past snapshot from the pool.",
        share(),
    )
    pool_size: int = key(8, "Past snapshots kept in the opponent pool (oldest dropped first).", at_least(1))
    greedy_share: float = key(
        0.0,
        "Share of the games in which one colour is played by the greedy agent (a fixed, competent opponent whose replies punish loose play; its moves are not trained on).",
        share(), Check(lambda v, c: c.pool_share + v <= 1.0, "a number in [0, 1 - pool_share]"),
    )
    snapshot_every: int = key(10, "Iterations between snapshots added to the pool.", at_least(1))
    augment_symmetry: bool = key(
        True,
        "Feed each decision in a random one of the 4 board symmetries that keep the canonical view.",
    )

    init_from: str = key(
        "", "Start a new run from this checkpoint's weights (same architecture); '' starts from scratch.",
        CHECKPOINT_OR_EMPTY,
    )

    # --- evaluation, checkpoints, logging ---
    eval_every: int = key(
        50,
        "Iterations between evaluations (0 disables periodic evaluation; the final one always runs).",
        at_least(0),
    )
    eval_games: int = key(40, "Games per opponent in a periodic evaluation (half with each colour).", at_least(1))
    eval_opponents: list[str] = key(
        ["random", "greedy"],
        "Agent specs to evaluate against: `random`, `greedy`, `mcts:N`.",
        LADDER_SPECS,
    )
    final_eval_games: int = key(
        100,
        "Games per opponent in the evaluation at the end of the run (0 disables it).",
        at_least(0),
    )
    checkpoint_every: int = key(
        20,
        "Iterations between checkpoints (the latest is always `checkpoints/latest.pt`).",
        at_least(1),
    )
    keep_checkpoints: int = key(
        5,
        "Numbered checkpoints kept besides `latest.pt` (older ones are deleted).",
        at_least(0),
    )

    # --- derived (set by `finalize`, not configurable) ---
    batch_size: int = derived()
    minibatch_size: int = derived()
    num_iterations: int = derived()

    def derive(self) -> None:
        self.batch_size = self.num_envs * self.rollout_steps
        self.minibatch_size = max(1, self.batch_size // self.num_minibatches)
        self.num_iterations = max(1, math.ceil(self.total_steps / self.batch_size))


CONFIG_KEYS: tuple[str, ...] = config_lib.config_keys(TrainConfig)
# The shared machinery bound to TrainConfig (`load_config(path, overrides)` etc.).
load_config = functools.partial(config_lib.load_config, cls=TrainConfig)
config_from_dict = functools.partial(config_lib.config_from_dict, cls=TrainConfig)
parse_override = functools.partial(config_lib.parse_override, cls=TrainConfig)
split_overrides = functools.partial(config_lib.split_overrides, cls=TrainConfig)
