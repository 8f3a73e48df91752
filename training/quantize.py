"""int8 copies of a network for search on the CPU (`checkpoint:PATH:az:N:int8`, `bench_zero`).

The stem and the residual trunk, where nearly all of a forward pass's arithmetic is, are
quantized statically to int8 (PyTorch's FX graph mode, the x86 backend's default qconfig:
per-channel weights, activations observed by histogram), calibrated once on observations of
positions from random play; the value, policy and ownership heads stay float32. Dynamic
quantization, which converts only `nn.Linear` layers, is no use here: the convolutions are the
cost (docs/zero.md, "Measured choices").

A copy is for evaluation only: it is never trained or saved, and its answers differ a little from
the float32 network's (`bench_zero` prints by how much).
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
import torch
from torch import nn

import colony_env as ce
from colony_env import observation

from .model import PolicyValueNet

CALIBRATION_POSITIONS = 256
CALIBRATION_SEED = 20261203


@lru_cache(maxsize=4)
def calibration_observations(n: int = CALIBRATION_POSITIONS, seed: int = CALIBRATION_SEED) -> torch.Tensor:
    """float[n, C, 10, 10]: the mover's observation of `n` positions from uniformly random play (0-150 plies in).
    Computed once per process (a self-play worker quantizes each generation's network); read only."""
    rng = np.random.default_rng(seed)
    obs = []
    while len(obs) < n:
        state = ce.new_game(int(rng.integers(2**31)))
        for _ in range(int(rng.integers(0, 151))):
            if state.is_over:
                break
            state = ce.apply_action(state, int(rng.choice(ce.legal_actions(state))))
        if not state.is_over:
            obs.append(observation.encode_observation(state, state.to_move))
    return torch.from_numpy(np.stack(obs))


def int8_copy(model: PolicyValueNet, calibration: torch.Tensor | None = None) -> PolicyValueNet:
    """A copy of `model` (eval mode) whose stem and trunk run in int8, calibrated on `calibration`
    (default: `calibration_observations()`); the heads, and `model` itself, unchanged."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    if model.bf16_trunk:
        raise ValueError("int8 copies are made from float32 networks, not bf16 ones")
    copy = model.blank_copy()
    copy.load_state_dict(model.state_dict())
    copy.eval()
    calibration = copy.stem_input(calibration_observations() if calibration is None else calibration)
    body = nn.Sequential(copy.stem, nn.ReLU(), copy.trunk).eval()
    with warnings.catch_warnings():  # FX quantization is marked deprecated in favour of torchao; it is what torch ships
        warnings.simplefilter("ignore")
        prepared = prepare_fx(body, get_default_qconfig_mapping("x86"), (calibration[:1],))
        with torch.inference_mode():
            prepared(calibration)
        quantized = convert_fx(prepared)
    copy.int8_trunk = quantized  # registered, so that a trace (NetworkEvaluator) sees its parameters
    object.__setattr__(copy, "body", quantized)  # an instance attribute shadows the method PolicyValueNet.body
    copy.int8_body = True
    return copy
