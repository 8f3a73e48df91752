"""The single-agent task as a `gymnasium.vector.VectorEnv`: N learners, each against a fixed opponent.

    >>> import gymnasium, numpy as np, colony_env
    >>> envs = gymnasium.make_vec("colony_env/ColonySingleAgent-v0", num_envs=256,
    ...                           vectorization_mode="vector_entry_point", opponent="random")
    >>> obs, infos = envs.reset(seed=0)                      # float32[256, 30, 10, 10]
    >>> masks = infos["action_mask"]                         # bool[256, 16001], also envs.call("action_masks")
    >>> rng = np.random.default_rng(0)
    >>> actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
    >>> obs, rewards, terminations, truncations, infos = envs.step(actions)

Slot `i` behaves exactly like `ColonySingleAgentEnv` (`wrappers.py`; same arguments:
`opponent`, `learner_colour`, `max_plies`, `canonical`, `illegal_action`) inside
Gymnasium's `SyncVectorEnv`: the same seeds (`reset(seed=s)` seeds slot i with s + i, a
list seeds each slot), the same random draws, so the same observations, rewards,
terminations, truncations and infos (the tests step both in lockstep). The difference is
speed: the learner's move, the random opponent's replies, the planes and the masks of all
N games are computed in compiled passes over the packed states, not one env at a time.

Gymnasium's conventions, exactly:

* `single_observation_space` `Box(0, 1, (30, 10, 10), float32)`, `single_action_space`
  `Discrete(16001)`; the batched `observation_space` / `action_space` from `batch_space`.
* `step` returns `(obs, rewards float64[N], terminations bool[N], truncations bool[N],
  infos)`; `terminated` at a game end (R6.2), `truncated` at the ply limit (rewards still
  paid, R7.4) .
* `metadata["autoreset_mode"]` is the `autoreset_mode` argument: `NEXT_STEP` (default, as
  `SyncVectorEnv`: the step that ends an episode returns its final observation; the next
  step resets that slot, ignores its action, and returns reward 0), `SAME_STEP` (the slot
  is reset at once; `infos["final_obs"]` / `infos["final_info"]` hold the final
  observation and info) or `DISABLED` (reset ended slots yourself with
  `reset(options={"reset_mask": mask})`).
* `infos` in `SyncVectorEnv`'s layout: every key of the single env's info (learner_colour,
  ply, action_mask, end_reason, winner, error: the same keys at every step, "" until an
  episode ends) as an array over the slots, with a boolean `_key` array saying which slots
  have it.
* `call(name)` / `get_attr(name)` return a tuple over the slots, as `SyncVectorEnv` does,
  for `action_masks`, `game_state`, `learner`, `to_board_action` and `render`.

The opponent is batched in compiled code when it is the random agent (`"random"` or
`RandomAgent()`); any other opponent (`"greedy"`, `"mcts:N"`, an agent object such as a
trained policy from `colony_training.eval.agent_specs.make_agent("checkpoint:PATH")`, a callable) is
asked slot by slot, in the same order and with the same generators as the single env.

This is the Gymnasium path for users' own pipelines (CleanRL-style loops, `make_vec`).
The project's self-play trainer uses `colony_env.vector.ColonyVectorEnv` (both colours
learn, rewards for both, observations for the colour to move).
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numba import njit

from . import _core, _rng
from .agents import RandomAgent
from .constants import DEFAULT_MAX_PLIES, END_REASONS, I_PLY, I_REASON, I_TO_MOVE, N_ACTIONS, N_CELLS, NOBODY, STATE_LEN, Colour
from .engine import GameState, IllegalActionError, apply_action, check_max_plies, new_game
from .frame import MAX_LEGAL, BufferPool, is_listed, legal_into, observe_into, set_bits, to_frame
from .observation import OBS_SHAPE
from .symmetry import TRANSPOSE_ACTIONS
from .wrappers import ILLEGAL_ACTION_MODES, ILLEGAL_ACTION_REWARD, LEARNER_COLOURS, _as_policy, as_action_id

PLY_LIMIT_REASON = 1 + END_REASONS.index("ply_limit")  # I_REASON code of a truncation (R6.2.4)
ILLEGAL_ACTION = "illegal_action"  # the end reason the single env reports
_COLOUR_NAMES = np.array([str(Colour.RED), str(Colour.BLUE)], dtype=object)
CALLABLE_NAMES = ("action_masks", "game_state", "learner", "to_board_action", "render")


# ---------------------------------------------------------------------------------
# Compiled passes over the N packed states (engine kernels only; no rule decided here)


@njit(cache=True)
def _check_actions(actions: np.ndarray, active: np.ndarray, legal: np.ndarray, counts: np.ndarray, illegal: np.ndarray) -> int:
    """Mark active slots whose (learner-frame) action is not in their legal list; returns how many."""
    bad = 0
    for i in range(actions.shape[0]):
        illegal[i] = False
        if not active[i]:
            continue
        if not is_listed(legal[i], counts[i], actions[i]):
            illegal[i] = True
            bad += 1
    return bad


@njit(cache=True)
def _apply_learner(states: np.ndarray, actions: np.ndarray, play: np.ndarray, transposed: np.ndarray) -> None:
    """Apply each playing slot's legal learner action, mapped to the board frame."""
    for i in range(actions.shape[0]):
        if play[i]:
            states[i, :] = _core.apply_unchecked(states[i], to_frame(actions[i], transposed[i]))


@njit(cache=True)
def _opponent_turns(
    states: np.ndarray, learner: np.ndarray, slots: np.ndarray, pending: np.ndarray, legal: np.ndarray, counts: np.ndarray
) -> int:
    """Flag the given games in which the opponent is to move and list its legal board ids,
    sorted as `engine.legal_actions` gives them (pass alone when nothing else is, R4.3)."""
    n_pending = 0
    for i in range(states.shape[0]):
        a = states[i]
        pending[i] = slots[i] and a[I_REASON] == 0 and a[I_TO_MOVE] != learner[i]
        if pending[i]:
            counts[i] = legal_into(a, False, legal[i])
            n_pending += 1
    return n_pending


@njit(cache=True)
def _random_replies(
    states: np.ndarray, learner: np.ndarray, slots: np.ndarray, legal: np.ndarray, counts: np.ndarray,
    rng_ptrs: np.ndarray,
) -> None:  # fmt: skip
    """The random opponent moves in the given slots until its learner is to move or the game
    is over (R6.3: maybe several times). Each pick is `RandomAgent.act`'s draw,
    `rng.integers(#legal)`, from the slot's own generator (`_rng`: the same draws as NumPy's)."""
    pending = np.zeros(states.shape[0], np.bool_)
    n_pending = _opponent_turns(states, learner, slots, pending, legal, counts)
    while n_pending:
        for i in range(states.shape[0]):
            if pending[i]:
                pick = _rng.integers(rng_ptrs[i], counts[i])
                states[i, :] = _core.apply_unchecked(states[i], legal[i, pick])
        n_pending = _opponent_turns(states, learner, pending.copy(), pending, legal, counts)


@njit(cache=True)
def _outcomes(states: np.ndarray, learner: np.ndarray, stepped: np.ndarray, rewards: np.ndarray, term: np.ndarray, trunc: np.ndarray) -> None:
    """Rewards (R7.4, the learner's view), terminations and truncations (R6.2) of stepped slots."""
    for i in range(states.shape[0]):
        if not stepped[i]:
            continue
        a = states[i]
        reason = a[I_REASON]
        if reason == 0:
            continue
        w = _core.winner(a[:N_CELLS])
        if w != NOBODY:
            rewards[i] = 1.0 if w == learner[i] else -1.0
        if reason == PLY_LIMIT_REASON:
            trunc[i] = True
        else:
            term[i] = True


@njit(cache=True)
def _observe(
    states: np.ndarray, learner: np.ndarray, transposed: np.ndarray, over: np.ndarray, rows: np.ndarray,
    obs: np.ndarray, mask: np.ndarray, legal: np.ndarray, counts: np.ndarray,
) -> None:  # fmt: skip
    """The learner's planes, legal ids (its frame) and mask bits in the selected games; no
    legal action once its episode is over (`mask` rows must be clear on entry)."""
    for i in range(states.shape[0]):
        if not rows[i]:
            continue
        n = observe_into(states[i], learner[i], transposed[i], obs[i], legal[i], not over[i])
        set_bits(mask[i], legal[i], n, True)
        counts[i] = n


def _new_mask(num_envs: int) -> tuple[np.ndarray]:
    return (np.zeros((num_envs, N_ACTIONS), np.bool_),)


# ---------------------------------------------------------------------------------


class ColonyGymVectorEnv(VectorEnv):
    """N single-agent Colony games as one `gymnasium.vector.VectorEnv` (see the module docstring).

    Args:
        num_envs: number of games N.
        opponent, learner_colour, max_plies, canonical, illegal_action, render_mode: as for
            `ColonySingleAgentEnv`, the same for every slot.
        autoreset_mode: `AutoresetMode.NEXT_STEP` (default), `SAME_STEP` or `DISABLED`
            (or their string values).
    """

    def __init__(
        self,
        num_envs: int = 1,
        opponent: Any = None,
        learner_colour: str | Colour = "random",
        max_plies: int = DEFAULT_MAX_PLIES,
        canonical: bool = True,
        illegal_action: str = "lose",
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if isinstance(learner_colour, Colour):
            learner_colour = str(learner_colour)
        if learner_colour not in LEARNER_COLOURS:
            raise ValueError(f"learner_colour must be one of {LEARNER_COLOURS}, got {learner_colour!r}")
        max_plies = check_max_plies(max_plies, minimum=2)  # at least 2: the learner must get a move
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {illegal_action!r}")
        if render_mode is not None and render_mode not in ("ansi", "rgb_array"):
            raise ValueError(f"render_mode must be 'ansi', 'rgb_array' or None, got {render_mode!r}")
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {autoreset_mode!r}") from None
        self._opponent, self.opponent_name = _as_policy(opponent)
        # The random agent is batched; its draws are RandomAgent.act's: rng.integers(#legal).
        self._random_opponent = type(getattr(self._opponent, "__self__", None)) is RandomAgent
        self.num_envs = int(num_envs)
        self.learner_colour_mode = learner_colour
        self.max_plies = int(max_plies)
        self.canonical = bool(canonical)
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode, "render_modes": ["ansi", "rgb_array"], "render_fps": 2}
        self.single_observation_space = spaces.Box(low=0.0, high=1.0, shape=OBS_SHAPE, dtype=np.float32)
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        n = self.num_envs
        self._states = np.zeros((n, STATE_LEN), np.int32)
        self._learner = np.zeros(n, np.int64)  # Colour per slot, drawn at each episode start
        self._transposed = np.zeros(n, np.bool_)  # the learner sees the transpose (blue, canonical)
        self._over = np.ones(n, np.bool_)  # episode over: game over or an illegal learner action
        self._autoreset = np.zeros(n, np.bool_)  # NEXT_STEP: reset these at the next step
        self._rngs: list[np.random.Generator | None] = [None] * n  # each slot's env.np_random
        # Their C pointers (`_rng.pointers`) for the compiled random opponent; None: rebuild.
        self._rng_ptrs: np.ndarray | None = None
        self._legal = np.zeros((n, MAX_LEGAL), np.int16)  # the learner's legal ids (its frame)
        self._counts = np.zeros(n, np.int32)
        self._opp_legal = np.zeros((n, MAX_LEGAL), np.int16)  # the opponent's (board frame)
        self._opp_counts = np.zeros(n, np.int32)
        self._mask: np.ndarray | None = None  # the mask handed out last (belongs to the caller)
        self._pool = BufferPool(functools.partial(_new_mask, n))  # masks recycled once the caller let go
        self._blank = np.full(n, "", dtype=object)  # copied for the end keys of each step's infos
        self._started = False

    # --- Gymnasium VectorEnv API -----------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start new episodes: every slot, or those in `options["reset_mask"]` (bool[N]).
        `seed`: None, an int (slot i gets seed + i) or a list of N ints or Nones."""
        seeds = self._slot_seeds(seed)
        reset_mask = np.ones(self.num_envs, np.bool_)
        if options is not None:
            if not isinstance(options, dict):
                raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
            if "reset_mask" in options:
                reset_mask = np.asarray(options["reset_mask"])
                if reset_mask.shape != (self.num_envs,) or reset_mask.dtype != np.bool_ or not reset_mask.any():
                    raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},) with a True, got {reset_mask.dtype}{list(reset_mask.shape)}")
        if not self._started and not reset_mask.all():
            raise ValueError("the first reset() must reset every slot (no reset_mask)")
        self._started = True
        slots = np.flatnonzero(reset_mask)
        for i in slots:
            self._start_episode(int(i), seeds[i])
        self._autoreset[slots] = False
        self._opponents_move(reset_mask)
        obs, mask = self._observe()
        infos: dict[str, Any] = {}
        self._common_infos(infos, mask, reset_mask)
        return obs, infos

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One learner action per slot (its frame), then the opponents' replies (R6.3, R6.4)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        n = self.num_envs
        acts, bad_input = self._as_actions(actions)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._over.any():
            raise RuntimeError(f"slots {np.flatnonzero(self._over).tolist()} are over; autoreset_mode is DISABLED, so reset(options={{'reset_mask': ...}}) them first")
        restart = self._autoreset.copy()  # NEXT_STEP: these slots reset and ignore their action
        active = ~restart
        illegal = np.zeros(n, np.bool_)
        _check_actions(acts, active, self._legal, self._counts, illegal)
        illegal |= bad_input & active
        errors: dict[int, str] = {}
        if illegal.any():
            for i in np.flatnonzero(illegal):
                errors[int(i)] = self._explain(int(i), actions, acts, bool(bad_input[i]))
            if self.illegal_action == "raise":
                i = next(iter(errors))
                raise IllegalActionError(f"slot {i}: learner action {self._action_repr(actions, i)} (learner's frame): {errors[i]}")
        play = active & ~illegal
        _apply_learner(self._states, acts, play, self._transposed)
        for i in np.flatnonzero(restart):
            self._start_episode(int(i), None)
        self._opponents_move(play | restart)
        rewards = np.zeros(n, np.float64)  # as SyncVectorEnv
        term = np.zeros(n, np.bool_)
        trunc = np.zeros(n, np.bool_)
        _outcomes(self._states, self._learner, play, rewards, term, trunc)
        for i, error in errors.items():
            rewards[i] = ILLEGAL_ACTION_REWARD
            term[i] = True
            gymnasium.logger.warn(f"slot {i}: learner action {self._action_repr(actions, i)} (learner's frame): {error}; the episode ends with reward {ILLEGAL_ACTION_REWARD:+g}")
        ended = term | trunc
        self._over = ended.copy()
        infos: dict[str, Any] = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            final_obs, final_mask = self._observe(ended)
            final_infos: dict[str, Any] = {}
            self._common_infos(final_infos, final_mask, ended)
            self._end_infos(final_infos, ended, errors)
            for i in np.flatnonzero(ended):
                self._add_info(infos, {"final_obs": final_obs[i], "final_info": self._slot_info(final_infos, int(i))}, int(i))
            for i in np.flatnonzero(ended):
                self._start_episode(int(i), None)
            self._opponents_move(ended)
            self._over[:] = False
        else:
            self._autoreset = ended if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros(n, np.bool_)
        obs, mask = self._observe()
        everyone = np.ones(n, np.bool_)
        self._common_infos(infos, mask, everyone)
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            self._end_infos(infos, ended, errors)
        return obs, rewards, term, trunc, infos

    def render(self) -> tuple[Any, ...] | None:
        """Each slot's picture (`rgb_array`) or text (`ansi`), as `SyncVectorEnv` gives them."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        from . import render

        draw = render.render_ansi if self.render_mode == "ansi" else render.render_rgb
        return tuple(draw(self.game_state(i)) for i in range(self.num_envs))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """`SyncVectorEnv.call` for the single env's methods and attributes in `CALLABLE_NAMES`:
        a tuple over the slots (`call("action_masks")`: each slot's bool[16001] mask)."""
        if name == "action_masks":
            return tuple(self.action_masks())
        if name == "game_state":
            return tuple(self.game_state(i) for i in range(self.num_envs))
        if name == "learner":
            return tuple(Colour(int(c)) for c in self._learner)
        if name == "to_board_action":
            return tuple(self._board_action(i, as_action_id(args[0] if args else kwargs["action"])) for i in range(self.num_envs))
        if name == "render":
            return self.render() or (None,) * self.num_envs
        raise AttributeError(f"ColonyGymVectorEnv.call supports {CALLABLE_NAMES}, got {name!r}")

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """`call(name)`, as `SyncVectorEnv.get_attr`; plain settings (e.g. `max_plies`) repeat per slot."""
        if name in CALLABLE_NAMES:
            return self.call(name)
        if name in ("max_plies", "canonical", "illegal_action", "opponent_name", "render_mode", "learner_colour_mode"):
            return (getattr(self, name),) * self.num_envs
        raise AttributeError(f"ColonyGymVectorEnv.get_attr supports {CALLABLE_NAMES} and the settings, got {name!r}")

    # --- extras ------------------------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """bool[N, 16001]: each learner's legal actions in its frame (all False once its episode
        is over); a fresh array, the same as `infos["action_mask"]` of the last call."""
        if self._mask is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask.copy()

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """int64[N]: a uniformly random legal action (learner's frame) in every slot; 0 where the
        episode is over (the next step resets it and ignores the action). Cheaper than sampling
        from the masks: the env keeps the legal lists."""
        pick = (rng.random(self.num_envs) * self._counts).astype(np.int64)
        return self._legal[np.arange(self.num_envs), pick].astype(np.int64) * (self._counts > 0)

    def game_state(self, i: int) -> GameState:
        """Slot `i`'s engine `GameState` (board frame)."""
        return GameState.from_array(self._states[i])

    def to_board_actions(self, actions: np.ndarray) -> np.ndarray:
        """int64[N]: the learners' action ids (their frames) as board-frame ids."""
        acts = np.asarray(actions, dtype=np.int64)
        return np.where(self._transposed, TRANSPOSE_ACTIONS[acts], acts)

    # --- internals ---------------------------------------------------------------------
    def _slot_seeds(self, seed: Any) -> list[int | None]:
        """`SyncVectorEnv`'s seeding: an int gives slot i seed + i."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        if isinstance(seed, (list, tuple)) and len(seed) == self.num_envs:
            return list(seed)
        raise ValueError(f"seed must be None, an int or a list of {self.num_envs} ints or Nones, got {seed!r}")

    def _start_episode(self, i: int, seed: int | None) -> None:
        """`ColonySingleAgentEnv.reset` for slot i, up to the opponent's opening moves."""
        if seed is not None or self._rngs[i] is None:
            self._rngs[i], _ = seeding.np_random(seed)
            if self._rng_ptrs is not None:
                self._rng_ptrs[i] = _rng.pointers(self._rngs[i])
        rng = self._rngs[i]
        mode = self.learner_colour_mode
        learner = Colour(int(rng.integers(2))) if mode == "random" else Colour[mode.upper()]
        self._learner[i] = int(learner)
        self._transposed[i] = self.canonical and learner == Colour.BLUE
        self._states[i] = new_game(rng, self.max_plies)._a
        self._over[i] = False

    def _opponents_move(self, slots: np.ndarray) -> None:
        """In the given slots the opponent moves until its learner is to move or the game is over."""
        if self._random_opponent:
            _random_replies(self._states, self._learner, slots, self._opp_legal, self._opp_counts, self._rng_pointers())
            return
        pending = np.zeros(self.num_envs, np.bool_)
        while _opponent_turns(self._states, self._learner, slots, pending, self._opp_legal, self._opp_counts):
            for i in np.flatnonzero(pending):
                    s = GameState.from_array(self._states[i])
                    action = self._opponent(s, self._rngs[i])
                    try:
                        self._states[i] = apply_action(s, action)._a
                    except IllegalActionError as exc:
                        raise IllegalActionError(f"opponent {self.opponent_name!r} ({s.to_move}): {exc}") from None

    def _rng_pointers(self) -> np.ndarray:
        """uintp[N, 2]: each slot generator's `_rng.pointers` (zeros for a slot without one yet)."""
        if self._rng_ptrs is None:
            self._rng_ptrs = np.zeros((self.num_envs, 2), np.uintp)
            for i, rng in enumerate(self._rngs):
                if rng is not None:
                    self._rng_ptrs[i] = _rng.pointers(rng)
        return self._rng_ptrs

    def __getstate__(self) -> dict[str, Any]:
        """For copy and pickle: the generator pointers are this process's addresses of this
        object's generators, so a copy rebuilds them from its own."""
        state = self.__dict__.copy()
        state["_rng_ptrs"] = None
        return state

    def _mask_buffer(self) -> np.ndarray:
        """A clear bool[N, 16001] buffer: a recycled one the caller let go of, else a new one
        (`frame.BufferPool`: a fresh 4 MB mask per step costs about a page fault per row)."""
        (mask,), recycled = self._pool.take()
        if recycled:
            mask.fill(False)  # the caller may have written into it
        return mask

    def _observe(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(planes, masks) of every slot, or only of `rows` (final observations; the rest zero)."""
        self._mask = None  # drop our own reference, so last step's buffer can be recycled
        if rows is None:
            obs = np.empty((self.num_envs, *OBS_SHAPE), np.float32)
            mask = self._mask_buffer()
            _observe(self._states, self._learner, self._transposed, self._over, np.ones(self.num_envs, np.bool_), obs, mask, self._legal, self._counts)
            self._mask = mask
            return obs, mask
        obs = np.zeros((self.num_envs, *OBS_SHAPE), np.float32)
        mask = np.zeros((self.num_envs, N_ACTIONS), np.bool_)
        legal, counts = np.zeros_like(self._legal), np.zeros_like(self._counts)  # the learners' lists stay
        _observe(self._states, self._learner, self._transposed, self._over, rows, obs, mask, legal, counts)
        return obs, mask

    def _common_infos(self, infos: dict[str, Any], mask: np.ndarray, has: np.ndarray) -> None:
        """The keys every single-env info has, in `SyncVectorEnv`'s layout (`_key`: which slots)."""
        colours = _COLOUR_NAMES[self._learner]
        plies = self._states[:, I_PLY].astype(np.int64)
        blank = self._blank
        if not has.all():  # slots without an info this call hold the dtype's empty value
            colours[~has] = None
            plies[~has] = 0
            mask = mask & has[:, None]
            blank = blank.copy()
            blank[~has] = None  # as SyncVectorEnv leaves a slot without an info
        infos["learner_colour"], infos["_learner_colour"] = colours, has.copy()
        infos["ply"], infos["_ply"] = plies, has.copy()
        infos["action_mask"], infos["_action_mask"] = mask, has.copy()
        # The single env's end keys are in every info ("" until the end; `_end_infos` fills them).
        for key in ("end_reason", "winner", "error"):
            infos[key], infos[f"_{key}"] = blank.copy(), has.copy()

    def _end_infos(self, infos: dict[str, Any], ended: np.ndarray, errors: dict[int, str]) -> None:
        """`end_reason` and `winner` (`error` after an illegal action) of the ended slots, written
        into the arrays `_common_infos` made."""
        if not ended.any():
            return
        for i in np.flatnonzero(ended).tolist():
            if i in errors:
                infos["end_reason"][i] = ILLEGAL_ACTION
                infos["error"][i] = errors[i]
                continue
            infos["end_reason"][i] = END_REASONS[self._states[i, I_REASON] - 1]
            w = _core.winner(self._states[i, :N_CELLS])
            infos["winner"][i] = "" if w == NOBODY else _COLOUR_NAMES[w]

    @staticmethod
    def _slot_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
        """Slot i's single-env info back out of the batched layout."""
        return {k: v[i] for k, v in infos.items() if not k.startswith("_") and infos[f"_{k}"][i]}

    def _as_actions(self, actions: Any) -> tuple[np.ndarray, np.ndarray]:
        """(int64[N] ids, bool[N] not-an-integer): each element judged as the single env would."""
        arr = np.asarray(actions) if not isinstance(actions, np.ndarray) else actions
        if arr.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one per slot, got shape {list(arr.shape)}")
        if np.issubdtype(arr.dtype, np.integer):
            acts = arr.astype(np.int64, copy=False)
            return acts, np.zeros(self.num_envs, np.bool_)
        acts = np.full(self.num_envs, -1, np.int64)
        bad = np.zeros(self.num_envs, np.bool_)
        for i, a in enumerate(arr.tolist() if arr.dtype != object else list(arr)):
            try:
                acts[i] = as_action_id(a)
            except (IllegalActionError, OverflowError):
                bad[i] = True
        return acts, bad

    @staticmethod
    def _action_repr(actions: Any, i: int) -> str:
        try:
            return repr(actions[i])
        except Exception:  # pragma: no cover - an unindexable batch was refused before
            return "?"

    def _board_action(self, i: int, action: int) -> int:
        return int(TRANSPOSE_ACTIONS[action]) if self._transposed[i] and 0 <= action < N_ACTIONS else action

    def _explain(self, i: int, actions: Any, acts: np.ndarray, bad_input: bool) -> str:
        """The single env's message for slot i's illegal action."""
        try:
            action_id = as_action_id(actions[i] if bad_input else int(acts[i]))
            if not 0 <= action_id < N_ACTIONS:
                raise IllegalActionError(f"action {action_id} is outside the action space 0..{N_ACTIONS - 1} (R8)")
            apply_action(self.game_state(i), self._board_action(i, action_id))
        except IllegalActionError as exc:
            return str(exc)
        return f"action {int(acts[i])} is not legal"  # pragma: no cover - the legal list and the engine agree


__all__ = ["ColonyGymVectorEnv"]
