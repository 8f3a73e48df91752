"""Typed configuration of a `colony-zero` run (one dataclass, the same YAML/CLI conventions as `colony-train`)."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

from colony_env.agents.az import ROOTS

from ..config import DEVICES, ConfigError
from ..runlog import is_file

# Agent specs the periodic evaluation may play against (built by colony_training.eval's agent specs).
_LADDER_RE = re.compile(r"^(random|greedy|mcts:[1-9][0-9]*)$")


@dataclass
class ZeroConfig:
    """Everything that defines a search-based self-play run. Every field can be set from YAML or the CLI."""

    # --- run bookkeeping ---
    run_name: str = "zero"
    """Prefix of the run directory `<out_dir>/<run_name>-<timestamp>`."""
    out_dir: str = "runs"
    """Where run directories are created."""
    seed: int = 0
    """Seeds the network initialisation, the game setups and the search noise."""
    device: str = "auto"
    """`auto` (cuda if available), `cpu` or `cuda`: where the network runs, in self-play and fitting."""
    torch_threads: int = 1
    """torch intra-op threads per process (self-play workers and the learner)."""
    workers: int = 2
    """Self-play processes; with 2 on a 2-core machine each core plays its own share of the games."""
    address: str = ""
    """"" = self-play in `workers` local processes; HOST:PORT or `auto` = `workers` Ray tasks on that cluster."""

    # --- network ---
    channels: int = 64
    """Width of the residual trunk."""
    blocks: int = 4
    """Residual blocks in the trunk."""
    target_features: bool = True
    """Landing-cell projection in the policy head (training/model.py)."""
    ownership_head: bool = True
    """An auxiliary head fitted to who controls each cell's colony at the end (a new network only)."""
    init_from: str = ""
    """Start from this checkpoint's weights (any colony checkpoint; its architecture wins); "" = random weights."""

    # --- self-play ---
    generations: int = 100
    """Generations to run: each plays `games_per_generation` games, then fits the network."""
    games_per_generation: int = 64
    """Self-play games per generation (split over the workers)."""
    parallel_games: int = 32
    """Games in flight per worker: their searches share one network call per simulation step."""
    simulations: int = 32
    """Simulations per self-play move."""
    root: str = "gumbel"
    """Root rule of the self-play search: `gumbel` (improved-policy targets) or `puct` (visit-count targets)."""
    max_considered: int = 16
    """Gumbel root: actions considered by sequential halving."""
    c_puct: float = 1.25
    """PUCT exploration constant (root `puct`)."""
    rescale_q: bool = True
    """Gumbel: completed Q mapped to [0, 1] by its min and max (mctx) rather than from [-1, 1]."""
    fast_simulations: int = 0
    """Playout cap randomisation (KataGo): if > 0, a move gets the full `simulations` search only with
    probability `full_search_prob` and this many simulations otherwise; only full searches are policy
    targets (every position is a value target). 0: every move gets the full search."""
    full_search_prob: float = 0.25
    """The share of moves searched with `simulations` when `fast_simulations` > 0."""
    max_plies: int = 400
    """Ply limit per game (R6.2.4)."""
    rollout_mix: float = 0.0
    """Leaf value = (1 - mix) * network value + mix * one random playout's result (AlphaGo's lambda)."""
    rollout_mix_generations: int = 0
    """If > 0, the mix falls linearly from `rollout_mix` to 0 over this many generations (0: constant)."""
    value_rollouts: int = 0
    """Random playouts from every stored position after its game; their mean result is a value target (0: none)."""

    # --- fitting ---
    replay_positions: int = 200_000
    """Positions kept in the replay buffer (oldest generations dropped first)."""
    sample_reuse: float = 4.0
    """Fitting samples per new position: steps = ceil(new positions * sample_reuse / batch_size)."""
    batch_size: int = 256
    """Positions per gradient step."""
    learning_rate: float = 1e-3
    """Adam learning rate."""
    weight_decay: float = 1e-4
    """Adam(W) weight decay."""
    value_loss_coef: float = 1.0
    """Weight of the value loss (MSE of tanh(value) against the target)."""
    ownership_loss_coef: float = 0.5
    """Weight of the ownership loss (MSE of tanh per cell against -1/0/+1), if the network has the head."""
    root_value_mix: float = 0.0
    """Share of the search's root value in the value target (the rest: the game's result)."""
    rollout_value_mix: float = 0.0
    """Share of the `value_rollouts` playouts' mean in the value target (needs value_rollouts >= 1)."""
    augment_symmetry: bool = True
    """Show each sample in a random one of the 4 board symmetries that keep the canonical view."""
    max_grad_norm: float = 1.0
    """Gradient clipping."""

    # --- evaluation, checkpoints ---
    eval_every: int = 5
    """Generations between evaluations (0: only at the end)."""
    eval_games: int = 40
    """Games per opponent in an evaluation (half with each colour)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """The fixed ladder the policy is evaluated against: `random`, `greedy`, `mcts:N`."""
    eval_simulations: int = 0
    """If > 0, also evaluate the search agent `az:N` with N simulations against the ladder."""
    eval_max_plies: int = 400
    """Ply limit of the evaluation games (R6.2.4's default), whatever `max_plies` self-play uses."""
    eval_seed: int = 1000
    """Base seed of the evaluation setups (generation g uses eval_seed + g); keep apart from card seeds."""
    keep_checkpoints: int = 3
    """Numbered checkpoints kept besides `latest.pt`."""

    def finalize(self) -> ZeroConfig:
        _check(self)
        return self

    def rollout_mix_at(self, generation: int) -> float:
        """The playout share of the leaf value in this generation (the linear schedule)."""
        if self.rollout_mix_generations == 0:
            return self.rollout_mix
        return self.rollout_mix * max(0.0, 1.0 - generation / self.rollout_mix_generations)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}


def _check(c: ZeroConfig) -> None:
    def need(ok: bool, key: str, allowed: str) -> None:
        if not ok:
            raise ConfigError(f"config key '{key}' = {getattr(c, key)!r} is invalid; allowed: {allowed}")

    need(c.device in DEVICES, "device", ", ".join(DEVICES))
    need(c.root in ROOTS, "root", ", ".join(sorted(ROOTS)))
    for key in ("torch_threads", "workers", "channels", "blocks", "generations", "games_per_generation",
                "parallel_games", "simulations", "max_considered", "max_plies", "replay_positions", "batch_size",
                "eval_games", "eval_max_plies"):
        need(getattr(c, key) >= 1, key, "an integer >= 1")
    for key in ("eval_every", "eval_simulations", "keep_checkpoints", "rollout_mix_generations", "value_rollouts",
                "fast_simulations"):
        need(getattr(c, key) >= 0, key, "an integer >= 0")
    need(0 <= c.seed < 2**32, "seed", "an integer in [0, 2**32)")
    need(0 <= c.eval_seed < 2**31, "eval_seed", "an integer in [0, 2**31)")
    need(c.max_plies < 2**31, "max_plies", "an integer below 2**31")
    need(c.eval_max_plies < 2**31, "eval_max_plies", "an integer below 2**31")
    for key in ("learning_rate", "sample_reuse", "max_grad_norm"):
        v = getattr(c, key)
        need(math.isfinite(v) and v > 0, key, "a finite number > 0")
    for key in ("weight_decay", "value_loss_coef", "ownership_loss_coef", "c_puct"):
        v = getattr(c, key)
        need(math.isfinite(v) and v >= 0, key, "a finite number >= 0")
    need(c.fast_simulations < c.simulations, "fast_simulations",
         "0 (off) or fewer than `simulations` (the full search)")
    need(0.0 < c.full_search_prob <= 1.0, "full_search_prob", "a number in (0, 1]")
    need(0.0 <= c.root_value_mix <= 1.0, "root_value_mix", "a number in [0, 1]")
    need(0.0 <= c.rollout_mix <= 1.0, "rollout_mix", "a number in [0, 1]")
    need(0.0 <= c.rollout_value_mix <= 1.0 - c.root_value_mix, "rollout_value_mix",
         "a number in [0, 1 - root_value_mix] (the value target's shares add up to 1)")
    need(c.rollout_value_mix == 0.0 or c.value_rollouts >= 1, "rollout_value_mix",
         "0 unless value_rollouts >= 1 (the playouts it mixes in)")
    need(c.eval_games % 2 == 0, "eval_games", "an even number (each setup is played with both colours)")
    need(c.init_from == "" or is_file(c.init_from), "init_from", '"" or the path of an existing checkpoint file')
    need(bool(re.fullmatch(r"[A-Za-z0-9_.-]+", c.run_name)), "run_name", "letters, digits, '_', '.', '-'")
    for spec in c.eval_opponents:
        if not isinstance(spec, str) or not _LADDER_RE.match(spec):
            raise ConfigError(f"config key 'eval_opponents' has {spec!r}; allowed agent specs: random, greedy, mcts:N")
