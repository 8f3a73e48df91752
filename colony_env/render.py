"""Pictures of a position: text (`render_ansi`), an RGB array (`render_rgb`) and a window
(`HumanViewer`, matplotlib). Only drawing lives here; every fact shown (connected
satellites, colonies and their controllers, the end and the winner) comes from the engine.

What is shown, in both forms:
* the board with coordinates (R1.2: files a-j West to East, ranks 10-1 North to South)
  and each colour's start edges (R2.3);
* satellites with their value and colour; connected ones (R3.1) marked;
* colonies (R3.4) tinted or lettered with their controller (R7.1), a crown on colonies of 6;
* the unlock state (R3.5), the grace counter as the card's lightning indicator (R6.3),
  whose turn it is, the ply, and the result once the game is over.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from .constants import BOARD_SIZE, DIRECTIONS, FILES, GRACE_MOVES, MAX_COMPONENT, Colour
from .engine import GameState, colonies, connected_counts, connected_mask, controlled_counts

# Colours as on the rule card: red and blue satellites.
RED_RGB = (200, 35, 45)
BLUE_RGB = (35, 85, 200)
COLOUR_RGB = {Colour.RED: RED_RGB, Colour.BLUE: BLUE_RGB}
RED_TINT = (246, 196, 196)
BLUE_TINT = (196, 212, 246)
NOBODY_TINT = (214, 214, 214)
NOBODY_RGB = (110, 110, 110)  # a colony tag when nobody controls it
BOARD_LIGHT = (238, 232, 214)
BOARD_DARK = (226, 219, 199)
GRID = (160, 150, 130)
INK = (30, 30, 30)
BACKGROUND = (252, 250, 244)
GOLD = (235, 180, 20)
SPENT = (200, 200, 200)

# ANSI escapes for the text board.
_ANSI = {Colour.RED: "\x1b[31m", Colour.BLUE: "\x1b[34m"}
_BOLD = "\x1b[1m"
_RESET = "\x1b[0m"
LIGHTNING = "\u26a1"  # the card's grace indicator
CROWN = "\u265b"
SPENT_MARK = "\u00b7"


def _colony_letters(state: GameState) -> tuple[dict[tuple[int, int], str], list[tuple[str, Any]]]:
    """Letter per colony cell (A, B, ... in board order) and the colony list with letters."""
    cells: dict[tuple[int, int], str] = {}
    listed = []
    for k, col in enumerate(colonies(state)):
        letter = string.ascii_uppercase[k % 26]
        listed.append((letter, col))
        for rc in col.cells:
            cells[rc] = letter
    return cells, listed


def _status_lines(state: GameState, agent_names: bool = True) -> list[str]:
    def who(c: Colour) -> str:
        return f"{c} (player_{int(c)})" if agent_names else str(c)

    red_col, blue_col = controlled_counts(state)
    red_con, blue_con = connected_counts(state)
    if state.is_over:
        result = "draw" if state.winner is None else f"{who(state.winner)} wins"
        turn = f"game over ({state.end_reason}): {result}"
    else:
        turn = f"{who(state.to_move)} to move"
    lock = "unlocked" if state.unlocked else "locked (no edge has been empty yet)"
    lines = [
        f"{turn}; ply {state.ply}/{state.max_plies}",
        f"connections {lock}; connected red {red_con}, blue {blue_con} (23 ends the game)",
        f"colonies controlled: red {red_col}, blue {blue_col}",
    ]
    if state.finished is not None:
        bolts = LIGHTNING * state.grace_left + SPENT_MARK * (GRACE_MOVES - state.grace_left)
        lines.append(f"{state.finished} finished; {state.finished.opponent} grace moves {bolts} ({state.grace_left} left)")
    return lines


def render_ansi(state: GameState, color: bool = True) -> str:
    """The board as text. Cells: `r3`/`b2` a satellite (value, colour), upper case `R3` when
    connected, followed by its colony's letter; colonies are listed below with their
    totals, controller and a crown when they have 6 satellites. `color=False` drops the
    ANSI colour escapes (for logs and files)."""
    board = state.board
    conn = connected_mask(state)
    letters, listed = _colony_letters(state)

    def paint(text: str, colour: Colour | None, bold: bool = False) -> str:
        if not color or colour is None:
            return text
        return (_BOLD if bold else "") + _ANSI[colour] + text + _RESET

    edge = {Colour.RED: "=" * 4, Colour.BLUE: "\u2016"}
    header = "     " + "".join(f" {f}  " for f in FILES)
    red_edge = "     " + "".join(paint(edge[Colour.RED], Colour.RED) if 2 <= c <= 7 else "    " for c in range(BOARD_SIZE))
    lines = [header, red_edge]
    for r in range(BOARD_SIZE):
        rank = BOARD_SIZE - r
        side = paint(edge[Colour.BLUE], Colour.BLUE) if 2 <= r <= 7 else " "
        cells = []
        for c in range(BOARD_SIZE):
            v = int(board[r, c])
            if v == 0:
                cells.append(" .  ")
                continue
            colour = Colour.RED if v > 0 else Colour.BLUE
            p = "r" if v > 0 else "b"
            text = (p.upper() if conn[r, c] else p) + str(abs(v)) + letters.get((r, c), " ")
            cells.append(" " + paint(text, colour, bold=bool(conn[r, c])))
        lines.append(f"{rank:>3} {side}" + "".join(cells) + f" {side} {rank}")
    lines += [red_edge, header, "r3/b3: red/blue satellite of value 3; R3/B3: connected; A, B, ...: its colony", ""]
    for letter, col in listed:
        ctrl = "nobody (equal totals)" if col.controller is None else paint(str(col.controller), col.controller)
        crown = f" {CROWN} crowned" if col.size == MAX_COMPONENT else ""
        lines.append(f"colony {letter}: {col.size} satellites, red {col.red_total} vs blue {col.blue_total} -> {ctrl}{crown}")
    lines += _status_lines(state)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Result in words (the last frame of a replay, colony-replay's text, colony-play)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word[:-1]}ies" if word.endswith("y") else f"{n} {word}s"


def describe_result(state: GameState) -> str:
    """The end of a finished game in one sentence: who won, by what count or tiebreak (R7),
    and how the game ended (R6.2), e.g. `red wins: 3 colonies to 2; the game ended after
    blue's third grace move`. Every fact comes from the engine."""
    if not state.is_over:
        raise ValueError("describe_result needs a finished game; this one is still running")
    red, blue = controlled_counts(state)
    winner = state.winner
    lowest = min((c.total for c in colonies(state) if c.controller is not None), default=None)
    if winner is None:
        result = "draw: no colony is controlled" if red == 0 else (
            f"draw: {_plural(red, 'colony')} each, and both control one of the lowest total ({lowest})")
    elif red != blue:
        result = f"{winner} wins: {_plural(max(red, blue), 'colony')} to {min(red, blue)}"
    else:
        result = f"{winner} wins on the tiebreak: {_plural(red, 'colony')} each, {winner} alone controls one of the lowest total ({lowest})"
    reason = state.end_reason
    if reason == "connected23":
        ending = f"the game ended when {sum(connected_counts(state))} satellites were connected"
    elif reason == "grace":
        grace_player = state.finished.opponent if state.finished is not None else state.to_move
        ending = (f"the game ended after {grace_player}'s third grace move" if state.grace_left == 0
                  else f"the game ended when {grace_player} passed during the grace moves")
    elif reason == "passes":
        ending = "the game ended after two passes in a row"
    else:
        ending = f"the game was stopped at the ply limit ({state.max_plies} plies)"
    return f"{result}; {ending}"


# --------------------------------------------------------------------------------------
# RGB picture (Pillow)

CELL_PX = 56
MARGIN_PX = 30
TOP_PX = 64  # status row with the lightning indicator above the board
BOTTOM_PX = 126  # counts, a caption line and the legend below the board
MOVE_RGB = (20, 150, 70)  # the last move's arrow: a colour no satellite or tint uses
_FONTS: dict[int, Any] = {}


def _font(size: int):
    from PIL import ImageFont

    if size not in _FONTS:
        _FONTS[size] = ImageFont.load_default(size=size)
    return _FONTS[size]


def _bolt(draw, x: float, y: float, h: float, fill: tuple[int, int, int]) -> None:
    """A lightning bolt of height `h` with its top-left near (x, y)."""
    w = h * 0.6
    pts = [(0.55, 0.0), (0.05, 0.55), (0.45, 0.55), (0.3, 1.0), (0.95, 0.4), (0.55, 0.4), (0.8, 0.0)]
    draw.polygon([(x + px * w, y + py * h) for px, py in pts], fill=fill, outline=INK)


def _crown(draw, cx: float, top: float, w: float, fill: tuple[int, int, int]) -> None:
    h = w * 0.55
    x0 = cx - w / 2
    pts = [(0, 1), (0, 0.25), (0.25, 0.6), (0.5, 0), (0.75, 0.6), (1, 0.25), (1, 1)]
    draw.polygon([(x0 + px * w, top + py * h) for px, py in pts], fill=fill, outline=INK)


def _arrow(draw, a: tuple[float, float], b: tuple[float, float], width: int, head: float,
           fill: tuple[int, int, int], dashed: bool = False) -> None:
    """A straight arrow from a to b (pixels) with a filled head at b."""
    (x0, y0), (x1, y1) = a, b
    length = float(np.hypot(x1 - x0, y1 - y0))
    if length < 1:
        return
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    shaft_end = (x1 - ux * head * 0.8, y1 - uy * head * 0.8)
    if dashed:
        dash = max(4.0, head * 0.6)
        t = 0.0
        while t < length - head * 0.8:
            t2 = min(t + dash, length - head * 0.8)
            draw.line([(x0 + ux * t, y0 + uy * t), (x0 + ux * t2, y0 + uy * t2)], fill=fill, width=width)
            t += 2 * dash
    else:
        draw.line([a, shaft_end], fill=fill, width=width)
    px, py = -uy, ux
    draw.polygon([(x1, y1), (x1 - ux * head + px * head * 0.55, y1 - uy * head + py * head * 0.55),
                  (x1 - ux * head - px * head * 0.55, y1 - uy * head - py * head * 0.55)], fill=fill, outline=INK)


def _move_cells(previous: GameState, action: int) -> tuple[int, int, int | None] | None:
    """(from, to, pushed-to) flat cells of `action` played in `previous`; None for a pass."""
    from .notation import decode_action

    dec = decode_action(action)
    if dec[0] == "pass":
        return None
    board = previous.board.ravel()
    if dec[0] == "move":
        _, s, d, k = dec
        dr, dc = DIRECTIONS[d]
        return s, s + k * (dr * BOARD_SIZE + dc), None
    _, s, d, pd, pk = dec
    v = abs(int(board[s]))
    dr, dc = DIRECTIONS[d]
    land = s + v * (dr * BOARD_SIZE + dc)
    pr, pc = DIRECTIONS[pd]
    return s, land, land + pk * (pr * BOARD_SIZE + pc)


def render_rgb(state: GameState, cell_px: int = CELL_PX, last_move: tuple[GameState, int] | None = None,
               caption: str | None = None) -> np.ndarray:
    """The position as a `uint8[H, W, 3]` picture.

    Satellites are discs in their colour with the value written on them; connected
    satellites have a thick black ring. Colony cells are tinted with the controller's
    colour (grey for equal totals), each colony carries a tag with its total in the
    controller's colour, and crowned colonies a gold crown. Each colour's start edges are
    bars beside the board. `last_move=(previous_state, action)` draws the action that led
    to `state`: a green arrow from the cell it left to the cell it reached, and for a
    displacement a dashed arrow to where the opposing satellite was pushed. Above the
    board: whose turn (or the result), the unlock state and the grace indicator; below:
    counts, a caption (`caption`, or the result in words once the game is over, or the
    last move) and a legend.
    """
    from PIL import Image, ImageDraw

    if cell_px < 16:
        raise ValueError(f"cell_px must be at least 16, got {cell_px}")
    scale = cell_px / CELL_PX
    margin, top, bottom = round(MARGIN_PX * scale), round(TOP_PX * scale), round(BOTTOM_PX * scale)
    side = BOARD_SIZE * cell_px
    width, height = side + 2 * margin, side + top + bottom + 2 * margin
    img = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    ox, oy = margin, top + margin  # board origin
    tiny, small, medium, large = (_font(max(8, round(n * scale))) for n in (12, 13, 16, 22))

    def centre(i: int) -> tuple[float, float]:
        r, c = divmod(i, BOARD_SIZE)
        return ox + c * cell_px + cell_px / 2, oy + r * cell_px + cell_px / 2

    board = state.board
    conn = connected_mask(state)
    tint: dict[tuple[int, int], tuple[int, int, int]] = {}
    crowned: set[tuple[int, int]] = set()
    listed = colonies(state)
    for col in listed:
        colour = NOBODY_TINT if col.controller is None else (RED_TINT if col.controller == Colour.RED else BLUE_TINT)
        for rc in col.cells:
            tint[rc] = colour
        if col.crowned:
            crowned.add(min(col.cells))  # one crown per colony, on its first cell

    # start edges (R2.3): red North/South, blue West/East
    bar = max(3, round(6 * scale))
    mid0, mid1 = ox + 2 * cell_px, ox + 8 * cell_px
    draw.rectangle([mid0, oy - bar - 2, mid1, oy - 3], fill=RED_RGB)
    draw.rectangle([mid0, oy + side + 2, mid1, oy + side + bar + 1], fill=RED_RGB)
    mid0, mid1 = oy + 2 * cell_px, oy + 8 * cell_px
    draw.rectangle([ox - bar - 2, mid0, ox - 3, mid1], fill=BLUE_RGB)
    draw.rectangle([ox + side + 2, mid0, ox + side + bar + 1, mid1], fill=BLUE_RGB)

    move = _move_cells(*last_move) if last_move is not None else None
    pad = cell_px * 0.14
    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            x0, y0 = ox + c * cell_px, oy + r * cell_px
            fill = tint.get((r, c), BOARD_LIGHT if (r + c) % 2 == 0 else BOARD_DARK)
            draw.rectangle([x0, y0, x0 + cell_px, y0 + cell_px], fill=fill, outline=GRID)
    if move is not None:  # the cell the satellite left: a dashed ring in the mover's colour
        cx, cy = centre(move[0])
        mover = COLOUR_RGB[last_move[0].to_move]
        rad = cell_px / 2 - pad
        for k in range(12):
            draw.arc([cx - rad, cy - rad, cx + rad, cy + rad], k * 30, k * 30 + 15, fill=mover, width=max(2, round(3 * scale)))
    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            v = int(board[r, c])
            if v == 0:
                continue
            x0, y0 = ox + c * cell_px, oy + r * cell_px
            colour = COLOUR_RGB[Colour.RED if v > 0 else Colour.BLUE]
            ring = max(2, round(4 * scale)) if conn[r, c] else max(1, round(scale))
            draw.ellipse([x0 + pad, y0 + pad, x0 + cell_px - pad, y0 + cell_px - pad], fill=colour, outline=INK, width=ring)
            draw.text((x0 + cell_px / 2, y0 + cell_px / 2), str(abs(v)), fill=(255, 255, 255), font=large, anchor="mm")
            if (r, c) in crowned:
                _crown(draw, x0 + cell_px / 2, y0 + 1, cell_px * 0.42, GOLD)

    if move is not None:  # arrows end at the rim of the disc they point to
        line, head = max(3, round(5 * scale)), cell_px * 0.3
        rim = cell_px / 2 - pad

        def towards(a: int, b: int, from_rim: bool) -> tuple[tuple[float, float], tuple[float, float]]:
            (xa, ya), (xb, yb) = centre(a), centre(b)
            n = float(np.hypot(xb - xa, yb - ya))
            start = rim if from_rim else 0.0  # the cell a satellite left is empty: start at its centre
            return (xa + (xb - xa) * start / n, ya + (yb - ya) * start / n), (xb - (xb - xa) * rim / n, yb - (yb - ya) * rim / n)

        _arrow(draw, *towards(move[0], move[1], False), line, head, MOVE_RGB)
        if move[2] is not None:
            _arrow(draw, *towards(move[1], move[2], True), max(2, line - 1), head * 0.8, MOVE_RGB, dashed=True)

    for k, col in enumerate(listed):  # colony tags: letter and total, in the controller's colour
        r, c = min(col.cells)
        x0, y0 = ox + c * cell_px, oy + r * cell_px
        text = f"{string.ascii_uppercase[k % 26]} {col.total}"
        fill = NOBODY_RGB if col.controller is None else COLOUR_RGB[col.controller]
        box = draw.textbbox((0, 0), text, font=tiny)
        w, h = box[2] - box[0] + 6 * scale, box[3] - box[1] + 4 * scale
        draw.rounded_rectangle([x0 + 1, y0 + cell_px - h - 1, x0 + 1 + w, y0 + cell_px - 1], radius=3 * scale,
                               fill=fill, outline=INK)
        draw.text((x0 + 1 + w / 2, y0 + cell_px - 1 - h / 2), text, fill=(255, 255, 255), font=tiny, anchor="mm")

    for k in range(BOARD_SIZE):  # coordinates (R1.2)
        cx = ox + k * cell_px + cell_px / 2
        draw.text((cx, oy - margin / 2 - 2), FILES[k], fill=INK, font=small, anchor="mm")
        draw.text((cx, oy + side + margin / 2 + 2), FILES[k], fill=INK, font=small, anchor="mm")
        cy = oy + k * cell_px + cell_px / 2
        draw.text((ox - margin / 2 - 2, cy), str(BOARD_SIZE - k), fill=INK, font=small, anchor="mm")
        draw.text((ox + side + margin / 2 + 2, cy), str(BOARD_SIZE - k), fill=INK, font=small, anchor="mm")

    # top row: whose turn / result, unlock state, grace indicator
    ty = top / 2
    if state.is_over:
        w = state.winner
        text = ("draw" if w is None else f"{w} wins") + f" ({state.end_reason})"
        dot = INK if w is None else COLOUR_RGB[w]
    else:
        text = f"{state.to_move} to move"
        dot = COLOUR_RGB[state.to_move]
    rad = 10 * scale
    draw.ellipse([margin, ty - rad, margin + 2 * rad, ty + rad], fill=dot, outline=INK)
    draw.text((margin + 2.6 * rad, ty), text, fill=INK, font=medium, anchor="lm")
    lock = "unlocked" if state.unlocked else "locked"
    draw.text((width / 2 - 20 * scale, ty), f"connections {lock}", fill=INK, font=small, anchor="lm")
    bolt_h = top * 0.55
    bolts_x = width - margin - GRACE_MOVES * bolt_h * 0.7
    draw.text((bolts_x - 6 * scale, ty), "grace", fill=INK, font=small, anchor="rm")
    for k in range(GRACE_MOVES):
        lit = state.finished is not None and k < state.grace_left
        _bolt(draw, width - margin - (GRACE_MOVES - k) * bolt_h * 0.7, ty - bolt_h / 2, bolt_h, GOLD if lit else SPENT)

    # below the board: counts, the caption, the legend
    red_col, blue_col = controlled_counts(state)
    red_con, blue_con = connected_counts(state)
    by = oy + side + margin + 12 * scale
    draw.text((margin, by), f"colonies  red {red_col} : {blue_col} blue", fill=INK, font=medium, anchor="lm")
    draw.text((width / 2, by), f"connected: red {red_con} + blue {blue_con} of 23", fill=INK, font=small, anchor="mm")
    draw.text((width - margin, by), f"ply {state.ply}/{state.max_plies}", fill=INK, font=medium, anchor="rm")
    if caption is None:
        if state.is_over:
            caption = describe_result(state)
        elif last_move is not None:
            from .notation import action_to_str

            caption = f"last move: {last_move[0].to_move} {action_to_str(last_move[1], last_move[0])}"
        elif state.finished is not None:
            caption = f"{state.finished} finished; {state.finished.opponent} has {state.grace_left} grace moves left"
        else:
            caption = ""
    cap_font = small
    while draw.textlength(caption, font=cap_font) > width - 2 * margin and cap_font.size > 8:
        cap_font = _font(cap_font.size - 1)  # long captions shrink to fit instead of being cut
    draw.text((margin, by + 26 * scale), caption, fill=INK, font=cap_font, anchor="lm")
    _legend(draw, margin, by + 58 * scale, width - 2 * margin, scale, tiny)
    return np.asarray(img, dtype=np.uint8).copy()


def _legend(draw, x: float, y: float, room: float, scale: float, font) -> None:
    """One compact row of symbols with their meaning, wrapped to a second row if needed."""
    r = 8 * scale
    items = []

    def disc(ring: int):
        def paint(px: float, py: float) -> None:
            draw.ellipse([px, py - r, px + 2 * r, py + r], fill=RED_RGB, outline=INK, width=ring)
        return paint

    def swatch(fill):
        def paint(px: float, py: float) -> None:
            draw.rectangle([px, py - r, px + 2 * r, py + r], fill=fill, outline=GRID)
        return paint

    def tag(px: float, py: float) -> None:
        draw.rounded_rectangle([px, py - r * 0.8, px + 2.6 * r, py + r * 0.8], radius=3 * scale, fill=BLUE_RGB, outline=INK)
        draw.text((px + 1.3 * r, py), "A 9", fill=(255, 255, 255), font=font, anchor="mm")

    def arrow(dashed: bool):
        def paint(px: float, py: float) -> None:
            _arrow(draw, (px, py), (px + 3 * r, py), max(2, round(3 * scale)), 1.6 * r, MOVE_RGB, dashed=dashed)
        return paint

    def crown(px: float, py: float) -> None:
        _crown(draw, px + r, py - r * 0.6, 2 * r, GOLD)

    def bolt(px: float, py: float) -> None:
        _bolt(draw, px, py - r, 2 * r, GOLD)

    items = [(disc(max(1, round(scale))), 2 * r, "free"), (disc(max(2, round(3 * scale))), 2 * r, "connected"),
             (swatch(RED_TINT), 2 * r, "colony of red"), (swatch(NOBODY_TINT), 2 * r, "of nobody"),
             (tag, 2.6 * r, "total"), (crown, 2 * r, "6: crowned"), (arrow(False), 3 * r, "last move"),
             (arrow(True), 3 * r, "push"), (bolt, 1.4 * r, "grace moves left")]
    cx, cy = x, y
    for paint, w, label in items:
        need = w + 4 * scale + draw.textlength(label, font=font) + 12 * scale
        if cx + need > x + room:
            cx, cy = x, cy + 2.6 * r
        paint(cx, cy)
        draw.text((cx + w + 4 * scale, cy), label, fill=INK, font=font, anchor="lm")
        cx += need


# --------------------------------------------------------------------------------------
# Window (matplotlib); works headless with the Agg backend, where it only draws.

_NON_INTERACTIVE = {"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"}


class HumanViewer:
    """A matplotlib window showing `render_rgb` pictures, refreshed on each `show`."""

    def __init__(self, title: str = "colony", fps: float = 2.0) -> None:
        import matplotlib.pyplot as plt

        self._plt = plt
        self._fps = fps
        self.fig, self.ax = plt.subplots(num=title)
        self.ax.set_axis_off()
        self._image = None

    def show(self, state: GameState) -> None:
        picture = render_rgb(state)
        if self._image is None:
            self._image = self.ax.imshow(picture)
            self.fig.tight_layout()
        else:
            self._image.set_data(picture)
        self.fig.canvas.draw_idle()
        backend = self._plt.get_backend().lower()
        if backend not in _NON_INTERACTIVE and "inline" not in backend:
            self._plt.pause(1.0 / self._fps)
        else:
            self.fig.canvas.draw()  # headless: draw only, no waiting

    def close(self) -> None:
        self._plt.close(self.fig)


# --------------------------------------------------------------------------------------
# Command line: draw a position of a seeded random game (how docs/midgame.png was made).


def random_position(seed: int, plies: int) -> GameState:
    """The position after `plies` uniformly random legal actions from `new_game(seed)`
    (generator `default_rng(seed)`), or the final position if the game ends first."""
    return random_position_and_move(seed, plies)[0]


def random_position_and_move(seed: int, plies: int) -> tuple[GameState, tuple[GameState, int] | None]:
    """`random_position` and the (previous position, action) that led to it (None at ply 0)."""
    from .engine import apply_action, legal_actions, new_game

    rng = np.random.default_rng(seed)
    state, last = new_game(seed), None
    for _ in range(plies):
        if state.is_over:
            break
        legal = legal_actions(state)
        action = int(legal[rng.integers(len(legal))])
        state, last = apply_action(state, action), (state, action)
    return state, last


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m colony_env.render", description="Draw a position of a seeded random game.")
    parser.add_argument("--seed", type=int, default=2, help="game seed (setup and the random moves)")
    parser.add_argument("--plies", type=int, default=83, help="random actions to play first")
    parser.add_argument("--out", default=None, help="PNG file to write; without it the text board is printed")
    parser.add_argument("--cell-px", type=int, default=CELL_PX, help="cell size of the picture in pixels")
    args = parser.parse_args(argv)
    if args.plies < 0:
        parser.error("--plies must be >= 0")
    state, last = random_position_and_move(args.seed, args.plies)
    if args.out is None:
        print(render_ansi(state))
        return
    from PIL import Image

    try:
        picture = render_rgb(state, cell_px=args.cell_px, last_move=last)
    except ValueError as exc:
        parser.error(str(exc))
    Image.fromarray(picture).save(args.out)
    print(f"wrote {args.out} ({picture.shape[1]}x{picture.shape[0]}), ply {state.ply}")


if __name__ == "__main__":
    main()


__all__ = ["HumanViewer", "describe_result", "main", "random_position", "random_position_and_move", "render_ansi", "render_rgb"]
