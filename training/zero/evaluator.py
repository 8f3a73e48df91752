"""The network as the search's leaf evaluator, and the `checkpoint:PATH:az:N` agent.

`NetworkEvaluator` implements `colony_env.agents.az.LeafEvaluator`: one forward pass for all
pending leaves of all searches (policy logits at the legal actions only, `PolicyValueNet.forward`)
and the value head squashed by tanh into [-1, 1], the scale the search backs up. Networks
trained by `colony-zero` fit exactly that tanh value to game outcomes; a PPO checkpoint's value
head estimates shaped returns instead, so its values are only a rough guide.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

from colony_env.agents.az import AZAgent, RolloutMixEvaluator, SearchConfig

from ..checkpoint import load_model
from ..model import PolicyValueNet
from ..teacher import greedy_action_features


class NetworkEvaluator:
    """Priors and values of a `PolicyValueNet` for a batch of leaves (canonical frame).

    On the CPU the network is traced and frozen at the first call (`torch.jit.trace`, then
    `torch.jit.freeze` and `optimize_for_inference`, which pre-packs the convolution weights):
    measured side by side with `python -m colony_training.bench_zero`, that makes a batch of 64 leaves
    about 1.3x faster for the quickstart network and leaves a single leaf as fast as before
    (docs/zero.md). The trace is a snapshot of the weights: build a new evaluator after the
    network changes. `trace=False`, a network with the heuristic input, or a GPU keeps eager mode.
    """

    def __init__(self, model: PolicyValueNet, device: torch.device | str = "cpu", trace: bool = True) -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self._trace = trace and self.device.type == "cpu" and not model.heuristic_prior
        self._traced: torch.jit.ScriptModule | None = None

    def _forward(self, obs_t: torch.Tensor, ids_t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self._traced is None:
            # Sizes are traced as values, not constants: the trace serves every batch size and width.
            # TorchScript is deprecated in favour of torch.compile, which on this CPU gains as much for a
            # batch but costs a compile per process and generation (docs/zero.md); say it once, in the docs.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                traced = torch.jit.trace(self.model, (obs_t, ids_t), check_trace=False)
                self._traced = torch.jit.optimize_for_inference(torch.jit.freeze(traced))
        return self._traced(obs_t, ids_t)

    @torch.inference_mode()
    def __call__(self, states: np.ndarray, obs: np.ndarray, ids: np.ndarray, counts: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        obs_t = torch.from_numpy(np.ascontiguousarray(obs)).to(self.device)
        ids_t = torch.from_numpy(ids.astype(np.int64)).to(self.device)
        if self._trace:
            logits, value = self._forward(obs_t, ids_t)
        else:
            feats = None
            if self.model.heuristic_prior:  # slots follow the engine's generation order, as in training
                rows = np.arange(states.shape[0], dtype=np.int64)
                feats = torch.from_numpy(greedy_action_features(np.ascontiguousarray(states), rows, ids.shape[1]))
                feats = feats.to(self.device)
            logits, value = self.model(obs_t, ids_t, feats)
        return logits.float().cpu().numpy(), torch.tanh(value.float()).cpu().numpy()


def load_az_agent(path: str | Path, simulations: int, root: str = "gumbel", c_puct: float | None = None,
                  max_considered: int | None = None, gumbel_scale: float | None = None,
                  rollout_mix: float = 0.0, name: str | None = None) -> AZAgent:
    """A checkpoint's network guiding `simulations` simulations per move (priors and values at every node)."""
    model, _ = load_model(path)
    options: dict[str, object] = {"simulations": simulations, "root": root}
    if c_puct is not None:
        options["c_puct"] = c_puct
    if max_considered is not None:
        options["max_considered"] = max_considered
    if gumbel_scale is not None:
        options["gumbel_scale"] = gumbel_scale
    return AZAgent(leaf_evaluator(model, "cpu", rollout_mix), SearchConfig(**options),
                   name=name or f"az:{Path(path).name}:{simulations}")


def leaf_evaluator(model: PolicyValueNet, device: str | torch.device = "cpu", rollout_mix: float = 0.0,
                   seed: int = 0) -> NetworkEvaluator | RolloutMixEvaluator:
    """The network as leaf evaluator, its values mixed with random playouts when `rollout_mix` > 0."""
    evaluator = NetworkEvaluator(model, device)
    return RolloutMixEvaluator(evaluator, rollout_mix, seed) if rollout_mix > 0 else evaluator
