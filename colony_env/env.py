# noqa: D212, D415
"""
# Colony

A PettingZoo classic environment for Colony, a two-player board game of satellites
that connect into colonies. The rules are in docs/rules.md (numbers like R4.2 below refer to
it); this module only adapts the rules engine (`colony_env.engine`) to the AEC API.

| Creation           | `pettingzoo.make("aec", "colony_env/colony-v0")` or `colony_env.colony_v0.env()` (wrapped) / `raw_env()` |
|--------------------|--------------------------------------------------------|
| Version            | `colony_v0`                                            |
| Actions            | Discrete                                               |
| Parallel API       | No (grace moves, R6.3: see "Parallel API" below)       |
| Manual Control     | No                                                     |
| Agents             | `agents= ['player_0', 'player_1']` (red, blue)         |
| Agents             | 2                                                      |
| Action Shape       | (1,)                                                   |
| Action Values      | Discrete(16001)                                        |
| Observation Shape  | (10, 10, 30)                                           |
| Observation Values | [0, 1]                                                 |

`player_0` plays red (start edges North and South, moves first), `player_1` plays blue
(West and East). Each has 12 satellites of values 1-4 that move like queens by up to
their value; a satellite orthogonally next to an opposing one is *connected* and
locked; groups of 3-6 linked satellites are *colonies*, controlled by the colour with
the greater total value. The player controlling more colonies wins.

**Turn order is not strictly alternating.** Once a player has all 12 satellites
connected, the other player gets up to three *grace moves* in a row (R6.3). The env
follows the engine: `agent_selection` is always the agent whose colour is to move, so
`agent_iter()` may yield the same agent several times in a row.

### Arguments

```python
import colony_env, pettingzoo
env = colony_env.env(max_plies=400, render_mode=None, canonical=False)
env = pettingzoo.make("aec", "colony_env/colony-v0")     # the same, from PettingZoo's registry
```

`max_plies`: the ply limit (R6.2); reaching it ends the game as a truncation.

`canonical`: False (default): both agents observe and act in the board frame.
True: each agent observes and acts in its own *canonical* frame, as chess_v6 mirrors
`player_1`: `player_1`'s planes, action mask and actions are transposed (`symmetry.py`),
so both agents see their start edges North and South and one shared policy plays both
seats. `env.unwrapped.board_action(agent, action)` gives the board-frame id of an
agent's action, `env.unwrapped.env_action(agent, board_action)` the reverse.

`render_mode`: `"ansi"` (text), `"rgb_array"` (uint8 H x W x 3 picture) or `"human"`
(a matplotlib window), or None.

### Observation Space

The observation is a dictionary with an `'observation'` element, the planes below, and
an `'action_mask'` element, the legal actions.

The main observation is `float32[10, 10, 30]`: 30 planes over the board, **channels
last** as in the other classic environments, in the **board frame** (row 0 North,
column 0 West; the same frame as the action ids; with `canonical=True`, `player_1`'s
planes are transposed) and from the **observing agent's point of view** ("own" /
"opponent"). `colony_env.symmetry` maps planes, masks and action ids between the
frames; the Gymnasium envs use the canonical view by default.

The arrays that `observe()` and `last()` return belong to the caller: changing them
does not change the env (they are copies of the env's cached encoding).

| plane | content                                                                     |
|-------|-----------------------------------------------------------------------------|
| 0-3   | own satellites of value 1, 2, 3, 4                                          |
| 4-7   | opponent satellites of value 1, 2, 3, 4                                     |
| 8     | own connected satellites (R3.1; they never move again, R3.2)                |
| 9     | opponent connected satellites                                               |
| 10    | satellites in a colony (component of 3+, R3.4)                              |
| 11    | colonies controlled by the observer (R7.1), every cell of the colony        |
| 12    | colonies controlled by the opponent                                         |
| 13    | colonies controlled by nobody (equal totals)                                |
| 14    | crowned colonies (exactly 6, R3.4)                                          |
| 15    | component size / 6 on every satellite (1/6 for a lone satellite)            |
| 16    | empty cells next to an opponent satellite (an own satellite landing there connects) |
| 17    | empty cells next to an own satellite (an opponent landing there connects)   |
| 18    | the observer's start edges (R2.3): rows 0 and 9 for red, columns 0 and 9 for blue, in the frame of the planes |
| 19    | connections unlocked (R3.5), constant                                        |
| 20    | the observer is to move, constant                                            |
| 21    | the observer is finished (R6.3), constant                                    |
| 22    | the opponent is finished, i.e. the observer is the grace player, constant     |
| 23    | grace moves left / 3 (R6.3), constant                                        |
| 24    | the last action was a pass (one more pass ends the game, R6.2), constant     |
| 25    | ply / max_plies (the ply limit ends the game, R6.2), constant                |
| 26    | own exact reach: empty cells an own unconnected satellite of value v lands on v cells away (R4.1), max v / 4 |
| 27    | opponent exact reach (where an opponent's connection move can land)         |
| 28    | own reach: the same for 1 to v cells away (any move's landing cell, R4.1)   |
| 29    | opponent reach                                                               |

#### Legal Actions Mask

`action_mask` is `int8[16001]`: exactly the engine's legal actions (R4, R8.4) for the
agent to move (in that agent's frame), and all zeros for the other agent and once the
game is over.

### Global state

`env.state()` (PettingZoo's global state, e.g. for a centralised critic) is
`float32[10, 10, 30]` in `env.state_space`: the planes of the whole position in the
**board frame** from `player_0`'s (red's) side, "own" = red, "opponent" = blue. The
game has no hidden information, so this is the complete position; it is the same in
both views and a fresh array on every call. The engine's immutable `GameState` is
`env.unwrapped.game_state`.

### Action Space

`Discrete(16001)`, in the board frame for both agents (R8; with `canonical=True`,
`player_1`'s ids are the transposed ones):

| ids            | action                                                            |
|----------------|-------------------------------------------------------------------|
| 0 - 3199       | move `(s, d, k)`: `32*s + 4*d + (k-1)`, cell `s = 10*r + c`, direction `d` 0..7 clockwise from North, distance `k` 1..4 |
| 3200 - 15999   | displacement `(s, d, pd, pk)`: `3200 + 2*(8*(8*s + d) + pd) + (pk-1)`; lands exactly the satellite's value along `d`, pushes the opposing satellite `pk` 1..2 cells along `pd` |
| 16000          | pass (legal only when nothing else is, R4.3)                      |

`colony_env.action_to_str(a, state)` / `parse_action(text, state)` give the human
notation (`d10-d7`, `c4-g4>h3`, `pass`).

### Rewards

Only at the end of the game (R7.4): the winner (more controlled colonies, then the
tiebreak R7.3) gets +1 and the loser -1; a draw gives 0 to both. The wrapped env
(`env()`) ends the game when an agent plays an illegal action: that agent gets -1,
the other 0, with a warning naming the action and the rule it breaks. `raw_env`
raises `colony_env.IllegalActionError` instead and leaves the game unchanged.

### Termination and truncation

The game ends (R6.2) when 23 satellites are connected (`connected23`), when the grace
player has used its grace moves or passes (`grace`), after two passes in a row
(`passes`) — all reported as `terminations` — or at the ply limit (`ply_limit`),
reported as `truncations`, with the rewards still paid.

### Infos

Every agent's `infos[agent]` has the same five keys at every step, from `reset()` on, and
every value is a number (so typed per-step buffers and TorchRL's specs take them; none is
ever None). Until the game ends they hold the "nothing yet" values:

| key              | type            | while the game goes on | at the end                                                        |
|------------------|-----------------|------------------------|-------------------------------------------------------------------|
| `end_reason`     | int             | 0                      | index into `END_REASON_NAMES`: 1 `connected23`, 2 `grace`, 3 `passes`, 4 `ply_limit` (R6.2), 5 `illegal_action` (`env()` only) |
| `winner`         | int             | -1                     | 0 `player_0`, 1 `player_1`, -1 a draw or an illegal-action end     |
| `colonies`       | (int, int)      | (0, 0)                 | controlled colonies (R7.2) of (`player_0`, `player_1`)             |
| `illegal_agent`  | int             | -1                     | the offender's index in `AGENTS` after an illegal action, else -1   |
| `illegal_action` | int             | -1                     | the illegal action id (its frame), else -1                         |

`colony_env.env.END_REASON_NAMES[info["end_reason"]]` names the end (`""` while the game
goes on).

### Parallel API

There is none (`metadata["is_parallelizable"]` is False) and `pettingzoo.utils.aec_to_parallel`
must not be forced on the env: a parallel step asks every live agent for an action at once,
but Colony's turns are not a fixed rotation. After one colour has all 12 satellites
connected, the other moves up to three times in a row (grace moves, R6.3), so a parallel
step would collect an action from an agent that may not move, and the conversion then plays
moves out of turn. Use the AEC loop (`agent_iter()`), which follows `agent_selection`, or for
many games at once `colony_env.vector.ColonyVectorEnv` (self-play, both colours) or
`colony_env.gym_vector.ColonyGymVectorEnv` (one learner against an opponent).

### Version History

* v0: Initial release. Game, spaces and rewards unchanged since; API fixes within v0:
  `state()` is PettingZoo's global state (the engine's `GameState`, formerly the `state`
  attribute, is `game_state`), `observe()` returns arrays the caller owns, the
  `canonical` option, the versioned module `colony_env.colony_v0` and the registry id
  `colony_env/colony-v0`.
"""

from __future__ import annotations

import operator
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from numba import njit
from pettingzoo import AECEnv
from pettingzoo.utils.env import AECIterable, AECIterator
from pettingzoo.utils.env_logger import EnvLogger, EnvWarningHandler
from pettingzoo.utils.wrappers import BaseWrapper

from . import frame
from .constants import BOARD_SIZE, DEFAULT_MAX_PLIES, END_REASONS, I_TO_MOVE, N_ACTIONS, Colour
from .engine import GameState, IllegalActionError, apply_action, check_max_plies, check_seed, controlled_counts, new_game
from .observation import OBS_CHANNELS, encode_into
from .symmetry import CANONICAL_SYMMETRY, TRANSPOSE, TRANSPOSE_ACTIONS

ENV_NAME = "colony_v0"
# The env's agents and the game's colours are different things: this is the only map (docs/architecture.md).
AGENTS: tuple[str, str] = ("player_0", "player_1")
AGENT_COLOUR: dict[str, Colour] = {"player_0": Colour.RED, "player_1": Colour.BLUE}
COLOUR_AGENT: dict[Colour, str] = {c: a for a, c in AGENT_COLOUR.items()}
# The same maps over the engine's colour ids (I_TO_MOVE), for the per-step path: building a
# `Colour` from the packed state costs more than the rest of the lookup.
_COLOUR_ID: dict[str, int] = {a: int(c) for a, c in AGENT_COLOUR.items()}
_AGENT_OF_COLOUR_ID: tuple[str, ...] = tuple(COLOUR_AGENT[Colour(i)] for i in range(len(Colour)))
OBS_SHAPE_HWC = (BOARD_SIZE, BOARD_SIZE, OBS_CHANNELS)
ILLEGAL_ACTION_REWARD = -1.0
ILLEGAL_ACTION = "illegal_action"  # end reason reported by `env()` after an illegal action


@njit(cache=True)
def _observe_into(a: np.ndarray, colour: int, transposed: bool, planes: np.ndarray, mask: np.ndarray) -> None:
    """`colour`'s view of packed state `a` in one compiled call: its planes, channels last, into
    `planes[10, 10, C]` and its legal ids (its frame) as 1s into the clear `mask`; none unless
    it is to move in a live game (`frame.observe_into`: the engine's legality, components once)."""
    chw = np.empty((OBS_CHANNELS, BOARD_SIZE, BOARD_SIZE), np.float32)
    ids = np.empty(frame.MAX_LEGAL, np.int16)
    n = frame.observe_into(a, colour, transposed, chw, ids, True)
    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            for p in range(OBS_CHANNELS):
                planes[r, c, p] = chw[p, r, c]
    frame.set_bits(mask, ids, n, True)


def env(**kwargs: Any) -> AECEnv:
    """The Colony AEC env wrapped as PettingZoo classic envs are: an illegal action ends the
    game (offender -1, with a warning), out-of-bounds actions assert, call order is enforced.
    The wrappers are PettingZoo's, subclassed to read the raw env's attributes directly
    (`_ReadsRawEnv`): the same behaviour at about a third of the cost per step."""
    e = raw_env(**kwargs)
    e = TerminateIllegalColony(e, illegal_reward=ILLEGAL_ACTION_REWARD)
    e = AssertOutOfBoundsColony(e)
    e = OrderEnforcingColony(e)
    return e


class raw_env(AECEnv, EzPickle):
    """Colony as an AEC env; no rule lives here (the engine decides legality and the end)."""

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": ENV_NAME,
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(self, max_plies: int = DEFAULT_MAX_PLIES, render_mode: str | None = None, canonical: bool = False) -> None:
        EzPickle.__init__(self, max_plies=max_plies, render_mode=render_mode, canonical=canonical)
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if not isinstance(canonical, (bool, np.bool_)):
            raise ValueError(f"canonical must be True or False, got {canonical!r}")
        self.max_plies = check_max_plies(max_plies)  # the engine's range (int32 state)
        self.render_mode = render_mode
        self.canonical = bool(canonical)
        # Per agent: whether its observations and actions are transposed (blue's canonical view).
        self._transposed = {a: self.canonical and CANONICAL_SYMMETRY[c] == TRANSPOSE for a, c in AGENT_COLOUR.items()}
        self.possible_agents = list(AGENTS)
        self.agents = self.possible_agents[:]
        self.action_spaces = {a: spaces.Discrete(N_ACTIONS) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(low=0.0, high=1.0, shape=OBS_SHAPE_HWC, dtype=np.float32),
                    "action_mask": spaces.Box(low=0, high=1, shape=(N_ACTIONS,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.state_space = spaces.Box(low=0.0, high=1.0, shape=OBS_SHAPE_HWC, dtype=np.float32)
        self._rng: np.random.Generator | None = None
        self._state: GameState = new_game(0, self.max_plies)  # replaced by reset()
        self._obs_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._viewer = None

    # --- spaces and state -------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        """PettingZoo's global state: `float32[10, 10, 30]` planes of the whole position in the
        board frame from red's (`player_0`'s) side; a fresh array (the game has no hidden
        information, so this is the complete position)."""
        planes = np.empty((OBS_CHANNELS, BOARD_SIZE, BOARD_SIZE), np.float32)
        encode_into(self._state._a, int(Colour.RED), False, planes)
        return np.ascontiguousarray(planes.transpose(1, 2, 0))

    @property
    def game_state(self) -> GameState:
        """The engine's immutable `GameState` of the game in progress (always the board frame)."""
        return self._state

    def board_action(self, agent: str, action: int) -> int:
        """`agent`'s action id (its frame: transposed for `player_1` with `canonical=True`) ->
        the board-frame id the engine applies. Ids outside the action space pass unchanged."""
        if self._transposed[agent] and isinstance(action, (int, np.integer)) and 0 <= action < N_ACTIONS:
            return int(TRANSPOSE_ACTIONS[action])
        return action

    def env_action(self, agent: str, board_action: int) -> int:
        """A board-frame id -> `agent`'s action id (the inverse of `board_action`)."""
        return self.board_action(agent, board_action)  # the transpose is its own inverse

    # --- AEC API --------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new game. `seed` fixes the setup (R2.4): `reset(seed=s)` starts exactly
        `colony_env.new_game(s)`; later unseeded resets continue from that seed's generator."""
        check_seed(seed)
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self._start(new_game(self._rng, self.max_plies))
        if self.render_mode == "human":
            self.render()

    def set_state(self, state: GameState) -> None:
        """Continue from a given position (analysis, tests); bookkeeping restarts there."""
        if not isinstance(state, GameState):
            raise TypeError(f"set_state needs a colony_env.GameState, got {type(state).__name__}")
        self._start(state)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """`agent`'s observation: planes and mask in its frame, arrays the caller owns."""
        cached = self._observed(agent)
        # Copies: a caller that edits what it was given must not change the env's view.
        return {"observation": cached[0].copy(), "action_mask": cached[1].copy()}

    def step(self, action: int) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._dead_step(action)
        # IllegalActionError (also for a non-integer action): nothing changed yet.
        new = apply_action(self._state, self.board_action(agent, _as_index(action)))
        self._state = new
        self._obs_cache = {}
        self._cumulative_rewards[agent] = 0
        self._clear_rewards()
        if new.is_over:
            self._finish()
            # Both agents are done; the other one takes the first dead step (classic envs).
            self.agent_selection = AGENTS[1 - AGENTS.index(agent)]
        else:
            self.agent_selection = _AGENT_OF_COLOUR_ID[new._a[I_TO_MOVE]]  # R6.3/R6.4: maybe the same agent
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def render(self) -> None | np.ndarray | str:
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        from . import render

        if self.render_mode == "ansi":
            return render.render_ansi(self._state)
        if self.render_mode == "rgb_array":
            return render.render_rgb(self._state)
        if self._viewer is None:
            self._viewer = render.HumanViewer(title=ENV_NAME, fps=self.metadata["render_fps"])
        self._viewer.show(self._state)
        return None

    def close(self) -> None:
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None

    def __str__(self) -> str:
        return ENV_NAME

    # --- bookkeeping -----------------------------------------------------------------------
    def _start(self, state: GameState) -> None:
        self._state = state
        self._obs_cache = {}
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: _info() for a in self.agents}
        self.agent_selection = COLOUR_AGENT[state.to_move]
        self._resume_agent: str | None = None  # selected again once the done agents have stepped
        if state.is_over:
            self._finish()

    def _dead_step(self, action: Any) -> None:
        """A done agent's step (the AEC contract, as PettingZoo's own helper does it): it must be
        None; the agent leaves `agents` and the per-agent dicts; the next done agent is selected,
        and once none is left, the agent that took the first of these steps."""
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        for table in (self.terminations, self.truncations, self.rewards, self._cumulative_rewards, self.infos):
            del table[agent]
        self.agents.remove(agent)
        done = [a for a in self.agents if self.terminations[a] or self.truncations[a]]
        if done:
            if self._resume_agent is None:
                self._resume_agent = agent
            self.agent_selection = done[0]
        else:
            if self._resume_agent is not None:
                self.agent_selection = self._resume_agent
            self._resume_agent = None
        self._clear_rewards()

    def _end_on_illegal(self, agent: str, action: int, reward: float) -> None:
        """`env()`'s end of the game after `agent`'s illegal action (the classic envs' rule, as
        PettingZoo's `TerminateIllegalWrapper` applies it): `agent` gets `reward`, the other 0,
        every agent is done, and the done agents step first."""
        self._cumulative_rewards[agent] = 0
        self.terminations = dict.fromkeys(self.agents, True)
        self.truncations = dict.fromkeys(self.agents, True)
        self.rewards = dict.fromkeys(self.agents, 0)
        self.rewards[agent] = float(reward)
        self._accumulate_rewards()
        self._resume_agent = self.agent_selection
        self.agent_selection = self.agents[0]
        colonies = self._colonies()
        for a in self.agents:
            self.infos[a] = _info(_ILLEGAL_CODE, NOBODY_ID, colonies, AGENTS.index(agent), int(action))

    def _observed(self, agent: str) -> tuple[np.ndarray, np.ndarray]:
        """`agent`'s (planes, mask), computed once per position; the env's own arrays: read only."""
        cached = self._obs_cache.get(agent)
        if cached is None:  # last() and the wrappers observe the same position repeatedly
            planes = np.empty(OBS_SHAPE_HWC, np.float32)
            mask = np.zeros(N_ACTIONS, np.int8)
            _observe_into(self._state._a, _COLOUR_ID[agent], self._transposed[agent], planes, mask)
            cached = (planes, mask)
            self._obs_cache[agent] = cached
        return cached

    def _colonies(self) -> tuple[int, int]:
        """Controlled colonies (R7.2) of (player_0, player_1)."""
        red, blue = controlled_counts(self._state)
        return (red, blue) if AGENT_COLOUR[AGENTS[0]] == Colour.RED else (blue, red)

    def _finish(self) -> None:
        """Rewards (R7.4), termination or truncation (R6.2) and the end infos."""
        s = self._state
        red, blue = s.rewards()
        self.rewards = {AGENTS[0]: red, AGENTS[1]: blue}
        done = dict.fromkeys(self.agents, True)
        if s.is_truncated:  # the ply limit is not a game outcome but the env's cut-off
            self.truncations = done
        else:
            self.terminations = done
        colonies = self._colonies()
        winner = NOBODY_ID if s.winner is None else AGENTS.index(COLOUR_AGENT[s.winner])
        for a in self.agents:
            self.infos[a] = _info(END_REASON_NAMES.index(s.end_reason), winner, colonies)


INFO_KEYS: tuple[str, ...] = ("end_reason", "winner", "colonies", "illegal_agent", "illegal_action")
# `infos[agent]["end_reason"]` is a code, so that every info value is a number (typed buffers,
# TorchRL's specs): 0 while the game goes on, then an index into this tuple.
END_REASON_NAMES: tuple[str, ...] = ("", *END_REASONS, ILLEGAL_ACTION)
_ILLEGAL_CODE = END_REASON_NAMES.index(ILLEGAL_ACTION)
NOBODY_ID = -1  # "winner" / "illegal_agent" of no agent: the game goes on, a draw, no illegal action


def _info(end_reason: int = 0, winner: int = NOBODY_ID, colonies: tuple[int, int] = (0, 0),
          illegal_agent: int = NOBODY_ID, illegal_action: int = -1) -> dict[str, Any]:
    """One agent's info: the same keys at every step, every value an int (or a pair of ints),
    never None (the module docstring, "Infos"); a fresh dict, so that no two agents share one."""
    return {"end_reason": end_reason, "winner": winner, "colonies": colonies,
            "illegal_agent": illegal_agent, "illegal_action": illegal_action}


def _as_index(action: Any) -> Any:
    """An integer action as a Python int; anything else unchanged, for the engine to refuse with
    its one-line `IllegalActionError`. A bool is refused here: `True` is not action 1."""
    if isinstance(action, (bool, np.bool_)):
        raise IllegalActionError(f"action must be an integer id in 0..{N_ACTIONS - 1} (R8), got {action!r}")
    try:
        return operator.index(action)
    except TypeError:
        return action


def _not_an_action(action: Any) -> bool:
    """A bool or a non-integer (what `Discrete(16001)` holds is ints 0..16000 only)."""
    if isinstance(action, (bool, np.bool_)):
        return True
    try:
        operator.index(action)
    except TypeError:
        return True
    return False


class _ReadsRawEnv(BaseWrapper):
    """Base of the three wrappers of `env()`: PettingZoo's public `BaseWrapper` with the AEC
    attributes that every step reads (`last()`, the wrappers' own checks) as properties reading
    the raw env (`self._raw`) in one C-level lookup. Through `BaseWrapper.__getattr__` each read
    is one Python call per wrapper below (about 35 per step: most of what `env()` cost over
    `raw_env`). When a read fails (`_raw` not set yet), Python falls back to `__getattr__`, which
    raises as PettingZoo's wrappers do. Read-only: the raw env owns them. No attribute of
    PettingZoo's own wrappers is read or written, so a PettingZoo release that renames them
    changes nothing here."""

    _raw: raw_env | None = None
    agent_selection = property(operator.attrgetter("_raw.agent_selection"))
    agents = property(operator.attrgetter("_raw.agents"))
    rewards = property(operator.attrgetter("_raw.rewards"))
    terminations = property(operator.attrgetter("_raw.terminations"))
    truncations = property(operator.attrgetter("_raw.truncations"))
    infos = property(operator.attrgetter("_raw.infos"))
    _cumulative_rewards = property(operator.attrgetter("_raw._cumulative_rewards"))

    def __str__(self) -> str:
        return str(self.env)  # as PettingZoo's classic wrappers print themselves


class OrderEnforcingColony(_ReadsRawEnv):
    """The contract of PettingZoo's `OrderEnforcingWrapper`: before `reset()`, reading `agents`,
    `rewards`, ... is an AttributeError ("... cannot be accessed before reset") and `step`,
    `observe`, `state`, `render` and `agent_iter` are errors; a step with no agent left warns;
    `agent_iter()` asserts that each agent it yields is stepped."""

    _BEFORE_RESET = frozenset({"rewards", "terminations", "truncations", "infos", "agent_selection", "num_agents", "agents"})
    _was_reset = False
    _stepped = False  # step() or reset() since agent_iter's last agent

    def __getattr__(self, name: str) -> Any:
        if name in self._BEFORE_RESET and not self._was_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return super().__getattr__(name)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._raw = self.env.unwrapped
        self._was_reset = True
        self._stepped = True
        self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        if not self._was_reset:
            EnvLogger.error_step_before_reset()
        elif not self._raw.agents:
            self._stepped = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._stepped = True
            self.env.step(action)

    def observe(self, agent: str) -> Any:
        if not self._was_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.observe(agent)

    def state(self) -> np.ndarray:
        if not self._was_reset:
            EnvLogger.error_state_before_reset()
        return self.env.state()

    def render(self) -> Any:
        if not self._was_reset:
            EnvLogger.error_render_before_reset()
        return self.env.render()

    def agent_iter(self, max_iter: int = 2**63) -> AECIterable:
        if not self._was_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _OrderedAgents(self, max_iter)


class _OrderedAgents(AECIterable):
    def __iter__(self) -> AECIterator:
        return _OrderedAgentIterator(self.env, self.max_iter)


class _OrderedAgentIterator(AECIterator):
    def __next__(self) -> str:
        agent = super().__next__()
        assert self.env._stepped, "need to call step() or reset() in a loop over `agent_iter`"
        self.env._stepped = False
        return agent


class AssertOutOfBoundsColony(_ReadsRawEnv):
    """The contract of PettingZoo's `AssertOutOfBoundsWrapper`: an action outside the agent's
    action space is an AssertionError (None is the action of a done agent). A bool is refused
    too, though `Discrete.contains(True)` holds: `True` is not action 1 (issue 32)."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._raw = env.unwrapped

    def step(self, action: Any) -> None:
        # Every agent's space is Discrete(N_ACTIONS) (raw_env): a plain int in range needs no more.
        if not (type(action) is int and 0 <= action < N_ACTIONS):
            agent = self._raw.agent_selection
            done = self._raw.terminations[agent] or self._raw.truncations[agent]
            if not (action is None and done):
                assert not isinstance(action, (bool, np.bool_)) and self.action_space(agent).contains(action), (
                    f"action {action!r:.40} is not in the action space: an integer id in 0..{N_ACTIONS - 1} (R8), "
                    "or None for an agent that is done"
                )
        self.env.step(action)


class TerminateIllegalColony(_ReadsRawEnv):
    """PettingZoo classic envs' illegal-move rule (as its `TerminateIllegalWrapper`): an illegal
    action ends the game, the offender gets `illegal_reward`, the other 0, every agent is done;
    with a warning that says which action was illegal and why, and `infos` saying so."""

    def __init__(self, env: AECEnv, illegal_reward: float) -> None:
        super().__init__(env)
        self._raw = env.unwrapped
        self._illegal_value = illegal_reward

    def step(self, action: Any) -> None:
        raw = self._raw
        agent = raw.agent_selection
        if raw.terminations[agent] or raw.truncations[agent] or action is None:
            self.env.step(action)  # a done agent's step, or None for a live one: the raw env decides
            return
        mask = raw._observed(agent)[1]
        if not _not_an_action(action) and 0 <= action < N_ACTIONS and mask[action]:
            self.env.step(action)
            return
        try:
            apply_action(raw.game_state, raw.board_action(agent, _as_index(action)))  # its message only: the state is immutable
            why = f"action {action}, which is not in the action mask"  # pragma: no cover - mask and engine agree
        except IllegalActionError as exc:
            why = str(exc)
        _warn(f"[WARNING]: {agent} played an {why}. The game ends; {agent} gets {self._illegal_value:+g}.")
        raw._end_on_illegal(agent, action if not _not_an_action(action) else -1, self._illegal_value)


def _warn(message: str) -> None:
    """A warning through PettingZoo's logger, kept in `EnvLogger.mqueue` as its own warnings are."""
    logger = EnvLogger.get_logger()
    if not logger.hasHandlers():
        logger.addHandler(EnvWarningHandler(mqueue=EnvLogger.mqueue))
    logger.warning(message)
    EnvLogger.mqueue.append(message)


__all__ = [
    "AGENTS",
    "AGENT_COLOUR",
    "ENV_NAME",
    "END_REASON_NAMES",
    "INFO_KEYS",
    "AssertOutOfBoundsColony",
    "OrderEnforcingColony",
    "TerminateIllegalColony",
    "env",
    "raw_env",
]
