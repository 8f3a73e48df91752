"""A few worker processes that think for the server, each job under a time limit.

Agents search in compiled code that holds the GIL, and a checkpoint pulls in torch; in
the server process either would freeze every other tab. So the server hands each job
(`worker.JOBS`: an agent's move, an analysis) to an idle worker process and awaits the
answer without blocking its event loop. A job past the time limit gets its worker
ended and replaced, and the caller a `ThinkTimeout`; a worker that dies (out of memory,
a crash in native code) is replaced too, and the caller gets a `WorkerCrashed`.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import signal
import time
from multiprocessing.connection import Connection
from typing import Any

START_METHOD = "spawn"  # the server runs threads (uvicorn, executors); forking them is unsafe
JOIN_SECONDS = 5.0  # how long an ended worker gets to exit before it is killed
STARTUP_SECONDS = 300.0  # a fresh worker imports numpy, numba kernels (maybe compiling them) before its first job
READY = ("ready", None)
POLL_SLICE = 0.25  # a helper thread waiting on a worker checks this often whether its pipe was closed


class ThinkTimeout(RuntimeError):
    """A job ran past the time limit; its worker was replaced."""


class WorkerCrashed(RuntimeError):
    """A worker process died during a job; it was replaced."""


class ThinkerClosed(RuntimeError):
    """The server is shutting down: the job was stopped, or not started."""


class Stopped(RuntimeError):
    """The caller's `stop` event was set during the job; its worker was replaced."""


class JobFailed(ValueError):
    """The job itself failed (bad spec, unreadable checkpoint, ...); the message is one line."""


def _serve(conn: Connection) -> None:
    """Worker main loop: (name, kwargs) in, ("ok", result) or ("error", message) out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the server, which ends its workers
    from . import worker

    conn.send(READY)  # imports done: job time limits start counting from here
    while True:
        try:
            name, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", worker.JOBS[name](**kwargs)))
        except worker.JobError as e:
            conn.send(("error", str(e)))
        except Exception as e:  # noqa: BLE001  (any failure of an agent: report it in one line, keep serving)
            first = (str(e).strip().splitlines() or [""])[0]
            conn.send(("error", f"{type(e).__name__}: {first[:300]}"))


class _Worker:
    def __init__(self, ctx: Any) -> None:
        self.ready = False
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True, name="colony-web-thinker")
        self.process.start()
        child.close()

    def stop(self) -> None:
        self.conn.close()
        self.process.terminate()
        self.process.join(JOIN_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _wait(conn: Connection, timeout: float) -> tuple[str, Any] | None:
    """The worker's answer, or None when `timeout` seconds pass first (runs in a helper thread).

    It waits in slices of POLL_SLICE seconds, so that once the worker is stopped (`_Worker.stop`
    closes the pipe) the thread ends within a slice with an OSError: a thread still blocked in
    one long poll would hold up the server's exit, which waits for its executor's threads.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if conn.poll(min(left, POLL_SLICE)):  # OSError once the pipe is closed
            return conn.recv()


class Thinker:
    """`await thinker.run(name, **kwargs)` runs a `worker.JOBS` function in a worker process."""

    def __init__(self, workers: int, time_limit: float) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if not time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds, got {time_limit}")
        self.time_limit = float(time_limit)
        self._ctx = mp.get_context(START_METHOD)
        self._workers = [_Worker(self._ctx) for _ in range(workers)]
        self._idle: asyncio.Queue[_Worker] | None = None
        self.closing = False

    def _queue(self) -> asyncio.Queue:
        if self._idle is None:  # made in the running loop, on first use
            self._idle = asyncio.Queue()
            for w in self._workers:
                self._idle.put_nowait(w)
        return self._idle

    def _replace(self, old: _Worker) -> _Worker:
        old.stop()
        if self.closing:  # the server is going away: no new process (`close` stops the stopped one again, harmlessly)
            return old
        new = _Worker(self._ctx)
        self._workers[self._workers.index(old)] = new
        return new

    async def run(self, name: str, time_limit: float | None = None, stop: asyncio.Event | None = None,
                  **kwargs: Any) -> Any:
        """The job's result; `stop` set during the job ends it (its worker is replaced) with `Stopped`."""
        limit = self.time_limit if time_limit is None else time_limit
        if self.closing:
            raise ThinkerClosed("the server is shutting down")
        idle = self._queue()
        worker = await idle.get()
        if self.closing:  # the server began to shut down while this job waited for a worker
            idle.put_nowait(worker)
            raise ThinkerClosed("the server is shutting down")
        loop = asyncio.get_running_loop()
        try:
            try:
                if not worker.ready:
                    if await loop.run_in_executor(None, _wait, worker.conn, STARTUP_SECONDS) != READY:
                        raise OSError("the thinking process did not start")
                    worker.ready = True
                worker.conn.send((name, kwargs))
                waiting = loop.run_in_executor(None, _wait, worker.conn, limit)
                if stop is None:
                    answer = await waiting
                else:
                    stopping = asyncio.ensure_future(stop.wait())
                    await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    stopping.cancel()
                    if not waiting.done():
                        # the helper thread's wait fails once the pipe closes: take that failure here, unlogged
                        waiting.add_done_callback(lambda f: f.cancelled() or f.exception())
                        worker = self._replace(worker)
                        raise Stopped("stopped by the player")
                    answer = waiting.result()
            except asyncio.CancelledError:  # the request went away: the busy worker's late answer must not leak
                worker = self._replace(worker)
                raise
            except (EOFError, OSError):
                if self.closing:  # `interrupt` ended it: no replacement, the server is going away
                    raise ThinkerClosed("the server is shutting down; the search was stopped") from None
                worker = self._replace(worker)
                raise WorkerCrashed("the thinking process died during the job; it was restarted") from None
            if answer is None:
                worker = self._replace(worker)
                raise ThinkTimeout(f"no answer within the time limit of {limit:g} s; the search was stopped")
        finally:
            idle.put_nowait(worker)
        status, value = answer
        if status == "error":
            raise JobFailed(value)
        return value

    def interrupt(self) -> None:
        """Stop every job now, as the server begins to shut down (safe in a signal handler: it only
        sends SIGTERM): their requests end at once with `ThinkerClosed` instead of being cancelled."""
        self.closing = True
        for w in self._workers:
            if w.process.is_alive():
                w.process.terminate()

    def close(self) -> None:
        for w in self._workers:
            w.stop()
