"""`colony-web`: play, replay and analyse Colony games in a browser, on the project's engine and agents.

    colony-web                                  # http://127.0.0.1:8765
    colony-web --records runs/eval/games.jsonl  # offer a record file in the Replay tab
    python -m colony_web --port 9000

The server (`app.py`, Starlette on uvicorn) answers a small JSON API built on the public
engine API; the page (`static/`, one HTML file, plain JavaScript drawing SVG, no build
step) only draws and clicks. Agents think in worker processes under a time limit
(`thinker.py`).
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of `colony-web` (imported lazily: the worker processes import this package too)."""
    from .cli import main as cli_main

    return cli_main(argv)
