"""Colony as an OpenSpiel Python game, `pyspiel.load_game("python_colony")`.

    import pyspiel
    import colony_env.openspiel                   # registers "python_colony" with pyspiel
    game = pyspiel.load_game("python_colony")     # or "python_colony(seed=7,max_plies=200)"
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():                # the R2 setup, dealt value by value
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(np.random.choice(outcomes, p=probs)))
        else:
            state.apply_action(state.legal_actions()[0])
    print(state.returns())                        # [red, blue]: +1/-1/0 (R7.4)

Install with `pip install "colony-rl[openspiel]"` (open-spiel and Shimmy). Only this module
imports `pyspiel`; nothing else in `colony_env` needs it.

**Players.** Player 0 is red (moves first, R2.1), player 1 blue. `current_player()` is the
engine's colour to move, so a player may move several times in a row (grace moves,
R6.3): OpenSpiel's sequential games allow that.

**Setup (R2).** With `seed=-1` (the default) the game starts with 24 chance nodes that
deal the values along the start cells: red's 12 in the order of
`constants.RED_START_CELLS`, then blue's 12 along `BLUE_START_CELLS`. Chance outcome
`v - 1` places value `v`, with probability (copies of `v` left) / (cells left), so each
colour's order is a uniformly random ordering of its values, the distribution
`colony_env.new_game` draws from. With `seed=S >= 0` there are no chance nodes and the
game starts from exactly `colony_env.new_game(S)`.

**Actions, ends, returns.** Actions are the 16,001 board-frame ids of R8 and
`legal_actions()` is `engine.legal_actions` (pass only when nothing else is legal,
R4.3). The game is terminal at every end of R6.2, including the ply limit `max_plies`
(OpenSpiel has no truncation; the rewards of R7.4 are paid there too). Returns are +1 /
-1 for the winner / loser and 0 for both on a draw (`ZERO_SUM`, `TERMINAL` rewards).

**Observations.** `observation_tensor(player)` is `float32[30 * 10 * 10]`: the planes of
`colony_env.observation` from `player`'s side in the board frame (channels first,
reshape to `[30, 10, 10]`); all zeros while the setup is being dealt.
`observation_string` and `information_state_string` (the game has perfect information)
are the engine's board text. `serialize_game_and_state` / `deserialize_game_and_state`
replay the action history, which fixes the state (chance outcomes included).

Shimmy's `OpenSpielCompatibilityV0(game=pyspiel.load_game("python_colony"))` turns the
game back into a PettingZoo AEC env (tested with PettingZoo's `api_test`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
try:
    import pyspiel
    from open_spiel.python.observation import IIGObserverForPublicInfoGame
except ImportError as _e:  # one line that says how to get the extra, not a bare "No module named"
    raise ImportError(f'colony_env.openspiel needs the openspiel extra ({_e.name} is not installed): '
                      'pip install "colony-rl[openspiel]"') from None

from .constants import BOARD_SIZE, DEFAULT_MAX_PLIES, N_ACTIONS, N_SATELLITES, SATELLITE_VALUES, Colour
from .engine import GameState, apply_action, check_max_plies, legal_actions, new_game, setup_game
from .notation import action_to_str, board_text
from .observation import OBS_CHANNELS, encode_into

GAME_NAME = "python_colony"
NUM_PLAYERS = 2
DEAL_LENGTH = 2 * N_SATELLITES  # chance nodes of the setup: red's 12 values, then blue's
VALUES = tuple(sorted(set(SATELLITE_VALUES)))  # chance outcome k places value VALUES[k]
RANDOM_SETUP = -1  # `seed` value for "deal the setup by chance"
OBS_SIZE = OBS_CHANNELS * BOARD_SIZE * BOARD_SIZE

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Colony",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=NUM_PLAYERS,
    min_num_players=NUM_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification={"seed": RANDOM_SETUP, "max_plies": DEFAULT_MAX_PLIES},
)


class ColonyGame(pyspiel.Game):
    """The game; parameters `seed` (-1: the setup is dealt by chance nodes; S >= 0: the
    setup of `new_game(S)`) and `max_plies` (the ply limit of R6.2)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = dict(params or {})
        seed = params.get("seed", RANDOM_SETUP)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < RANDOM_SETUP:
            raise ValueError(f"{GAME_NAME}: seed must be -1 (setup dealt by chance) or an int >= 0, got {seed!r}")
        max_plies = check_max_plies(params.get("max_plies", DEFAULT_MAX_PLIES))
        info = pyspiel.GameInfo(
            num_distinct_actions=N_ACTIONS,
            max_chance_outcomes=len(VALUES),
            num_players=NUM_PLAYERS,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=max_plies,  # decision nodes; the deal adds DEAL_LENGTH chance nodes
        )
        super().__init__(_GAME_TYPE, info, params)
        self.seed = seed
        self.max_plies = max_plies

    def new_initial_state(self) -> ColonyState:
        return ColonyState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> Any:
        """Planes and board text for plain observations; the public-information observer of
        OpenSpiel (it holds the history) for perfect-recall information states."""
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return ColonyObserver(params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class ColonyState(pyspiel.State):
    """A state: the values dealt so far, then the engine's `GameState` (`game_state`)."""

    def __init__(self, game: ColonyGame) -> None:
        super().__init__(game)
        self._max_plies = game.max_plies
        self._dealt: list[int] = []
        self.game_state: GameState | None = None
        if game.seed != RANDOM_SETUP:
            self.game_state = new_game(game.seed, game.max_plies)

    # --- the OpenSpiel API ---------------------------------------------------------------
    def current_player(self) -> int:
        if self.game_state is None:
            return pyspiel.PlayerId.CHANCE
        if self.game_state.is_over:
            return pyspiel.PlayerId.TERMINAL
        return int(self.game_state.to_move)

    def _legal_actions(self, player: int) -> list[int]:
        assert self.game_state is not None and player == int(self.game_state.to_move)
        return legal_actions(self.game_state).tolist()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """(outcome, probability) of the next dealt value: copies left / cells left (R2.2)."""
        assert self.game_state is None, "not a chance node"
        own = self._dealt[N_SATELLITES:] if len(self._dealt) >= N_SATELLITES else self._dealt
        left = Counter(SATELLITE_VALUES) - Counter(own)
        cells_left = N_SATELLITES - len(own)
        return [(k, left[v] / cells_left) for k, v in enumerate(VALUES) if left[v]]

    def _apply_action(self, action: int) -> None:
        if self.game_state is None:
            self._dealt.append(VALUES[action])
            if len(self._dealt) == DEAL_LENGTH:
                self.game_state = setup_game(self._dealt[:N_SATELLITES], self._dealt[N_SATELLITES:], self._max_plies)
        else:
            self.game_state = apply_action(self.game_state, action)  # the engine judges (R4)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            k = len(self._dealt)
            colour = Colour.RED if k < N_SATELLITES else Colour.BLUE
            return f"deal {colour} start cell {k % N_SATELLITES + 1}: value {VALUES[action]}"
        return action_to_str(action, self.game_state)

    def is_terminal(self) -> bool:
        return self.game_state is not None and self.game_state.is_over

    def returns(self) -> list[float]:
        if self.game_state is None:
            return [0.0, 0.0]
        return list(self.game_state.rewards())  # R7.4; zeros before the end

    def __str__(self) -> str:
        if self.game_state is None:
            red, blue = self._dealt[:N_SATELLITES], self._dealt[N_SATELLITES:]
            return f"setup being dealt: red {red}, blue {blue}"
        return board_text(self.game_state)


class ColonyObserver:
    """OpenSpiel's PyObserver interface: `tensor` (flat planes) and `dict` views of it."""

    def __init__(self, params: Any) -> None:
        if params:
            raise ValueError(f"{GAME_NAME}: observation parameters are not supported, got {params}")
        self.tensor = np.zeros(OBS_SIZE, np.float32)
        self.dict = {"observation": self.tensor.reshape(OBS_CHANNELS, BOARD_SIZE, BOARD_SIZE)}

    def set_from(self, state: ColonyState, player: int) -> None:
        if state.game_state is None:
            self.tensor.fill(0.0)
            return
        encode_into(state.game_state._a, int(player), False, self.dict["observation"])

    def string_from(self, state: ColonyState, player: int) -> str:
        del player  # perfect information: every player sees the same board
        return str(state)


pyspiel.register_game(_GAME_TYPE, ColonyGame)

__all__ = ["GAME_NAME", "ColonyGame", "ColonyObserver", "ColonyState"]
