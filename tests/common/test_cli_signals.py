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


_SEARCHING = r"""
import sys
from colony_env.agents import mcts
from colony_training.eval import evaluate

real = mcts.MCTSAgent.act
def act(self, state, rng):
    print("searching", file=sys.stderr, flush=True)
    return real(self, state, rng)
mcts.MCTSAgent.act = act
sys.exit(evaluate.main(sys.argv[1:]))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_compiled_search_ends_the_tool_with_its_one_line(tmp_path, signum) -> None:
    """Ctrl-C or SIGTERM while a numba kernel searches in the tool's own process (one worker): the tool
    ends through its interrupt handling. Raised inside numba's callback while the kernel's arrays were
    handed back, the KeyboardInterrupt crashed the process (a segmentation fault)."""
    import subprocess
    import sys

    out = tmp_path / "out"
    argv = ["mcts:20000", "random", "--games", "2", "--workers", "1", "--no-progress", "--out", str(out)]
    # as from a terminal: a shell starts background jobs (CI under `nohup ... &`, say) with SIGINT ignored,
    # and a tool keeps an ignored SIGINT ignored (training/cli.py)
    proc = subprocess.Popen([sys.executable, "-c", _SEARCHING, *argv], stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    assert proc.stderr.readline().strip() == "searching"
    time.sleep(0.5)  # inside the kernel: one move of mcts:20000 takes seconds
    os.kill(proc.pid, signum)
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == (f"colony-eval: interrupted; 0 of 2 games are saved in {out}; "
                                             f"continue with `colony-eval --resume {out}`")


def test_a_tool_out_of_memory_says_so_in_one_line(capsys) -> None:
    """MemoryError (a search bigger than the machine, raised in the tool or re-raised from a worker) ends the
    tool with status 2 and one line on stderr, as every refused run does, not a traceback."""

    @console_script
    def tool() -> int:
        raise MemoryError("Allocation failed (probably too large).")

    assert tool() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ": error: out of memory; ask for less at once" in err
    assert "Traceback" not in err
