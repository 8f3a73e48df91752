"""The replay buffer: the last N positions of self-play, kept on disk one shard per generation.

Shards (`replay/gen_000012.npz`) are written atomically once a generation's games are done,
so a resumed run reloads exactly the buffer it had: the shards up to the checkpoint's
generation (later ones, from a generation whose fit never finished, are deleted and played
again with the same seeds). Positions are stored as packed states (432 bytes) and planes are
encoded per minibatch, which keeps 200,000 positions under 150 MB instead of 2 GB of planes.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
from numba import njit

from colony_env.constants import I_TO_MOVE, N_CELLS
from colony_env.observation import OBS_SHAPE, encode_into

from ..runlog import atomic_write_bytes
from .selfplay import ARRAY_FIELDS, GameData, concat

SHARD_RE = re.compile(r"^gen_(\d{6})\.npz$")


class ReplayError(ValueError):
    """A replay shard that cannot be read; the message names the file."""


def shard_path(run_dir: Path, generation: int) -> Path:
    return run_dir / "replay" / f"gen_{generation:06d}.npz"


def shard_bytes(data: GameData) -> bytes:
    """The bytes of a shard holding `data` (a compressed `.npz`, no pickled objects)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, cpu_seconds=np.float64(data.cpu_seconds),
                        leaf_evaluations=np.int64(data.leaf_evaluations), **data.arrays())
    return buf.getvalue()


def write_shard(path: Path, data: GameData) -> None:
    """Atomic write (`runlog.atomic_write_bytes`): a kill never leaves half a shard."""
    atomic_write_bytes(path, shard_bytes(data))


def read_shard(path: Path) -> GameData:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in ARRAY_FIELDS if k in z.files}
            if "ownership" not in arrays:  # shards written before the ownership target existed
                arrays["ownership"] = np.zeros((arrays["states"].shape[0], N_CELLS), np.int8)
            if "rollout_value" not in arrays:  # shards written before playout value targets existed
                arrays["rollout_value"] = np.zeros(arrays["states"].shape[0], np.float32)
            if "full_search" not in arrays:  # shards written before playout cap randomisation: all full searches
                arrays["full_search"] = np.ones(arrays["states"].shape[0], np.uint8)
            data = GameData(**arrays, cpu_seconds=float(z["cpu_seconds"]), leaf_evaluations=int(z["leaf_evaluations"]))
    except (OSError, ValueError, KeyError, EOFError) as e:
        raise ReplayError(f"replay shard {str(path)!r} is unreadable ({type(e).__name__}); delete it to replay that generation") from None
    if data.offsets.shape[0] != data.states.shape[0] + 1 or data.offsets[-1] != data.target_ids.shape[0]:
        raise ReplayError(f"replay shard {str(path)!r} is inconsistent; delete it to replay that generation")
    return data


def shard_generations(run_dir: Path) -> list[int]:
    folder = run_dir / "replay"
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := SHARD_RE.match(p.name)))


def remove_stray_files(run_dir: Path, after_generation: int) -> None:
    """Delete shards of generations after `after_generation` and temporary files (idempotent resume)."""
    folder = run_dir / "replay"
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        m = SHARD_RE.match(p.name)
        if (m and int(m.group(1)) > after_generation) or p.name.endswith(".tmp"):
            p.unlink(missing_ok=True)


class ReplayBuffer:
    """Whole generations of positions, newest last, at most ~`capacity` positions."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.parts: list[GameData] = []
        self._flat: GameData | None = None

    def __len__(self) -> int:
        return sum(p.n_positions for p in self.parts)

    def add(self, data: GameData) -> None:
        self.parts.append(data)
        while len(self.parts) > 1 and len(self) - self.parts[0].n_positions >= self.capacity:
            self.parts.pop(0)
        self._flat = None

    def flat(self) -> GameData:
        if self._flat is None:
            self._flat = concat(self.parts)
        return self._flat

    @classmethod
    def load(cls, run_dir: Path, capacity: int, up_to: int) -> ReplayBuffer:
        """The buffer as it was after generation `up_to` (newest shards first until full)."""
        buf = cls(capacity)
        gens = [g for g in shard_generations(run_dir) if g <= up_to]
        keep: list[GameData] = []
        total = 0
        for g in reversed(gens):
            if total >= capacity:
                break
            data = read_shard(shard_path(run_dir, g))
            keep.append(data)
            total += data.n_positions
        for data in reversed(keep):
            buf.add(data)
        return buf


@njit(cache=True)
def encode_batch(states: np.ndarray, out: np.ndarray) -> None:
    """Canonical planes of each packed state, for the colour to move (blue transposed)."""
    for i in range(states.shape[0]):
        colour = states[i, I_TO_MOVE]
        encode_into(states[i], colour, colour == 1, out[i])


def make_batch(data: GameData, idx: np.ndarray, root_value_mix: float, rollout_value_mix: float = 0.0
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(states, planes, ids int64[B, W], target probs float32[B, W], valid bool[B, W], value targets) for rows idx.

    The value target mixes the game's result with the search's root value and the playouts' mean
    (`ZeroConfig.root_value_mix`, `rollout_value_mix`). The ownership targets of the same rows are
    `data.ownership[idx]`; their policy-target weights `data.full_search[idx]` (0 after a fast search)."""
    states = np.ascontiguousarray(data.states[idx])
    obs = np.empty((len(idx), *OBS_SHAPE), np.float32)
    encode_batch(states, obs)
    starts = data.offsets[idx]
    counts = data.offsets[idx + 1] - starts
    width = int(max(1, counts.max()))
    cols = np.arange(width)[None, :]
    valid = cols < counts[:, None]
    gather = np.where(valid, starts[:, None] + cols, 0)
    ids = np.where(valid, data.target_ids[gather], 0).astype(np.int64)
    probs = np.where(valid, data.target_probs[gather], 0.0).astype(np.float32)
    z = data.outcome[idx]
    target = ((1.0 - root_value_mix - rollout_value_mix) * z + root_value_mix * data.root_value[idx]
              + rollout_value_mix * data.rollout_value[idx])
    return states, obs, ids, probs, valid, target.astype(np.float32)
