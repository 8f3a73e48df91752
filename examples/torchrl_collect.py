"""Colony in TorchRL: the AEC env through TorchRL's PettingZoo wrapper, a masked policy, a collected batch.

    pip install -e ".[torchrl]"
    python examples/torchrl_collect.py --frames 256

`PettingZooWrapper(env=colony_env.env(), use_mask=True)` turns the turn-based AEC env into a
TorchRL env with one group per agent (`player_0` red, `player_1` blue). Per step and group the
tensordict holds

    (group, "observation", "observation")  float32[1, 10, 10, 30]  the env's planes (board frame)
    (group, "action_mask")                 bool[1, 16001]          legal actions of that agent
    (group, "mask")                        bool[1]                 True for the agent to move
    (group, "action")                      int64[1]                read only for the agent to move

`use_mask=True` is compulsory for AEC envs: only one agent acts per step, and `mask` says
which; TorchRL also folds each agent's `action_mask` into its action spec. The policy here
is the project's `PolicyValueNet` (training/model.py), untrained, shared by both groups, with
TorchRL's `MaskedCategorical` over its 16,001 logits, so every sampled action is legal.
The script collects one batch with a TorchRL `Collector` and checks that claim.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.modules import MaskedCategorical, ProbabilisticActor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import colony_env  # noqa: E402
from colony_env.observation import OBS_CHANNELS  # noqa: E402
from colony_training.model import PolicyValueNet  # noqa: E402

AGENT_GROUPS = ("player_0", "player_1")  # the default AEC grouping: one group per agent


class BoardLogits(nn.Module):
    """Channels-last planes [..., 10, 10, C] -> the network's 16,001 logits (R8 layout)."""

    def __init__(self, net: PolicyValueNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, planes: torch.Tensor) -> torch.Tensor:
        lead = planes.shape[:-3]
        x = planes.reshape(-1, *planes.shape[-3:]).permute(0, 3, 1, 2)
        logits, _ = self.net.full_logits(x)
        return logits.reshape(*lead, -1)


def make_env(max_plies: int = 400, seed: int = 0) -> PettingZooWrapper:
    """The Colony AEC env as a TorchRL env (one group per agent, agent and action masks)."""
    with warnings.catch_warnings():  # TorchRL warns for any PettingZoo but 1.24.3; colony_v0 is tested on 1.27
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        return PettingZooWrapper(env=colony_env.env(max_plies=max_plies), use_mask=True, categorical_actions=True,
                                 seed=seed)


def make_policy(net: PolicyValueNet) -> TensorDictSequential:
    """One masked actor per group, all sharing `net`: logits -> MaskedCategorical(mask=action_mask)."""
    shared = BoardLogits(net)
    actors = []
    for g in AGENT_GROUPS:
        logits = TensorDictModule(shared, in_keys=[(g, "observation", "observation")], out_keys=[(g, "logits")])
        actors.append(
            ProbabilisticActor(
                logits,
                in_keys={"logits": (g, "logits"), "mask": (g, "action_mask")},
                out_keys=[(g, "action")],
                distribution_class=MaskedCategorical,
            )
        )
    return TensorDictSequential(*actors)


def collect(frames: int, max_plies: int = 400, seed: int = 0, channels: int = 16, blocks: int = 1,
            env: PettingZooWrapper | None = None) -> TensorDictBase:
    """One batch of `frames` env steps (games are reset automatically when they end); `env`
    replaces the default `make_env(max_plies, seed)`."""
    torch.manual_seed(seed)
    env = make_env(max_plies, seed) if env is None else env
    policy = make_policy(PolicyValueNet(OBS_CHANNELS, channels, blocks))
    collector = Collector(env, policy, frames_per_batch=frames, total_frames=frames,
                          auto_register_policy_transforms=False)  # the policy is stateless
    try:
        batch = next(iter(collector))
    finally:
        collector.shutdown()
        env.close()
    return batch


def check_actions(batch: TensorDictBase) -> tuple[int, int]:
    """(steps where an agent acted, how many of those actions were in its action mask)."""
    acted = legal = 0
    for g in AGENT_GROUPS:
        acting = batch[g, "mask"].reshape(-1)
        action = batch[g, "action"].reshape(-1)
        mask = batch[g, "action_mask"].reshape(-1, colony_env.N_ACTIONS)
        idx = acting.nonzero().squeeze(-1)
        acted += len(idx)
        legal += int(mask[idx, action[idx]].sum())
    return acted, legal


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=256, help="env steps to collect (default 256)")
    p.add_argument("--max-plies", type=int, default=400, help="ply limit per game (R6.2)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.frames < 1 or args.max_plies < 1:
        p.error("--frames and --max-plies must be >= 1")
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    batch = collect(args.frames, args.max_plies, args.seed)
    seconds = time.perf_counter() - t0
    acted, legal = check_actions(batch)
    games = int(batch["next", "done"].sum())
    print(f"collected {batch.batch_size[0]} transitions ({games} games ended) in {seconds:.1f} s")
    print(f"acting agent's action legal in {legal}/{acted} steps")
    for key in (("player_0", "observation", "observation"), ("player_0", "action_mask"), ("player_0", "action"),
                ("next", "player_0", "reward")):
        print(f"  {'/'.join(key):32s} {tuple(batch[key].shape)} {batch[key].dtype}")
    return 0 if acted == batch.batch_size[0] and legal == acted else 1


if __name__ == "__main__":
    sys.exit(main())
