"""The project's `PolicyValueNet` as an RLlib RLModule (`ColonyRLModule`), and back (`export_state_dict`).

Needs ray[rllib] (`pip install "colony-rl[rllib]"`); used by `colony-train-rllib` (selfplay.py).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule

from colony_env.constants import N_ACTIONS
from colony_env.rllib import MASK_KEY, PACKED_MASK_BYTES, RLLIB_OBS_KEY

from ..checkpoint import CheckpointError
from ..model import PolicyValueNet, masked_log_probs

NET_PREFIX = "net."  # ColonyRLModule keeps the PolicyValueNet as `self.net`
GUMBEL_EPS = 1e-20  # keeps -log(-log(u)) finite for u drawn as 0
_BIT_SHIFTS = torch.arange(7, -1, -1, dtype=torch.uint8)  # np.packbits order: the first action is the top bit


def unpack_mask(packed: torch.Tensor) -> torch.Tensor:
    """uint8[..., 2001] packed action masks (`colony_env.rllib`, `packed_mask=True`) -> bool[..., 16001]."""
    bits = (packed.to(torch.uint8).unsqueeze(-1) >> _BIT_SHIFTS.to(packed.device)) & 1
    return bits.reshape(*packed.shape[:-1], -1)[..., :N_ACTIONS].bool()


class ColonyRLModule(TorchRLModule, ValueFunctionAPI):
    """The project's `PolicyValueNet` as an RLlib RLModule, with action masking.

    Observations are `{"observations": float32[C, 10, 10], "action_mask": int8[16001]}` in the
    mover's canonical view (`colony_env.rllib`). The logits are the network's full R8 layout;
    illegal actions get the finite `MASKED_LOGIT` through `model.masked_log_probs`, the same
    NaN-safe masking the project's trainer uses. RLlib's example adds `log(mask)` clamped to
    FLOAT_MIN instead; a finite replacement keeps entropy and KL finite even for a row with
    no legal action (the final observation of a game, R8.4), where adding to the logits would
    leave a uniform but arbitrary distribution.

    `_forward_train` passes the value head's output as the "embeddings", so PPO's loss
    (`compute_values(batch, embeddings)`) reuses one trunk pass instead of running it twice.
    """

    def setup(self) -> None:
        space = self.observation_space
        if not isinstance(space, gym.spaces.Dict) or set(space.spaces) != {RLLIB_OBS_KEY, MASK_KEY}:
            raise ValueError(
                f"ColonyRLModule needs a Dict observation space with keys '{RLLIB_OBS_KEY}' and '{MASK_KEY}' "
                f"(wrap the env with colony_env.rllib), got {space}"
            )
        mask_shape = tuple(space[MASK_KEY].shape)
        if mask_shape not in ((N_ACTIONS,), (PACKED_MASK_BYTES,)):
            raise ValueError(f"ColonyRLModule needs an action mask of {N_ACTIONS} entries or {PACKED_MASK_BYTES} "
                             f"packed bytes, got shape {mask_shape}")
        self.packed_mask = mask_shape == (PACKED_MASK_BYTES,)
        mc = self.model_config or {}
        in_channels = int(space[RLLIB_OBS_KEY].shape[0])
        self.net = PolicyValueNet(in_channels, int(mc.get("channels", 32)), int(mc.get("blocks", 2)))
        # The module is built inside every env runner and learner process: one place to cap their
        # torch threads (one env runner per core is the usual layout).
        if mc.get("torch_threads"):
            torch.set_num_threads(int(mc["torch_threads"]))

    def _legal(self, mask: torch.Tensor) -> torch.Tensor:
        """bool[B, 16001] from the observation's mask (plain 0/1, or packed 8 actions per byte)."""
        if not self.packed_mask:
            return mask > 0
        return unpack_mask(mask)

    def _masked_logits_and_value(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        obs = batch[Columns.OBS]
        logits, value = self.net.full_logits(obs[RLLIB_OBS_KEY].float())
        return masked_log_probs(logits, self._legal(obs[MASK_KEY])), value

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, _ = self._masked_logits_and_value(batch)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Sample here (Gumbel-max over the masked log-probs) and hand RLlib the action and its log-prob.

        RLlib's default samples from `ACTION_DIST_INPUTS` and stores those inputs with every
        step, which is 16,001 float32 values (64 KB) per step sent from each env runner to the
        learner. PPO's loss needs only the action and its log-prob from sampling time; it
        builds the old distribution from `ACTION_DIST_INPUTS` for the KL term alone, which this
        trainer leaves off (`use_kl_loss=False`), so a one-value placeholder goes in its place.
        """
        logp, _ = self._masked_logits_and_value(batch)
        noise = -torch.log(-torch.log(torch.rand_like(logp).clamp_(min=GUMBEL_EPS)))
        actions = torch.argmax(logp + noise, dim=-1)
        return {
            Columns.ACTIONS: actions,
            Columns.ACTION_LOGP: logp.gather(-1, actions[:, None])[:, 0],
            Columns.ACTION_DIST_INPUTS: logp.new_zeros((logp.shape[0], 1)),
        }

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, value = self._masked_logits_and_value(batch)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: value}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is not None:
            return embeddings
        return self.net._trunk(batch[Columns.OBS][RLLIB_OBS_KEY].float())[1]


def export_state_dict(module_state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """A `ColonyRLModule` state (torch or numpy values) -> the `PolicyValueNet` state_dict."""
    out = {k[len(NET_PREFIX):]: torch.as_tensor(np.asarray(v)) for k, v in module_state.items() if k.startswith(NET_PREFIX)}
    if not out:
        raise CheckpointError(f"not a ColonyRLModule state: no '{NET_PREFIX}*' weights among {sorted(module_state)[:5]}")
    return out


def net_from_module_state(module_state: dict[str, Any], channels: int, blocks: int, in_channels: int) -> PolicyValueNet:
    """Rebuild the `PolicyValueNet` held by a `ColonyRLModule` state."""
    net = PolicyValueNet(in_channels, channels, blocks)
    try:
        net.load_state_dict(export_state_dict(module_state))
    except RuntimeError as e:
        raise CheckpointError(f"RLlib module weights do not fit PolicyValueNet({in_channels}, {channels}, {blocks}): "
                              f"{str(e).splitlines()[0][:200]}") from None
    return net.eval()
