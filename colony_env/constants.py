"""Named constants of the game (docs/rules.md R1, R2, R6, R8) and of the packed state layout.

Every number the rules use has a name here, so that no kernel, adapter or test
carries a bare 10, 12 or 16000.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

# --- R1 board -----------------------------------------------------------------
BOARD_SIZE = 10
N_CELLS = BOARD_SIZE * BOARD_SIZE
FILES = "abcdefghij"  # R1.2: file letter for column c = 0..9

# R1.4 directions, clockwise from North, as (dr, dc).
DIRECTIONS: tuple[tuple[int, int], ...] = (
    (-1, 0),  # 0 N
    (-1, 1),  # 1 NE
    (0, 1),  # 2 E
    (1, 1),  # 3 SE
    (1, 0),  # 4 S
    (1, -1),  # 5 SW
    (0, -1),  # 6 W
    (-1, -1),  # 7 NW
)
DIRECTION_NAMES = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
N_DIRECTIONS = len(DIRECTIONS)
ORTHOGONAL_DIRECTIONS = (0, 2, 4, 6)


# --- R2 players and satellites ------------------------------------------------
class Colour(IntEnum):
    """The game's colours (R2.1). Agents (`player_0`, `player_1`) are an env concept."""

    RED = 0
    BLUE = 1

    def __str__(self) -> str:
        return self.name.lower()

    @property
    def opponent(self) -> "Colour":
        return Colour(1 - self)

    @property
    def sign(self) -> int:
        """Sign of this colour's satellites on the board array (red > 0, blue < 0)."""
        return 1 if self == Colour.RED else -1


RED = Colour.RED
BLUE = Colour.BLUE
SATELLITE_VALUES: tuple[int, ...] = (1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4)  # R2.2
N_SATELLITES = len(SATELLITE_VALUES)
MAX_VALUE = 4
COPIES_PER_VALUE = 3
SHIFTED_VALUES = (1, 2)  # R2.4: these start one cell inward

# R2.3 start cells, in the order the seeded permutation fills them.
RED_START_CELLS: tuple[tuple[int, int], ...] = tuple((0, c) for c in range(2, 8)) + tuple(
    (9, c) for c in range(2, 8)
)
BLUE_START_CELLS: tuple[tuple[int, int], ...] = tuple((r, 0) for r in range(2, 8)) + tuple(
    (r, 9) for r in range(2, 8)
)

# --- R3 colonies ----------------------------------------------------------------
MIN_COLONY = 3
MAX_COMPONENT = 6  # R3.4 crowned / R5.3 cap

# --- R6 sequence ----------------------------------------------------------------
CONNECTED_TO_END = 23
GRACE_MOVES = 3
PASSES_TO_END = 2
DEFAULT_MAX_PLIES = 400
MAX_PLIES_LIMIT = 2**31 - 1  # the ply counters are int32 (packed state below)

# End reasons (R6.2), in the order they are checked; index 0 means "not over".
END_REASONS: tuple[str, ...] = ("connected23", "grace", "passes", "ply_limit")

# --- R8 action encoding ---------------------------------------------------------
# Action layout (absolute board frame, the same for both colours):
#   0     .. 3199  move (s, d, k):            a = 32*s + 4*d + (k-1)           k in 1..4
#   3200  .. 15999 displacement (s,d,pd,pk):  a = 3200 + 2*(8*(8*s+d)+pd) + (pk-1)  pk in 1..2
#   16000          pass
MAX_STEP = 4
MAX_PUSH = 2
MOVES_PER_CELL = N_DIRECTIONS * MAX_STEP  # 32
N_MOVE_ACTIONS = N_CELLS * MOVES_PER_CELL  # 3200
DISPLACEMENT_BASE = N_MOVE_ACTIONS
DISPLACEMENTS_PER_CELL = N_DIRECTIONS * N_DIRECTIONS * MAX_PUSH  # 128
N_DISPLACEMENT_ACTIONS = N_CELLS * DISPLACEMENTS_PER_CELL  # 12800
PASS_ACTION = DISPLACEMENT_BASE + N_DISPLACEMENT_ACTIONS  # 16000
N_ACTIONS = PASS_ACTION + 1  # 16001

# --- packed state layout (engine internal) --------------------------------------
# A GameState is one int32 vector: the 100 board cells (red +v, blue -v, 0 empty)
# followed by the scalar fields of R9, so that one array crosses into compiled code.
I_TO_MOVE = N_CELLS  # 0 red, 1 blue
I_UNLOCKED = N_CELLS + 1  # 0/1
I_FINISHED = N_CELLS + 2  # -1 nobody, 0 red, 1 blue
I_GRACE = N_CELLS + 3
I_PLY = N_CELLS + 4
I_PASSES = N_CELLS + 5
I_MAX_PLIES = N_CELLS + 6
I_REASON = N_CELLS + 7  # 0 not over, else 1 + index into END_REASONS
STATE_LEN = N_CELLS + 8
STATE_DTYPE = np.int32
NOBODY = -1
