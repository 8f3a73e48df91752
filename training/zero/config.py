"""Typed configuration of a `colony-zero` run (one dataclass, the same YAML/CLI conventions as `colony-train`).

Each field declares its meaning and its constraints once (`config.key`); loading, overrides,
validation and `--help` are the shared machinery of `colony_training.config`.
"""

from __future__ import annotations

from dataclasses import dataclass

from colony_env.agents.az import MAX_FROM_CONNECTED, ROOTS, SearchConfig
from colony_env.agents.base import MAX_LEAF_PLAYOUTS, MAX_SIMULATIONS

from ..config import CHECKPOINT_OR_EMPTY, CONSIDERED, DEVICE, LADDER_SPECS, RUN_NAME, SEED, SIMULATIONS, Check, Config
from ..config import at_least, below, between, key, number_at_least, one_of, positive, share
from ..runlog import is_file


@dataclass
class ZeroConfig(Config):
    """Everything that defines a search-based self-play run. Every field can be set from YAML or the CLI."""

    # --- run bookkeeping ---
    run_name: str = key("zero", "Prefix of the run directory `<out_dir>/<run_name>-<timestamp>`.", RUN_NAME)
    out_dir: str = key("runs", "Where run directories are created.")
    seed: int = key(0, "Seeds the network initialisation, the game setups and the search noise.", SEED)
    device: str = key(
        "auto",
        "`auto` (cuda if available), `cpu` or `cuda`: where the network runs, in self-play and fitting.",
        DEVICE,
    )
    torch_threads: int = key(1, "torch intra-op threads per process (self-play workers and the learner).", at_least(1))
    workers: int = key(
        2,
        "Self-play processes; with 2 on a 2-core machine each core plays its own share of the games.",
        at_least(1),
    )
    address: str = key(
        "",
        '"" = self-play in `workers` local processes; HOST:PORT or `auto` = `workers` Ray tasks on that cluster.',
    )

    selfplay_int8: bool = key(
        False,
        "Self-play searches with the network's stem and trunk in int8 (training/quantize.py): about 2x the leaf "
        "evaluations per second of a 64 x 4 network on a CPU, answers close to float32's (docs/zero.md, 'Measured "
        "choices'); fitting and evaluation stay float32. CPU only: ignored where self-play runs on a GPU.",
    )

    # --- network ---
    channels: int = key(64, "Width of the residual trunk.", at_least(1))
    blocks: int = key(4, "Residual blocks in the trunk.", at_least(1))
    target_features: bool = key(True, "Landing-cell projection in the policy head (training/model.py).")
    ownership_head: bool = key(
        True,
        "An auxiliary head fitted to who controls each cell's colony at the end (a new network only).",
    )
    global_pool: bool = key(
        False,
        "KataGo's global pooling bias in every residual block: the board-wide mean and max of its activations "
        "added to every cell (training/model.py; a new network only).",
    )
    count_inputs: bool = key(
        False,
        "Board-wide counts as inputs (training/model.py `count_features`: connected satellites, colonies each side "
        "controls), which a 3x3 trunk cannot count; with `init_from` a network without them gains them, "
        "zero-weighted, so it starts as the file's network.",
    )
    init_from: str = key(
        "",
        'Start from this checkpoint\'s weights (any colony checkpoint; its architecture wins); "" = random weights.',
        CHECKPOINT_OR_EMPTY,
    )

    # --- self-play ---
    generations: int = key(
        100,
        "Generations to run: each plays `games_per_generation` games, then fits the network.",
        at_least(1),
    )
    games_per_generation: int = key(64, "Self-play games per generation (split over the workers).", at_least(1))
    parallel_games: int = key(
        32,
        "Games in flight per worker: their searches share one network call per simulation step.",
        at_least(1),
    )
    simulations: int = key(32, "Simulations per self-play move.", SIMULATIONS)
    root: str = key(
        "gumbel",
        "Root rule of the self-play search: `gumbel` (improved-policy targets) or `puct` (visit-count targets).",
        one_of(sorted(ROOTS)),
    )
    max_considered: int = key(16, "Gumbel root: actions considered by sequential halving.", CONSIDERED)
    c_puct: float = key(1.25, "PUCT exploration constant (root `puct`).", number_at_least(0))
    forced_playouts: float = key(
        0.0,
        "PUCT root: KataGo's forced playouts, sqrt(k P(c) sum N) visits for every visited root child, with this k "
        "(2 in KataGo), and the policy target pruned of them; 0 = off.",
        number_at_least(0), Check(lambda v, c: v == 0 or c.root == "puct", "0 unless root is puct"),
    )
    root_dirichlet: float = key(
        0.0,
        "PUCT root: share of Dirichlet noise mixed into the root's priors in self-play (AlphaZero's 0.25); 0 = off.",
        share(), Check(lambda v, c: v == 0 or c.root == "puct", "0 unless root is puct"),
    )
    c_scale: float = key(
        SearchConfig.c_scale,
        "Gumbel: the weight of completed Q against the prior, sigma(q) = (50 + max N) * c_scale * q, in the self-play "
        "searches and so in their policy targets (mctx's 0.1; `az:N` play defaults to 1, `AZ_C_SCALE_DEFAULT`).",
        positive(), Check(lambda v, c: v == SearchConfig.c_scale or c.root == "gumbel",
                          f"{SearchConfig.c_scale:g} unless root is gumbel"),
    )
    rescale_q: bool = key(
        True,
        "Gumbel: completed Q mapped to [0, 1] by its min and max (mctx) rather than from [-1, 1].",
    )
    fast_simulations: int = key(
        0,
        "Playout cap randomisation (KataGo): if > 0, a move gets the full `simulations` search only with probability `full_search_prob` and this many simulations otherwise; only full searches are policy targets (every position is a value target). 0: every move gets the full search.",
        at_least(0), Check(lambda v, c: v < c.simulations, "0 (off) or fewer than `simulations` (the full search)"),
    )
    full_search_prob: float = key(
        0.25,
        "The share of moves searched with `simulations` when `fast_simulations` > 0.",
        Check(lambda v, c: 0.0 < v <= 1.0, "a number in (0, 1]"),
    )
    max_plies: int = key(400, "Ply limit per game (R6.2.4).", at_least(1))
    start_records: list[str] = key(
        [],
        "Game record files (`colony-eval`'s games.jsonl) whose positions a `start_share` of the self-play games "
        "start from (training/zero/starts.py); [] = none.",
        Check(lambda v, c: isinstance(v, str) and is_file(v), "paths of existing game record files", each=True),
    )
    start_share: float = key(
        0.0,
        "Share of the self-play games that start from a position drawn uniformly from `start_records` (KataGo's "
        "start positions) instead of a new setup.",
        share(), Check(lambda v, c: (v > 0) == bool(c.start_records),
                       "0 without start_records, above 0 with them (the share of games they start)"),
    )
    rollout_mix: float = key(
        0.0,
        "Leaf value = (1 - mix) * network value + mix * the mean of `rollout_playouts` random playouts "
        "(AlphaGo's lambda).",
        share(),
    )
    rollout_playouts: int = key(
        1,
        "Random playouts per mixed leaf (their mean is the playouts' part of `rollout_mix`).",
        between(1, MAX_LEAF_PLAYOUTS),
        Check(lambda v, c: v == 1 or c.rollout_mix > 0, "1 unless rollout_mix > 0 (the playouts it mixes in)"),
    )
    rollout_from: int = key(
        0,
        "Mix only leaves with at least this many connected satellites (0: every leaf; the shipped agent's "
        "`az:N` mixes 0.75 of 16 playouts from 17 on, docs/zero.md; 23 connected end the game, R6.2.1).",
        below(MAX_FROM_CONNECTED),
        Check(lambda v, c: v == 0 or c.rollout_mix > 0, "0 unless rollout_mix > 0 (the mix it limits)"),
    )
    rollout_mix_generations: int = key(
        0,
        "If > 0, the mix falls linearly from `rollout_mix` to 0 over this many generations (0: constant).",
        at_least(0),
    )
    value_rollouts: int = key(
        0,
        "Random playouts from every stored position after its game; their mean result is a value target (0: none).",
        at_least(0),
    )

    # --- fitting ---
    replay_positions: int = key(
        200_000,
        "Positions kept in the replay buffer (oldest generations dropped first).",
        at_least(1),
    )
    sample_reuse: float = key(
        4.0,
        "Fitting samples per new position: steps = ceil(new positions * sample_reuse / batch_size).",
        positive(),
    )
    batch_size: int = key(256, "Positions per gradient step.", at_least(1))
    learning_rate: float = key(1e-3, "Adam learning rate.", positive())
    weight_decay: float = key(1e-4, "Adam(W) weight decay.", number_at_least(0))
    value_loss_coef: float = key(
        1.0,
        "Weight of the value loss (MSE of tanh(value) against the target).",
        number_at_least(0),
    )
    ownership_loss_coef: float = key(
        0.5,
        "Weight of the ownership loss (MSE of tanh per cell against -1/0/+1), if the network has the head.",
        number_at_least(0),
    )
    root_value_mix: float = key(
        0.0,
        "Share of the search's root value in the value target (the rest: the game's result).",
        share(),
    )
    rollout_value_mix: float = key(
        0.0,
        "Share of the `value_rollouts` playouts' mean in the value target (needs value_rollouts >= 1).",
        Check(lambda v, c: 0.0 <= v <= 1.0 - c.root_value_mix, "a number in [0, 1 - root_value_mix] (the value target's shares add up to 1)"), Check(lambda v, c: v == 0.0 or c.value_rollouts >= 1, "0 unless value_rollouts >= 1 (the playouts it mixes in)"),
    )
    augment_symmetry: bool = key(
        True,
        "Show each sample in a random one of the 4 board symmetries that keep the canonical view.",
    )
    max_grad_norm: float = key(1.0, "Gradient clipping.", positive())

    # --- evaluation, checkpoints ---
    eval_every: int = key(5, "Generations between evaluations (0: only at the end).", at_least(0))
    eval_games: int = key(
        40,
        "Games per opponent in an evaluation (half with each colour).",
        at_least(1), Check(lambda v, c: v % 2 == 0, "an even number (each setup is played with both colours)"),
    )
    eval_opponents: list[str] = key(
        ["random", "greedy"],
        "The fixed ladder the policy is evaluated against: `random`, `greedy`, `mcts:N`.",
        LADDER_SPECS,
    )
    eval_simulations: int = key(
        0,
        "If > 0, also evaluate the search agent `az:N` with N simulations against the ladder.",
        below(MAX_SIMULATIONS),
    )
    eval_policy: bool = key(
        True,
        "Evaluate the policy alone (false: only the search agent, which needs eval_simulations > 0).",
        Check(lambda v, c: v or c.eval_simulations > 0, "true, or false with eval_simulations > 0 (something must play)"),
    )
    eval_search_opponents: list[str] = key(
        [],
        "The ladder the search agent `az:eval_simulations` plays (e.g. [mcts:200, mcts:1000]); [] = `eval_opponents`.",
        LADDER_SPECS,
    )
    eval_max_plies: int = key(
        400,
        "Ply limit of the evaluation games (R6.2.4's default), whatever `max_plies` self-play uses.",
        at_least(1),
    )
    eval_seed: int = key(
        1000,
        "Base seed of the evaluation setups (generation g uses eval_seed + g); keep apart from card seeds.",
        below(2**31 - 1),
    )
    keep_checkpoints: int = key(3, "Numbered checkpoints kept besides `latest.pt`.", at_least(0))

    def rollout_mix_at(self, generation: int) -> float:
        """The playout share of the leaf value in this generation (the linear schedule)."""
        if self.rollout_mix_generations == 0:
            return self.rollout_mix
        return self.rollout_mix * max(0.0, 1.0 - generation / self.rollout_mix_generations)
