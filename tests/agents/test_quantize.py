"""int8 copies of a network (training/quantize.py): the trunk really runs in int8, the answers stay close."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from colony_env.observation import OBS_CHANNELS
from colony_training.agents import NetworkEvaluator
from colony_training.bench_zero import leaf_batch, positions
from colony_training.checkpoint import CheckpointError, load_model, save_checkpoint
from colony_training.model import PolicyValueNet
from colony_training.quantize import calibration_observations, int8_copy

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "colony_zero.pt"


def test_int8_copy_of_the_shipped_network_agrees_with_float32_on_held_out_positions() -> None:
    """Calibrated on random-play positions, compared on others: the same most likely move in nearly every
    position, values within a few hundredths; the copy's trunk holds quantized convolutions and its
    answers are not bit-identical (the int8 path ran); the float32 network is untouched."""
    model, _ = load_model(SHIPPED)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    q = int8_copy(model, calibration_observations(64, seed=1))
    assert q.int8_body and not model.int8_body
    assert any("Quantized" in type(m).__name__ or "quantized" in type(m).__module__ for m in q.int8_trunk.modules())
    st, obs, ids, counts = leaf_batch(positions(64, 77, max_plies=150))
    (l32, v32), (l8, v8) = NetworkEvaluator(model)(st, obs, ids, counts), NetworkEvaluator(q)(st, obs, ids, counts)
    valid = np.arange(ids.shape[1])[None, :] < counts[:, None]
    same = (np.where(valid, l32, -np.inf).argmax(1) == np.where(valid, l8, -np.inf).argmax(1)).mean()
    assert same >= 0.85
    assert np.abs(v8 - v32).mean() < 0.03
    assert not np.array_equal(l8[valid], l32[valid])
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_int8_copy_refuses_a_bf16_network() -> None:
    net = PolicyValueNet(OBS_CHANNELS, 8, 1)
    net.bf16_trunk = True
    with pytest.raises(ValueError, match="float32 networks"):
        int8_copy(net, calibration_observations(4))


def test_an_int8_copy_is_never_saved_as_a_checkpoint(tmp_path: Path) -> None:
    """Saving the copy is refused in one line and writes nothing; the float32 network it came from saves."""
    net = PolicyValueNet(OBS_CHANNELS, 8, 1)
    q = int8_copy(net, calibration_observations(4))
    with pytest.raises(CheckpointError, match="int8 copy for search only"):
        save_checkpoint(tmp_path / "q.pt", q, {}, {})
    assert list(tmp_path.iterdir()) == []
    save_checkpoint(tmp_path / "net.pt", net, {}, {})
    assert load_model(tmp_path / "net.pt")[0].architecture() == net.architecture()
