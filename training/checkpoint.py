"""Checkpoints: one self-describing file per snapshot, and the policy agent built from one.

A checkpoint is a `torch.save` dict of plain data only (tensors, numbers, strings, lists,
dicts), so it is loaded with `torch.load(..., weights_only=True)`: a checkpoint from a
stranger cannot run code on load. It holds

    format / format_version   what this file is (CHECKPOINT_FORMAT, CHECKPOINT_VERSION)
    observation               the plane names of the observation encoder it was trained on
    num_actions               the action space size (R8: 16001)
    architecture              {in_channels, channels, blocks} to rebuild PolicyValueNet
    model                     the network's state_dict
    config                    the run's TrainConfig as a dict
    meta                      training metadata (steps, iteration, wall time, hardware, ...)
    optimizer, pool, rng      only in training checkpoints, for `--resume`

Files are written atomically (temporary file, fsync, `os.replace`), so a crash mid-save
leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

import colony_env as ce
from colony_env import observation, symmetry
from colony_env.agents import MCTSAgent
from colony_env.agents.mcts import DEFAULT_PRIOR_C

from .model import MaskedCategorical, PolicyValueNet
from .teacher import greedy_action_features

CHECKPOINT_FORMAT = "colony-ppo-checkpoint"
CHECKPOINT_VERSION = 1
ACTION_LAYOUT = "R8"  # RULES.md R8; bump together with the engine's action encoding


NEAR_TIE_NATS = 0.5
"""Greedy play picks uniformly among the actions whose log-probability is this close to the best."""


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
    """Write a checkpoint atomically; `extra` (optimizer, pool, rng) must also be plain data."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = current_format()
    payload.update(
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


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load and check a checkpoint's format; raises `CheckpointError` with the reason."""
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"checkpoint {str(p)!r} does not exist")
    try:
        data = torch.load(p, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()] or [type(e).__name__]
        first = next((ln for ln in lines if "Unsupported global" in ln), lines[0])  # the unsafe-object case
        raise CheckpointError(f"{str(p)!r} is not a readable checkpoint (corrupt, truncated or unsafe): {first[:200]}") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{str(p)!r} is not a {CHECKPOINT_FORMAT} file")
    want = current_format()
    for key in ("format_version", "action_layout", "num_actions", "observation"):
        if data.get(key) != want[key]:
            got = data.get(key)
            if key == "observation":
                got = f"{len(got) if isinstance(got, list) else '?'} planes"
                need = f"{len(want[key])} planes ({observation.__name__})"
            else:
                need = want[key]
            raise CheckpointError(
                f"{str(p)!r} was built for another format: {key} is {got}, this code needs {need}; retrain or use a matching version"
            )
    for key in ("architecture", "model", "config", "meta"):
        if key not in data:
            raise CheckpointError(f"{str(p)!r} is incomplete: missing '{key}'")
    return data


def build_model(data: dict[str, Any]) -> PolicyValueNet:
    """The network stored in a checkpoint dict (from `read_checkpoint`), in eval mode."""
    arch = data["architecture"]
    try:
        model = PolicyValueNet(int(arch["in_channels"]), int(arch["channels"]), int(arch["blocks"]),
                               bool(arch.get("heuristic_prior", 0)), bool(arch.get("target_features", 0)))
        model.load_state_dict(data["model"])
    except (KeyError, TypeError, RuntimeError) as e:
        raise CheckpointError(f"checkpoint weights do not match its architecture {arch}: {str(e).splitlines()[0][:200]}") from None
    if model.in_channels != observation.OBS_CHANNELS:
        raise CheckpointError(f"checkpoint expects {model.in_channels} observation planes, the encoder has {observation.OBS_CHANNELS}")
    return model.eval()


def load_model(path: str | Path) -> tuple[PolicyValueNet, dict[str, Any]]:
    """(network, checkpoint dict) from a file."""
    data = read_checkpoint(path)
    return build_model(data), data


class PolicyAgent:
    """An engine-level agent (`act(state, rng) -> board-frame action id`) backed by a trained network.

    It encodes the position in the mover's canonical view, scores the legal actions only
    (mapped to that view), and either takes the most likely one (`greedy=True`, near-ties
    within NEAR_TIE_NATS broken with `rng`) or samples from the policy.
    """

    def __init__(self, model: PolicyValueNet, name: str, greedy: bool = True) -> None:
        self.model = model.eval()
        self.name = name
        self.greedy = greedy

    @torch.no_grad()
    def policy(self, state: ce.GameState) -> tuple[np.ndarray, np.ndarray, float]:
        """(legal board-frame action ids, their probabilities, value head output) of `state`.

        With reward shaping the value head estimates V - Phi for the mover (training/ppo/shaping.py).
        """
        if state.is_over:
            raise ValueError("the game is over: no action is legal (R8.4)")
        colour = state.to_move
        board_ids = ce.legal_actions(state)
        canonical = symmetry.board_action_to_canonical(board_ids, colour)
        obs = torch.from_numpy(observation.encode_observation(state, colour))[None]
        feats = None
        if self.model.heuristic_prior:  # slots follow board_ids' (ascending) order, as in training
            feats = greedy_action_features(state._a[None], np.zeros(1, np.int64), len(board_ids))
            feats = torch.from_numpy(feats)
        logits, value = self.model(obs, torch.from_numpy(canonical)[None], feats)
        dist = MaskedCategorical(logits, torch.ones_like(logits, dtype=torch.bool))
        return board_ids, dist.probs[0].double().numpy(), float(value[0])

    def act(self, state: ce.GameState, rng: np.random.Generator) -> int:
        board_ids, probs, _ = self.policy(state)
        if self.greedy:
            # A deterministic argmax shuffles one satellite back and forth in quiet positions until
            # the ply limit (many draws); near-ties are therefore broken at random.
            logp = np.log(np.maximum(probs, 1e-300))
            best = np.flatnonzero(logp >= logp.max() - NEAR_TIE_NATS)
            return int(board_ids[best[rng.integers(len(best))]])
        return int(board_ids[rng.choice(len(probs), p=probs / probs.sum())])


def load_policy_agent(path: str | Path, greedy: bool = True) -> PolicyAgent:
    """The agent of a checkpoint file; `CheckpointError` for a missing, corrupt or mismatched file."""
    model, data = load_model(path)
    steps = data["meta"].get("global_step")
    name = f"ppo:{Path(path).name}" + (f"@{steps}" if steps is not None else "")
    return PolicyAgent(model, name=name, greedy=greedy)


def load_search_agent(path: str | Path, simulations: int, prior_c: float = DEFAULT_PRIOR_C) -> MCTSAgent:
    """The checkpoint's policy steering a compiled MCTS at play time (AlphaZero's division of labour).

    The policy is asked once per move for a prior over the legal actions; the root of a
    `simulations`-simulation search spends them by PUCT on that prior, and random rollouts
    below judge the moves (`colony_env.agents.MCTSAgent(root_prior=...)`).
    """
    policy = load_policy_agent(path)

    def root_prior(state: ce.GameState) -> tuple[np.ndarray, np.ndarray]:
        ids, probs, _ = policy.policy(state)
        return ids, probs

    return MCTSAgent(max_simulations=simulations, root_prior=root_prior, prior_c=prior_c,
                     name=f"{policy.name}+mcts:{simulations}")
