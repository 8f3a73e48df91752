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


# --- replays: the last move, colony tags, legend and the result in words (issue 12) -----------
def _greedy_game(seed: int) -> list[tuple[ce.GameState, int]]:
    from colony_env.agents import GreedyAgent

    rng, agent, s, history = np.random.default_rng(seed), GreedyAgent(), ce.new_game(seed), []
    while not s.is_over:
        a = int(agent.act(s, rng))
        history.append((s, a))
        s = ce.apply_action(s, a)
    history.append((s, -1))
    return history


def _pixels(img: np.ndarray, rgb: tuple[int, int, int], r: int, c: int) -> int:
    """How many pixels of colour rgb lie in cell (r, c) of the board."""
    y0, x0 = render.TOP_PX + render.MARGIN_PX + r * render.CELL_PX, render.MARGIN_PX + c * render.CELL_PX
    return int(np.all(img[y0 : y0 + render.CELL_PX, x0 : x0 + render.CELL_PX] == rgb, axis=2).sum())


def test_rgb_marks_the_last_move_from_and_to() -> None:
    before = ce.new_game(0)
    a = ce.parse_action("c10-c7", before)
    after = ce.apply_action(before, a)
    plain, marked = render.render_rgb(after), render.render_rgb(after, last_move=(before, a))
    assert plain.shape == marked.shape
    for r in (0, 1, 2, 3):  # c10 (left, dashed ring in red) .. c7 (reached): the arrow's cells
        assert _pixels(marked, render.MOVE_RGB, r, 2) > 0 and _pixels(plain, render.MOVE_RGB, r, 2) == 0
    assert _pixels(marked, render.RED_RGB, 0, 2) > 0 and _pixels(plain, render.RED_RGB, 0, 2) == 0  # c10 is empty now
    assert _pixels(marked, render.MOVE_RGB, 4, 2) == 0  # nothing beyond the target


def test_rgb_marks_the_pushed_satellite_of_a_displacement() -> None:
    s = pos(
        """
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . r1 . . .
        . . . . . r2 b3 . . .
        . . r4 . . . b1 . . .
        """
    )
    a = ce.parse_action("c4-g4>h3", s)
    img = render.render_rgb(ce.apply_action(s, a), last_move=(s, a))
    assert _pixels(img, render.MOVE_RGB, 6, 4) > 0  # the move's arrow crosses e4
    assert _pixels(img, render.MOVE_RGB, 7, 7) > 0  # the push arrow reaches h3
    assert _pixels(img, render.MOVE_RGB, 7, 5) == 0


def test_rgb_tags_each_colony_and_draws_a_legend() -> None:
    img = render.render_rgb(CROWNED)
    assert _pixels(img, render.RED_RGB, 0, 0) > 0 and _pixels(img, render.BLUE_RGB, 4, 5) > 0
    below = img[render.TOP_PX + 2 * render.MARGIN_PX + 10 * render.CELL_PX :]
    assert np.any(np.all(below == render.MOVE_RGB, axis=2))  # the legend's arrow, even without a move
    assert np.any(np.all(below == render.GOLD, axis=2))  # its crown and bolt
    tie = pos("r1 b2 r1")  # equal totals: the tag is grey
    assert _pixels(render.render_rgb(tie), render.NOBODY_RGB, 0, 0) > 0


def test_describe_result_in_words() -> None:
    assert render.describe_result(pos("r1 b3 r1", passes=2)) == (
        "blue wins: 1 colony to 0; the game ended after two passes in a row")
    assert render.describe_result(pos("r1 b3 r1", ply=50, max_plies=50)).endswith(
        "the game was stopped at the ply limit (50 plies)")
    tiebreak = pos(
        """
        . . . . . . . . . .
        . r2 b1 r2 . . b2 r1 b3 .
        . . . . . . . . . .
        . . . . . . . . . .
        . . r1 b2 r1 . . . . .
        """,
        passes=2,
    )
    assert render.describe_result(tiebreak).startswith(
        "red wins on the tiebreak: 1 colony each, red alone controls one of the lowest total (5)")
    assert render.describe_result(pos("r1 b2 r1", passes=2)).startswith("draw: no colony is controlled")
    grace = _greedy_game(2)[-1][0]
    assert grace.end_reason == "grace" and render.describe_result(grace).endswith(
        f"the game ended after {grace.finished.opponent}'s third grace move")
    full = _greedy_game(0)[-1][0]
    assert full.end_reason == "connected23" and f"when {sum(ce.connected_counts(full))} satellites were connected" in (
        render.describe_result(full))
    with pytest.raises(ValueError, match="finished game"):
        render.describe_result(ce.new_game(0))


def test_final_frame_caption_fits() -> None:
    history = _greedy_game(2)
    final, (before, a) = history[-1][0], history[-2]
    img = render.render_rgb(final, last_move=(before, a), caption="x" * 400)  # shrinks, never fails
    assert img.shape == render.render_rgb(final).shape
