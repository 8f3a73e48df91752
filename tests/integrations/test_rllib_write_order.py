"""colony-train-rllib's writes in the order a resume needs (issue 32, item 6): `--resume` starts
from the newest RLlib checkpoint, so a kill between a checkpoint's two writes must leave
`checkpoints/latest.pt` ahead of it, never behind (a finished run would keep an old latest.pt
and evaluate it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from colony_training.rllib import selfplay  # noqa: E402
from colony_training.rllib.config import RllibConfig  # noqa: E402


class Killed(Exception):
    """Stands for the kill between the two writes."""


def test_latest_pt_is_exported_before_the_rllib_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[Any] = []

    class Algo:
        def save_to_path(self, path: str) -> None:
            writes.append("rllib")
            raise Killed

    monkeypatch.setattr(selfplay, "export_algorithm",
                        lambda algo, cfg, path, meta: writes.append((Path(path).name, meta["iteration"])))
    with pytest.raises(Killed):
        selfplay._checkpoint(Algo(), RllibConfig(), tmp_path, {"iteration": 3, "env_steps": 96})
    assert writes == [("latest.pt", 3), "rllib"]
    assert selfplay.rllib_checkpoints(tmp_path) == []  # the half-written RLlib checkpoint is not one to resume from
