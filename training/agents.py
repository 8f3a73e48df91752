"""The network agents: everything that plays from a checkpoint, in one module (torch-side).

| agent                        | what it does                                                         | spec |
|------------------------------|----------------------------------------------------------------------|------|
| `PolicyAgent`                | the policy alone: most likely legal action (near-ties at random) or sampled | `checkpoint:PATH[:sample]` |
| `load_search_agent`          | the policy as the root prior of a compiled MCTS with random rollouts  | `checkpoint:PATH:mcts:N[:C]` |
| `load_az_agent`              | the network at every node of a batched search (priors and values)     | `checkpoint:PATH:az:N[:OPT...]` |
| `NetworkEvaluator`, `leaf_evaluator` | the network as the search's leaf evaluator (colony-zero's self-play, `az`) | |
| `ValueReading`               | how a checkpoint's value head reads as the mover's value in [-1, 1]   | |

Every agent has `name` and `act(state, rng) -> board-frame action id` (the
`colony_env.agents.Agent` interface); the search agents also `act_batch`. Checkpoint files
themselves (format, safe loading, `load_model`) are `checkpoint.py`. Eval's agent specs
(`eval/agent_specs.py`), the web app, colony-zero and users' code import this module by name.

`NetworkEvaluator` implements `colony_env.agents.az.LeafEvaluator`: one forward pass for all
pending leaves of all searches (policy logits at the legal actions only, `PolicyValueNet.forward`)
and the value head read as a value in [-1, 1], the scale the search backs up (`ValueReading`):
networks trained by `colony-zero` fit tanh of the head to game outcomes; the PPO trainers' head is
linear and, with reward shaping, learns V - Phi (training/ppo/shaping.py), so Phi is added back.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import colony_env as ce
from colony_env import observation, symmetry
from colony_env.agents import MCTSAgent
from colony_env.agents.az import AZAgent, RolloutMixEvaluator, SearchConfig
from colony_env.agents.mcts import DEFAULT_PRIOR_C

from .checkpoint import load_model
from .model import MaskedCategorical, PolicyValueNet
from .ppo.shaping import mover_potential
from .teacher import greedy_action_features

NEAR_TIE_NATS = 0.5
"""Greedy play picks uniformly among the actions whose log-probability is this close to the best
(the default of `PolicyAgent.tie_nats`; `examples/policy_play_probe.py` measures other widths)."""


class PolicyAgent:
    """An engine-level agent (`act(state, rng) -> board-frame action id`) backed by a trained network.

    It encodes the position in the mover's canonical view, scores the legal actions only
    (mapped to that view), and either takes the most likely one (`greedy=True`, near-ties
    within `tie_nats` broken with `rng`) or samples from the policy.
    """

    def __init__(self, model: PolicyValueNet, name: str, greedy: bool = True,
                 tie_nats: float = NEAR_TIE_NATS) -> None:
        if isinstance(tie_nats, bool) or not isinstance(tie_nats, (int, float)) or not 0 <= tie_nats < float("inf"):
            raise ValueError(f"tie_nats must be a finite number >= 0, got {tie_nats!r}")
        self.model = model.eval()
        self.name = name
        self.greedy = greedy
        self.tie_nats = float(tie_nats)

    def policy(self, state: ce.GameState) -> tuple[np.ndarray, np.ndarray, float]:
        """(legal board-frame action ids, their probabilities, value head output) of `state`.

        With reward shaping the value head estimates V - Phi for the mover (training/ppo/shaping.py).
        """
        return self.policies([state])[0]

    @torch.no_grad()
    def policies(self, states: list[ce.GameState]) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """`policy` of several positions with one forward pass (float64 probabilities, in board-frame id order)."""
        if not states:
            return []
        if any(s.is_over for s in states):
            raise ValueError("the game is over: no action is legal (R8.4)")
        board = [ce.legal_actions(s) for s in states]
        counts = np.array([len(ids) for ids in board])
        width = int(counts.max())
        canonical = np.zeros((len(states), width), np.int64)  # padding: id 0, marked invalid
        for i, (s, ids) in enumerate(zip(states, board)):
            canonical[i, :len(ids)] = symmetry.board_action_to_canonical(ids, s.to_move)
        valid = np.arange(width)[None, :] < counts[:, None]
        obs = np.stack([observation.encode_observation(s, s.to_move) for s in states])
        feats = None
        if self.model.heuristic_prior:  # slots follow board_ids' (ascending) order, as in training
            rows = np.arange(len(states), dtype=np.int64)
            feats = torch.from_numpy(greedy_action_features(np.stack([s._a for s in states]), rows, width))
        probs, values = self._probabilities(obs, canonical, valid, feats)
        return [(ids, probs[i, :len(ids)], float(values[i])) for i, ids in enumerate(board)]

    def _probabilities(self, obs: np.ndarray, canonical: np.ndarray, valid: np.ndarray,
                       feats: torch.Tensor | None) -> tuple[np.ndarray, np.ndarray]:
        """float64 probabilities [B, L] of the canonical ids (0 at invalid slots) and the value head [B], from the
        movers' views `obs` [B, C, 10, 10] (`feats` [B, L]: the greedy scores, for a network with the heuristic input)."""
        valid_t = torch.from_numpy(valid)
        logits, value = self.model(torch.from_numpy(obs), torch.from_numpy(canonical), feats, valid=valid_t)
        return MaskedCategorical(logits.float(), valid_t).probs.double().numpy(), value.float().numpy()

    def act(self, state: ce.GameState, rng: np.random.Generator) -> int:
        return self.act_batch([state], [rng])[0]

    def act_batch(self, states: list[ce.GameState], rngs: list[np.random.Generator]) -> list[int]:
        """`act` for several games at once (one forward pass; `colony-eval --batch`, the trainers' evaluations)."""
        return [self._choose(ids, probs, rng) for (ids, probs, _), rng in zip(self.policies(states), rngs)]

    def _choose(self, board_ids: np.ndarray, probs: np.ndarray, rng: np.random.Generator) -> int:
        if self.greedy:
            # A deterministic argmax shuffles one satellite back and forth in quiet positions until
            # the ply limit (many draws); near-ties are therefore broken at random.
            logp = np.log(np.maximum(probs, 1e-300))
            best = np.flatnonzero(logp >= logp.max() - self.tie_nats)
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


# --- the network inside a search -----------------------------------------------------------------
@dataclass(frozen=True)
class ValueReading:
    """How a value head's raw output reads as the mover's value in [-1, 1].

    `tanh`: colony-zero fits tanh(head) to game results (its checkpoints say `meta.value_head: tanh`);
    otherwise the head is linear (the PPO trainers' value), and a run with reward shaping (`shaping_scale`
    > 0) taught it V - Phi (training/ppo/shaping.py), so V = head + Phi, clipped to [-1, 1].
    """

    tanh: bool = True
    shaping_scale: float = 0.0

    @classmethod
    def of_checkpoint(cls, data: dict) -> ValueReading:
        """The reading of a checkpoint's value head, from its `meta` and `config` (`checkpoint.read_checkpoint`)."""
        if (data.get("meta") or {}).get("value_head") == "tanh":
            return cls(tanh=True)
        return cls(tanh=False, shaping_scale=float((data.get("config") or {}).get("shaping_scale") or 0.0))

    def __call__(self, heads: np.ndarray, states: np.ndarray) -> np.ndarray:
        """float64 values for the movers of the packed board-frame `states` [N, STATE_LEN] from raw `heads` [N]."""
        heads = np.asarray(heads, np.float64).reshape(-1)
        if self.tanh:
            return np.tanh(heads)
        if self.shaping_scale:
            heads = heads + mover_potential(np.asarray(states), self.shaping_scale)
        return np.clip(heads, -1.0, 1.0)


class NetworkEvaluator:
    """Priors and values of a `PolicyValueNet` for a batch of leaves (canonical frame).

    On the CPU the network is traced and frozen at the first call (`torch.jit.trace`, then
    `torch.jit.freeze` and `optimize_for_inference`, which pre-packs the convolution weights):
    measured side by side with `python -m colony_training.bench_zero`, that makes a batch of 64 leaves
    about 1.3x faster for the quickstart network and leaves a single leaf as fast as before
    (docs/zero.md). The trace is a snapshot of the weights: build a new evaluator after the
    network changes. `trace=False`, a network with the heuristic input, bf16 convolutions or an int8
    trunk (as fast eagerly), or a GPU keeps eager mode.
    """

    def __init__(self, model: PolicyValueNet, device: torch.device | str = "cpu", trace: bool = True,
                 reading: ValueReading = ValueReading()) -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.reading = reading
        self._trace = (trace and self.device.type == "cpu" and not model.heuristic_prior and not model.bf16_trunk
                       and not model.int8_body)
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
        return logits.float().cpu().numpy(), self.reading(value.float().cpu().numpy(), states)


def load_az_agent(path: str | Path, simulations: int, root: str = "gumbel", c_puct: float | None = None,
                  max_considered: int | None = None, gumbel_scale: float | None = None,
                  rollout_mix: float = 0.0, name: str | None = None, bf16: bool = False, int8: bool = False,
                  decisive: bool | None = None, rollout_playouts: int = 1, rollout_from: int = 0,
                  c_scale: float | None = None) -> AZAgent:
    """A checkpoint's network guiding `simulations` simulations per move (priors and values at every node);
    `bf16`: its convolutions in bfloat16 under autocast (PPO's `precision: bf16`; fast where the CPU has
    bf16 instructions, emulated and slow where it has not); `int8`: its stem and trunk quantized to int8
    (`quantize.int8_copy`; the heads stay float32); `decisive`: `SearchConfig.decisive` (None: its default);
    `rollout_mix`, `rollout_playouts`, `rollout_from`: `RolloutMixEvaluator`'s share, playouts per leaf and the
    connected satellites it starts at; `c_scale`: `SearchConfig.c_scale` (None: its default)."""
    model, data = load_model(path)
    if int8:
        from .quantize import int8_copy
        model = int8_copy(model)
    model.bf16_trunk = bf16
    options: dict[str, object] = {"simulations": simulations, "root": root}
    if c_puct is not None:
        options["c_puct"] = c_puct
    if max_considered is not None:
        options["max_considered"] = max_considered
    if gumbel_scale is not None:
        options["gumbel_scale"] = gumbel_scale
    if decisive is not None:
        options["decisive"] = decisive
    if c_scale is not None:
        options["c_scale"] = c_scale
    return AZAgent(leaf_evaluator(model, "cpu", rollout_mix, reading=ValueReading.of_checkpoint(data),
                                  playouts=rollout_playouts, from_connected=rollout_from),
                   SearchConfig(**options),
                   name=name or f"az:{Path(path).name}:{simulations}")


def leaf_evaluator(model: PolicyValueNet, device: str | torch.device = "cpu", rollout_mix: float = 0.0,
                   seed: int = 0, reading: ValueReading = ValueReading(), playouts: int = 1,
                   from_connected: int = 0) -> NetworkEvaluator | RolloutMixEvaluator:
    """The network as leaf evaluator (its value head read by `reading`), its values mixed with the mean of
    `playouts` random playouts when `rollout_mix` > 0 (only at leaves with `from_connected` or more connected
    satellites, if > 0)."""
    evaluator = NetworkEvaluator(model, device, reading=reading)
    return (RolloutMixEvaluator(evaluator, rollout_mix, seed, playouts, from_connected) if rollout_mix > 0
            else evaluator)
