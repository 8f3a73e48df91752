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

from .constants import BOARD_SIZE, FILES, GRACE_MOVES, MAX_COMPONENT, Colour
from .engine import GameState, colonies, connected_counts, connected_mask, controlled_counts

# Colours as on the rule card: red and blue satellites.
RED_RGB = (200, 35, 45)
BLUE_RGB = (35, 85, 200)
COLOUR_RGB = {Colour.RED: RED_RGB, Colour.BLUE: BLUE_RGB}
RED_TINT = (246, 196, 196)
BLUE_TINT = (196, 212, 246)
NOBODY_TINT = (214, 214, 214)
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
# RGB picture (Pillow)

CELL_PX = 56
MARGIN_PX = 30
TOP_PX = 64  # status row with the lightning indicator above the board
BOTTOM_PX = 78
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


def render_rgb(state: GameState, cell_px: int = CELL_PX) -> np.ndarray:
    """The position as a `uint8[H, W, 3]` picture.

    Satellites are discs in their colour with the value written on them; connected
    satellites have a thick black ring; colony cells are tinted with the controller's
    colour (grey for equal totals) and crowned colonies carry a gold crown. Each colour's
    start edges are drawn as bars beside the board. Above the board: whose turn, the unlock
    state and the grace indicator (three bolts, spent ones grey); below: counts and ply.
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
    small, medium, large = _font(round(13 * scale)), _font(round(16 * scale)), _font(round(22 * scale))

    board = state.board
    conn = connected_mask(state)
    tint: dict[tuple[int, int], tuple[int, int, int]] = {}
    crowned: set[tuple[int, int]] = set()
    for col in colonies(state):
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

    for r in range(BOARD_SIZE):
        for c in range(BOARD_SIZE):
            x0, y0 = ox + c * cell_px, oy + r * cell_px
            fill = tint.get((r, c), BOARD_LIGHT if (r + c) % 2 == 0 else BOARD_DARK)
            draw.rectangle([x0, y0, x0 + cell_px, y0 + cell_px], fill=fill, outline=GRID)
            v = int(board[r, c])
            if v == 0:
                continue
            colour = COLOUR_RGB[Colour.RED if v > 0 else Colour.BLUE]
            pad = cell_px * 0.14
            ring = max(2, round(4 * scale)) if conn[r, c] else max(1, round(scale))
            draw.ellipse([x0 + pad, y0 + pad, x0 + cell_px - pad, y0 + cell_px - pad], fill=colour, outline=INK, width=ring)
            draw.text((x0 + cell_px / 2, y0 + cell_px / 2), str(abs(v)), fill=(255, 255, 255), font=large, anchor="mm")
            if (r, c) in crowned:
                _crown(draw, x0 + cell_px / 2, y0 + 1, cell_px * 0.42, GOLD)

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
        text = f"{state.end_reason}: " + ("draw" if w is None else f"{w} wins")
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

    # bottom: counts
    red_col, blue_col = controlled_counts(state)
    red_con, blue_con = connected_counts(state)
    by = oy + side + margin + bottom * 0.3
    draw.text((margin, by), f"colonies  red {red_col} : {blue_col} blue", fill=INK, font=medium, anchor="lm")
    draw.text((margin, by + bottom * 0.4), f"connected red {red_con}, blue {blue_con} of 23", fill=INK, font=small, anchor="lm")
    fin = f"{state.finished} finished, {state.grace_left} grace left" if state.finished is not None else ""
    draw.text((width - margin, by), f"ply {state.ply}/{state.max_plies}", fill=INK, font=medium, anchor="rm")
    draw.text((width - margin, by + bottom * 0.4), fin, fill=INK, font=small, anchor="rm")
    return np.asarray(img, dtype=np.uint8).copy()


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
    from .engine import apply_action, legal_actions, new_game

    rng = np.random.default_rng(seed)
    state = new_game(seed)
    for _ in range(plies):
        if state.is_over:
            break
        legal = legal_actions(state)
        state = apply_action(state, int(legal[rng.integers(len(legal))]))
    return state


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
    state = random_position(args.seed, args.plies)
    if args.out is None:
        print(render_ansi(state))
        return
    from PIL import Image

    try:
        picture = render_rgb(state, cell_px=args.cell_px)
    except ValueError as exc:
        parser.error(str(exc))
    Image.fromarray(picture).save(args.out)
    print(f"wrote {args.out} ({picture.shape[1]}x{picture.shape[0]}), ply {state.ply}")


if __name__ == "__main__":
    main()


__all__ = ["HumanViewer", "main", "random_position", "render_ansi", "render_rgb"]
