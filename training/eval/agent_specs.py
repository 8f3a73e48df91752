"""Agent spec strings, the one way every CLI names a player.

| spec                     | agent                                                        |
|--------------------------|--------------------------------------------------------------|
| `random`                 | uniform over the legal actions                               |
| `greedy`                 | one-ply colony heuristic (`colony_env.agents.greedy`)         |
| `mcts:N`                 | UCT with N simulations per move and random rollouts, uct_c 1 |
| `mcts:N:C`               | the same with exploration constant C                          |
| `checkpoint:PATH`        | a trained policy, most likely legal action                   |
| `checkpoint:PATH:sample` | a trained policy, actions sampled from it                    |
| `checkpoint:PATH:mcts:N` | the policy as the root prior of an N-simulation MCTS          |
| `checkpoint:PATH:mcts:N:C` | the same with the root's PUCT constant C                   |
| `checkpoint:PATH:az:N`   | the network at every node: N simulations, network priors and values (random playouts mixed in at late leaves, `AZ_LEAF_DEFAULT`), Gumbel root, completed Q weighted `AZ_C_SCALE_DEFAULT` |
| `checkpoint:PATH:az:N:OPT...` | options: `puct` (PUCT root, most visited move), `gumbel`, `c=X` (c_puct), `m=K` (Gumbel: actions considered), `noise=X` (Gumbel noise scale; 0 = deterministic), `cs=X` (Gumbel: the weight of completed Q against the prior, `SearchConfig.c_scale`; `AZ_C_SCALE_DEFAULT`, 1, unless given), `r=X` (leaf value mixed with random playouts, share X, at every leaf; `r=0`: the network's value alone), `rn=N` (playouts per leaf, default 1), `rfrom=K` (mix only at leaves with K or more connected satellites); without `r=` the leaves are `AZ_LEAF_DEFAULT`'s (`rn`/`rfrom` may change it), `decisive=0|1` (decisive moves, `SearchConfig.decisive`), `bf16` (the network's convolutions in bfloat16), `int8` (its stem and trunk in int8, `training/quantize.py`) |
| `zero`                   | the shipped colony-zero network (`checkpoints/colony_zero.pt`), most likely legal action |
| `zero:SUFFIX`            | the same network with any checkpoint suffix above: `zero:az:200` (its search), `zero:sample`, `zero:mcts:200` |
| `ppo`                    | the shipped self-play PPO network (`checkpoints/colony_ppo.pt`) |
| `ppo:SUFFIX`             | the same with any checkpoint suffix: `ppo:mcts:200`, `ppo:sample` |

The shipped networks are package data: `zero` and `ppo` work from any folder once the package is
installed (`colony_training.shipped` finds them).

Checkpoints are loaded by the network agents module, `colony_training.agents`
(`load_policy_agent(path, greedy)`, `load_search_agent(path, simulations, prior_c)`,
`load_az_agent(path, simulations, ...)`), imported on first use because it pulls in torch;
each returns an object with `name` and `act(state, rng) -> board-frame action id` (the
`colony_env.agents.Agent` interface).
Any problem (unknown spec, missing or corrupt file) is an `AgentSpecError` with a
one-line message saying what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import colony_env as ce
from colony_env.agents import Agent, GreedyAgent, MCTSAgent, RandomAgent
from colony_env.agents.az import MAX_FROM_CONNECTED, MAX_LEGAL
from colony_env.agents.base import MAX_LEAF_PLAYOUTS, MAX_SIMULATIONS
from colony_env.agents.mcts import DEFAULT_UCT_C

from ..shipped import shipped_checkpoint

SHIPPED_AGENTS = {"zero": "colony_zero.pt", "ppo": "colony_ppo.pt"}  # name -> file in checkpoints/
SPEC_HELP = (
    "allowed agent specs: 'random', 'greedy', 'zero' and 'ppo' (the shipped networks; 'zero:az:200' searches, "
    "and every checkpoint suffix below applies), 'mcts:N' (N simulations per move, e.g. mcts:200), "
    "'mcts:N:C' (uct_c C), 'checkpoint:PATH' (trained policy, greedy), 'checkpoint:PATH:sample', "
    "'checkpoint:PATH:mcts:N[:C]' (the policy guiding N simulations of MCTS with rollouts) "
    "or 'checkpoint:PATH:az:N[:puct][:c=X][:m=K][:noise=X][:cs=X][:r=X][:rn=N][:rfrom=K][:decisive=0|1][:bf16|:int8]' (the network's priors and values at every node, "
    "mixed with random playouts at late leaves unless r= says otherwise)"
)
SAMPLE_SUFFIX = ":sample"
GREEDY_SUFFIX = ":greedy"
SEARCH_SUFFIX_RE = re.compile(r":mcts:([^:]*)(?::([^:]*))?$", re.IGNORECASE)
AZ_SUFFIX_RE = re.compile(r":az:([^:]*)((?::[^:]*)*)$", re.IGNORECASE)
AZ_OPTIONS = {"c": "c_puct", "m": "max_considered", "noise": "gumbel_scale", "cs": "c_scale", "r": "rollout_mix",
              "rn": "rollout_playouts", "rfrom": "rollout_from"}  # az:N:key=value
AZ_INT_BOUNDS = {"m": MAX_LEGAL, "rn": MAX_LEAF_PLAYOUTS, "rfrom": MAX_FROM_CONNECTED}
"""The most each integer option takes: no position has more legal actions than `MAX_LEGAL`, and an ongoing
game has fewer than 23 connected satellites (23 end it, R6.2.1)."""
AZ_ROOTS = ("gumbel", "puct")
AZ_C_SCALE_DEFAULT = 1.0
"""`c_scale` of an `az:N` spec with the Gumbel root and no `cs=`: completed Q weighs ten times mctx's default (0.1,
`SearchConfig`'s and colony-zero's self-play), so the values decide among the considered moves and the prior
mostly which ones are considered. On 200 shared games against `mcts:1000` it scored 0.883 against 0.790 for 0.1
(+0.092 +-0.065; docs/zero.md, "The weight of values, paired"); `cs=0.1` plays as `az:N` did before."""
AZ_LEAF_DEFAULT = {"rollout_mix": 0.75, "rollout_playouts": 16, "rollout_from": 17}
"""Leaf values of `az:N` when its spec gives no `r=`: at leaves with 17 or more connected satellites, a quarter
the network's value and three quarters the mean of 16 random playouts; earlier leaves the network's alone
(docs/zero.md, "Late-leaf playouts by default"). `r=X` mixes X at every leaf with one playout, `r=0` none."""


class AgentSpecError(ValueError):
    """An agent spec that cannot be turned into an agent; the message is one line."""


@dataclass(frozen=True)
class AgentSpec:
    """A parsed spec. `text` is the canonical string, used as the agent's name."""

    kind: str  # random | greedy | mcts | checkpoint
    text: str
    simulations: int = 0
    uct_c: float = DEFAULT_UCT_C
    path: str = ""
    greedy: bool = True
    search_simulations: int = 0  # checkpoint:PATH:mcts:N; 0 = the policy alone
    prior_c: float | None = None  # None: the search's default
    az_simulations: int = 0  # checkpoint:PATH:az:N; 0 = not the network-guided search
    az_options: tuple[tuple[str, object], ...] = ()  # keyword arguments of load_az_agent


def _positive_int(text: str, what: str, most: int = MAX_SIMULATIONS) -> int:
    try:
        value = int(text)
    except ValueError:
        raise AgentSpecError(f"{what}: {text!r} is not a whole number; {SPEC_HELP}") from None
    if not 1 <= value <= most:
        raise AgentSpecError(f"{what}: must be an integer in 1..{most}, got {value}; {SPEC_HELP}")
    return value


def _non_negative_float(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise AgentSpecError(f"{what} {text!r} is not a number; {SPEC_HELP}") from None
    if not math.isfinite(value) or value < 0:
        raise AgentSpecError(f"{what} must be a finite number >= 0, got {text!r}; {SPEC_HELP}")
    return value


def _az_options(suffix: str, text: str) -> tuple[tuple[str, object], ...]:
    """`:puct:c=1.5` -> (('root', 'puct'), ('c_puct', 1.5)); AgentSpecError for anything else."""
    out: dict[str, object] = {}
    for opt in filter(None, suffix.split(":")):
        low = opt.lower()
        if low in AZ_ROOTS:
            out["root"] = low
            continue
        if low in ("bf16", "int8"):
            out[low] = True
            if out.get("bf16") and out.get("int8"):
                raise AgentSpecError(f"checkpoint spec {text!r}: bf16 and int8 exclude each other; pick one")
            continue
        key, eq, value = low.partition("=")
        if key == "decisive" and eq:
            if value not in ("0", "1"):
                raise AgentSpecError(f"checkpoint spec {text!r}: decisive must be 0 or 1, got {value!r}")
            out["decisive"] = value == "1"
            continue
        if not eq or key not in AZ_OPTIONS:
            raise AgentSpecError(f"checkpoint spec {text!r}: unknown az option {opt!r}; allowed: gumbel, puct, "
                                 f"c=X (PUCT constant), m=K (actions considered), noise=X (Gumbel noise scale), "
                                 f"cs=X (Gumbel: weight of Q against the prior), "
                                 f"r=X (share of random playouts in leaf values, 0..1), rn=N (playouts per leaf), "
                                 f"rfrom=K (only leaves with K+ connected satellites), decisive=0|1 (decisive moves), "
                                 f"bf16 (bfloat16 convolutions), int8 (int8 trunk)")
        if key in AZ_INT_BOUNDS:
            out[AZ_OPTIONS[key]] = _positive_int(value, f"checkpoint spec {text!r}: {key}", AZ_INT_BOUNDS[key])
        elif key == "r":
            mix = _non_negative_float(value, f"checkpoint spec {text!r}: r")
            if mix > 1:
                raise AgentSpecError(f"checkpoint spec {text!r}: r must be in [0, 1], got {value!r}")
            out[AZ_OPTIONS[key]] = mix
        else:
            out[AZ_OPTIONS[key]] = _non_negative_float(value, f"checkpoint spec {text!r}: {key}")
    if out.get("root") != "puct":
        out.setdefault("c_scale", AZ_C_SCALE_DEFAULT)
    if "rollout_mix" not in out:
        return tuple({**AZ_LEAF_DEFAULT, **out}.items())
    if ("rollout_playouts" in out or "rollout_from" in out) and not out["rollout_mix"]:
        raise AgentSpecError(f"checkpoint spec {text!r}: rn and rfrom shape the random playouts, which r=0 "
                             f"turns off; give r=X with X > 0, or leave r out for the default late-leaf playouts")
    return tuple(out.items())


def parse_agent_spec(spec: str) -> AgentSpec:
    """Parse a spec string (table above); `AgentSpecError` if it is not one."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"empty agent spec; {SPEC_HELP}")
    text = spec.strip()
    low = text.lower()
    if low in ("random", "greedy"):
        return AgentSpec(kind=low, text=low)
    name, sep, suffix = text.partition(":")
    if name.lower() in SHIPPED_AGENTS:  # `zero:az:200` is `checkpoint:<shipped zero>:az:200`, named as typed
        if sep and not suffix:
            raise AgentSpecError(f"agent spec {text!r} ends with ':'; write {name.lower()!r} or "
                                 f"'{name.lower()}:SUFFIX' (e.g. '{name.lower()}:mcts:200'); {SPEC_HELP}")
        path = str(shipped_checkpoint(SHIPPED_AGENTS[name.lower()]))
        try:
            parsed = parse_agent_spec(f"checkpoint:{path}{sep}{suffix}")
        except AgentSpecError as e:  # say it in the user's words, not the installed path's
            raise AgentSpecError(str(e).replace(f"checkpoint:{path}", name.lower())) from None
        if parsed.path != path:
            raise AgentSpecError(f"agent spec {text!r}: unknown suffix {suffix!r}; allowed after "
                                 f"'{name.lower()}:': 'sample', 'greedy', 'mcts:N[:C]' or 'az:N[:OPTIONS]'")
        return replace(parsed, text=f"{name.lower()}{sep}{suffix}")
    if low == "mcts" or low.startswith("mcts:"):
        parts = text.split(":")
        if len(parts) not in (2, 3) or not parts[1]:
            raise AgentSpecError(f"bad MCTS spec {text!r}: write mcts:N or mcts:N:C; {SPEC_HELP}")
        sims = _positive_int(parts[1], f"MCTS spec {text!r}")
        c = DEFAULT_UCT_C if len(parts) == 2 else _non_negative_float(parts[2], f"MCTS spec {text!r}: uct_c")
        canonical = f"mcts:{sims}" if len(parts) == 2 else f"mcts:{sims}:{parts[2]}"
        return AgentSpec(kind="mcts", text=canonical, simulations=sims, uct_c=c)
    if low.startswith("checkpoint:"):
        path = text[len("checkpoint:") :]
        greedy = True
        az = AZ_SUFFIX_RE.search(path)
        if az:
            sims = _positive_int(az.group(1), f"checkpoint spec {text!r}: simulations")
            path = path[: az.start()]
            if not path:
                raise AgentSpecError(f"checkpoint spec {text!r} has no path; {SPEC_HELP}")
            return AgentSpec(kind="checkpoint", text=text, path=path, az_simulations=sims,
                             az_options=_az_options(az.group(2), text))
        search = SEARCH_SUFFIX_RE.search(path)
        if search:
            sims = _positive_int(search.group(1), f"checkpoint spec {text!r}: simulations")
            prior_c = None if search.group(2) is None else _non_negative_float(search.group(2), f"checkpoint spec {text!r}: PUCT constant")
            path = path[: search.start()]
            if not path:
                raise AgentSpecError(f"checkpoint spec {text!r} has no path; {SPEC_HELP}")
            return AgentSpec(kind="checkpoint", text=text, path=path, search_simulations=sims, prior_c=prior_c)
        if path.lower().endswith(SAMPLE_SUFFIX):
            path, greedy = path[: -len(SAMPLE_SUFFIX)], False
        elif path.lower().endswith(GREEDY_SUFFIX):
            path = path[: -len(GREEDY_SUFFIX)]
        if not path:
            raise AgentSpecError(f"checkpoint spec {text!r} has no path; {SPEC_HELP}")
        return AgentSpec(kind="checkpoint", text=text, path=path, greedy=greedy)
    raise AgentSpecError(f"unknown agent spec {text!r}; {SPEC_HELP}")


class _NamedAgent(Agent):
    """A loaded policy under the spec's name, so tables and records show what the user typed."""

    def __init__(self, inner: object, name: str) -> None:
        self.inner = inner
        self.name = name

    def act(self, state: ce.GameState, rng: np.random.Generator) -> int:
        return int(self.inner.act(state, rng))  # type: ignore[attr-defined]

    def act_batch(self, states: Sequence[ce.GameState], rngs: Sequence[np.random.Generator]) -> list[int]:
        inner = getattr(self.inner, "act_batch", None)  # an az agent searches the games together
        return [int(a) for a in inner(states, rngs)] if inner else super().act_batch(states, rngs)


def _load_checkpoint_agent(spec: AgentSpec) -> Agent:
    if not Path(spec.path).is_file():
        raise AgentSpecError(f"checkpoint file not found: {spec.path!r} (expected a .pt file written by colony-train)")
    from .. import agents  # torch is imported only when a checkpoint is played

    try:
        if spec.az_simulations:
            inner = agents.load_az_agent(spec.path, spec.az_simulations, **dict(spec.az_options))
        elif spec.search_simulations:
            extra = {} if spec.prior_c is None else {"prior_c": spec.prior_c}
            inner = agents.load_search_agent(spec.path, spec.search_simulations, **extra)
        else:
            inner = agents.load_policy_agent(spec.path, greedy=spec.greedy)
    except MemoryError:  # the search's arrays (az:N:m=K with a big N and K), not the file
        raise AgentSpecError(f"agent spec {spec.text!r}: not enough memory for this search; "
                             f"use fewer simulations or considered moves (m=K)") from None
    except Exception as e:  # a corrupt file can fail anywhere in torch; report it in one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AgentSpecError(f"cannot load checkpoint {spec.path!r}: {first[:300]}") from None
    if not callable(getattr(inner, "act", None)):
        raise AgentSpecError(f"colony_training.agents returned {type(inner).__name__}, which has no act()")
    return _NamedAgent(inner, spec.text)


def make_agent(spec: str | AgentSpec) -> Agent:
    """The agent for a spec (string or parsed); `AgentSpecError` with a one-line reason."""
    parsed = spec if isinstance(spec, AgentSpec) else parse_agent_spec(spec)
    if parsed.kind == "random":
        return RandomAgent(name=parsed.text)
    if parsed.kind == "greedy":
        return GreedyAgent(name=parsed.text)
    if parsed.kind == "mcts":
        return MCTSAgent(uct_c=parsed.uct_c, max_simulations=parsed.simulations, name=parsed.text)
    return _load_checkpoint_agent(parsed)


__all__ = ["SHIPPED_AGENTS", "SPEC_HELP", "AgentSpec", "AgentSpecError", "make_agent", "parse_agent_spec"]
