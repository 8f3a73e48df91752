"""The console scripts' SIGTERM contract at the process edge (`colony_training.cli`)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from colony_training.cli import console_script


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a worker as a fork-context pool does")
def test_a_forked_worker_blocked_on_a_lock_ends_on_sigterm_whatever_thread_gets_it() -> None:
    """A tool's forked worker ends at once on SIGTERM, even with its main thread blocked in a lock and a
    second thread running: `Pool.terminate` waits for each worker, and a Python handler that only the
    blocked main thread could run would keep it waiting for ever (the hang seen in colony-eval)."""
    seen: dict[str, object] = {}

    @console_script
    def tool() -> int:
        seen["tool"] = signal.getsignal(signal.SIGTERM)
        pid = os.fork()
        if pid == 0:  # the worker: the handler is the default again, then it blocks as a pool worker waits
            code = 0 if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else 3
            if code:
                os._exit(code)
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
            lock = threading.Lock()
            lock.acquire()
            lock.acquire(timeout=30)  # blocked in the C lock, as SemLock.acquire is
            os._exit(4)  # not ended by the signal
        time.sleep(0.3)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                seen["status"] = status
                return 0
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        seen["status"] = "hung"
        return 0

    assert tool() == 0
    assert seen["tool"] not in (signal.SIG_DFL, None)  # the tool itself turns SIGTERM into KeyboardInterrupt
    status = seen["status"]
    assert status != "hung", "the forked worker did not end within 10 s of SIGTERM"
    assert isinstance(status, int) and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status
