"""`colony_env._rng.integers` draws exactly what NumPy's `Generator.integers(n)` draws (the
Gymnasium vector env's random opponent relies on it to match the single env)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
from numba import njit

from colony_env import _rng
from colony_env.gym_vector import ColonyGymVectorEnv


@njit
def _draw_all(ptrs: np.ndarray, ns: np.ndarray, out: np.ndarray) -> None:
    for i in range(ns.shape[0]):
        out[i] = _rng.integers(ptrs[i % ptrs.shape[0]], ns[i])


def test_draws_and_generator_states_match_numpy() -> None:
    ours = [np.random.default_rng(seed) for seed in range(7)]
    numpy_side = [np.random.default_rng(seed) for seed in range(7)]
    ptrs = np.array([_rng.pointers(g) for g in ours], np.uintp)
    src = np.random.default_rng(123)
    # n == 1 draws nothing; small and large n; n near powers of two, where rejection is likeliest.
    large = [2**31 - 1, 2**31 + 1, 3 * 2**30, _rng.MAX_N] * 5
    ns = np.concatenate([np.ones(20, np.int64), src.integers(1, 4000, 3000), large])
    out = np.empty(len(ns), np.int64)
    _draw_all(ptrs, ns, out)
    expected = [numpy_side[i % 7].integers(int(n)) for i, n in enumerate(ns)]
    assert out.tolist() == expected
    # Both sides' generators were left in the same state (including the buffered half of a 64-bit draw).
    assert [g.integers(2**40) for g in ours] == [g.integers(2**40) for g in numpy_side]
    assert [g.bit_generator.state for g in ours] == [g.bit_generator.state for g in numpy_side]


def test_vector_env_copies_rebuild_their_generator_pointers() -> None:
    """A copy steps its own generators (the pointers are addresses of the original's)."""
    envs = ColonyGymVectorEnv(3, opponent="random", learner_colour="blue")
    envs.reset(seed=4)
    envs.step(envs.random_actions(np.random.default_rng(0)))
    before = [g.bit_generator.state for g in envs._rngs]
    for clone in (copy.deepcopy(envs), pickle.loads(pickle.dumps(envs))):
        clone.step(clone.random_actions(np.random.default_rng(1)))
        assert [g.bit_generator.state for g in envs._rngs] == before
        assert [g.bit_generator.state for g in clone._rngs] != before
