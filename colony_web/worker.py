"""What a thinking process does: agents' moves and the analysis of positions.

These functions run in the worker processes of `thinker.Thinker`, never in the server
process, so that a long search (compiled code that holds the GIL) or a hung agent never
stalls the page, and a search past its time limit can be stopped by ending its process.
Agents and analysers are built once per spec and kept (a checkpoint loads once).

Analysis of a spec:
* `checkpoint:PATH...`: the policy's probabilities over the legal actions and its value
  (the mover's expected return), from `colony_training.agents.load_policy_agent(...).policy(state)`;
  the value head read as in training (`colony_training.agents.ValueReading`: tanh for colony-zero;
  a network trained with reward shaping learns V - Phi, so Phi is added back, training/ppo/shaping.py);
* any spec whose agent searches (`mcts:N`, `checkpoint:PATH:mcts:N`, ...): the root's
  visit counts and mean returns from `mcts_search(state, rng)`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

import colony_env as ce

from colony_training.eval.agent_specs import AgentSpecError, make_agent, parse_agent_spec
from .views import action_cells

CACHE_SIZE = 8  # agents and analysers kept per worker process
TOP_MOVES = 8  # default number of moves listed by an analysis
PV_PLIES = 6  # moves of the principal variation shown


class JobError(ValueError):
    """A job the worker cannot do (unknown spec, unreadable checkpoint, bad state); one line."""


class _Cache(OrderedDict):
    """A small least-recently-used map from spec text to a built object."""

    def get_or_build(self, key: str, build) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = build()
        self[key] = value
        while len(self) > CACHE_SIZE:
            self.popitem(last=False)
        return value


_agents = _Cache()
_analysers = _Cache()


def _agent(spec: str):
    def build():
        try:
            return make_agent(spec)
        except AgentSpecError as e:
            raise JobError(str(e)) from None

    return _agents.get_or_build(spec, build)


def _state(packed: np.ndarray) -> ce.GameState:
    state = ce.GameState.from_array(packed)
    if state.is_over:
        raise JobError(f"the game is over ({state.end_reason}); no action is legal (R8.4)")
    return state


def check_spec(spec: str) -> str:
    """Build the agent of `spec` (loading its checkpoint) and return its name: validates a new game's players."""
    return str(getattr(_agent(spec), "name", spec))


def check_checkpoints(paths: list[str]) -> list[str | None]:
    """Why each checkpoint does not load as an agent (None for one that does): `colony-web` checks its
    `--checkpoint` files at start, in a process of its own, as every tool loads a checkpoint spec."""
    out: list[str | None] = []
    for path in paths:
        try:
            make_agent(f"checkpoint:{path}")
            out.append(None)
        except AgentSpecError as e:
            out.append(str(e))
    return out


def act(spec: str, packed: np.ndarray, seed: int) -> int:
    """The move of `spec`'s agent in the position, with a generator seeded by the game."""
    return int(_agent(spec).act(_state(packed), np.random.default_rng(seed)))


class Analyser:
    """A policy (probabilities and value) and/or a search (visit counts) for one spec."""

    def __init__(self, spec: str) -> None:
        try:
            parsed = parse_agent_spec(spec)
        except AgentSpecError as e:
            raise JobError(str(e)) from None
        agent = _agent(spec)  # a missing or corrupt checkpoint is reported here, in agent_specs' words
        self.policy = None
        self.reading = None
        if parsed.kind == "checkpoint":
            from colony_training import agents, checkpoint  # imported on first use: they pull in torch

            self.policy = agents.load_policy_agent(parsed.path)
            # how the value head reads as a value: tanh for colony-zero, head + Phi with reward shaping
            self.reading = agents.ValueReading.of_checkpoint(checkpoint.read_checkpoint(parsed.path))
        inner = getattr(agent, "inner", agent)  # agent_specs wraps loaded agents under the spec's name
        # MCTSAgent.mcts_search gives the root's children; AZAgent.analyse the root's statistics
        self.searcher = inner if any(callable(getattr(inner, m, None)) for m in ("mcts_search", "analyse")) else None
        if self.policy is None and self.searcher is None:
            raise JobError(
                f"{spec!r} offers nothing to analyse: use checkpoint:PATH (policy and value), "
                "checkpoint:PATH:mcts:N or mcts:N (search visit counts)"
            )

    def value(self, state: ce.GameState) -> tuple[float, float]:
        """(value for the mover in [-1, 1], the value head's raw output), the head read as in training
        (`ValueReading`: tanh for colony-zero, head + Phi with reward shaping)."""
        head = float(self.policy.policy(state)[2])
        return self._read(np.array([head]), [state])[0], head

    def _read(self, heads: np.ndarray, states: list[ce.GameState]) -> list[float]:
        return [float(v) for v in self.reading(heads, np.stack([s.to_array() for s in states]))]

    def values(self, states: list[ce.GameState]) -> list[float]:
        """`value(s)[0]` of many ongoing positions, batched (the value graph)."""
        from .network import head_values

        return self._read(head_values(self.policy.model, states), states) if states else []

    def _policy_line(self, state: ce.GameState, plies: int) -> list[int]:
        """The network's most likely move, ply after ply, while the game goes on."""
        line: list[int] = []
        while len(line) < plies and not state.is_over:
            ids, probs, _ = self.policy.policy(state)
            line.append(int(ids[int(np.argmax(probs))]))
            state = ce.apply_action(state, line[-1])
        return line

    def _line_cells(self, state: ce.GameState, line: list[int]) -> list[dict[str, Any]]:
        out = []
        for a in line:
            out.append({**action_cells(a, state), "action": a, "mover": str(state.to_move)})
            state = ce.apply_action(state, a)
        return out

    def _search(self, state: ce.GameState, rng: np.random.Generator
                ) -> tuple[list[tuple[int, int, float | None]], int, int, list[int]]:
        """([(action, visits, mean return for the mover or None)], simulations, the move the agent plays,
        the tree's own line after it) of one search from `state`."""
        if callable(getattr(self.searcher, "mcts_search", None)):
            root = self.searcher.mcts_search(state, rng)
            kids = [(n.action, n.explore_count, n.total_reward / n.explore_count if n.explore_count else None)
                    for n in root.children]
            line, node = [], root
            while node.children and len(line) < PV_PLIES:  # the tree's principal variation: most visits
                node = max(node.children, key=lambda n: n.explore_count)
                if node.explore_count == 0:
                    break
                line.append(int(node.action))
            best = line[0] if line else int(kids[0][0])
            return kids, sum(n for _, n, _ in kids), best, line[1:]
        res = self.searcher.analyse(state, rng)
        kids = [(int(a), int(n), float(q) if n else None) for a, n, q in zip(res.actions, res.visits, res.q)]
        return kids, sum(n for _, n, _ in kids), int(res.action), []  # the compiled tree keeps only its root

    def analyse(self, state: ce.GameState, top: int, seed: int) -> dict[str, Any]:
        """Top moves, value, the best move and a principal variation (`pv`), and the ownership map.

        The line starts with the move the agent would play (the search's choice, else the policy's
        most likely move); a search tree that keeps its nodes (`mcts:N`) goes on along its most
        visited children, and the network's most likely moves continue it to PV_PLIES (`pv_source`).
        """
        out: dict[str, Any] = {"policy": None, "value": None, "search": None,
                               "shaping_scale": self.reading.shaping_scale if self.reading else 0.0,
                               "ownership": None, "pv": [], "pv_source": None, "best": None}
        line: list[int] = []
        if self.policy is not None:
            ids, probs, _ = self.policy.policy(state)
            order = np.argsort(-probs, kind="stable")[:top]
            out["policy"] = [{**action_cells(int(ids[i]), state), "action": int(ids[i]), "prob": float(probs[i])}
                             for i in order]
            out["value"], out["value_head"] = self.value(state)
            from .network import ownership

            out["ownership"] = ownership(self.policy.model, state)
            line = [int(ids[order[0]])]
            out["pv_source"] = "policy"
        if self.searcher is not None:
            kids, simulations, best, tree_line = self._search(state, np.random.default_rng(seed))
            kids = sorted((k for k in kids if k[1] > 0), key=lambda k: (-k[1], -(k[2] or 0.0)))  # searched moves only
            out["search"] = {
                "simulations": simulations,
                "moves": [{**action_cells(a, state), "action": a, "visits": n, "q": q} for a, n, q in kids[:top]],
            }
            line = [best, *tree_line]
            out["pv_source"] = "search" if not tree_line else "search tree"
        if line:
            after = state
            for a in line:
                after = ce.apply_action(after, a)
            if self.policy is not None and len(line) < PV_PLIES:
                line += self._policy_line(after, PV_PLIES - len(line))
                if out["pv_source"] != "policy":
                    out["pv_source"] += ", then the network's most likely moves"
            out["pv"] = self._line_cells(state, line)
            out["best"] = out["pv"][0]["notation"]
        return out


def _analyser(spec: str) -> Analyser:
    return _analysers.get_or_build(spec, lambda: Analyser(spec))


def analyse(spec: str, packed: np.ndarray, top: int, seed: int) -> dict[str, Any]:
    """Top moves of the policy and/or the search in one position, and the policy's value for the mover."""
    return _analyser(spec).analyse(_state(packed), top, seed)


def values(spec: str, states: list[np.ndarray]) -> list[float | None]:
    """The policy's value of each position from red's side (finished games: the result); for the value graph."""
    analyser = _analyser(spec)
    if analyser.policy is None:
        raise JobError(f"{spec!r} has no value head: the value graph needs checkpoint:PATH")
    positions = [ce.GameState.from_array(p) for p in states]
    ongoing = [s for s in positions if not s.is_over]
    mover_values = iter(analyser.values(ongoing))
    out: list[float | None] = []
    for state in positions:
        if state.is_over:
            out.append(state.rewards()[0])
            continue
        v = next(mover_values)
        out.append(v if state.to_move == ce.RED else -v)
    return out


JOBS = {"check_spec": check_spec, "act": act, "analyse": analyse, "values": values}
