"""Rendering: the text board and the RGB picture show what the engine says (R1.2, R3, R6.3, R7.1)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

import colony_env as ce
from colony_env import render
from colony_env.constants import FILES
from helpers import pos

matplotlib.use("Agg")

CROWNED = pos(
    """
    r4 b1 r1 . . . . . . .
    b1 . b2 . . . . . . .
    r1 . . . . . . . . .
    . . . . . . . . . .
    . . . . . b4 r1 b3 . .
    . . . . . r2 . r3 . .
    . . . . . . . . . .
    . . . . b2 . . . . .
    """,
    to_move="blue",
)


def _grace_state() -> ce.GameState:
    """The first position of a seeded random game in which a colour is finished (R6.3)."""
    rng = np.random.default_rng(0)
    for seed in range(40):
        s = ce.new_game(seed)
        while not s.is_over:
            if s.finished is not None:
                return s
            legal = ce.legal_actions(s)
            s = ce.apply_action(s, int(legal[rng.integers(len(legal))]))
    raise AssertionError("no grace phase in 40 random games")


def test_ansi_shows_coordinates_satellites_colonies_and_status() -> None:
    text = render.render_ansi(CROWNED, color=False)
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert all(f in lines[0] for f in FILES)  # R1.2 files
    ranks = [int(m.group(1)) for ln in lines if (m := re.match(r"\s*(\d+) ", ln))]
    assert ranks == list(range(10, 0, -1))
    tokens = re.findall(r"\b([rRbB][1-4])([A-Z ]?)", "\n".join(lines[2:12]))
    assert len(tokens) == int(np.count_nonzero(CROWNED.board))
    connected = ce.connected_mask(CROWNED)
    assert sum(t[0][0].isupper() for t in tokens) == int(connected.sum())  # R3.1 marked
    assert "colony A: 6 satellites, red 6 vs blue 4 -> red" in text and render.CROWN in text  # R3.4, R7.1
    assert "colony B: 5 satellites, red 6 vs blue 7 -> blue" in text
    assert "blue (player_1) to move" in text and "connections unlocked" in text
    assert "colonies controlled: red 1, blue 1" in text


def test_ansi_colours_and_grace_indicator() -> None:
    coloured = render.render_ansi(CROWNED)
    assert "\x1b[31m" in coloured and "\x1b[34m" in coloured
    s = _grace_state()
    text = render.render_ansi(s, color=False)
    grace = s.finished.opponent
    assert f"{s.finished} finished; {grace} grace moves" in text
    assert render.LIGHTNING * s.grace_left in text


def test_ansi_game_over_and_locked() -> None:
    assert "locked (no edge has been empty yet)" in render.render_ansi(ce.new_game(0), color=False)
    over = pos("r1 b3 r1", passes=2)
    assert "game over (passes): blue (player_1) wins" in render.render_ansi(over, color=False)


def _cell_centre(r: int, c: int, cell: int = render.CELL_PX) -> tuple[int, int]:
    margin, top = render.MARGIN_PX, render.TOP_PX
    return top + margin + r * cell + cell // 2, margin + c * cell + cell // 2


def test_rgb_picture_colours() -> None:
    img = render.render_rgb(CROWNED)
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    side = 10 * render.CELL_PX + 2 * render.MARGIN_PX
    assert img.shape == (side + render.TOP_PX + render.BOTTOM_PX, side, 3)
    off = int(render.CELL_PX * 0.2)  # left of the value written on the disc
    y, x = _cell_centre(0, 0)
    assert tuple(img[y, x - off]) == render.RED_RGB  # r4 on a10
    y, x = _cell_centre(0, 1)
    assert tuple(img[y, x - off]) == render.BLUE_RGB
    corner = lambda r, c: tuple(img[_cell_centre(r, c)[0] - render.CELL_PX // 2 + 3, _cell_centre(r, c)[1] - render.CELL_PX // 2 + 3])  # noqa: E731
    assert corner(1, 1) in (render.BOARD_LIGHT, render.BOARD_DARK)  # empty, not in a colony
    assert corner(0, 0) == render.RED_TINT  # colony controlled by red (R7.1)
    assert corner(4, 5) == render.BLUE_TINT
    assert corner(7, 4) in (render.BOARD_LIGHT, render.BOARD_DARK)  # a lone satellite
    assert np.any(np.all(img == render.GOLD, axis=2))  # the crown of the colony of 6


def _lit_bolt_pixels(s: ce.GameState) -> int:
    img = render.render_rgb(s)
    return int(np.all(img[: render.TOP_PX] == render.GOLD, axis=2).sum())


def test_rgb_grace_indicator_counts_down() -> None:
    s = _grace_state()
    assert s.grace_left == 3
    assert _lit_bolt_pixels(ce.new_game(0)) == 0
    full = _lit_bolt_pixels(s)
    one_left = _lit_bolt_pixels(ce.GameState.from_dict({**s.to_dict(), "grace_left": 1}))
    assert full > 0 and abs(full - 3 * one_left) <= 0.1 * full


def test_rgb_scales_and_rejects_tiny_cells() -> None:
    assert render.render_rgb(CROWNED, cell_px=28).shape[1] < render.render_rgb(CROWNED).shape[1]
    with pytest.raises(ValueError, match="cell_px"):
        render.render_rgb(CROWNED, cell_px=4)


def test_human_viewer_draws_headless() -> None:
    viewer = render.HumanViewer(fps=1000)
    viewer.show(CROWNED)
    viewer.show(ce.new_game(1))
    drawn = np.asarray(viewer.fig.canvas.buffer_rgba())
    assert drawn.shape[2] == 4 and drawn[..., :3].std() > 0
    viewer.close()


def test_render_cli(tmp_path, capsys) -> None:
    out = tmp_path / "pos.png"
    render.main(["--seed", "2", "--plies", "20", "--out", str(out)])
    from PIL import Image

    with Image.open(out) as picture:
        assert picture.size == (render.render_rgb(render.random_position(2, 20)).shape[1], render.render_rgb(render.random_position(2, 20)).shape[0])
    assert "ply 20" in capsys.readouterr().out
    render.main(["--seed", "2", "--plies", "20"])
    assert "to move" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        render.main(["--plies", "-1"])
    with pytest.raises(SystemExit):
        render.main(["--cell-px", "3", "--out", str(out)])
    assert "cell_px" in capsys.readouterr().err
