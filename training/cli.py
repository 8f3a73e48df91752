"""What every command-line tool of `training` shares at its edge with the shell."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE, what `head`-truncated Unix tools report


def quiet_broken_pipe(main: Callable[..., int]) -> Callable[..., int]:
    """`main` whose reader went away (`colony-eval ... | head`) ends with status 141, not a traceback.

    Python ignores SIGPIPE, so the next print raises BrokenPipeError; the tools write their
    result files before printing their tables, so nothing is lost by stopping there.
    """

    @functools.wraps(main)
    def wrapper(*args: object, **kwargs: object) -> int:
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the interpreter flushes stdout at exit: not into the closed pipe
            return BROKEN_PIPE_STATUS

    return wrapper
