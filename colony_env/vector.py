"""A batch of N Colony games stepped together with numpy arrays, for training.

    >>> import numpy as np
    >>> from colony_env.vector import ColonyVectorEnv
    >>> venv = ColonyVectorEnv(num_envs=256, seed=0)
    >>> vo = venv.reset()                        # VecObs: obs [N,C,10,10], mask [N,16001], to_move [N]
    >>> rng = np.random.default_rng(0)
    >>> vo, rewards, dones, reasons = venv.step(venv.random_actions(rng))

This is the two-player self-play engine of `colony-train`: both colours are the learner,
rewards come for both, observations are those of the colour to move. It is deliberately not
a `gymnasium.vector.VectorEnv` (whose step has one reward per env and one agent); for the
single-agent task in Gymnasium's vector API use `colony_env.gym_vector.ColonyGymVectorEnv`
(`gymnasium.make_vec("colony_env/ColonySingleAgent-v0", vectorization_mode="vector_entry_point")`).

Everything is in the *canonical* frame of the colour to move (`symmetry.py`): red sees
the board, blue its transpose, so both colours look like "my edges are North and
South". Actions passed to `step` are canonical ids too; the env maps them to the
board frame before the engine applies them. A player may move several times in a row
(grace moves, R6.3): `to_move` says who acts in each game.

A game that ends is reset at once (auto-reset): `step` returns the rewards, the done
flag and the end reason of the game that ended, and a `VecObs` of the new game in that
slot. Slot `i` draws its games in turn from its own generator `default_rng((seed, i))`,
so a run is reproducible whatever the order in which games end.

The hot loop (apply, legal generation, canonical mapping, observation planes and mask
writing) is one compiled pass over the packed `[N, 108]` states, calling the engine's
kernels; no rule is decided here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numba import njit

from . import _core
from .constants import DEFAULT_MAX_PLIES, I_REASON, I_TO_MOVE, N_ACTIONS, N_CELLS, NOBODY, STATE_LEN
from .engine import GameState, IllegalActionError, check_max_plies, new_game
from .frame import MAX_LEGAL, BufferPool, is_listed, observe_mover, set_bits, to_frame
from .observation import OBS_SHAPE

WIN, LOSS = 1.0, -1.0  # R7.4


@dataclass
class VecObs:
    """What the learner sees in each of the N games, canonical frame of the colour to move.

    The arrays belong to the caller and stay valid (safe to keep). The env recycles a
    previous step's buffers only once nothing else references them, and `step` checks
    actions against its own copy of the legal sets. `mask` is read-only: when the env
    recycles it, it clears only the bits it set (the 16 KB rows are mostly zeros, and
    rewriting them whole was the largest memory cost of a step at N = 256).
    """

    obs: np.ndarray  # float32[N, C, 10, 10]
    mask: np.ndarray  # bool[N, 16001]
    to_move: np.ndarray  # int8[N]: 0 red, 1 blue
    # The same legal sets as id lists (cheaper than scanning `mask`): row i holds
    # legal_counts[i] canonical ids, then zero padding; W is the largest count of the step.
    # Red's ids ascend; blue's are the images of ascending board ids, so not sorted.
    legal_ids: np.ndarray | None = None  # int16[N, W]
    legal_counts: np.ndarray | None = None  # int32[N]


# ---------------------------------------------------------------------------------
# Compiled batch kernels


@njit(cache=True)
def _observe_batch(states: np.ndarray, obs: np.ndarray, mask: np.ndarray, legal: np.ndarray, counts: np.ndarray) -> None:
    """Every game's legal ids (canonical frame), their mask bits and the mover's planes.

    `legal`/`counts` belong to this mask buffer and still hold the ids whose bits it set
    last time: those bits are cleared first, so each row is touched in ~70 places, not 16 KB.
    Games here are never over (they were reset), so every row gets at least one id.
    """
    for i in range(states.shape[0]):
        ids = legal[i]
        row = mask[i]
        set_bits(row, ids, counts[i], False)
        n = observe_mover(states[i], obs[i], ids)
        set_bits(row, ids, n, True)
        counts[i] = n


@njit(cache=True)
def _padded_ids(legal: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """int16[N, W] copy of the legal lists, zero-padded to the largest count W."""
    width = max(1, counts.max())
    out = np.zeros((legal.shape[0], width), np.int16)
    for i in range(legal.shape[0]):
        out[i, : counts[i]] = legal[i, : counts[i]]
    return out


@njit(cache=True)
def _first_illegal(states: np.ndarray, actions: np.ndarray, legal: np.ndarray, counts: np.ndarray) -> int:
    """Index of the first game whose canonical action is not in its legal set, else -1."""
    for i in range(actions.shape[0]):
        if not is_listed(legal[i], counts[i], actions[i]):
            return i
    return -1


@njit(cache=True)
def _apply_batch(
    states: np.ndarray, actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray, reasons: np.ndarray
) -> None:
    """Apply each game's (legal, canonical) action; record rewards and end reasons."""
    for i in range(actions.shape[0]):
        a = states[i]
        new = _core.apply_unchecked(a, to_frame(actions[i], a[I_TO_MOVE] == 1))
        states[i, :] = new
        reason = new[I_REASON]
        reasons[i] = reason
        if reason != 0:
            dones[i] = True
            w = _core.winner(new[:N_CELLS])
            if w != NOBODY:
                rewards[i, w] = WIN
                rewards[i, 1 - w] = LOSS


def _new_buffers(num_envs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(obs, mask, legal ids, counts) of one step; `_observe_batch` overwrites every plane,
    and in a recycled mask clears only the bits it set (listed in its legal ids and counts)."""
    return (
        np.empty((num_envs, *OBS_SHAPE), np.float32),
        np.zeros((num_envs, N_ACTIONS), np.bool_),  # clean once; later only set bits are cleared
        np.zeros((num_envs, MAX_LEGAL), np.int16),
        np.zeros(num_envs, np.int32),
    )


# ---------------------------------------------------------------------------------


class ColonyVectorEnv:
    """N games stepped together; canonical observations and masks; automatic reset.

    Args:
        num_envs: number of games N.
        seed: base of the per-game seeds (None: fresh entropy). Slot `i` starts its games
            with `new_game(rng_i)`, one after the other, `rng_i = np.random.default_rng((seed, i))`.
        max_plies: the ply limit of every game (R6.2, reason `ply_limit`).
    """

    def __init__(self, num_envs: int, seed: int | None = 0, max_plies: int = DEFAULT_MAX_PLIES) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.max_plies = check_max_plies(max_plies)
        self.observation_shape: tuple[int, int, int] = OBS_SHAPE
        self.num_actions: int = N_ACTIONS
        self._states = np.zeros((self.num_envs, STATE_LEN), np.int32)
        self._legal = np.zeros((self.num_envs, MAX_LEGAL), np.int16)  # canonical ids
        self._counts = np.zeros(self.num_envs, np.int32)
        self._games = np.zeros(self.num_envs, np.int64)  # games started per slot
        self._rngs: list[np.random.Generator] = []  # one per slot: setups in slot order
        self._all_rows = np.arange(self.num_envs, dtype=np.int64)
        self._seed = 0
        self._started = False
        # Recycled (obs, mask, legal ids, counts) buffers, free once the caller let go of obs and mask.
        self._pool = BufferPool(functools.partial(_new_buffers, self.num_envs), watched=(0, 1))
        self.reset(seed)

    # --- properties -----------------------------------------------------------------
    @property
    def states(self) -> np.ndarray:
        """int32[N, 108] packed engine states in the board frame (a read-only view)."""
        view = self._states.view()
        view.flags.writeable = False
        return view

    def state(self, i: int) -> GameState:
        """Game `i` as an engine `GameState` (a copy)."""
        return GameState.from_array(self._states[i])

    @property
    def legal_counts(self) -> np.ndarray:
        """int32[N]: number of legal actions in each game (a copy)."""
        return self._counts.copy()

    @property
    def games_started(self) -> np.ndarray:
        """int64[N]: games started in each slot since the last seeded reset (a copy)."""
        return self._games.copy()

    @property
    def seed(self) -> int:
        """The base of the per-game seeds in use."""
        return self._seed

    # --- API ------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> VecObs:
        """Start a new game in every slot. With a seed, the per-game seed sequence restarts
        from it (the same seed gives the same games); without one it continues."""
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
            self._seed = int(seed)
        elif not self._started:
            self._seed = int(np.random.SeedSequence().entropy)
        if seed is not None or not self._started:
            self._games[:] = 0
            self._rngs = [np.random.default_rng((self._seed, i)) for i in range(self.num_envs)]
        self._started = True
        for i in range(self.num_envs):
            self._new_game(i)
        return self._observe()

    def step(self, actions: np.ndarray) -> tuple[VecObs, np.ndarray, np.ndarray, np.ndarray]:
        """Play one action in every game.

        Args:
            actions: int[N] canonical action ids, one per game, for the colour to move.
        Returns:
            (VecObs after the step (a new game where one ended), rewards float32[N, 2] by
            colour (red, blue), dones bool[N], end_reasons int8[N]: 0 not over, else
            1 + index into `constants.END_REASONS`).
        Raises:
            IllegalActionError (all games untouched) if any action is not legal.
        """
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise IllegalActionError(f"actions must be an int array of shape ({self.num_envs},), got {acts.dtype}{list(acts.shape)}")
        acts = acts.astype(np.int64, copy=False)
        bad = _first_illegal(self._states, acts, self._legal, self._counts)
        if bad >= 0:
            raise IllegalActionError(self._explain(bad, int(acts[bad])))
        rewards = np.zeros((self.num_envs, 2), np.float32)
        dones = np.zeros(self.num_envs, np.bool_)
        reasons = np.zeros(self.num_envs, np.int8)
        _apply_batch(self._states, acts, rewards, dones, reasons)
        for i in np.flatnonzero(dones):
            self._new_game(int(i))
        return self._observe(), rewards, dones, reasons

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """int64[N]: a uniformly random legal canonical action in every game."""
        pick = (rng.random(self.num_envs) * self._counts).astype(np.int64)
        return self._legal[self._all_rows, pick].astype(np.int64)

    # --- internals ------------------------------------------------------------------
    def _new_game(self, i: int) -> None:
        self._games[i] += 1
        self._states[i] = new_game(self._rngs[i], self.max_plies)._a

    def _observe(self) -> VecObs:
        (obs, mask, legal, counts), _recycled = self._pool.take()
        _observe_batch(self._states, obs, mask, legal, counts)
        self._legal, self._counts = legal, counts  # what `step` checks actions against
        ids = _padded_ids(legal, counts)
        view = mask.view()
        view.flags.writeable = False
        return VecObs(obs, view, self._states[:, I_TO_MOVE].astype(np.int8), ids, counts.copy())

    def _explain(self, i: int, action: int) -> str:
        if not 0 <= action < N_ACTIONS:
            return f"game {i}: action {action} is outside the action space 0..{N_ACTIONS - 1} (R8)"
        from .engine import apply_action

        state = self.state(i)
        board_action = int(to_frame(action, state.to_move == 1))
        try:
            apply_action(state, board_action)
        except IllegalActionError as exc:
            return f"game {i}: canonical action {action} (board frame {board_action}): {exc}"
        return f"game {i}: action {action} is not legal"  # pragma: no cover - engine and legal set disagree


__all__ = ["ColonyVectorEnv", "VecObs"]
