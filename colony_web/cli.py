"""Command line of `colony-web`: options, checks, then uvicorn serving the app."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import errno
import ipaddress
import multiprocessing as mp
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from colony_training.cli import INTERRUPTED_STATUS, console_script, missing_extra, report_error
from colony_training.runlog import output_dir_problem

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_CHECKPOINT_DIR = Path("checkpoints")
LOOPBACK_NAMES = ("localhost",)
MAX_WORKERS = 64
SHUTDOWN_SECONDS = 3  # a request still waiting on a search when the server is stopped is cancelled after this


class CliError(ValueError):
    """A bad option; printed as one line."""


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach a server bound to `host`."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="colony-web",
        description="Play, replay and analyse Colony games in a browser (a local web app on the project's engine and agents).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to bind (default {DEFAULT_HOST}: this machine only; anything else is reachable by others)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--out", type=Path, default=Path("runs") / "web",
                        help="folder for OUT/games.jsonl, the record of each finished game; the app writes nothing else (default runs/web)")
    parser.add_argument("--no-save", action="store_true", help="do not write finished games at all")
    parser.add_argument("--records", type=Path, action="append", default=[], metavar="PATH",
                        help="a games.jsonl record file, or a folder of them, to offer in the Replay tab (repeatable)")
    parser.add_argument("--checkpoint", type=Path, action="append", default=None, metavar="PATH",
                        help="a checkpoint to offer as opponent and analyser (repeatable; default: checkpoints/*.pt)")
    parser.add_argument("--workers", type=int, default=None, help="processes that run agents and analyses (default 2)")
    parser.add_argument("--think-limit", type=float, default=None, metavar="SECONDS",
                        help="time limit of one agent move or analysis; past it the search is stopped (default 120)")
    return parser


def _config(args: argparse.Namespace):
    from .app import WebConfig

    if not 0 < args.port < 65536:
        raise CliError(f"--port must be in 1..65535, got {args.port}")
    for p in args.records:
        if not p.exists():
            raise CliError(f"--records {str(p)!r} does not exist (give a games.jsonl file or a folder of them)")
    checkpoints = args.checkpoint
    if checkpoints is None:
        checkpoints = sorted(DEFAULT_CHECKPOINT_DIR.glob("*.pt")) if DEFAULT_CHECKPOINT_DIR.is_dir() else []
    for p in checkpoints:
        if not p.is_file():
            raise CliError(f"--checkpoint {str(p)!r} is not a file (expected a .pt file written by colony-train)")
    for p, why in zip(checkpoints, check_checkpoints(checkpoints)):
        if why is not None:
            raise CliError(f"--checkpoint: {why}")
    if args.out.exists() and not args.out.is_dir():
        raise CliError(f"--out {str(args.out)!r} exists and is not a folder")
    if not args.no_save and (why := output_dir_problem(args.out)):  # before any game is played, not at its end
        raise CliError(f"--out: {why}; give a folder that can be written, or --no-save")
    config = WebConfig(out_dir=args.out, records=list(args.records), checkpoints=list(checkpoints),
                       save_games=not args.no_save)
    if args.workers is not None:
        if not 1 <= args.workers <= MAX_WORKERS:
            raise CliError(f"--workers must be in 1..{MAX_WORKERS}, got {args.workers}")
        config.workers = args.workers
    if args.think_limit is not None:
        if not args.think_limit > 0:
            raise CliError(f"--think-limit must be > 0 seconds, got {args.think_limit}")
        config.think_limit = args.think_limit
    return config


def check_checkpoints(paths: list[Path]) -> list[str | None]:
    """Load each checkpoint as an agent, as every tool does with a checkpoint spec, in a process of its
    own (torch stays out of the server's process): None for one that loads, else why not."""
    if not paths:
        return []
    from . import worker

    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(worker.check_checkpoints, [str(p) for p in paths]).result()


def bind_problem(host: str, port: int) -> str | None:
    """Why a server cannot listen on `host`:`port` (a name that does not resolve, an address of another
    machine, a port in use), or None. Checked by binding a socket as uvicorn will, so that the reason is
    one line before the server says where to open it, not uvicorn's log line after."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as e:
        return f"--host {host!r} is not an address or a name of this machine ({getattr(e, 'strerror', None) or e})"
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as e:
            hint = "give another --port" if e.errno == errno.EADDRINUSE else f"--host {DEFAULT_HOST} serves this machine"
            return f"cannot listen on {host} port {port}: {e.strerror or e} ({hint})"
    return None


def serve(app: Any, host: str, port: int) -> int | None:
    """Serve `app` until the server is stopped; the signal that stopped it (Ctrl+C, SIGTERM), or None."""
    import uvicorn

    class Server(uvicorn.Server):
        stopped_by: int | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.stopped_by = self.stopped_by or sig
            super().handle_exit(sig, frame)
            colony = getattr(app.state, "colony", None)
            if colony is not None:  # searches in flight end now, so no request is left to cancel
                colony.interrupt()

        @contextlib.contextmanager
        def capture_signals(self):  # uvicorn's, less raising the signal again once it has shut down
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    server = Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                   timeout_graceful_shutdown=SHUTDOWN_SECONDS))
    server.run()
    return server.stopped_by


def _interrupted() -> int:
    print("colony-web: interrupted", file=sys.stderr, flush=True)
    return INTERRUPTED_STATUS


@console_script
def main(argv: list[str] | None = None) -> int:
    """`colony-web`: 0 when the server ends by itself, 2 for a bad option, 130 when stopped (Ctrl+C, SIGTERM)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before or after serving (a SIGTERM while starting is one too)
        return _interrupted()


def _main(argv: list[str] | None) -> int:
    try:  # before the arguments, so that even --help says what is missing
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        return missing_extra("colony-web", "web", e)
    args = build_parser().parse_args(argv)
    try:
        config = _config(args)
    except CliError as e:
        return report_error("colony-web", str(e))
    if why := bind_problem(args.host, args.port):
        return report_error("colony-web", why)
    from .app import create_app

    if not is_loopback(args.host):
        print(f"colony-web: warning: bound to {args.host}, so other machines can reach this server; it has no "
              "login, and its agent specs load any checkpoint path it is given. Use --host 127.0.0.1 unless you "
              "mean to share it.", file=sys.stderr)
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"colony-web: open http://{host}:{args.port}/ (Ctrl+C stops the server)", flush=True)
    if serve(create_app(config), args.host, args.port) is not None:
        return _interrupted()
    return 0
