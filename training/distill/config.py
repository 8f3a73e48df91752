"""Typed configuration of a `colony-distill` run (one dataclass, the YAML/CLI conventions of the other trainers).

`colony-distill --init CHECKPOINT --games 2400` or `--config FILE.yaml`; the run's settings are
written to `config.yaml` in its directory, which `--resume` reads (runs made before this file
existed wrote `config.json`, which `--resume` still reads). Each field declares its meaning and
its constraints once (`config.key`); loading, overrides, validation and `--help` are the
shared machinery of `colony_training.config`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from colony_env.agents.mcts import DEFAULT_PRIOR_C

from .. import config as config_lib
from ..config import CONSIDERED, RUN_NAME, SIMULATIONS, Check, Config
from ..config import at_least, below, key, number_at_least, one_of, positive, share

EXPERTS = ("mcts", "az")


@dataclass
class DistillConfig(Config):
    """Everything that decides a distillation run. Every field can be set from YAML or the CLI."""

    init: str = key("", "Checkpoint whose policy steers the search and is fitted.",
                    Check(lambda v, c: v != "", "the path of a checkpoint file (--init CHECKPOINT)"))
    run_name: str = key("distill", "Prefix of the run directory `<out_dir>/<run_name>-<timestamp>` (without --out).",
                        RUN_NAME)
    out_dir: str = key("runs", "Where run directories are created (without --out).")
    games: int = key(1200, "Games to play with the search.", at_least(2))
    expert: str = key("mcts", "The search that teaches: `mcts` (the policy as the root's prior, random rollouts "
                      "judge the moves; the target is the root's visit counts) or `az` (the network's priors and "
                      "values at every node, its value head read as its trainer fitted it, Gumbel root; the target "
                      "is the search's improved policy).", one_of(EXPERTS))
    simulations: int = key(200, "Search simulations per move.", SIMULATIONS)
    prior_c: float = key(DEFAULT_PRIOR_C, "The root's PUCT constant (expert `mcts`).", number_at_least(0))
    max_considered: int = key(16, "Root actions the Gumbel root considers (expert `az`; m of `az:N:m=M`).",
                              CONSIDERED)
    greedy_share: float = key(0.5, "Share of the games against the greedy agent (the rest: the search against itself).",
                              share())
    shard_games: int = key(50, "Games per data shard (the unit an interrupted run resumes from).", at_least(1))
    epochs: int = key(6, "Passes over the positions; the best by held-out loss is kept.", at_least(1))
    batch_size: int = key(256, "Positions per gradient step.", at_least(1))
    lr: float = key(3e-4, "Adam learning rate.", positive())
    augment_symmetry: bool = key(True, "Show each position in a random one of the 4 board symmetries that keep "
                                       "the canonical view.")
    seed: int = key(0, "Decides the games' setups and the fit's shuffling.", below(config_lib.SEED_MAX))
    workers: int = key(2, "Game-playing processes.", at_least(1))


CONFIG_KEYS: tuple[str, ...] = config_lib.config_keys(DistillConfig)
# The shared machinery bound to DistillConfig (`load_config(path, overrides)` etc.).
load_config = functools.partial(config_lib.load_config, cls=DistillConfig)
config_from_dict = functools.partial(config_lib.config_from_dict, cls=DistillConfig)
split_overrides = functools.partial(config_lib.split_overrides, cls=DistillConfig, example="--games 2400")
