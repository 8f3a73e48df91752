"""Both cores for self-play PPO (`processes: 2`): a helper process plays half the games and computes half of each minibatch's gradient.

Why a process and not `torch_threads: 2`: the update's work comes in convolutions over 10x10
boards of a few hundred positions, a few milliseconds each, and two OpenMP threads meet at a
barrier inside every one of them; on a 2-core machine that other programs also use, one
descheduled thread stalls every barrier (measured: a minibatch's forward and backward took 4x
*longer* with two threads than with one while the machine had other work; docs/training.md,
"Both cores"). A second process meets the first only twice per minibatch and once per rollout.

What runs where, each process with `torch_threads` threads:

* **Rollout**: this process plays the first `ceil(num_envs / 2)` games and the helper the rest,
  both with the current weights at the same time; the two rollouts are joined along the env axis,
  so the update sees one rollout of `num_envs` games, as with one process. Each half has its own
  share of pool and greedy games (`pool_share`, `greedy_share`) and its own generators.
* **Update**: every minibatch is cut in two; the advantages are normalised over the whole
  minibatch first, each half's loss is weighted by its share of the minibatch, the helper's
  gradient is added to this process's before the gradient clip and the Adam step. That is the
  gradient one process would compute (up to float rounding), so the learning is the same; the
  weights are never stale (the helper reads them from shared memory before every task).

The optimizer, the pool, the checkpoints and the logs stay in this process; the helper keeps
only its games in flight (which, as with one process, a resume does not restore).
"""

from __future__ import annotations

import dataclasses
import signal
from typing import Any

import numpy as np
import torch
import torch.multiprocessing as mp
from colony_env.constants import BOARD_SIZE
from colony_env.observation import OBS_CHANNELS
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from ..model import PolicyValueNet
from .loss import LossInfo

HELPER_SEED_OFFSET = 500_009
"""The helper's games and generators are seeded `seed + HELPER_SEED_OFFSET` (this process's with `seed`)."""


class HelperError(RuntimeError):
    """The helper process failed or died; the message says why."""


def wanted(cfg: Any, device: torch.device) -> bool:
    """Whether a run with `cfg` on `device` uses a helper: `processes: 2`, a CPU device, at least 2 games."""
    return cfg.processes >= 2 and device.type == "cpu" and cfg.num_envs >= 2


class Helper:
    """The second process. Calls come in pairs (`start_*` sends the task, `finish_*` waits for its result)."""

    def __init__(self, cfg: Any, model: PolicyValueNet, seed: int, kit: tuple) -> None:
        """`kit`: train.py's (SelfPlay, GameStats, Rollout, minibatch_loss), passed in so that this module does not
        import train.py (which imports it); the helper process receives them by reference."""
        self.rollout_cls = kit[2]
        self.n_here = (cfg.num_envs + 1) // 2
        self.n_there = cfg.num_envs - self.n_here
        n_params = sum(p.numel() for p in model.parameters())
        self.params = torch.zeros(n_params).share_memory_()  # the current weights, written before each task
        self.grads = torch.zeros(n_params).share_memory_()  # the helper's half of a minibatch's gradient
        self._pool_key: tuple[int, ...] | None = None
        # Every tensor that crosses over lives in shared memory allocated once here: a tensor sent through the
        # pipe would get a new shared segment (and a file-descriptor hand-over) every time.
        self.ro_buf = _rollout_buffers(cfg, model, cfg.rollout_steps, self.n_there)
        self.batch_buf = _batch_buffers(cfg, model, cfg.batch_size)
        ctx = mp.get_context("spawn")  # no fork of a process that may hold OpenMP threads
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_helper_main, daemon=True, name="colony-ppo-helper",
                                args=(child, cfg, model.architecture(), model.bf16_trunk, seed + HELPER_SEED_OFFSET,
                                      self.n_there, self.params, self.grads, self.ro_buf, self.batch_buf, kit))
        self.proc.start()
        child.close()

    # --- rollout ------------------------------------------------------------------------------
    def start_collect(self, model: PolicyValueNet, pool: Any, teacher: bool) -> None:
        key = tuple(pool.steps)
        if key != self._pool_key:  # the pool changes every snapshot_every iterations: send it then only
            self._send(("pool", pool.state()))
            self._pool_key = key
        self._write_params(model)
        self._send(("collect", teacher))

    def finish_collect(self) -> tuple[Any, Any]:
        """(Rollout, GameStats) of the helper's games (its tensors are views of the shared buffers)."""
        arrays, stats = self._recv()
        return _rebuild_rollout(self.rollout_cls, arrays, self.ro_buf), stats

    # --- update -------------------------------------------------------------------------------
    def set_batch(self, batch: dict[str, Any]) -> None:
        """Hand over an update's flat batch: copied once into the shared batch buffers, nothing per minibatch."""
        size, width = batch["ids"].shape
        present = []
        for key, x in batch.items():
            if x is not None:
                view = self.batch_buf[key][:size]
                (view[:, :width] if key in _SLOT_KEYS else view).copy_(x)
                present.append(key)
        self._send(("batch", size, width, present))

    def start_grad(self, model: PolicyValueNet, rows: torch.Tensor, adv: torch.Tensor, teacher_weight: float,
                   weight: float) -> None:
        """The gradient of `weight` * the loss on `rows` of the batch (normalised advantages `adv`), at `model`'s weights."""
        self._write_params(model)
        self._send(("grad", rows.numpy(), adv.numpy(), teacher_weight, weight))  # small: pickled by value
        self._weight = weight

    def finish_grad(self, model: PolicyValueNet, mine: LossInfo, my_weight: float) -> LossInfo:
        """Add the helper's gradient to `model`'s; returns the minibatch's losses (the halves' weighted mean)."""
        theirs: LossInfo = self._recv()[0]
        offset = 0
        for p in model.parameters():
            g = self.grads[offset: offset + p.numel()].view_as(p)
            offset += p.numel()
            if p.grad is None:
                p.grad = g.clone()
            else:
                p.grad.add_(g)
        w = self._weight
        return LossInfo(*(my_weight * a + w * b for a, b in zip(dataclasses.astuple(mine), dataclasses.astuple(theirs))))

    # --- plumbing -----------------------------------------------------------------------------
    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.conn.send(("close",))
            except (BrokenPipeError, OSError):
                pass
            self.proc.join(timeout=10)
            if self.proc.is_alive():
                self.proc.terminate()
                self.proc.join(timeout=5)
        self.conn.close()

    def _write_params(self, model: PolicyValueNet) -> None:
        with torch.no_grad():
            self.params.copy_(parameters_to_vector(model.parameters()).detach().cpu())

    def _send(self, msg: tuple) -> None:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):
            raise HelperError(self._died()) from None

    def _recv(self) -> tuple:
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            raise HelperError(self._died()) from None
        if msg[0] == "error":
            raise HelperError(f"the PPO helper process failed: {msg[1]}")
        return msg[1:]

    def _died(self) -> str:
        self.proc.join(timeout=5)
        return (f"the PPO helper process (processes: 2) exited unexpectedly (exit code {self.proc.exitcode}); "
                "rerun with --processes 1 to train in one process")


_SLOT_KEYS = ("ids", "valid", "feats", "teacher", "kept")  # a flat batch's fields with one entry per candidate slot
_RO_TENSORS = ("obs", "ids", "counts", "slots", "logp", "features", "teacher", "kept")  # Rollout's torch fields


def _rollout_buffers(cfg: Any, model: PolicyValueNet, t_len: int, n: int) -> dict[str, torch.Tensor]:
    """Shared tensors for the helper's Rollout fields (those that are tensors), [T, n, ...]."""
    from colony_env.vector import MAX_LEGAL

    buf = {
        "obs": torch.zeros((t_len, n, OBS_CHANNELS, BOARD_SIZE, BOARD_SIZE)),  # all planes; the network reads its own
        "ids": torch.zeros((t_len, n, MAX_LEGAL), dtype=torch.int16),
        "counts": torch.zeros((t_len, n), dtype=torch.long),
        "slots": torch.zeros((t_len, n), dtype=torch.long),
        "logp": torch.zeros((t_len, n)),
        "teacher": torch.zeros((t_len, n, MAX_LEGAL), dtype=torch.bool),
        "kept": torch.zeros((t_len, n, MAX_LEGAL), dtype=torch.bool),
    }
    if model.heuristic_prior:
        buf["features"] = torch.zeros((t_len, n, MAX_LEGAL))
    return {k: v.share_memory_() for k, v in buf.items()}


def _batch_buffers(cfg: Any, model: PolicyValueNet, size: int) -> dict[str, torch.Tensor]:
    """Shared tensors for the fields of a `train.flat_batch` of up to `size` rows (full candidate width)."""
    from colony_env.vector import MAX_LEGAL

    buf = {
        "obs": torch.zeros((size, OBS_CHANNELS, BOARD_SIZE, BOARD_SIZE)),
        "ids": torch.zeros((size, MAX_LEGAL), dtype=torch.long),
        "valid": torch.zeros((size, MAX_LEGAL), dtype=torch.bool),
        "teacher": torch.zeros((size, MAX_LEGAL), dtype=torch.bool),
        "kept": torch.zeros((size, MAX_LEGAL), dtype=torch.bool),
        "own": torch.zeros((size, BOARD_SIZE * BOARD_SIZE), dtype=torch.int8),
        "own_known": torch.zeros(size, dtype=torch.bool),
        **{k: torch.zeros(size, dtype=torch.long) for k in ("slots",)},
        **{k: torch.zeros(size) for k in ("logp", "values", "adv", "ret")},
    }
    if model.heuristic_prior:
        buf["feats"] = torch.zeros((size, MAX_LEGAL))
    return {k: v.share_memory_() for k, v in buf.items()}


def _split_rollout(ro: Any, buf: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Copy a Rollout's tensor fields into the shared buffers; returns its other fields and which tensors it has."""
    out: dict[str, Any] = {"_present": []}
    for f in dataclasses.fields(ro):
        x = getattr(ro, f.name)
        if f.name in _RO_TENSORS:
            if x is not None:
                buf[f.name].copy_(x)
                out["_present"].append(f.name)
        else:
            out[f.name] = x
    return out


def _rebuild_rollout(rollout_cls: type, arrays: dict[str, Any], buf: dict[str, torch.Tensor]) -> Any:
    present = arrays["_present"]
    tensors = {k: (buf[k] if k in present else None) for k in _RO_TENSORS}
    return rollout_cls(**{k: v for k, v in arrays.items() if k != "_present"}, **tensors)


def join_rollouts(a: Any, b: Any) -> Any:
    """One Rollout of a's games then b's (the env axis: dim 1 of [T, N, ...], dim 0 of bootstrap)."""
    out = {}
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        axis = 0 if f.name == "bootstrap" else 1
        if x is None:
            out[f.name] = None
        elif isinstance(x, torch.Tensor):
            out[f.name] = torch.cat([x, y], dim=axis)
        else:
            out[f.name] = np.concatenate([x, y], axis=axis)
    return type(a)(**out)


def collect(play: Any, helper: Helper | None, pool: Any, stats: Any, teacher: bool = False) -> Any:
    """`play.collect`, joined with the helper's games played meanwhile when there is a helper; `stats` counts both."""
    if helper is None:
        return play.collect(pool, stats, teacher=teacher)
    helper.start_collect(play.model, pool, teacher)
    mine = play.collect(pool, stats, teacher=teacher)
    theirs, their_stats = helper.finish_collect()
    for f in dataclasses.fields(stats):
        setattr(stats, f.name, getattr(stats, f.name) + getattr(their_stats, f.name))
    return join_rollouts(mine, theirs)


def _helper_main(conn: Any, cfg: Any, arch: dict[str, int], bf16: bool, seed: int, num_envs: int, params: torch.Tensor,
                 grads: torch.Tensor, ro_buf: dict[str, torch.Tensor], batch_buf: dict[str, torch.Tensor],
                 kit: tuple) -> None:
    """The helper's loop: answer tasks until told to close or the pipe closes (the parent ended)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes the pipe
    try:
        from .opponents import OpponentPool
        SelfPlay, GameStats, _rollout, minibatch_loss = kit

        torch.set_num_threads(cfg.torch_threads)
        cpu = torch.device("cpu")
        model = PolicyValueNet.from_architecture(arch)
        model.bf16_trunk = bf16  # the parent's precision: both halves of a minibatch computed alike
        play = SelfPlay(cfg, model, cpu, seed=seed, num_envs=num_envs)
        pool = OpponentPool(cfg.pool_size)
        batch: dict[str, Any] | None = None
    except Exception as e:  # noqa: BLE001 - reported to the parent in one line
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        try:
            kind = msg[0]
            if kind == "close":
                return
            if kind == "pool":
                pool = OpponentPool.from_state(msg[1], cfg.pool_size)
            elif kind == "batch":
                _, size, width, present = msg
                batch = dict.fromkeys(("obs", "ids", "valid", "slots", "feats", "teacher", "kept", "logp", "values",
                                       "adv", "ret", "own", "own_known"))
                for k in present:
                    view = batch_buf[k][:size]
                    batch[k] = view[:, :width] if k in _SLOT_KEYS else view
            elif kind == "collect":
                vector_to_parameters(params, model.parameters())
                stats = GameStats()
                ro = play.collect(pool, stats, teacher=msg[1])
                conn.send(("ok", _split_rollout(ro, ro_buf), stats))
            elif kind == "grad":
                _, rows, adv, teacher_weight, weight = msg
                rows, adv = torch.from_numpy(rows), torch.from_numpy(adv)
                vector_to_parameters(params, model.parameters())
                model.train()
                model.zero_grad(set_to_none=False)
                loss, info = minibatch_loss(cfg, model, batch, rows, cpu, teacher_weight, adv, False)
                (loss * weight).backward()
                with torch.no_grad():
                    grads.copy_(torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                                           for p in model.parameters()]))
                conn.send(("ok", info))
        except Exception as e:  # noqa: BLE001 - reported to the parent in one line
            conn.send(("error", f"{type(e).__name__}: {e}"))
            return
