"""Gymnasium single-agent Colony: the learner plays one colour against a fixed opponent policy.

    >>> from sb3_contrib import MaskablePPO                     # doctest: +SKIP
    >>> from colony_env.wrappers import ColonySingleAgentEnv
    >>> env = ColonySingleAgentEnv(opponent=None, learner_colour="random")
    >>> obs, info = env.reset(seed=0)                          # float32[30, 10, 10]
    >>> mask = env.action_masks()                              # bool[16001], what MaskablePPO reads
    >>> obs, reward, terminated, truncated, info = env.step(int(mask.nonzero()[0][0]))
    >>> import gymnasium, colony_env                           # the same through the registry
    >>> env = gymnasium.make("colony_env/ColonySingleAgent-v0", opponent="greedy")

The observation is the learner's **canonical view** (`symmetry.py`: red sees the board,
blue its transpose, so the learner's edges always lie North and South), as the
channels-first `Box(0, 1, (30, 10, 10), float32)` that Stable-Baselines3 consumes
(`MlpPolicy` flattens it; a custom CNN can read the planes). Actions and
`action_masks()` are in the same canonical frame; the wrapper maps them to the board
frame for the engine. With `canonical=False` planes, actions and mask stay in the board
frame.

After the learner's action the opponent moves until the learner is to move again or the
game is over; either side may move several times in a row (grace moves, R6.3). The
reward is +1/-1/0 from the learner's point of view at the end (R7.4), 0 before;
`terminated` at a game end, `truncated` at the ply limit (R6.2, rewards still paid).
`info["action_mask"]` is `action_masks()` too (as Gymnasium's Taxi puts its mask in
`info`), so vectorised envs batch it. Every info has the same keys, each of one type and
never None: `learner_colour` ("red"/"blue"), `ply` (int), `action_mask`, `end_reason` ("" until
the episode ends, then R6.2's reason or "illegal_action"), `winner` ("red"/"blue", "" for none
or a draw) and `error` (the illegal action's message, else "").

The opponent is a spec string (`"random"`, the default; `"greedy"`; `"mcts:N"` or
`"mcts:N:C"`, as in `colony-eval`), any `colony_env.agents.Agent`, or a callable
`(state, rng) -> board action id`. A trained policy is an agent object too:
`colony_training.eval.agent_specs.make_agent("checkpoint:PATH")` (`colony_env` never imports torch).

`colony_env.gym_vector.ColonyGymVectorEnv` is the same task batched as a
`gymnasium.vector.VectorEnv`.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from . import frame
from .constants import DEFAULT_MAX_PLIES, N_ACTIONS, Colour
from .engine import GameState, IllegalActionError, apply_action, check_max_plies, new_game
from .observation import OBS_SHAPE
from .registration import GYMNASIUM_ID
from .symmetry import ACTION_MAP, CANONICAL_SYMMETRY, TRANSPOSE

OpponentPolicy = Callable[[GameState, np.random.Generator], int]
LEARNER_COLOURS = ("red", "blue", "random")
ILLEGAL_ACTION_MODES = ("raise", "lose")
ILLEGAL_ACTION_REWARD = -1.0


OPPONENT_SPECS_HELP = "'random', 'greedy', 'mcts:N' or 'mcts:N:C' (N simulations per move, uct_c C)"
_MCTS_SPEC = re.compile(r"mcts:(\d+)(?::([0-9.eE+-]+))?")


def make_opponent(spec: Any) -> Any:
    """An opponent from a spec string (see the module docstring), None (random), or an agent
    or callable, returned as it is. A bad spec is a `ValueError` naming what is allowed."""
    from .agents import GreedyAgent, MCTSAgent, RandomAgent

    if spec is None:
        return RandomAgent()
    if not isinstance(spec, str):
        return spec
    text = spec.strip().lower()
    if text == "random":
        return RandomAgent()
    if text == "greedy":
        return GreedyAgent()
    match = _MCTS_SPEC.fullmatch(text)
    if match and int(match[1]) >= 1:
        kwargs: dict[str, Any] = {"max_simulations": int(match[1]), "name": text}
        if match[2] is not None:
            try:
                kwargs["uct_c"] = float(match[2])
            except ValueError:
                kwargs["uct_c"] = -1.0  # refused just below with the spec in the message
            if not kwargs["uct_c"] >= 0.0:
                raise ValueError(f"opponent spec {spec!r}: the exploration constant must be a number >= 0")
        return MCTSAgent(**kwargs)
    if text.startswith("checkpoint:"):
        raise ValueError(
            f"opponent spec {spec!r}: a checkpoint needs torch, which colony_env does not import; "
            "pass the agent instead: opponent=colony_training.eval.agent_specs.make_agent(SPEC)"
        )
    raise ValueError(f"unknown opponent spec {spec!r}; allowed: {OPPONENT_SPECS_HELP}, an Agent or a callable")


def _as_policy(opponent: Any) -> tuple[OpponentPolicy, str]:
    opponent = make_opponent(opponent)
    act = getattr(opponent, "act", opponent)
    if not callable(act):
        raise TypeError(f"opponent must be a spec ({OPPONENT_SPECS_HELP}), an Agent (with act(state, rng)) or a callable (state, rng) -> action, got {type(opponent).__name__}")
    return act, getattr(opponent, "name", getattr(act, "__name__", type(opponent).__name__))


def as_action_id(action: Any) -> int:
    """An integer action (Python or NumPy integer, 0-d integer array) as an int; anything else
    (floats, strings, None, bools) is an `IllegalActionError` saying what is allowed."""
    if not isinstance(action, (bool, np.bool_)):
        try:
            return operator.index(action)
        except TypeError:
            pass
    raise IllegalActionError(f"action must be an integer id in 0..{N_ACTIONS - 1}, got {action!r}")


class ColonySingleAgentEnv(gymnasium.Env):
    """One learner against an opponent policy; Gymnasium API, canonical frame, `action_masks()`.

    Args:
        opponent: a spec (`"random"`, `"greedy"`, `"mcts:N"`), an `Agent` or a callable
            `(state, rng) -> board-frame action`; None: random.
        learner_colour: "red", "blue" or "random" (drawn per episode from the env's generator).
        max_plies: the ply limit (R6.2); at least 2, so that the learner always gets a move.
        render_mode: "ansi", "rgb_array", "human" or None.
        canonical: observations, actions and masks in the learner's canonical frame (default)
            or in the board frame.
        illegal_action: "lose" (default, as PettingZoo's classic envs: the episode ends with
            reward -1, a warning and `info["end_reason"] == "illegal_action"`; every id in
            the action space is a valid input to `step`) or "raise" (`IllegalActionError`,
            nothing changes).
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 2}

    def __init__(
        self,
        opponent: Any = None,
        learner_colour: str | Colour = "random",
        max_plies: int = DEFAULT_MAX_PLIES,
        render_mode: str | None = None,
        canonical: bool = True,
        illegal_action: str = "lose",
    ) -> None:
        self._opponent, self.opponent_name = _as_policy(opponent)
        if isinstance(learner_colour, Colour):
            learner_colour = str(learner_colour)
        if learner_colour not in LEARNER_COLOURS:
            raise ValueError(f"learner_colour must be one of {LEARNER_COLOURS}, got {learner_colour!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {illegal_action!r}")
        self.learner_colour_mode = learner_colour
        self.max_plies = check_max_plies(max_plies, minimum=2)  # at least 2: the learner must get a move
        self.render_mode = render_mode
        self.canonical = bool(canonical)
        self.illegal_action = illegal_action
        self.observation_space = spaces.Box(low=0.0, high=1.0, shape=OBS_SHAPE, dtype=np.float32)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self.learner: Colour = Colour.RED
        self._state: GameState | None = None
        self._mask: np.ndarray | None = None  # the learner's mask of the current position, built once
        self._ids = np.zeros(frame.MAX_LEGAL, np.int16)  # scratch: the learner's legal ids (its frame)
        self._episode_over = False  # the game is over, or the learner lost on an illegal action
        self._viewer = None

    # --- frames ----------------------------------------------------------------------------
    @property
    def game_state(self) -> GameState:
        """The engine's `GameState` of the episode in progress (board frame)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the state")
        return self._state

    def _sym(self) -> int:
        return CANONICAL_SYMMETRY[self.learner] if self.canonical else 0

    def _observation(self) -> np.ndarray:
        """The learner's planes; the mask of the position too when it is not built yet (one pass)."""
        out = np.empty(OBS_SHAPE, np.float32)
        build_mask = self._mask is None and not self._episode_over
        n = frame.observe_into(self.game_state._a, int(self.learner), self._sym() == TRANSPOSE, out, self._ids, build_mask)
        if build_mask:
            self._mask = self._mask_of(n)
        return out

    def _mask_of(self, n: int) -> np.ndarray:
        mask = np.zeros(N_ACTIONS, np.bool_)
        mask[self._ids[:n]] = True
        return mask

    def action_masks(self) -> np.ndarray:
        """bool[16001]: the learner's legal actions in the frame of its actions (what
        sb3-contrib's MaskablePPO reads); all False once the episode is over. A fresh array."""
        if self._mask is None:
            state = self.game_state
            if self._episode_over or state.to_move != self.learner:
                self._mask = np.zeros(N_ACTIONS, np.bool_)
            else:
                self._mask = self._mask_of(frame.legal_into(state._a, self._sym() == TRANSPOSE, self._ids))
        return self._mask.copy()

    def to_board_action(self, action: int) -> int:
        """A learner action id (its frame) -> the board-frame id the engine applies."""
        return int(ACTION_MAP[TRANSPOSE][action]) if self._sym() == TRANSPOSE else int(action)

    # --- Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        mode = self.learner_colour_mode
        self.learner = Colour(int(self.np_random.integers(2))) if mode == "random" else Colour[mode.upper()]
        self._state = new_game(self.np_random, self.max_plies)
        self._mask = None
        self._episode_over = False
        self._opponent_moves()  # red opens when the learner is blue
        if self.render_mode == "human":
            self.render()
        return self._observation(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        state = self.game_state
        if self._episode_over:
            raise RuntimeError("the episode is over; call reset()")
        try:
            # A non-integer is judged like any illegal action (it is not in the action space).
            action_id = as_action_id(action)
            if not 0 <= action_id < N_ACTIONS:
                raise IllegalActionError(f"action {action_id} is outside the action space 0..{N_ACTIONS - 1} (R8)")
            self._state = apply_action(state, self.to_board_action(action_id))
        except IllegalActionError as exc:
            if self.illegal_action == "raise":
                raise IllegalActionError(f"learner action {action!r} (learner's frame): {exc}") from None
            gymnasium.logger.warn(f"learner action {action!r} (learner's frame): {exc}; the episode ends with reward {ILLEGAL_ACTION_REWARD:+g}")
            self._episode_over = True
            self._mask = None
            info = self._info()
            info.update(end_reason="illegal_action", error=str(exc))
            return self._observation(), ILLEGAL_ACTION_REWARD, True, False, info
        self._mask = None
        self._opponent_moves()
        if self.render_mode == "human":
            self.render()
        s = self.game_state
        self._episode_over = s.is_over
        reward = s.rewards()[int(self.learner)]
        return self._observation(), float(reward), s.is_over and not s.is_truncated, s.is_truncated, self._info()

    def render(self) -> None | np.ndarray | str:
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        from . import render

        if self.render_mode == "ansi":
            return render.render_ansi(self.game_state)
        if self.render_mode == "rgb_array":
            return render.render_rgb(self.game_state)
        if self._viewer is None:
            self._viewer = render.HumanViewer(title="colony", fps=self.metadata["render_fps"])
        self._viewer.show(self.game_state)
        return None

    def close(self) -> None:
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None

    # --- internals -------------------------------------------------------------------------
    def _opponent_moves(self) -> None:
        """The opponent acts until the learner is to move or the game is over (R6.3/R6.4)."""
        s = self.game_state
        while not s.is_over and s.to_move != self.learner:
            action = self._opponent(s, self.np_random)
            try:
                s = apply_action(s, action)
            except IllegalActionError as exc:
                raise IllegalActionError(f"opponent {self.opponent_name!r} ({s.to_move}): {exc}") from None
        self._state = s

    def _info(self) -> dict[str, Any]:
        s = self.game_state
        # The same keys at every step, each of one type, never None (issue 32): "" until the end.
        return {
            "learner_colour": str(self.learner),
            "ply": s.ply,
            "action_mask": self.action_masks(),
            "end_reason": s.end_reason or "",
            "winner": "" if s.winner is None else str(s.winner),
            "error": "",
        }


__all__ = ["GYMNASIUM_ID", "OPPONENT_SPECS_HELP", "ColonySingleAgentEnv", "as_action_id", "make_opponent"]
