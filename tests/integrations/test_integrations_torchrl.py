"""TorchRL integration: `PettingZooWrapper(use_mask=True)` on the AEC env collects a batch in
which the agent to move always plays a legal action (checked by the engine, R8.4), and
games end and reset inside the batch (examples/torchrl_collect.py)."""

from __future__ import annotations


import pytest
import torch
from pettingzoo.utils.wrappers import BaseWrapper

import colony_env as ce
from helpers import EXAMPLES, load_example

EXAMPLE = EXAMPLES / "torchrl_collect.py"
example = load_example("torchrl_collect.py")


class EngineCheck(BaseWrapper):
    """Asks the engine whether each action TorchRL sends is legal before the env applies it."""

    def __init__(self, env) -> None:
        super().__init__(env)
        self.checked = 0
        self.illegal: list[int] = []
        self.games = 0

    def reset(self, seed=None, options=None):
        self.games += 1
        super().reset(seed=seed, options=options)

    def step(self, action):
        if action is not None:
            self.checked += 1
            if not ce.is_legal(self.unwrapped.game_state, int(action)):
                self.illegal.append(int(action))
        super().step(action)


@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested")
def test_collector_batch_has_only_legal_actions():
    torch.set_num_threads(1)
    frames, max_plies = 96, 24
    check = EngineCheck(ce.env(max_plies=max_plies))
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    env = PettingZooWrapper(env=check, use_mask=True, categorical_actions=True, seed=0)
    batch = example.collect(frames, max_plies=max_plies, seed=0, env=env)
    assert batch.batch_size == torch.Size([frames])
    # Exactly one agent acts per AEC step, and its action is in its action mask...
    acting = torch.cat([batch[g, "mask"] for g in example.AGENT_GROUPS], dim=-1)
    assert torch.all(acting.sum(-1) == 1)
    acted, legal = example.check_actions(batch)
    assert acted == frames and legal == frames
    # ...and legal for the engine itself, which saw every one of them.
    assert check.checked == frames and check.illegal == []
    # The ply limit (R6.2) ended games inside the batch; the collector reset them.
    ended = int(batch["next", "done"].sum())
    assert ended >= frames // max_plies - 1 and check.games >= ended + 1
    rewards = torch.cat([batch["next", g, "reward"] for g in example.AGENT_GROUPS], dim=-1).squeeze(-2)
    done = batch["next", "done"].squeeze(-1)
    assert torch.all(rewards[~done] == 0)  # R7.4: rewards only at the end
    assert torch.all(rewards[done].sum(-1) == 0)  # zero-sum


def test_example_script_runs(capsys):
    assert example.main(["--frames", "32", "--max-plies", "16"]) == 0
    out = capsys.readouterr().out
    assert "collected 32 transitions" in out and "legal in 32/32 steps" in out
