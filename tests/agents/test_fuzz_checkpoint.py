"""Fuzzing checkpoint loading (issue 13, item 9): truncated, bit-flipped, foreign and hostile files.

The contract: `read_checkpoint` / `load_model` / `load_policy_agent` either return a network
that equals what was saved, or raise `CheckpointError` with a one-line reason; never another
exception, never a silently altered network, never code run from the file, and never a large
allocation for a small file.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colony_env as ce
from colony_env import observation
from colony_training import checkpoint as ck
from colony_training.agents import load_policy_agent
from colony_training.checkpoint import CheckpointError, load_model, read_checkpoint, save_checkpoint
from colony_training.model import PolicyValueNet

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "colony_ppo.pt"


def _net(channels: int = 8, blocks: int = 1) -> PolicyValueNet:
    torch.manual_seed(0)
    return PolicyValueNet(observation.OBS_CHANNELS, channels=channels, blocks=blocks)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, torch.Tensor]]:
    net = _net()
    path = save_checkpoint(tmp_path_factory.mktemp("ck") / "good.pt", net, {"channels": 8}, {"global_step": 5},
                           extra={"optimizer": {"lr": 0.1}})
    return path.read_bytes(), {k: v.clone() for k, v in net.state_dict().items()}


def _load_or_refuse(blob: bytes, where: Path) -> PolicyValueNet | None:
    where.write_bytes(blob)
    try:
        model, _data = load_model(where)
    except CheckpointError as e:
        message = str(e)
        assert message and "\n" not in message and len(message) < 500, message
        assert "weights_only=False" not in message  # never advise the one unsafe thing
        return None
    return model


@FUZZ
@given(data=st.data())
def test_flipped_or_truncated_bytes_are_refused_or_load_unchanged(good: tuple[bytes, dict], tmp_path: Path, data: st.DataObject) -> None:
    blob, weights = good
    buf = bytearray(blob)
    kind = data.draw(st.sampled_from(["flip", "truncate", "splice"]))
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 32))):
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        buf = buf[: data.draw(st.integers(0, len(buf) - 1))]
    else:
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i : i + 8] = data.draw(st.binary(min_size=1, max_size=64))
    model = _load_or_refuse(bytes(buf), tmp_path / "fuzzed.pt")
    if model is not None:  # whatever still loads is exactly the saved network
        assert set(model.state_dict()) == set(weights)
        assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize("content", [b"", b"hello\n", b"PK\x03\x04" + b"\0" * 40, os.urandom(4096), b"\x80\x04K\x05."])
def test_arbitrary_files_are_refused_in_one_line(tmp_path: Path, content: bytes) -> None:
    assert _load_or_refuse(content, tmp_path / "x.pt") is None


def test_a_text_file_and_a_directory_are_refused(tmp_path: Path) -> None:
    notes = tmp_path / "NOTES.txt"
    notes.write_text("some notes\n" * 50)
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_policy_agent(notes)
    with pytest.raises(CheckpointError, match="is a directory"):
        read_checkpoint(tmp_path)


class _Evil:
    def __reduce__(self):  # unpickling this would run a shell command
        return (os.system, ("touch pwned",))


def test_a_file_that_would_run_code_is_refused_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = torch.load(save_checkpoint(tmp_path / "x.pt", _net(), {}, {}), weights_only=True)
    data["meta"] = {"payload": _Evil()}
    torch.save(data, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError) as e:
        read_checkpoint(tmp_path / "evil.pt")
    message = str(e.value)
    assert "refused" in message and "run code" in message and "system" in message, message
    assert "weights_only" not in message and "\n" not in message
    assert not (tmp_path / "pwned").exists()


def _saved_dict(tmp_path: Path, net: PolicyValueNet | None = None) -> dict:
    return torch.load(save_checkpoint(tmp_path / "base.pt", net or _net(), {}, {"global_step": 1}), weights_only=True)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused_at_load_time(tmp_path: Path, bad: float) -> None:
    data = _saved_dict(tmp_path)
    data["model"]["value_out.weight"][0, 0] = bad
    torch.save(data, tmp_path / "nan.pt")
    with pytest.raises(CheckpointError, match=r"non-finite .*'value_out.weight'"):
        load_policy_agent(tmp_path / "nan.pt")


def test_a_shape_bomb_is_refused_before_building_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small file that declares a huge network: refused from the stored tensors' shapes,
    without allocating it (the loader used to allocate 1.68 GB for `channels: 2048`)."""
    built: list[tuple[str, tuple]] = []

    class Spy(PolicyValueNet):
        def __init__(self, *args: object, **flags: bool) -> None:
            built.append((str(torch.empty(0).device), args))  # the device a new tensor would land on
            super().__init__(*args, **flags)

    monkeypatch.setattr(ck, "PolicyValueNet", Spy)
    data = _saved_dict(tmp_path)
    bombs = ({"channels": 2048}, {"blocks": 10**9}, {"channels": 2**40, "blocks": 2**40}, {"in_channels": 10**6},
             {"channels": 160, "blocks": 8})  # the last passes the cheap bounds; the shape-only build refuses it
    for arch in bombs:
        bomb = {**data, "architecture": {**data["architecture"], **arch}}
        torch.save(bomb, tmp_path / "bomb.pt")
        with pytest.raises(CheckpointError, match="architecture"):
            load_model(tmp_path / "bomb.pt")
    assert all(device == "meta" for device, _args in built), built
    assert len(built) == 1  # only the last bomb got as far as a shape-only build
    load_model(save_checkpoint(tmp_path / "fine.pt", _net(), {}, {}))
    assert built[-1][0] == "cpu"  # a matching file is built for real


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("architecture", "big", "'architecture' must be a dict"),
        ("architecture", {"channels": 8}, "architecture"),
        ("architecture", {"in_channels": 26, "channels": "8", "blocks": 1}, "architecture"),
        ("architecture", {"in_channels": 26, "channels": -8, "blocks": 1}, "architecture"),
        ("model", [1, 2], "'model' must be a dict"),
        ("model", {"stem.weight": 5}, "'model'"),
        ("meta", 5, "'meta' must be a dict"),
        ("config", None, "'config' must be a dict"),
    ],
)
def test_malformed_fields_are_checkpoint_errors(tmp_path: Path, field: str, value: object, match: str) -> None:
    data = _saved_dict(tmp_path)
    data[field] = value
    torch.save(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=match):
        load_policy_agent(tmp_path / "bad.pt")


def test_foreign_pickles_and_archives_are_refused(tmp_path: Path) -> None:
    for i, obj in enumerate([[1, 2, 3], {"format": "colony-ppo-checkpoint"}, torch.zeros(3), {"model": {}}]):
        torch.save(obj, tmp_path / f"f{i}.pt")
        with pytest.raises(CheckpointError):
            load_model(tmp_path / f"f{i}.pt")
    buf = io.BytesIO()  # a zip that is not a torch archive
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "hello")
    assert _load_or_refuse(buf.getvalue(), tmp_path / "zip.pt") is None


def test_the_shipped_checkpoint_still_loads_and_plays() -> None:
    agent = load_policy_agent(SHIPPED)
    s = ce.new_game(9)
    assert ce.is_legal(s, agent.act(s, np.random.default_rng(0)))
