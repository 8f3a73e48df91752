"""`Generator.integers(n)` from many NumPy generators in compiled code, draw for draw the same.

The Gymnasium vector env keeps one generator per slot (as `SyncVectorEnv` keeps one per
env), and its random opponent draws `rng.integers(#legal)` from the slot's generator on
every move, as `RandomAgent.act` does. Through NumPy each draw costs about 1.4 us, more
than the compiled move itself. Here a kernel calls each generator's own `next_uint32`
through the C pointers NumPy publishes for this (`BitGenerator.ctypes`, NumPy's documented
way to use its bit generators from Numba) and applies NumPy's algorithm for `integers(n)`
(int64 result, 1 <= n < 2**32: no draw when n == 1, else Lemire's multiply-and-reject on
32-bit draws; `random_bounded_uint64_fill` in NumPy's `distributions.c`). The generators
advance exactly as if NumPy had drawn; the tests compare the draws with NumPy's own.

The pointers are addresses in this process, valid while the generators live: the caller
keeps the generators, and rebuilds the pointers after a copy or unpickling.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

FN, STATE = 0, 1  # columns of a pointer row: next_uint32's address, the generator state's address
MAX_N = 2**32 - 1  # largest n the 32-bit path of NumPy's algorithm covers (ours are < MAX_LEGAL)
_LOW32 = np.uint64(0xFFFFFFFF)


def pointers(rng: np.random.Generator) -> tuple[int, int]:
    """(next_uint32 address, state address) of `rng`'s bit generator, a row for `integers`."""
    c = rng.bit_generator.ctypes
    return ctypes.cast(c.next_uint32, ctypes.c_void_p).value, c.state_address


@intrinsic
def _next_uint32(typingctx: Any, fn: types.Type, state: types.Type) -> tuple[Any, Any]:
    """Call `uint32 next_uint32(void *state)` at address `fn` (a bit generator's C function)."""
    sig = types.uint32(types.uintp, types.uintp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        byte_ptr = ir.IntType(8).as_pointer()
        fn_type = ir.FunctionType(ir.IntType(32), [byte_ptr])
        return builder.call(builder.inttoptr(args[0], fn_type.as_pointer()), [builder.inttoptr(args[1], byte_ptr)])

    return sig, codegen


@njit(cache=True, inline="always")
def integers(ptrs: np.ndarray, n: int) -> int:
    """`Generator.integers(n)` for 1 <= n <= MAX_N from the generator whose `pointers` row is `ptrs`."""
    rng = np.uint64(n - 1)  # NumPy draws in [0, rng]
    if rng == 0:
        return 0  # NumPy returns the only value without drawing
    excl = rng + np.uint64(1)
    m = np.uint64(_next_uint32(ptrs[FN], ptrs[STATE])) * excl
    leftover = m & _LOW32
    if leftover < excl:  # rejection, to remove the bias of m >> 32
        threshold = (_LOW32 - rng) % excl
        while leftover < threshold:
            m = np.uint64(_next_uint32(ptrs[FN], ptrs[STATE])) * excl
            leftover = m & _LOW32
    return np.int64(m >> np.uint64(32))


__all__ = ["MAX_N", "integers", "pointers"]
