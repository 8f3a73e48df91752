"""Checkpoints: one self-describing file per snapshot (the agents built from one: `agents.py`).

A checkpoint is a `torch.save` dict of plain data only (tensors, numbers, strings, lists,
dicts), so it is loaded with `torch.load(..., weights_only=True)`: a checkpoint from a
stranger cannot run code on load. It holds

    format / format_version   what this file is (CHECKPOINT_FORMAT, CHECKPOINT_VERSION)
    observation               the names of the planes its network reads (the encoder's first in_channels)
    num_actions               the action space size (R8: 16001)
    architecture              {in_channels, channels, blocks, and the on/off parts} to rebuild PolicyValueNet
    model                     the network's state_dict
    config                    the run's TrainConfig as a dict
    meta                      training metadata (steps, iteration, wall time, hardware, ...)
    optimizer, pool, rng      only in training checkpoints, for `--resume`

Files are written atomically (temporary file, fsync, `os.replace`), so a crash mid-save
leaves the previous checkpoint intact.

Loading trusts nothing in the file: the zip archive's CRC-32 of every record is verified
(a flipped byte anywhere is refused, not loaded), a pickle that would run code is refused in
plain words, every field has its expected type, weights must be finite, and the declared
architecture is checked against the stored tensors' shapes before any network is built (a
small file cannot make the loader allocate a large one). Every failure is a one-line
`CheckpointError`.
"""

from __future__ import annotations

import os
import pickle
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

import colony_env as ce
from colony_env import observation

from .model import ARCHITECTURE_FLAGS, PolicyValueNet
from .runlog import is_file

CHECKPOINT_FORMAT = "colony-ppo-checkpoint"
CHECKPOINT_VERSION = 1
ACTION_LAYOUT = "R8"  # docs/rules.md R8; bump together with the engine's action encoding




class CheckpointError(ValueError):
    """A file that is not a usable checkpoint for this version of the code; the message says why."""


def current_format() -> dict[str, Any]:
    """The format fields a checkpoint must match to be loadable by this code."""
    return {
        "format": CHECKPOINT_FORMAT,
        "format_version": CHECKPOINT_VERSION,
        "observation": list(observation.PLANE_NAMES),
        "action_layout": ACTION_LAYOUT,
        "num_actions": ce.N_ACTIONS,
    }


def _default_file_mode() -> int:
    """The mode `open()` would give a new file: 0666 minus the process umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _default_file_mode()


def save_checkpoint(path: str | Path, model: PolicyValueNet, config: dict[str, Any], meta: dict[str, Any],
                    extra: dict[str, Any] | None = None) -> Path:
    """Write a checkpoint atomically; `extra` (optimizer, pool, rng) must also be plain data.

    An int8 copy (training/quantize.py) is refused: its trunk is not the float32 weights a
    checkpoint holds, so the file would load as a different network (or not at all).
    """
    if model.int8_body:
        raise CheckpointError(f"not saving {str(path)!r}: this network is an int8 copy for search only; "
                              "save the float32 network it was made from")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = current_format()
    payload.update(
        observation=list(observation.PLANE_NAMES[: model.in_channels]),
        architecture=model.architecture(),
        model={k: v.detach().cpu() for k, v in model.state_dict().items()},
        config=dict(config),
        meta=dict(meta),
    )
    payload.update(extra or {})
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600 files; a checkpoint is shared like any output file
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


_UNSAFE_GLOBAL = re.compile(r"(?:unsupported|Unsupported global:) GLOBAL ([\w.]+)")  # torch's wording varies by version


def _verify_archive(p: Path) -> None:
    """Every record of the zip archive torch.save wrote must match its CRC-32.

    torch.load itself does not check them, so a flipped byte inside a tensor would load as a
    silently different network.
    """
    with zipfile.ZipFile(p) as archive:
        bad = archive.testzip()
    if bad is not None:
        raise CheckpointError(f"{str(p)!r} is corrupt: record {bad!r} fails its CRC check (damaged on disk or in transfer)")


def _torch_load(p: Path) -> Any:
    """`torch.load(weights_only=True)` with every failure turned into a one-line `CheckpointError`."""
    try:
        _verify_archive(p)
        return torch.load(p, map_location="cpu", weights_only=True)
    except CheckpointError:
        raise
    except pickle.UnpicklingError as e:
        unsafe = _UNSAFE_GLOBAL.search(str(e))
        if unsafe or "Weights only load failed" in str(e):
            what = unsafe.group(1) if unsafe else "a non-data object"
            raise CheckpointError(
                f"{str(p)!r} was refused as unsafe: loading it would run code ({what}); a checkpoint holds only tensors "
                "and plain data, so this file is not one (nothing from it was run)"
            ) from None
        raise CheckpointError(f"{str(p)!r} is not a readable checkpoint (corrupt or truncated): {_first_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - any failure to parse the bytes means the file is not a checkpoint
        raise CheckpointError(f"{str(p)!r} is not a readable checkpoint (corrupt, truncated or another kind of file): {_first_line(e)}") from None


def _plane_prefix(got: Any) -> bool:
    """`got` names the first planes of this encoder (a network reads `obs[:, :in_channels]`, so one trained
    before planes were appended to the table reads the planes it was trained on; `build_model` checks the width)."""
    names = list(observation.PLANE_NAMES)
    return isinstance(got, list) and 1 <= len(got) <= len(names) and _same(got, names[: len(got)])


def _same(got: Any, want: Any) -> bool:
    """`got == want` for plain data, False (not an exception) for a tensor or another odd type."""
    if type(got) is not type(want):
        return False
    try:
        return bool(got == want)
    except Exception:  # noqa: BLE001 - e.g. a list holding tensors
        return False


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return (lines[0] if lines else type(e).__name__)[:160]


def _check_fields(p: Path, data: dict[str, Any]) -> None:
    """Types of the fields every reader relies on, and finite weights."""
    for key in ("architecture", "model", "config", "meta"):
        if key not in data:
            raise CheckpointError(f"{str(p)!r} is incomplete: missing '{key}'")
        if not isinstance(data[key], dict):
            raise CheckpointError(f"{str(p)!r} is damaged: field '{key}' must be a dict, got {type(data[key]).__name__}")
    for name, tensor in data["model"].items():
        if not isinstance(name, str) or not isinstance(tensor, torch.Tensor) or tensor.layout != torch.strided:
            raise CheckpointError(f"{str(p)!r} is damaged: field 'model' must map parameter names to dense tensors, got {str(name)[:60]!r}: {type(tensor).__name__}")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{str(p)!r} has non-finite weights (NaN or inf) in {name!r}: it was saved from a diverged run; use an earlier checkpoint")


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load and check a checkpoint's format; raises `CheckpointError` with the reason."""
    p = Path(path)
    if not is_file(p):
        try:
            is_dir = p.is_dir()
        except (OSError, ValueError):  # a name the OS cannot look up (too long, NUL byte) is simply not there
            is_dir = False
        raise CheckpointError(f"{str(p)!r} is a directory, not a checkpoint file" if is_dir
                              else f"checkpoint {str(p)[:200]!r} does not exist")
    data = _torch_load(p)
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{str(p)!r} is not a {CHECKPOINT_FORMAT} file")
    want = current_format()
    for key in ("format_version", "action_layout", "num_actions", "observation"):
        if not (_plane_prefix(data.get(key)) if key == "observation" else _same(data.get(key), want[key])):
            got = data.get(key)
            if key == "observation":
                got = f"{len(got) if isinstance(got, list) else '?'} planes"
                need = f"the first planes of its {len(want[key])} ({observation.__name__})"
            else:
                need = want[key]
            raise CheckpointError(
                f"{str(p)!r} was built for another format: {key} is {got}, this code needs {need}; retrain or use a matching version"
            )
    _check_fields(p, data)
    return data


_ARCH_INTS = ("in_channels", "channels", "blocks")


def _checked_architecture(arch: dict[str, Any], stored: dict[str, Any]) -> dict[str, int]:
    """A checkpoint's `architecture` with its sizes checked and bounded by the stored tensors.

    No declared size may exceed what the file holds (a block has tensors of its own, a channel
    count is some tensor's dimension), so even the shape-only network built next stays small.
    """
    values = [arch.get(k) for k in _ARCH_INTS]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise CheckpointError(f"checkpoint architecture {str(arch)[:120]} needs positive ints {', '.join(_ARCH_INTS)}")
    in_channels, channels, blocks = values
    largest_dim = max((d for t in stored.values() if isinstance(t, torch.Tensor) for d in t.shape), default=0)
    if channels > largest_dim or in_channels > largest_dim or blocks > len(stored):
        raise CheckpointError(
            f"checkpoint architecture {str(arch)[:120]} does not match its weights: they hold {len(stored)} tensors "
            f"of at most {largest_dim} channels"
        )
    return {**dict(zip(_ARCH_INTS, values)), **{flag: int(bool(arch.get(flag, 0))) for flag in ARCHITECTURE_FLAGS}}


def build_model(data: dict[str, Any]) -> PolicyValueNet:
    """The network stored in a checkpoint dict (from `read_checkpoint`), in eval mode.

    The declared architecture is first built on the `meta` device (shapes only, no memory) and
    compared with the stored tensors, so a mismatch never allocates the declared network.
    """
    arch, stored = data["architecture"], data["model"]
    if not isinstance(arch, dict) or not isinstance(stored, dict):
        raise CheckpointError("checkpoint fields 'architecture' and 'model' must be dicts")
    checked = _checked_architecture(arch, stored)
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in PolicyValueNet.from_architecture(checked).state_dict().items()}
    got = {k: tuple(v.shape) for k, v in stored.items() if isinstance(v, torch.Tensor)}
    if got != expected:
        diff = sorted(set(expected) ^ set(got)) or [k for k in expected if expected[k] != got[k]]
        raise CheckpointError(f"checkpoint weights do not match its architecture {str(arch)[:120]}: first difference at {diff[0]!r}")
    model = PolicyValueNet.from_architecture(checked)
    try:
        model.load_state_dict(stored)
    except (KeyError, TypeError, RuntimeError) as e:
        raise CheckpointError(f"checkpoint weights do not match its architecture {str(arch)[:120]}: {_first_line(e)}") from None
    names = data.get("observation")  # a file's (checked by read_checkpoint); absent in a worker's in-memory copy
    if isinstance(names, list) and model.in_channels != len(names):
        raise CheckpointError(f"checkpoint network reads {model.in_channels} observation planes, "
                              f"its 'observation' names {len(names)}")
    if model.in_channels > observation.OBS_CHANNELS:
        raise CheckpointError(f"checkpoint expects {model.in_channels} observation planes, the encoder has {observation.OBS_CHANNELS}")
    return model.eval()


def load_model(path: str | Path) -> tuple[PolicyValueNet, dict[str, Any]]:
    """(network, checkpoint dict) from a file."""
    data = read_checkpoint(path)
    return build_model(data), data
