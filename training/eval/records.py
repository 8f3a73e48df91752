"""Game records (JSON lines) and `colony-replay`, which shows a recorded game move by move.

One game per line, a JSON object:

    format, version   "colony-game-record", 1
    agents            {"red": spec, "blue": spec}
    initial_state     the position before the first action (docs/rules.md R9)
    actions           action ids (R8, board frame), in order
    moves             the same actions in human notation (`d10-d7`, `c4-g4>h3`, `pass`)
    result            "red" | "blue" | "draw"   (R7)
    end_reason        connected23 | grace | passes | ply_limit   (R6.2)
    plies             number of actions
    final_state       the position after the last action (R9), to check a replay
    meta              free-form: seeds, game index, ... (written by the producer)

Replaying a record applies its actions to `initial_state` with the engine, so an edited
or corrupt record fails on the first illegal action, with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import colony_env as ce
from colony_env.render import describe_result, render_rgb

from ..cli import console_script, report_error

RECORD_FORMAT = "colony-game-record"
RECORD_VERSION = 1
REQUIRED_FIELDS = ("agents", "initial_state", "actions", "result", "end_reason")


class RecordError(ValueError):
    """A record file or line that cannot be used; the message is one line."""


def result_name(state: ce.GameState) -> str:
    """'red', 'blue' or 'draw' for a finished game (R7)."""
    w = state.winner
    return "draw" if w is None else str(w)


@dataclass
class GameRecord:
    """One played game, enough to replay it exactly."""

    agents: dict[str, str]
    initial_state: dict[str, Any]
    actions: list[int]
    result: str
    end_reason: str
    moves: list[str] = field(default_factory=list)
    final_state: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_game(
        cls, initial: ce.GameState, actions: Sequence[int], agents: dict[str, str], meta: dict[str, Any] | None = None
    ) -> "GameRecord":
        """Build the record of a game by replaying `actions` from `initial` (also writes the notation)."""
        state = initial
        moves = []
        for a in actions:
            moves.append(ce.action_to_str(int(a), state))
            state = ce.apply_action(state, int(a))
        return cls(
            agents=dict(agents),
            initial_state=initial.to_dict(),
            actions=[int(a) for a in actions],
            result=result_name(state) if state.is_over else "unfinished",
            end_reason=state.end_reason or "unfinished",
            moves=moves,
            final_state=state.to_dict(),
            meta=dict(meta or {}),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "version": RECORD_VERSION,
            "agents": self.agents,
            "initial_state": self.initial_state,
            "actions": self.actions,
            "moves": self.moves,
            "result": self.result,
            "end_reason": self.end_reason,
            "plies": len(self.actions),
            "final_state": self.final_state,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: Any) -> "GameRecord":
        """Check the fields' shapes (not the game: `replay` does that); `RecordError` if wrong."""
        if not isinstance(d, dict):
            raise RecordError(f"a record must be a JSON object, got {type(d).__name__}")
        if d.get("format", RECORD_FORMAT) != RECORD_FORMAT:
            raise RecordError(f"not a game record: format is {d.get('format')!r}, expected {RECORD_FORMAT!r}")
        if d.get("version", RECORD_VERSION) != RECORD_VERSION:
            raise RecordError(f"record version {d.get('version')!r} is not supported (this code reads {RECORD_VERSION})")
        missing = [k for k in REQUIRED_FIELDS if k not in d]
        if missing:
            raise RecordError(f"record is missing field(s) {missing} (needs {list(REQUIRED_FIELDS)})")
        actions = d["actions"]
        if not isinstance(actions, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in actions):
            raise RecordError("field 'actions' must be a list of integer action ids")
        agents = d["agents"]
        if not isinstance(agents, dict) or not all(isinstance(agents.get(c), str) for c in ("red", "blue")):
            raise RecordError("field 'agents' must be an object with 'red' and 'blue' names")
        for key in ("initial_state", "final_state"):
            if not isinstance(d.get(key), dict) and not (key == "final_state" and d.get(key) is None):
                raise RecordError(f"field {key!r} must be a state object (docs/rules.md R9), got {type(d.get(key)).__name__}")
        for key in ("result", "end_reason"):
            if not isinstance(d[key], str):
                raise RecordError(f"field {key!r} must be a string, got {type(d[key]).__name__}")
        moves = d.get("moves") or []
        if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
            raise RecordError("field 'moves' must be a list of moves in notation (strings)")
        meta = d.get("meta") or {}
        if not isinstance(meta, dict):
            raise RecordError(f"field 'meta' must be an object, got {type(meta).__name__}")
        return cls(
            agents={"red": agents["red"], "blue": agents["blue"]},
            initial_state=d["initial_state"],
            actions=list(actions),
            result=d["result"],
            end_reason=d["end_reason"],
            moves=list(moves),
            final_state=d.get("final_state"),
            meta=dict(meta),
        )

    def initial(self) -> ce.GameState:
        try:
            return ce.GameState.from_dict(self.initial_state)
        except ValueError as e:
            raise RecordError(f"bad initial_state: {e}") from None

    def replay(self) -> list[ce.GameState]:
        """Every position of the game, initial to final, checked against the stored result.

        Raises `RecordError` if an action is illegal (naming its index and the rule) or
        the final position, result or end reason differ from the record.
        """
        states = [self.initial()]
        for i, a in enumerate(self.actions):
            try:
                states.append(ce.apply_action(states[-1], a))
            except ce.IllegalActionError as e:
                raise RecordError(f"action {i + 1} of {len(self.actions)}: {e}") from None
        final = states[-1]
        if self.final_state is not None:
            try:
                stored = ce.GameState.from_dict(self.final_state)
            except ValueError as e:
                raise RecordError(f"bad final_state: {e}") from None
            if stored != final:
                raise RecordError("replaying the actions does not reach the recorded final_state")
        if final.is_over and (result_name(final), final.end_reason) != (self.result, self.end_reason):
            raise RecordError(
                f"replay ends {result_name(final)} by {final.end_reason}, the record says {self.result} by {self.end_reason}"
            )
        return states


def record_line(rec: GameRecord) -> bytes:
    """One record as its line of a records file (UTF-8, newline-terminated); the one encoding every writer uses."""
    return (json.dumps(rec.to_json(), separators=(",", ":")) + "\n").encode("utf-8")


def write_records(path: str | Path, records: Iterable[GameRecord], append: bool = False) -> Path:
    """Write records as JSON lines (one game per line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if append else "wb") as f:
        for rec in records:
            f.write(record_line(rec))
    return path


def read_journal(path: str | Path) -> list[tuple[int, GameRecord]]:
    """(line number, record) of every complete record of a file that games are appended to as they end.

    A last line without its newline is what a kill in the middle of an append leaves behind: it is
    cut off the file (that game is played again), so appends that follow start on a fresh line.
    Any other bad line is a `RecordError` naming the file and the line. An absent file holds no games.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise RecordError(f"cannot read record file {str(path)!r}: {e.strerror or type(e).__name__}") from None
    end = data.rfind(b"\n") + 1
    if end < len(data):
        os.truncate(path, end)  # the torn tail of an interrupted append
        data = data[:end]
    records = []
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise RecordError(f"{path}:{n}: not valid JSON ({getattr(e, 'msg', type(e).__name__)}); "
                              "expected one game record per line") from None
        try:
            records.append((n, GameRecord.from_json(obj)))
        except RecordError as e:
            raise RecordError(f"{path}:{n}: {e}") from None
    return records


def read_records(path: str | Path) -> list[GameRecord]:
    """All records of a JSON-lines file; `RecordError` names the file, the line and the problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(f"record file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"cannot read record file {str(path)!r}: {e.__class__.__name__}: {str(e)[:200]}") from None
    return parse_records(text, str(path), f"record file {str(path)!r}")


def parse_records(text: str, source: str, label: str | None = None) -> list[GameRecord]:
    """The records of a games.jsonl text; errors name `source` and the line (`label`: the file in
    the "holds no game records" message, default `source`)."""
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{source}:{n}: not valid JSON ({e.msg}); expected one game record per line") from None
        try:
            records.append(GameRecord.from_json(obj))
        except RecordError as e:
            raise RecordError(f"{source}:{n}: {e}") from None
    if not records:
        raise RecordError(f"{label or source} holds no game records")
    return records


def replayed_games(paths: Iterable[str | Path]) -> Iterator[tuple[GameRecord, list[ce.GameState]]]:
    """Each record of the files in `paths`, in order, with its positions from the initial state to the
    last (`GameRecord.replay`); `RecordError` (one line) names the file, and the game that does not replay."""
    for path in paths:
        for n, rec in enumerate(read_records(path), 1):
            try:
                states = rec.replay()
            except RecordError as e:
                raise RecordError(f"{path}: game {n} does not replay: {e}") from None
            yield rec, states


# ---------------------------------------------------------------------------------
# colony-replay


def board_display(state: ce.GameState) -> str:
    """The terminal board: the env's ansi renderer when present, else the engine's text board."""
    try:
        from colony_env import render
    except ImportError:
        return ce.board_text(state)
    fn = getattr(render, "render_ansi", None)
    return fn(state, color=sys.stdout.isatty()) if callable(fn) else ce.board_text(state)


def rgb_frame(state: ce.GameState, last_move: tuple[ce.GameState, int] | None = None,
              caption: str | None = None):  # -> np.ndarray (H, W, 3) uint8
    """One image of the position from the `rgb_array` renderer (`colony_env.render`), with the
    move that led to it marked and a caption under the board."""
    return render_rgb(state, last_move=last_move, caption=caption)


def frame_caption(rec: GameRecord, i: int, states: list[ce.GameState]) -> str:
    """What a picture of position i says under the board: the start, the move just played, or the result in words."""
    if i == len(states) - 1 and states[i].is_over:
        return describe_result(states[i])
    return _caption(rec, i, states)


def _caption(rec: GameRecord, i: int, states: list[ce.GameState]) -> str:
    if i == 0:
        return f"start: {rec.agents['red']} (red) vs {rec.agents['blue']} (blue)"
    mover = states[i - 1].to_move
    move = rec.moves[i - 1] if i - 1 < len(rec.moves) else ce.action_to_str(rec.actions[i - 1], states[i - 1])
    return f"ply {i}: {mover} ({rec.agents[str(mover)]}) plays {move}"


def _write_images(rec: GameRecord, states: list[ce.GameState], gif: Path | None, png: Path | None, every: int,
                  fps: float) -> None:
    import numpy as np
    from PIL import Image

    picks = list(range(0, len(states), every))
    if picks[-1] != len(states) - 1:
        picks.append(len(states) - 1)
    frames = [np.asarray(rgb_frame(states[i], (states[i - 1], rec.actions[i - 1]) if i else None,
                                   frame_caption(rec, i, states)), dtype=np.uint8) for i in picks]
    if gif is not None:
        images = [Image.fromarray(f) for f in frames]
        gif.parent.mkdir(parents=True, exist_ok=True)
        images[0].save(gif, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
        print(f"wrote {gif} ({len(images)} frames)")
    if png is not None:
        cols = min(len(frames), 8)
        rows = -(-len(frames) // cols)
        h, w = frames[0].shape[:2]
        sheet = np.full((rows * h, cols * w, 3), 255, np.uint8)
        for k, f in enumerate(frames):
            r, c = divmod(k, cols)
            sheet[r * h : (r + 1) * h, c * w : (c + 1) * w] = f[:h, :w, :3]
        png.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(sheet).save(png)
        print(f"wrote {png} ({len(frames)} positions, every {every} plies)")


def _write_frame(rec: GameRecord, states: list[ce.GameState], i: int, png: Path) -> None:
    from PIL import Image

    frame = rgb_frame(states[i], (states[i - 1], rec.actions[i - 1]) if i else None, frame_caption(rec, i, states))
    png.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(frame).save(png)
    print(f"wrote {png} (the position after ply {i} of {len(states) - 1})")


MAX_FPS = 100.0  # GIF frame durations are whole hundredths of a second
MAX_DELAY = 3600.0  # seconds between moves in the terminal


@console_script
def replay_main(argv: list[str] | None = None) -> int:
    """Entry point of `colony-replay`."""
    parser = argparse.ArgumentParser(
        prog="colony-replay", description="Show a recorded Colony game move by move, or write it as a GIF / PNG strip."
    )
    parser.add_argument("file", help="JSON-lines record file (from colony-eval or colony-play)")
    parser.add_argument("--game", type=int, default=0, help="which game of the file, 0-based (default 0)")
    parser.add_argument("--list", action="store_true", help="list the games in the file and exit")
    parser.add_argument("--step", action="store_true", help="wait for Enter after each move")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to pause after each move")
    parser.add_argument("--gif", type=Path, help="write an animated GIF here instead of printing")
    parser.add_argument("--png", type=Path, help="write a PNG contact sheet of the positions here")
    parser.add_argument("--every", type=int, default=1, help="for images: one frame every K plies (default 1)")
    parser.add_argument("--fps", type=float, default=4.0, help="GIF frames per second (default 4)")
    parser.add_argument("--ply", type=int, default=None,
                        help="for --png: draw only the position after this many plies (0 = the start, -1 = the end)")
    args = parser.parse_args(argv)
    try:
        if args.every < 1:
            raise RecordError(f"--every must be an integer >= 1 (one frame every K plies), got {args.every}")
        if not 0 < args.fps <= MAX_FPS:  # also refuses nan
            raise RecordError(f"--fps must be a number in (0, {MAX_FPS}] (a GIF frame lasts whole hundredths of "
                              f"a second), got {args.fps:g}")
        if not 0 <= args.delay <= MAX_DELAY:
            raise RecordError(f"--delay must be a number of seconds in 0..{MAX_DELAY}, got {args.delay:g}")
        for option, path in (("--gif", args.gif), ("--png", args.png)):
            if path is not None and (path.suffix.lower() != "." + option[2:] or path.is_dir()):
                raise RecordError(f"{option} must name a {option[2:]} file (FILE.{option[2:]}), got '{path}'")
        records = read_records(args.file)
        if args.list:
            for i, r in enumerate(records):
                print(f"{i:4d}  {r.agents['red']} (red) vs {r.agents['blue']} (blue): {r.result} by {r.end_reason}, {len(r.actions)} plies")
            return 0
        if not 0 <= args.game < len(records):
            raise RecordError(f"--game {args.game} is out of range: the file holds games 0..{len(records) - 1}")
        rec = records[args.game]
        states = rec.replay()
        if args.ply is not None:
            if not args.png or args.gif:
                raise RecordError("--ply picks the one position that --png draws; use it with --png and without --gif")
            if not -len(states) <= args.ply < len(states):
                raise RecordError(f"--ply {args.ply} is out of range: game {args.game} has positions 0..{len(states) - 1}")
            _write_frame(rec, states, args.ply % len(states), args.png)
            return 0
        if args.gif or args.png:
            _write_images(rec, states, args.gif, args.png, args.every, args.fps)
            return 0
        for i, state in enumerate(states):
            print(_caption(rec, i, states))
            print(board_display(state))
            print()
            if args.step and i < len(states) - 1:
                input("(Enter for the next move) ")
            elif args.delay:
                time.sleep(args.delay)
        final = states[-1]
        words = describe_result(final) if final.is_over else f"{rec.result} by {rec.end_reason}"
        print(f"result after {len(rec.actions)} plies: {words}")
        return 0
    except RecordError as e:
        return report_error("colony-replay", str(e))
    except OSError as e:  # reading is checked by read_records, so this is an image that could not be written
        wanted = " and ".join(str(path) for path in (args.gif, args.png) if path)
        where = f"{e.filename}: " if e.filename and str(e.filename) != wanted else ""
        return report_error("colony-replay", f"cannot write {wanted}: {where}{e.strerror or e}")
    except (KeyboardInterrupt, EOFError):
        print()
        return 130


if __name__ == "__main__":
    sys.exit(replay_main())
