"""Record files held for the Replay tab, in bounded memory.

A games.jsonl text is read line by line as it arrives (`RecordReader.feed`), never kept whole:
each line is parsed, checked (the record's fields, its positions by the engine, R9) and packed
into flat arrays (positions as the engine's int32 vectors, actions as int16), and the text is
dropped. Games are rebuilt as `GameRecord`s only when one is replayed. `RecordStore` bounds
what the server holds in all (bytes and games): a new file pushes out the oldest ones, and a
file that alone is over the bounds is refused with the limit it broke (`TooLarge`, a 413).
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import colony_env as ce
from colony_env.constants import STATE_DTYPE, STATE_LEN

from colony_training.eval.records import GameRecord, RecordError
from .schema import SchemaError, State

MAX_UPLOAD_BYTES = 64 << 20  # one record file's text
MAX_LINE_BYTES = 4 << 20  # one game record (a 10,000-ply game is about 200 kB)
MAX_HELD_BYTES = 32 << 20  # packed games held in all, over every record file
MAX_HELD_GAMES = 20_000  # games held in all
MAX_FILES = 32  # record files held; the oldest is dropped beyond this
GAME_OVERHEAD = 64  # bytes a packed game costs beyond its arrays (offsets, string indices)
READ_CHUNK = 1 << 20
_STATE = State()


class TooLarge(RecordError):
    """A record file over a bound of what the server holds; the message says the limit (a 413)."""


@dataclass
class RecordFile:
    """One record file's games, packed; `game(n)` rebuilds a `GameRecord`."""

    id: str
    name: str
    digest: str
    initial: np.ndarray  # (n, STATE_LEN) int32
    final: np.ndarray  # (n, STATE_LEN) int32; rows of zeros where the record has no final_state
    has_final: np.ndarray  # (n,) bool
    actions: np.ndarray  # all games' actions, int16
    offsets: np.ndarray  # (n + 1,) int64: game k's actions are actions[offsets[k]:offsets[k + 1]]
    labels: np.ndarray  # (n, 4) int32: indices into `strings` of red, blue, result, end_reason
    strings: list[str]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def nbytes(self) -> int:
        arrays = (self.initial, self.final, self.has_final, self.actions, self.offsets, self.labels)
        return sum(a.nbytes for a in arrays) + sum(len(s) + 50 for s in self.strings) + GAME_OVERHEAD * len(self)

    def game(self, n: int) -> GameRecord:
        red, blue, result, end_reason = (self.strings[i] for i in self.labels[n])
        actions = [int(a) for a in self.actions[self.offsets[n]:self.offsets[n + 1]]]
        final = ce.GameState.from_array(self.final[n]).to_dict() if self.has_final[n] else None
        return GameRecord(agents={"red": red, "blue": blue}, initial_state=ce.GameState.from_array(self.initial[n]).to_dict(),
                          actions=actions, result=result, end_reason=end_reason, final_state=final)

    def summary(self) -> dict[str, Any]:
        plies = np.diff(self.offsets)
        return {
            "id": self.id,
            "name": self.name,
            "games": [{"index": k, "agents": {"red": self.strings[lab[0]], "blue": self.strings[lab[1]]},
                       "result": self.strings[lab[2]], "end_reason": self.strings[lab[3]], "plies": int(plies[k])}
                      for k, lab in enumerate(self.labels.tolist())],
        }


class RecordReader:
    """Reads a games.jsonl text chunk by chunk into a `RecordFile`, within the bounds above."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.max_bytes, self.max_games, self.max_held = MAX_UPLOAD_BYTES, MAX_HELD_GAMES, MAX_HELD_BYTES
        self.size = 0
        self.line_no = 0
        self._pending = bytearray()
        self._hash = hashlib.sha256()
        self._initial = bytearray()
        self._final = bytearray()
        self._has_final = bytearray()
        self._actions = array("h")
        self._offsets = array("q", [0])
        self._labels = array("i")
        self._strings: dict[str, int] = {}

    def _held(self) -> int:
        games = len(self._offsets) - 1
        return (len(self._initial) + len(self._final) + len(self._has_final) + 2 * len(self._actions)
                + 8 * len(self._offsets) + 4 * len(self._labels) + sum(len(s) + 50 for s in self._strings)
                + GAME_OVERHEAD * games)

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise TooLarge(f"{self.name} is over the limit of {self.max_bytes} bytes for one record file")
        self._hash.update(chunk)
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            self._pending += chunk[start:end]
            self._line(bytes(self._pending))
            self._pending.clear()
            start = end + 1
        self._pending += chunk[start:]
        if len(self._pending) > MAX_LINE_BYTES:
            raise TooLarge(f"{self.name}:{self.line_no + 1}: a record line is over the limit of {MAX_LINE_BYTES} bytes")

    def _label(self, text: str) -> int:
        if text not in self._strings:
            self._strings[text] = len(self._strings)
        return self._strings[text]

    def _line(self, raw: bytes) -> None:
        self.line_no += 1
        n = self.line_no
        if len(raw) > MAX_LINE_BYTES:
            raise TooLarge(f"{self.name}:{n}: a record line is over the limit of {MAX_LINE_BYTES} bytes")
        if not raw.strip():
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RecordError(f"{self.name}:{n}: not UTF-8 text; a record file is JSON lines") from None
        try:
            obj = json.loads(text)
        except RecursionError:
            raise RecordError(f"{self.name}:{n}: nested too deeply to be a game record") from None
        except ValueError as e:
            raise RecordError(f"{self.name}:{n}: not valid JSON ({getattr(e, 'msg', str(e)[:100])}); "
                              "expected one game record per line") from None
        try:
            rec = GameRecord.from_json(obj)
            initial = _STATE.check(rec.initial_state, "initial_state")
            final = None if rec.final_state is None else _STATE.check(rec.final_state, "final_state")
        except RecursionError:
            raise RecordError(f"{self.name}:{n}: nested too deeply to be a game record") from None
        except (RecordError, SchemaError) as e:
            raise RecordError(f"{self.name}:{n}: {e}") from None
        bad = next((a for a in rec.actions if not 0 <= a < ce.N_ACTIONS), None)
        if bad is not None:
            raise RecordError(f"{self.name}:{n}: field 'actions' holds {bad}, not an action id 0..{ce.N_ACTIONS - 1}")
        for s in (rec.agents["red"], rec.agents["blue"], rec.result, rec.end_reason):
            self._labels.append(self._label(s[:200]))
        self._initial += initial.to_array().tobytes()
        self._final += (final.to_array() if final is not None else np.zeros(STATE_LEN, STATE_DTYPE)).tobytes()
        self._has_final.append(final is not None)
        self._actions.extend(rec.actions)
        self._offsets.append(len(self._actions))
        games = len(self._offsets) - 1
        if games > self.max_games:
            raise TooLarge(f"{self.name} holds more than {self.max_games} games, the most this server keeps")
        if games % 256 == 0 and self._held() > self.max_held:
            raise TooLarge(f"{self.name} is over the limit of {self.max_held} bytes of games this server keeps")

    def finish(self, rid: str) -> RecordFile:
        if self._pending:
            line, self._pending = bytes(self._pending), bytearray()
            self._line(line)
        if len(self._offsets) == 1:
            raise RecordError(f"{self.name} holds no game records")
        if self._held() > self.max_held:
            raise TooLarge(f"{self.name} is over the limit of {self.max_held} bytes of games this server keeps")
        games = len(self._offsets) - 1

        def rows(buf: bytearray) -> np.ndarray:
            return np.frombuffer(bytes(buf), STATE_DTYPE).reshape(games, STATE_LEN)

        out = RecordFile(
            id=rid, name=self.name, digest=self._hash.hexdigest(),
            initial=rows(self._initial), final=rows(self._final),
            has_final=np.frombuffer(bytes(self._has_final), np.bool_).copy(),
            actions=np.frombuffer(self._actions.tobytes(), np.int16).copy(),
            offsets=np.frombuffer(self._offsets.tobytes(), np.int64).copy(),
            labels=np.frombuffer(self._labels.tobytes(), np.int32).reshape(games, 4).copy(),
            strings=list(self._strings),
        )
        self._initial = self._final = bytearray()
        return out


def read_file(path: Path, rid: str) -> RecordFile:
    """A record file on disk, read in chunks with the same bounds as an upload; `RecordError` if not."""
    reader = RecordReader(path.name)
    try:
        with path.open("rb") as f:
            while chunk := f.read(READ_CHUNK):
                reader.feed(chunk)
    except OSError as e:
        raise RecordError(f"cannot read record file {str(path)!r}: {e.strerror or e}") from None
    return reader.finish(rid)


class RecordStore:
    """Record files by id, oldest first, within MAX_FILES, MAX_HELD_BYTES and MAX_HELD_GAMES in all."""

    def __init__(self) -> None:
        self.files: OrderedDict[str, RecordFile] = OrderedDict()

    def get(self, rid: str) -> RecordFile | None:
        return self.files.get(rid)

    def same(self, name: str, digest: str) -> RecordFile | None:
        """A held file of the same name and content (an upload repeated)."""
        return next((f for f in self.files.values() if f.name == name and f.digest == digest), None)

    def add(self, f: RecordFile) -> RecordFile:
        while self.files and (len(self.files) >= MAX_FILES or self.held_bytes + f.nbytes > MAX_HELD_BYTES
                              or self.held_games + len(f) > MAX_HELD_GAMES):
            self.files.popitem(last=False)
        self.files[f.id] = f
        return f

    @property
    def held_bytes(self) -> int:
        return sum(f.nbytes for f in self.files.values())

    @property
    def held_games(self) -> int:
        return sum(len(f) for f in self.files.values())

    def summaries(self) -> list[dict[str, Any]]:
        return [f.summary() for f in self.files.values()]
