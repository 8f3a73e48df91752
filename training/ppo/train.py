"""Self-play PPO for Colony: `colony-train --config configs/quickstart.yaml` (or `python -m colony_training.ppo.train`).

One network plays both colours in the canonical view (the mover always sees its own edges
North and South). Each iteration:

1. **Rollout**: `rollout_steps` steps of `num_envs` games in the vector env, one batched forward
   pass per step. In a `pool_share` of the games one colour is played by a frozen past snapshot
   (the opponent pool); those moves are not trained on. With `augment_symmetry` every decision
   is shown to the network in a random one of the 4 colour-preserving board symmetries.
2. **Advantages**: per-colour GAE (`loss.per_player_gae`): each step's target uses that colour's
   next own decision, and terminal rewards reach both colours' last steps. Potential-based
   shaping (`shaping.py`) enters as V + Phi. With `heuristic_prior` the greedy heuristic's
   action scores are part of the policy's input (`teacher.py`); with `teacher_coef` a decaying
   kickstarting loss pulls the policy towards the greedy agent's choices.
3. **Update**: `update_epochs` epochs of minibatch PPO (clipped policy and value losses, entropy
   bonus, gradient clipping), with a linearly annealed learning rate.
4. **Bookkeeping**: metrics to TensorBoard and `metrics.csv`, evaluation against agent specs
   (`random`, `greedy`, `mcts:N`) into `eval.csv` at step 0 and periodically, atomic checkpoints,
   pool snapshots.

A run directory holds `config.yaml`, `metrics.csv`, `eval.csv`, TensorBoard events,
`checkpoints/latest.pt` (+ numbered ones) and `plots/` (`colony-plot RUN_DIR`).
`--resume RUN_DIR` continues from `checkpoints/latest.pt` (network, optimizer, pool, counters,
generators; the games in flight are not saved, so fresh games start).

Crash safety (`training/runlog.py`): a run may be killed at any instant. Checkpoints and
`config.yaml` are written atomically; each checkpoint records how many rows the CSV logs had,
and a resume first cuts the logs and TensorBoard events back to that point (the iterations
after it are run again, so they appear exactly once) and removes temporary files of an
interrupted write. Everything a resume depends on (the checkpoint, the architecture, the
settings) is checked before anything in the run directory is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from colony_env.constants import N_CELLS
from colony_env.engine import GameState, apply_action
from colony_env.frame import to_frame
from colony_env.observation import OBS_CHANNELS
from colony_env.symmetry import IDENTITY
from colony_env.vector import MAX_LEGAL

from ..augment import AUG_SYMS, augment, augment_cells
from ..checkpoint import CheckpointError, build_model, read_checkpoint, save_checkpoint
from ..cli import console_script, report_error
from ..config import ConfigError, config_help, resolve_device, resolve_precision
from ..eval.ladder import evaluate_model
from ..model import MaskedCategorical, PolicyValueNet, legal_slots
from ..ownership import final_ownership, mover_views
from ..runlog import RunDir, RunDirError, csv_data_rows, new_run_dir
from ..teacher import greedy_action_features, greedy_best_slots, teacher_weight
from . import parallel
from .config import TrainConfig, load_config, split_overrides
from .lookahead import kept_slots
from .loss import LossInfo, per_player_gae, ppo_loss
from .opponents import OpponentPool
from .shaping import mover_potential

METRIC_FIELDS = (
    "iteration", "global_step", "wall_time", "steps_per_s", "learning_rate", "policy_loss", "value_loss",
    "entropy", "approx_kl", "clip_frac", "teacher_ce", "teacher_weight", "explained_var", "games", "mean_game_plies", "pool_games",
    "pool_win_rate", "pool_size", "greedy_games", "greedy_win_rate", "lookahead_ce", "ownership_loss",
)  # fmt: skip
EVAL_FIELDS = ("iteration", "global_step", "opponent", "games", "win_rate", "draw_rate", "loss_rate", "seconds")
LOGS = {"metrics.csv": METRIC_FIELDS, "eval.csv": EVAL_FIELDS}  # rewound to the checkpoint on resume


def new_learner(cfg: TrainConfig, device: torch.device, planes: int = OBS_CHANNELS
                ) -> tuple[PolicyValueNet, torch.optim.Optimizer]:
    """The config's network on `device`, reading the first `planes` observation planes, in the config's precision,
    and its Adam optimizer (fresh weights)."""
    model = PolicyValueNet(planes, cfg.channels, cfg.blocks, cfg.heuristic_prior, cfg.policy_target_features,
                           ownership_head=cfg.ownership_coef > 0, global_pool=cfg.global_pool,
                           count_inputs=cfg.count_inputs).to(device)
    model.bf16_trunk = resolve_precision(cfg.precision, device)
    return model, torch.optim.Adam(model.parameters(), lr=cfg.learning_rate, eps=1e-5)


def make_env(cfg: TrainConfig, seed: int, num_envs: int | None = None):
    """The batched vector env (colony_env.vector, canonical frame, auto-reset) of `num_envs` (default: the config's) games."""
    from colony_env.vector import ColonyVectorEnv

    return ColonyVectorEnv(num_envs or cfg.num_envs, seed=seed, max_plies=cfg.max_plies)


def candidates(v) -> tuple[np.ndarray, np.ndarray]:
    """(ids int64[N, W], valid bool[N, W]): each game's legal canonical actions, padded."""
    if getattr(v, "legal_ids", None) is not None:
        ids = v.legal_ids.astype(np.int64)
        return ids, np.arange(ids.shape[1])[None, :] < v.legal_counts[:, None]
    return legal_slots(v.mask)


# --- rollout ----------------------------------------------------------------------------------
@dataclass
class Rollout:
    """One iteration's experience, indexed [step, env]."""

    obs: torch.Tensor  # float[T, N, C, 10, 10] (as shown to the network, i.e. augmented)
    ids: torch.Tensor  # int16[T, N, MAX_LEGAL]: candidate action ids in the frame of `obs`, padded
    counts: torch.Tensor  # int64[T, N]: how many of `ids` are legal
    slots: torch.Tensor  # int64[T, N]: the chosen slot (index into `ids`)
    logp: torch.Tensor  # float[T, N]
    values: np.ndarray  # float32[T, N]
    movers: np.ndarray  # int8[T, N]
    dones: np.ndarray  # bool[T, N]
    rewards: np.ndarray  # float32[T, N, 2]
    learner: np.ndarray  # bool[T, N]: taken by the learning network (trained on)
    phi: np.ndarray  # float32[T, N]: shaping potential of the mover at step t (shaping.py)
    features: torch.Tensor | None  # float[T, N, MAX_LEGAL]: heuristic feature per slot (heuristic_prior), if on
    teacher: torch.Tensor | None  # bool[T, N, MAX_LEGAL]: the greedy teacher's best slots (teacher.py), if on
    kept: torch.Tensor | None  # bool[T, N, MAX_LEGAL]: the one-ply lookahead's kept slots (lookahead.py), if on
    ownership: np.ndarray | None  # int8[T, N, 100]: the ownership target in the frame of `obs` (ownership_coef), if on
    own_known: np.ndarray | None  # bool[T, N]: the step's game ended within the rollout, so its target is known
    bootstrap: np.ndarray  # float32[N, 2]: (V + Phi) of each colour's next decision after the last step


class OwnershipTargets:
    """The ownership targets (training/ownership.py) of one rollout's steps, filled in as their games end.

    A game's final position exists only for the step that ends it (the vector env then starts a new game in
    the slot), so each slot's steps since its game began (in this rollout) get their targets then, each in
    the frame its observation was shown in (the mover's canonical frame, then that step's symmetry). Steps of
    a game still in flight when the rollout ends stay unknown (`known` False) and carry no loss.
    """

    def __init__(self, movers: np.ndarray) -> None:
        """`movers` int8[T, N]: the rollout's own buffer of who moved at each step, read as the steps are recorded."""
        t_len, n = movers.shape
        self.movers = movers
        self.targets = np.zeros((t_len, n, N_CELLS), np.int8)
        self.known = np.zeros((t_len, n), bool)
        self.syms = np.zeros((t_len, n), np.int64)
        self.first = np.zeros(n, np.int64)  # each slot's first step of its game in flight

    def record(self, t: int, syms: np.ndarray, done: np.ndarray, before: np.ndarray, actions: np.ndarray) -> None:
        """Step `t` (its mover already in `movers[t]`) was shown in `syms`; where it ended the game (`done`), label the
        game's steps from `before` (the packed states before the step) and the canonical `actions`."""
        self.syms[t] = syms
        for i in np.flatnonzero(done):
            state = GameState.from_array(before[i])
            final = apply_action(state, int(to_frame(int(actions[i]), int(state.to_move) == 1)))
            steps = np.arange(self.first[i], t + 1)
            views = mover_views(final_ownership(final), self.movers[steps, i])
            self.targets[steps, i] = augment_cells(views, self.syms[steps, i])
            self.known[steps, i] = True
            self.first[i] = t + 1


@dataclass
class GameStats:
    """Finished-game counters of one iteration."""

    games: int = 0
    plies: int = 0
    pool_games: int = 0
    pool_score: float = 0.0  # wins + draws/2 of the learner against pool snapshots
    greedy_games: int = 0
    greedy_score: float = 0.0  # wins + draws/2 of the learner against the greedy agent


class SelfPlay:
    """Plays the vector env with the learner (and pool snapshots, and the greedy agent) and records rollouts.

    Envs [0, n_pool) are pool games, [n_pool, n_pool + n_greedy) games against the greedy
    agent, the rest pure self-play. `num_envs` (default: the config's) is less than the
    config's when a helper process plays the other games (`parallel.py`).
    """

    def __init__(self, cfg: TrainConfig, model: PolicyValueNet, device: torch.device, seed: int,
                 num_envs: int | None = None) -> None:
        self.cfg = cfg
        self.model = model
        self.device = device
        self.num_envs = n = num_envs or cfg.num_envs
        self.env = make_env(cfg, seed, n)
        self.vobs = self.env.reset(seed=seed)
        self.rng = np.random.default_rng(seed + 1)
        self.torch_gen = torch.Generator(device="cpu").manual_seed(seed + 2)
        self.n_pool = int(round(cfg.pool_share * n))
        self.n_greedy = min(n - self.n_pool, int(round(cfg.greedy_share * n)))
        self.greedy_envs = np.arange(self.n_pool, self.n_pool + self.n_greedy)
        # In pool games the learner always keeps the same colour, so a game never changes sides.
        self.learner_colour = np.arange(n) % 2
        self.plies = np.zeros(n, np.int64)  # length of the game in flight per env
        self.opponent = model.blank_copy()
        self.opponent = self.opponent.to(device).eval()

    @torch.no_grad()
    def _policy(self, net: PolicyValueNet, obs: np.ndarray, ids: np.ndarray, valid: np.ndarray,
                feats: np.ndarray | None):
        """(sampled slots, their log-probs, values) for a batch of positions."""
        f = None if feats is None else torch.from_numpy(feats).to(self.device)
        mask = torch.from_numpy(valid)
        logits, value = net(torch.from_numpy(obs).to(self.device), torch.from_numpy(ids).to(self.device), f,
                            valid=mask.to(self.device))
        dist = MaskedCategorical(logits.cpu(), mask)
        slots = dist.sample(self.torch_gen)
        return slots, dist.log_prob(slots), value.cpu()

    def collect(self, pool: OpponentPool, stats: GameStats, teacher: bool = False) -> Rollout:
        cfg, n, t_len = self.cfg, self.num_envs, self.cfg.rollout_steps
        obs_buf = torch.zeros((t_len, n, *self.vobs.obs.shape[1:]))
        ids_buf = torch.zeros((t_len, n, MAX_LEGAL), dtype=torch.int16)
        count_buf = torch.zeros((t_len, n), dtype=torch.long)
        slot_buf = torch.zeros((t_len, n), dtype=torch.long)
        logp_buf = torch.zeros((t_len, n))
        values = np.zeros((t_len, n), np.float32)
        movers = np.zeros((t_len, n), np.int8)
        dones = np.zeros((t_len, n), bool)
        rewards = np.zeros((t_len, n, 2), np.float32)
        learner = np.ones((t_len, n), bool)
        phi = np.zeros((t_len, n), np.float32)
        teacher_buf = torch.zeros((t_len, n, MAX_LEGAL), dtype=torch.bool) if teacher else None
        kept_buf = torch.zeros((t_len, n, MAX_LEGAL), dtype=torch.bool) if cfg.lookahead_coef > 0 else None
        feat_buf = torch.zeros((t_len, n, MAX_LEGAL)) if self.model.heuristic_prior else None
        own = OwnershipTargets(movers) if cfg.ownership_coef > 0 else None
        use_pool = self.n_pool > 0 and len(pool) > 0
        if use_pool:
            pool.sample_into(self.opponent, self.rng)
        self.model.eval()
        rows = np.arange(n)
        for t in range(t_len):
            v = self.vobs
            ids, valid = candidates(v)  # canonical frame
            phi[t] = mover_potential(self.env.states, cfg.shaping_scale)
            syms = self.rng.choice(AUG_SYMS, size=n) if cfg.augment_symmetry else np.full(n, IDENTITY)
            obs, net_ids = augment(v.obs, ids, syms) if cfg.augment_symmetry else (v.obs, ids)
            feats = None
            if feat_buf is not None:
                feats = greedy_action_features(np.ascontiguousarray(self.env.states), rows, ids.shape[1])
            slots, logp, value = self._policy(self.model, obs, net_ids, valid, feats)
            if use_pool:
                opp = np.zeros(n, bool)
                opp[: self.n_pool] = v.to_move[: self.n_pool] != self.learner_colour[: self.n_pool]
                if opp.any():
                    idx = np.flatnonzero(opp)
                    opp_slots, _, _ = self._policy(self.opponent, obs[idx], net_ids[idx], valid[idx],
                                                   None if feats is None else feats[idx])
                    slots[idx] = opp_slots
                    learner[t, idx] = False
            width = ids.shape[1]
            if self.n_greedy:
                self._greedy_replies(v, width, slots, learner[t])
            if feat_buf is not None:
                feat_buf[t, :, :width] = torch.from_numpy(feats)
            if teacher_buf is not None:
                rows_learning = np.flatnonzero(learner[t]).astype(np.int64)
                best = greedy_best_slots(np.ascontiguousarray(self.env.states), rows_learning, width)
                teacher_buf[t, :, :width] = torch.from_numpy(best)
            if kept_buf is not None:  # one-ply targets at a share of the learner's decisions, in the frame of `obs`
                chosen = np.flatnonzero(learner[t] & (self.rng.random(n) < cfg.lookahead_share))
                if len(chosen):
                    kept = kept_slots(self.model, self.env.states, chosen, ids, valid.sum(axis=1),
                                      cfg.shaping_scale, cfg.lookahead_margin, self.device)
                    kept_buf[t, chosen, :width] = torch.from_numpy(kept)
            obs_buf[t] = torch.from_numpy(obs)
            ids_buf[t, :, :width] = torch.from_numpy(net_ids.astype(np.int16))
            count_buf[t] = torch.from_numpy(valid.sum(axis=1))
            slot_buf[t] = slots
            logp_buf[t] = logp
            values[t] = value.numpy()
            movers[t] = v.to_move
            actions = ids[rows, slots.numpy()]
            before = self.env.states.copy() if own is not None else None
            self.vobs, rew, done, _reasons = self.env.step(actions)
            if own is not None:
                own.record(t, syms, done, before, actions)
            rewards[t] = rew
            dones[t] = done
            self._count_games(done, rew, use_pool, stats)
        v = self.vobs
        with torch.no_grad():
            last_value = self.model.value(torch.from_numpy(v.obs).to(self.device))
        last_value = last_value.cpu().numpy() + mover_potential(self.env.states, cfg.shaping_scale)
        bootstrap = np.empty((n, 2), np.float32)
        mover = v.to_move.astype(np.int64)
        bootstrap[rows, mover] = last_value
        bootstrap[rows, 1 - mover] = -last_value  # zero-sum: the other colour's value of this state
        return Rollout(obs_buf, ids_buf, count_buf, slot_buf, logp_buf, values, movers, dones, rewards, learner,
                       phi, feat_buf, teacher_buf, kept_buf, None if own is None else own.targets,
                       None if own is None else own.known, bootstrap)

    def _greedy_replies(self, v, width: int, slots: torch.Tensor, learner: np.ndarray) -> None:
        """The greedy agent's moves (uniform among its best-scoring ones) where it is to move; not trained on."""
        g = self.greedy_envs[v.to_move[self.greedy_envs] != self.learner_colour[self.greedy_envs]]
        if not len(g):
            return
        best = greedy_best_slots(np.ascontiguousarray(self.env.states), g.astype(np.int64), width)
        for i in g:
            choices = np.flatnonzero(best[i])
            slots[i] = int(choices[self.rng.integers(len(choices))])
        learner[g] = False

    def _count_games(self, done: np.ndarray, rew: np.ndarray, use_pool: bool, stats: GameStats) -> None:
        self.plies += 1
        if not done.any():
            return
        idx = np.flatnonzero(done)
        stats.games += len(idx)
        stats.plies += int(self.plies[idx].sum())
        self.plies[idx] = 0
        if use_pool:
            pool_idx = idx[idx < self.n_pool]
            stats.pool_games += len(pool_idx)
            stats.pool_score += self._learner_points(rew, pool_idx)
        g_idx = idx[(idx >= self.n_pool) & (idx < self.n_pool + self.n_greedy)]
        stats.greedy_games += len(g_idx)
        stats.greedy_score += self._learner_points(rew, g_idx)

    def _learner_points(self, rew: np.ndarray, rows: np.ndarray) -> float:
        """Wins + draws/2 of the learner in the finished games `rows` (rewards are +-1 / 0)."""
        return float(((rew[rows, self.learner_colour[rows]] + 1.0) / 2.0).sum())


# --- update -----------------------------------------------------------------------------------
def flat_batch(ro: Rollout, advantages: np.ndarray, returns: np.ndarray, teacher_weight: float = 0.0) -> dict[str, Any]:
    """The learner's steps of a rollout as flat tensors [B, ...] (ids/features cut to the widest legal count)."""
    keep = torch.from_numpy(ro.learner.reshape(-1))
    b_counts = ro.counts.reshape(-1)[keep]
    width = max(1, int(b_counts.max())) if len(b_counts) else 1
    batch = {
        "obs": ro.obs.reshape(-1, *ro.obs.shape[2:])[keep],
        "ids": ro.ids.reshape(-1, ro.ids.shape[-1])[keep][:, :width].long(),
        "valid": torch.arange(width)[None, :] < b_counts[:, None],
        "slots": ro.slots.reshape(-1)[keep],
        "feats": None if ro.features is None else ro.features.reshape(-1, ro.features.shape[-1])[keep][:, :width],
        "teacher": None,
        "kept": None if ro.kept is None else ro.kept.reshape(-1, ro.kept.shape[-1])[keep][:, :width],
        "logp": ro.logp.reshape(-1)[keep],
        "values": torch.from_numpy(ro.values.reshape(-1))[keep],
        "adv": torch.from_numpy(advantages.reshape(-1))[keep],
        "ret": torch.from_numpy(returns.reshape(-1))[keep],
        "own": None if ro.ownership is None else torch.from_numpy(ro.ownership.reshape(-1, N_CELLS))[keep],
        "own_known": None if ro.own_known is None else torch.from_numpy(ro.own_known.reshape(-1))[keep],
    }
    if ro.teacher is not None and teacher_weight > 0:
        batch["teacher"] = ro.teacher.reshape(-1, ro.teacher.shape[-1])[keep][:, :width]
    return batch


def minibatch_loss(cfg: TrainConfig, model: PolicyValueNet, batch: dict[str, Any], i: torch.Tensor,
                   device: torch.device, teacher_weight: float, adv: torch.Tensor | None = None,
                   norm_adv: bool | None = None) -> tuple[torch.Tensor, LossInfo]:
    """`ppo_loss` on the rows `i` of a `flat_batch` (advantages `adv` in place of the batch's, if given)."""
    def rows(key: str) -> torch.Tensor | None:
        return None if batch[key] is None else batch[key][i].to(device)

    return ppo_loss(
        model, rows("obs"), rows("ids"), rows("valid"), rows("slots"), rows("logp"), rows("values"),
        rows("adv") if adv is None else adv.to(device), rows("ret"),
        cfg.clip_coef, cfg.clip_vloss, cfg.ent_coef, cfg.vf_coef, cfg.norm_adv if norm_adv is None else norm_adv,
        rows("teacher"), teacher_weight, rows("feats"), rows("kept"), cfg.lookahead_coef, cfg.lookahead_share,
        rows("own"), rows("own_known"), cfg.ownership_coef,
    )  # fmt: skip


def ppo_update(cfg: TrainConfig, model: PolicyValueNet, optimizer: torch.optim.Optimizer, ro: Rollout,
               advantages: np.ndarray, returns: np.ndarray, device: torch.device,
               rng: np.random.Generator, teacher_weight: float = 0.0, helper: Any = None) -> tuple[LossInfo, float]:
    """Minibatch epochs of PPO on the learner's steps; returns the last minibatch's losses and the explained variance.

    With a `helper` (`parallel.Helper`, a second process) each minibatch is cut in two halves whose
    gradients are computed at the same time, one here and one there, and summed before the step:
    the same update as one process computes (up to float rounding), with the advantages normalised
    over the whole minibatch first and each half's loss weighted by its share of the minibatch.
    """
    batch = flat_batch(ro, advantages, returns, teacher_weight)
    size = len(batch["slots"])
    mb = max(1, size // cfg.num_minibatches)
    if helper is not None:
        helper.set_batch(batch)
    model.train()
    info = LossInfo(0.0, 0.0, 0.0, 0.0, 0.0)
    for _epoch in range(cfg.update_epochs):
        order = rng.permutation(size)
        for start in range(0, size - mb + 1, mb):
            i = torch.from_numpy(order[start : start + mb])
            optimizer.zero_grad(set_to_none=True)
            if helper is None or mb < 2:
                loss, info = minibatch_loss(cfg, model, batch, i, device, teacher_weight)
                loss.backward()
            else:
                adv = batch["adv"][i]
                if cfg.norm_adv:  # the whole minibatch's statistics, as ppo_loss would use them
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                cut = (mb + 1) // 2
                helper.start_grad(model, i[cut:], adv[cut:], teacher_weight, (mb - cut) / mb)
                loss, mine = minibatch_loss(cfg, model, batch, i[:cut], device, teacher_weight, adv[:cut], False)
                (loss * (cut / mb)).backward()
                info = helper.finish_grad(model, mine, cut / mb)
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
        if cfg.target_kl > 0 and info.approx_kl > cfg.target_kl:
            break
    b_ret, b_values = batch["ret"], batch["values"]
    var = float(b_ret.var()) if size > 1 else 0.0
    explained = float("nan") if var == 0 else 1.0 - float((b_ret - b_values).var()) / var
    return info, explained


HELPER_KIT = (SelfPlay, GameStats, Rollout, minibatch_loss)
"""What a `parallel.Helper` process runs (given to it, so that parallel.py need not import this module)."""


# --- run directory ----------------------------------------------------------------------------
def log_metrics(log: RunDir, row: dict[str, Any]) -> None:
    """One iteration's row: `metrics.csv` and TensorBoard `train/*` at its global step."""
    log.log("metrics.csv", [row])
    log.scalars("train", {k: v for k, v in row.items() if k not in ("iteration", "global_step")}, row["global_step"])


def log_evaluation(log: RunDir, iteration: int, step: int, results: dict[str, dict[str, float]]) -> None:
    """One evaluation: a row per opponent in `eval.csv`, TensorBoard `eval/win_rate_vs_<spec>`."""
    log.log("eval.csv", [{"iteration": iteration, "global_step": step, "opponent": spec, **r} for spec, r in results.items()])
    log.scalars("eval", {f"win_rate_vs_{spec}": r["win_rate"] for spec, r in results.items()}, step)


def hardware() -> str:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"{platform.processor() or platform.machine()} ({torch.get_num_threads()} torch threads)"


def _prune(ckpt_dir: Path, keep: int) -> None:
    numbered = sorted(ckpt_dir.glob("step_*.pt"))
    for old in numbered[: max(0, len(numbered) - keep)]:
        old.unlink(missing_ok=True)


_ARCH_KEYS = {"channels": "channels", "blocks": "blocks", "heuristic_prior": "heuristic_prior",
              "target_features": "policy_target_features"}  # architecture field -> config key


_UNTRAINED_HEADS = {"ownership_head": "ownership."}  # optional heads (PPO trains one with ownership_coef) -> weight prefix


def _architecture_diff(model: PolicyValueNet, data: dict[str, Any], ignore: tuple[str, ...] = ()) -> str:
    """'' if the checkpoint's network has `model`'s architecture (apart from the fields in `ignore`), else what
    differs, in config keys."""
    want = {k: v for k, v in model.architecture().items() if k not in ignore}
    have = {k: int(data["architecture"].get(k, 0)) for k in want}  # older files lack the optional flags
    return ", ".join(f"{_ARCH_KEYS.get(k, k)}: {have[k]!r} there, {v!r} here" for k, v in want.items() if have[k] != v)


def _start_planes(start: dict[str, Any] | None) -> int:
    """The observation planes the learner reads: those of the network the run continues (`--resume`, `init_from`),
    so that a network trained before planes were appended keeps reading the ones it knew; else all of them."""
    arch = start.get("architecture") if start else None
    planes = arch.get("in_channels") if isinstance(arch, dict) else None
    return planes if isinstance(planes, int) and 1 <= planes <= OBS_CHANNELS else OBS_CHANNELS


def _load_initial_weights(model: PolicyValueNet, path: str, data: dict[str, Any]) -> None:
    """`init_from`: the weights of `data`, the checkpoint read from `path`, of the same architecture (optimizer and
    counters start fresh). A colony-zero network's ownership head is left out unless this run trains one
    (`ownership_coef`); a run that trains one from a file without it starts the head fresh."""
    diff = _architecture_diff(model, data, ignore=tuple(_UNTRAINED_HEADS))
    if diff:
        raise ConfigError(f"init_from {path!r} has another architecture ({diff}); set channels, blocks, "
                          "heuristic_prior, policy_target_features, global_pool and count_inputs to match it")
    weights = build_model(data).state_dict()
    heads = tuple(prefix for flag, prefix in _UNTRAINED_HEADS.items() if not getattr(model, flag))
    weights = {k: v for k, v in weights.items() if not k.startswith(heads)}  # a head this run has no loss for
    fresh = {k: v for k, v in model.state_dict().items() if k not in weights}  # a head this run trains, new here
    assert all(k.startswith(tuple(_UNTRAINED_HEADS.values())) for k in fresh), sorted(fresh)
    model.load_state_dict({**weights, **fresh})


def _read_resume_checkpoint(run_dir: Path) -> dict[str, Any]:
    """`latest.pt` of a run, with a hint to the numbered checkpoints when it is unreadable."""
    try:
        return read_checkpoint(run_dir / "checkpoints" / "latest.pt")
    except CheckpointError as e:
        numbered = sorted((run_dir / "checkpoints").glob("step_*.pt"))
        if not numbered:
            raise
        raise CheckpointError(f"{e}; to resume from the newest numbered checkpoint (optimizer state restarts), copy "
                              f"{numbered[-1]} over checkpoints/latest.pt") from None


def _check_resumable(cfg: TrainConfig, model: PolicyValueNet, data: dict[str, Any], run_dir: Path) -> None:
    """Refuse settings that the checkpoint cannot honour, before anything is written."""
    diff = _architecture_diff(model, data)
    if diff:
        raise ConfigError(f"--resume {str(run_dir)!r}: the checkpoint's network cannot change ({diff}); drop those "
                          "overrides, or start a new run from it with init_from")
    done = data["meta"].get("global_step", 0)
    if isinstance(done, int) and cfg.total_steps < done:
        raise ConfigError(f"--resume {str(run_dir)!r}: total_steps {cfg.total_steps} is below the {done} steps this run "
                          "has already done; give a larger total_steps (or none)")


# --- the loop ---------------------------------------------------------------------------------
def train(cfg: TrainConfig, run_dir: Path | None = None, resume: bool = False, progress: bool = True) -> Path:
    """Run (or resume) a training run; returns the run directory.

    Everything that can refuse the run (device, checkpoint, architecture, init_from) is
    checked before the run directory is created or touched, so a refused run writes nothing.
    """
    if resume and run_dir is None:
        raise ConfigError("resume needs the run directory")
    torch.set_num_threads(cfg.torch_threads)
    device = resolve_device(cfg.device)

    torch.manual_seed(cfg.seed)
    # the checkpoint the run continues from, read once: its planes size the learner, its weights fill it
    start = _read_resume_checkpoint(run_dir) if resume else read_checkpoint(cfg.init_from) if cfg.init_from else None
    model, optimizer = new_learner(cfg, device, _start_planes(start))
    pool = OpponentPool(cfg.pool_size)
    iteration, global_step, wall_before = 0, 0, 0.0
    resumed_meta: dict[str, Any] = {}
    if resume:
        data = start
        _check_resumable(cfg, model, data, run_dir)
        model.load_state_dict(build_model(data).state_dict())
        if "optimizer" in data:
            try:
                optimizer.load_state_dict(data["optimizer"])
            except (ValueError, KeyError, TypeError, RuntimeError) as e:
                raise CheckpointError(f"the optimizer state in {run_dir / 'checkpoints' / 'latest.pt'} does not fit the network: {e}") from None
        pool = OpponentPool.from_state(data.get("pool", {}), cfg.pool_size)
        resumed_meta = data["meta"]
        iteration = int(resumed_meta["iteration"])
        global_step = int(resumed_meta["global_step"])
        wall_before = float(resumed_meta.get("wall_time_s", 0.0))
    else:
        if cfg.init_from:
            _load_initial_weights(model, cfg.init_from, start)
        pool.add(model, 0)  # the starting network: an opponent to measure early progress against

    # --- the first write to the run directory: every refusal above left the disk untouched.
    created = run_dir is None or not run_dir.exists()
    if run_dir is None:
        run_dir = new_run_dir(cfg.out_dir, cfg.run_name)
    ckpt_dir = run_dir / "checkpoints"
    # Rows and events after the checkpoint are about to be produced again: cut them (a fresh
    # start in an old directory cuts them all). Older checkpoints without row counts fall back
    # to the iteration column.
    files = RunDir(run_dir, LOGS)
    files.rewind(iteration if resume else None, global_step, resumed_meta.get("log_rows", {}))
    files.write_config(cfg)
    try:
        return _run(cfg, run_dir, resume, progress, device, model, optimizer, pool, iteration, global_step,
                    wall_before, resumed_meta)
    except BaseException:
        # A run that failed before logging anything leaves no empty directory behind.
        if created and csv_data_rows(run_dir / "metrics.csv") == 0 and not (ckpt_dir / "latest.pt").exists():
            import shutil

            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _run(cfg: TrainConfig, run_dir: Path, resume: bool, progress: bool, device: torch.device, model: PolicyValueNet,
         optimizer: torch.optim.Optimizer, pool: OpponentPool, iteration: int, global_step: int, wall_before: float,
         resumed_meta: dict[str, Any]) -> Path:
    """The training loop of `train`, once the run directory is ready."""
    ckpt_dir = run_dir / "checkpoints"
    start_iteration = iteration
    # A resumed run gets fresh games and generators derived from where it stopped.
    play_seed = cfg.seed + 1_000_003 * iteration
    helper = parallel.Helper(cfg, model, seed=play_seed, kit=HELPER_KIT) if parallel.wanted(cfg, device) else None
    play = SelfPlay(cfg, model, device, seed=play_seed, num_envs=helper.n_here if helper else None)
    update_rng = np.random.default_rng(cfg.seed + 7 + iteration)
    log = RunDir(run_dir, LOGS)
    t_start = time.perf_counter()
    bar = tqdm(total=cfg.num_iterations * cfg.batch_size, initial=global_step, unit="step", disable=not progress,
               dynamic_ncols=True, desc=run_dir.name)
    last_eval: dict[str, float] = {}
    if cfg.eval_every and not resume:  # the starting network: the point the evaluation curves start from
        res = evaluate_model(model, cfg.eval_opponents, cfg.eval_games, cfg.seed, cfg.max_plies)
        log_evaluation(log, iteration, global_step, res)
        last_eval = {spec: r["win_rate"] for spec, r in res.items()}

    def checkpoint(final: bool = False, final_eval_done: bool = False) -> None:
        log.flush()  # TensorBoard writes from a queue: its events up to here reach the disk before the checkpoint
        meta = {
            "iteration": iteration, "global_step": global_step,
            "wall_time_s": wall_before + time.perf_counter() - t_start, "hardware": hardware(),
            "torch": str(torch.__version__), "device": str(device), "last_eval": dict(last_eval), "final": final,
            "final_eval_done": final_eval_done, "log_rows": log.log_positions(),
        }  # fmt: skip
        extra = {"optimizer": optimizer.state_dict(), "pool": pool.state()}
        save_checkpoint(ckpt_dir / "latest.pt", model, cfg.to_dict(), meta, extra)
        save_checkpoint(ckpt_dir / f"step_{global_step:09d}.pt", model, cfg.to_dict(), meta)
        _prune(ckpt_dir, cfg.keep_checkpoints)

    try:
        limit_s = 60.0 * cfg.time_limit_minutes

        def used() -> float:  # the share of the budget used: steps, or wall time when time_limit_minutes is set
            done = iteration / cfg.num_iterations
            if limit_s > 0:
                done = max(done, (wall_before + time.perf_counter() - t_start) / limit_s)
            return min(1.0, done)

        while iteration < cfg.num_iterations and used() < 1.0:
            t_iter = time.perf_counter()
            if cfg.anneal_lr:
                frac = 1.0 - used()
                optimizer.param_groups[0]["lr"] = frac * cfg.learning_rate
            stats = GameStats()
            kick = teacher_weight(cfg.teacher_coef, global_step, cfg.teacher_steps)
            ro = parallel.collect(play, helper, pool, stats, teacher=kick > 0)
            # Shaping (shaping.py) enters GAE as V + Phi; the value head keeps learning V alone.
            adv, ret_aug = per_player_gae(ro.values + ro.phi, ro.movers, ro.dones, ro.rewards, ro.bootstrap,
                                          cfg.gamma, cfg.gae_lambda)
            ret = ret_aug - ro.phi
            info, explained = ppo_update(cfg, model, optimizer, ro, adv, ret, device, update_rng, kick, helper)
            iteration += 1
            global_step += cfg.batch_size
            if iteration % cfg.snapshot_every == 0:
                pool.add(model, global_step)
            sps = cfg.batch_size / (time.perf_counter() - t_iter)
            row = {
                "iteration": iteration, "global_step": global_step,
                "wall_time": round(wall_before + time.perf_counter() - t_start, 2), "steps_per_s": round(sps, 1),
                "learning_rate": optimizer.param_groups[0]["lr"], **dataclasses.asdict(info), "teacher_weight": kick,
                "explained_var": explained, "games": stats.games,
                "mean_game_plies": (stats.plies / stats.games) if stats.games else float("nan"),
                "pool_games": stats.pool_games,
                "pool_win_rate": (stats.pool_score / stats.pool_games) if stats.pool_games else float("nan"),
                "pool_size": len(pool), "greedy_games": stats.greedy_games,
                "greedy_win_rate": (stats.greedy_score / stats.greedy_games) if stats.greedy_games else float("nan"),
            }  # fmt: skip
            log_metrics(log, row)
            done = iteration >= cfg.num_iterations or used() >= 1.0
            if (cfg.eval_every and iteration % cfg.eval_every == 0) and not done:
                res = evaluate_model(model, cfg.eval_opponents, cfg.eval_games, cfg.seed + iteration, cfg.max_plies)
                log_evaluation(log, iteration, global_step, res)
                last_eval = {spec: r["win_rate"] for spec, r in res.items()}
            if iteration % cfg.checkpoint_every == 0 or done:
                checkpoint(final=done)
            bar.update(cfg.batch_size)
            post = {"sps": f"{sps:.0f}", "pl": f"{info.policy_loss:.3f}", "vl": f"{info.value_loss:.3f}",
                    "ent": f"{info.entropy:.2f}"}
            if stats.pool_games:
                post["pool"] = f"{row['pool_win_rate']:.2f}"
            if stats.greedy_games:
                post["greedy"] = f"{row['greedy_win_rate']:.2f}"
            post.update({f"vs_{k}": f"{v:.2f}" for k, v in last_eval.items()})
            bar.set_postfix(post, refresh=False)
        bar.close()
        # A resume of a finished run does not play (and log) its final evaluation twice.
        already_done = bool(resumed_meta.get("final_eval_done")) and iteration == start_iteration
        if cfg.final_eval_games and not already_done:
            res = evaluate_model(model, cfg.eval_opponents, cfg.final_eval_games, cfg.seed + 10_000_019, cfg.max_plies)
            log_evaluation(log, iteration, global_step, res)
            last_eval = {spec: r["win_rate"] for spec, r in res.items()}
            checkpoint(final=True, final_eval_done=True)
            for spec, r in res.items():
                print(f"final evaluation vs {spec}: win {r['win_rate']:.3f} draw {r['draw_rate']:.3f} "
                      f"loss {r['loss_rate']:.3f} over {r['games']} games", flush=True)
    finally:
        if helper is not None:
            helper.close()
        log.close()
    try:
        from ..eval.plot import plot_run

        plot_run(run_dir)
    except Exception as e:  # plotting must never lose a finished run
        print(f"warning: plots not written: {e}", file=sys.stderr)
    return run_dir


# --- CLI --------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="colony-train",
        description="Self-play PPO for Colony. Any config key can be overridden: --num-envs 16 --total-steps 1e5.",
        epilog=config_help(TrainConfig),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="YAML config (configs/quickstart.yaml, configs/selfplay_ppo.yaml)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a run from RUN_DIR/checkpoints/latest.pt")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), help="where the network runs (default: config)")
    p.add_argument("--run-dir", help="write the run here instead of <out_dir>/<run_name>-<timestamp>")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    return p


@console_script
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        overrides = split_overrides(rest)
        if args.device:
            overrides["device"] = args.device
        if args.resume:
            run_dir = Path(args.resume)
            if not (run_dir / "config.yaml").is_file():
                raise ConfigError(f"--resume {str(run_dir)!r}: no config.yaml there (not a run directory)")
            if not (run_dir / "checkpoints" / "latest.pt").is_file():
                raise ConfigError(f"--resume {str(run_dir)!r}: no checkpoints/latest.pt to resume from")
            cfg = load_config(run_dir / "config.yaml", overrides)
            out = train(cfg, run_dir=run_dir, resume=True, progress=not args.no_progress)
        else:
            if not args.config:
                raise ConfigError("give --config FILE (e.g. configs/quickstart.yaml) or --resume RUN_DIR")
            cfg = load_config(args.config, overrides)
            run_dir = Path(args.run_dir) if args.run_dir else None
            if run_dir is not None and (run_dir / "checkpoints" / "latest.pt").exists():
                raise ConfigError(f"--run-dir {str(run_dir)!r} already holds a run; use --resume to continue it")
            out = train(cfg, run_dir=run_dir, resume=False, progress=not args.no_progress)
    except (ConfigError, CheckpointError, RunDirError) as e:
        return report_error("colony-train", str(e))
    except MemoryError:
        print("colony-train: error: out of memory while setting up or running the run; lower num_envs, rollout_steps, "
              "channels or blocks", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("colony-train: interrupted; resume with --resume RUN_DIR (from the last checkpoint)", file=sys.stderr)
        return 130
    print(f"run directory: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
