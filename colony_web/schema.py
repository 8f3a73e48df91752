"""What each API endpoint accepts: a schema per request body, checked before anything else runs.

A body is read as JSON (`parse_json`) and then checked against its endpoint's `Body`: the fields
it may hold, each one's type and range, and so how deep it may nest (every field has a fixed
shape, and a position is checked field by field before the engine reads it). Anything else is a
`SchemaError` with a one-line message that names the field, what is allowed and what came
(described, never echoed whole: a client may send megabytes or deep nesting).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import colony_env as ce

MAX_STRING = 1000  # characters of a string field (agent specs, colours, notation)
R9_FIELDS = ("board", "to_move", "unlocked", "finished", "grace_left", "ply", "passes", "max_plies")
BOARD_ROWS = 10
BOARD_ROW_CHARS = 20  # two characters a cell (R9: '..', r1..r4, b1..b4)


class SchemaError(ValueError):
    """A request that its endpoint does not accept; the message is one line (a 400)."""


def describe(value: Any) -> str:
    """A short, one-line description of a JSON value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"{value} (not a finite number)"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"a string of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def parse_json(raw: bytes) -> Any:
    """The JSON value of a request body; `SchemaError` when it is not JSON."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise SchemaError("request body is nested too deeply to read; send a JSON object of the fields this "
                          "endpoint takes (docs/web.md)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SchemaError(f"request body is not valid JSON ({getattr(e, 'msg', None) or e.reason}); "
                          "send a JSON object") from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits (Python's conversion limit)
        raise SchemaError(f"request body is not valid JSON ({str(e).splitlines()[0][:120]}); send a JSON object") from None


def _name(where: str) -> str:
    return f"field {where!r}" if "[" not in where else f"field {where}"


@dataclass(frozen=True)
class Int:
    """An integer in low..high (true and false are not integers); null only when `nullable`."""

    low: int
    high: int
    nullable: bool = False

    def check(self, value: Any, where: str) -> int | None:
        if value is None and self.nullable:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            null = " or null" if self.nullable else ""
            raise SchemaError(f"{_name(where)} must be an integer in {self.low}..{self.high}{null}, got {describe(value)}")
        return value


@dataclass(frozen=True)
class Str:
    """A non-empty string (stripped) of at most `max_len` characters, one of `choices` when given."""

    max_len: int = MAX_STRING
    choices: tuple[str, ...] = ()

    def check(self, value: Any, where: str) -> str:
        if self.choices and value not in self.choices:
            allowed = " or ".join(repr(c) for c in self.choices)
            raise SchemaError(f"{_name(where)} must be {allowed}, got {describe(value)}")
        if not isinstance(value, str) or not value.strip() or len(value) > self.max_len:
            raise SchemaError(f"{_name(where)} must be a non-empty string of at most {self.max_len} characters, "
                              f"got {describe(value)}")
        return value.strip()


@dataclass(frozen=True)
class State:
    """A position as docs/rules.md R9 writes it; checked field by field, then read by the engine."""

    def check(self, value: Any, where: str) -> ce.GameState:
        what = "state" if where == "state" else where
        head = f"{what} is not a valid position (docs/rules.md R9)"
        if not isinstance(value, dict):
            raise SchemaError(f"{head}: a state must be a dict (R9), got {describe(value)}")
        board = value.get("board")
        if "board" in value and not (isinstance(board, list) and len(board) <= BOARD_ROWS
                                     and all(isinstance(r, str) and len(r) <= 2 * BOARD_ROW_CHARS for r in board)):
            raise SchemaError(f"{head}: field 'board' must be a list of {BOARD_ROWS} strings of {BOARD_ROW_CHARS} "
                              f"characters, got {describe(board)}")
        for key in R9_FIELDS[1:]:
            v = value.get(key)
            if isinstance(v, (list, dict)) or (isinstance(v, str) and len(v) > MAX_STRING):
                raise SchemaError(f"{head}: field {key!r} must be a number, a boolean, null or a colour, got {describe(v)}")
        try:
            return ce.GameState.from_dict(value)
        except (ValueError, TypeError, KeyError) as e:
            raise SchemaError(f"{head}: {str(e).splitlines()[0][:300] if str(e) else type(e).__name__}") from None


@dataclass(frozen=True)
class ListOf:
    """A list of `min_len`..`max_len` items, each checked by `item`."""

    item: Any
    min_len: int
    max_len: int
    what: str = "items"

    def check(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list) or not self.min_len <= len(value) <= self.max_len:
            raise SchemaError(f"{_name(where)} must be a list of {self.min_len}..{self.max_len} {self.what}, "
                              f"got {describe(value)}")
        return [self.item.check(v, f"{where!r}[{i}]" if "[" not in where else f"{where}[{i}]") for i, v in enumerate(value)]


@dataclass(frozen=True)
class Body:
    """A JSON object with these fields (each optional unless `required`), and no others."""

    fields: dict[str, Any] = field(default_factory=dict)
    required: dict[str, str] = field(default_factory=dict)  # field -> the message when it is missing

    def check(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise SchemaError(f"request body must be a JSON object, got {describe(data)}")
        unknown = sorted(k for k in data if k not in self.fields)
        if unknown:
            shown = unknown[:5] if all(len(k) <= 40 for k in unknown[:5]) else [k[:40] + "..." for k in unknown[:5]]
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise SchemaError(f"unknown field(s) {shown}{more}; allowed: {list(self.fields)}")
        for key, message in self.required.items():
            if key not in data:
                raise SchemaError(message)
        return {k: self.fields[k].check(v, k) for k, v in data.items()}

    def parse(self, raw: bytes) -> dict[str, Any]:
        """Read and check a request body; an empty body is an empty object."""
        return self.check(parse_json(raw) if raw.strip() else {})
