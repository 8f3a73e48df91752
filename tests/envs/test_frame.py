"""The mover's frame (`colony_env.frame`): legal ids, planes and buffers in one home (R4.3, R8)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from helpers import random_game

import colony_env as ce
from colony_env import frame, symmetry
from colony_env.constants import PASS_ACTION
from colony_env.observation import OBS_SHAPE, encode_observation

PACKAGE = Path(ce.__file__).resolve().parent


def _positions() -> list[ce.GameState]:
    """Every position of a few random games, each game's last (over) included."""
    return [s for seed in (0, 1, 2) for s in random_game(seed)]


def _planes(s: ce.GameState, colour: ce.Colour, transposed: bool) -> np.ndarray:
    planes = encode_observation(s, colour, canonical=False)
    return symmetry.transform_planes(planes, symmetry.TRANSPOSE) if transposed else planes


def test_legal_ids_in_both_frames_equal_the_engines() -> None:
    ids = np.zeros(frame.MAX_LEGAL, np.int16)
    for s in _positions():
        board = ce.legal_actions(s)
        for transposed in (False, True):
            n = frame.legal_into(s.to_array(), transposed, ids)
            expected = symmetry.ACTION_MAP[symmetry.TRANSPOSE][board] if transposed else board
            np.testing.assert_array_equal(ids[:n], expected)  # the engine's order, mapped
        n = frame.mover_legal_into(s.to_array(), ids)
        np.testing.assert_array_equal(ids[:n], symmetry.board_action_to_canonical(board, s.to_move))
    assert _positions()[-1].is_over and frame.legal_into(_positions()[-1].to_array(), False, ids) == 0


def test_forced_pass_is_listed_alone() -> None:
    """R4.3: with no other legal action, pass is the one id, in every frame."""
    forced = next(s for seed in range(60) for s in random_game(seed) if ce.legal_actions(s).tolist() == [PASS_ACTION])
    ids = np.zeros(frame.MAX_LEGAL, np.int16)
    for transposed in (False, True):
        assert frame.legal_into(forced.to_array(), transposed, ids) == 1 and ids[0] == PASS_ACTION


def test_observe_into_writes_the_planes_and_the_ids_of_one_pass() -> None:
    planes = np.zeros(OBS_SHAPE, np.float32)
    ids = np.zeros(frame.MAX_LEGAL, np.int16)
    for s in _positions()[::7]:
        for colour in ce.Colour:
            for transposed in (False, True):
                n = frame.observe_into(s.to_array(), int(colour), transposed, planes, ids, True)
                np.testing.assert_array_equal(planes, _planes(s, colour, transposed))
                mine = not s.is_over and s.to_move == colour
                expected = ce.legal_actions(s) if mine else np.zeros(0, np.int64)
                if transposed:
                    expected = symmetry.ACTION_MAP[symmetry.TRANSPOSE][expected]
                np.testing.assert_array_equal(ids[:n], expected)
                assert frame.observe_into(s.to_array(), int(colour), transposed, planes, ids, False) == 0


def test_observe_mover_is_the_canonical_view_of_the_colour_to_move() -> None:
    planes = np.zeros(OBS_SHAPE, np.float32)
    ids = np.zeros(frame.MAX_LEGAL, np.int16)
    for s in _positions()[::5]:
        if s.is_over:
            continue
        n = frame.observe_mover(s.to_array(), planes, ids)
        np.testing.assert_array_equal(planes, encode_observation(s, s.to_move, canonical=True))
        np.testing.assert_array_equal(ids[:n], symmetry.board_action_to_canonical(ce.legal_actions(s), s.to_move))


def test_set_bits_sets_and_clears_only_the_listed_ids() -> None:
    row = np.zeros(16001, np.bool_)
    ids = np.array([5, 16000, 3, 0], np.int16)
    frame.set_bits(row, ids, 3, True)
    assert np.flatnonzero(row).tolist() == [3, 5, 16000]
    frame.set_bits(row, ids, 2, False)
    assert np.flatnonzero(row).tolist() == [3]


def test_buffer_pool_recycles_only_what_the_caller_let_go_of() -> None:
    made = []

    def make() -> tuple[np.ndarray, np.ndarray]:
        made.append(1)
        return np.zeros(4), np.zeros(2)

    pool = frame.BufferPool(make, watched=(0,), size=2)
    (a, extra), recycled = pool.take()
    assert not recycled
    (b, _), recycled = pool.take()  # `a` is still held: a second set
    assert not recycled and b is not a
    (c, _), recycled = pool.take()  # both held and the pool is full: a set that is not kept
    assert not recycled and len(made) == 3
    del c
    view = a[1:]
    del a
    (d, _), recycled = pool.take()  # a view of the first set keeps it in use; the second is held by `b`
    assert not recycled and len(made) == 4
    del view, d
    (e, _), recycled = pool.take()
    assert recycled and len(made) == 4  # the first set again
    del e, extra  # an unwatched array of a set does not keep it in use
    (f, _), recycled = pool.take()
    assert recycled


def _calls_of(module: Path, names: set[str]) -> set[str]:
    tree = ast.parse(module.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in names:
            found.add(node.id)
    return found


def test_the_frame_has_one_home() -> None:
    """Issue 29: the legal generator is called outside the engine's kernels by the frame's home
    at most, and only the frame's home counts references for a buffer pool."""
    generators, pools = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != "_core.py" and _calls_of(path, {"_generate", "_generate_given"}):
            generators.append(rel)
        if "getrefcount" in path.read_text():
            pools.append(rel)
    assert generators == [], generators  # frame.py goes through _core.legal_into / legal_given
    assert pools == ["frame.py"], pools


@pytest.mark.parametrize("num_envs", [1, 3])
def test_vector_env_reuses_its_buffers_once_released(num_envs: int) -> None:
    from colony_env.vector import ColonyVectorEnv

    address = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    venv = ColonyVectorEnv(num_envs, seed=0)
    vo = venv.reset()
    first = address(vo.obs)
    rng = np.random.default_rng(0)
    kept = venv.step(venv.random_actions(rng))[0]  # `vo` is held: a new buffer
    assert address(kept.obs) != first
    del vo
    again = venv.step(venv.random_actions(rng))[0]  # `vo` was let go of: its buffer again
    assert address(again.obs) == first and address(kept.obs) != first
    for i in range(num_envs):
        np.testing.assert_array_equal(again.mask[i], symmetry.canonical_mask(ce.legal_action_mask(venv.state(i)), venv.state(i).to_move))
