"""What every command-line tool of `training` shares at its edge with the shell."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from colony_env._jit_cache import COMMAND_ENV, begin_command, end_command

BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE, what `head`-truncated Unix tools report
INTERRUPTED_STATUS = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


def console_script(main: Callable[..., int]) -> Callable[..., int]:
    """`main` as a console script: quiet on a closed pipe, and stopped by SIGTERM as by Ctrl-C.

    - A reader that went away (`colony-eval ... | head`) ends the tool with status 141, not a
      traceback. Python ignores SIGPIPE, so the next print raises BrokenPipeError; the tools write
      their result files before printing their tables, so nothing is lost by stopping there.
    - SIGTERM (`kill`, `timeout`, a batch scheduler) raises KeyboardInterrupt, so the tool ends
      through its own interrupt handling: one line, its worker processes stopped. Python's default
      would end the main process at once and leave its workers playing on, orphaned.
    - MemoryError (a search asked for more than the machine holds) is one line and status 2.
    - SIGINT (Ctrl-C) and SIGTERM that arrive while a compiled kernel runs raise KeyboardInterrupt
      only once the kernel has handed its result back (`_interrupt`): raised inside numba's
      callback, it crashed the process.
    """

    @functools.wraps(main)
    def wrapper(*args: object, **kwargs: object) -> int:
        in_main_thread = threading.current_thread() is threading.main_thread()
        handler = functools.partial(_interrupt, os.getpid())
        previous = signal.signal(signal.SIGTERM, handler) if in_main_thread else None
        # Ctrl-C too, unless the shell started the tool with SIGINT ignored (a background job)
        catch_int = in_main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if catch_int:
            signal.signal(signal.SIGINT, handler)
        owns_command = COMMAND_ENV not in os.environ  # a tool run by another tool's process shares its id
        command = begin_command()
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the interpreter flushes stdout at exit: not into the closed pipe
            return BROKEN_PIPE_STATUS
        except KeyboardInterrupt:  # a tool without interrupt handling of its own
            print(f"\n{_prog(main)}: interrupted", file=sys.stderr)
            return INTERRUPTED_STATUS
        except MemoryError:  # in the tool or re-raised from a worker: one line, not a traceback
            return report_error(_prog(main), "out of memory; ask for less at once (fewer simulations, "
                                             "fewer games side by side with --batch, or fewer --workers)")
        finally:
            if in_main_thread:
                signal.signal(signal.SIGTERM, previous)
            if catch_int:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            if owns_command:
                end_command(command)
                os.environ.pop(COMMAND_ENV, None)

    return wrapper


LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines (and a terminal) breaks a line at
_ESCAPE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in LINE_BREAKS})


def one_line(message: str) -> str:
    """`message` with every line break escaped (`\\n`, `\\x1e`, ...): text quoted from a user's file
    or option may hold them, and an error must stay one line."""
    return message.translate(_ESCAPE_BREAKS)


def report_error(prog: str, message: str) -> int:
    """Say `prog: error: message` on stderr, one line (`one_line`), and return the exit status of a refused run (2)."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return 2


def extra_hint(extra: str) -> str:
    """The install command of an optional extra, as it works for an installed package (not a clone)."""
    return f'pip install "colony-rl[{extra}]"'


def missing_extra(prog: str, extra: str, error: ImportError) -> int:
    """Say in one line that `prog` needs the optional `extra` and how to get it; exit status 2."""
    missing = getattr(error, "name", None) or str(error).split("'")[1 if "'" in str(error) else 0]
    print(f"{prog}: error: this command needs the '{extra}' extra ({missing} is not installed): {extra_hint(extra)}",
          file=sys.stderr)
    return 2


def _prog(main: Callable[..., int]) -> str:
    """The tool's name as it was started: `colony-eval`, or the module of `python -m ...`."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") else main.__module__


def _interrupt(owner: int, signum: int, frame: FrameType | None) -> None:
    """KeyboardInterrupt in the tool's own process; a forked worker, which inherits the handler, is
    ended by SIGTERM as usual (that is how its pool terminates it).

    A signal that arrives while a numba kernel runs is handled at the first Python code that runs
    next, and when the kernel returns an array that code is numba's own `_numba_unpickle` (it fetches
    the array's dtype while the result is being boxed). An exception raised there leaves numba
    without the dtype: the process died with a segmentation fault or a SystemError traceback (numba
    issue #2324). So there the interrupt waits for the first Python event outside that callback.
    """
    if os.getpid() != owner and signum == signal.SIGTERM:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    if _in_compiled_callback(frame):
        _interrupt_after_callback()
        return
    raise KeyboardInterrupt


def _in_compiled_callback(frame: FrameType | None) -> bool:
    """Whether `frame` runs inside numba's runtime callback from compiled code (see `_interrupt`)."""
    while frame is not None:
        if frame.f_code.co_name == "_numba_unpickle":
            return True
        frame = frame.f_back
    return False


def _interrupt_after_callback() -> None:
    """Raise KeyboardInterrupt at the first profiling event (a call or return, in Python or C) of this
    thread outside numba's callback: right after the kernel's result is handed back."""
    previous = sys.getprofile()

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if _in_compiled_callback(frame):
            return
        sys.setprofile(previous)
        raise KeyboardInterrupt

    sys.setprofile(hook)


def _default_sigterm_after_fork() -> None:
    """In a forked child, put SIGTERM back to the default (end at once) if the tool's handler is set.

    A Python handler runs only in the main thread, and only once that thread runs Python code again:
    a pool worker blocked on its task queue's lock, with a second thread of a numerical library
    that the kernel hands the signal to, would never run it, and `Pool.terminate` would wait for
    that worker forever (seen in colony-eval's SIGTERM test under load).
    """
    handler = signal.getsignal(signal.SIGTERM)
    if isinstance(handler, functools.partial) and handler.func is _interrupt:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_sigterm_after_fork)


def terminate_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Stop a process pool now, tasks in flight included (an interrupted run replays them on resume).

    `shutdown(cancel_futures=True)` only drops queued tasks and then waits for the running ones,
    which can be minutes of self-play for a run that was asked to stop.
    """
    for process in list((getattr(pool, "_processes", None) or {}).values()):  # Python 3.14: pool.terminate_workers()
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)
