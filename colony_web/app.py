"""The web app: a JSON API over the engine, agents and records, and the single page that uses it.

Routes (every error is a JSON object `{"error": "<one line>"}` with a 4xx/5xx status; the
server keeps running whatever a request holds):

    GET  /                              the page (static/index.html)
    GET  /api/info                      agent spec help, checkpoints and record files offered
    POST /api/games                     {red, blue, seed?, max_plies? | state?}: a new game ("human" or an
                                        agent spec per colour) from a seeded start or a given position
    GET  /api/games/{id}                the game: position, legal actions grouped for clicking, moves
    POST /api/games/{id}/move           {action} or {move: "d10-d7"}: a human move
    GET  /api/games/{id}/explain        ?from=e4[&to=e6]: why that click is not a legal action
    POST /api/games/{id}/step           the agent to move plays one move (in a worker, time-limited)
    POST /api/games/{id}/undo           back to before the last human move (or one ply between agents)
    POST /api/games/{id}/resign         {colour}: a human side resigns
    POST /api/records?name=FILE         a games.jsonl file's text: keeps it for replay
    GET  /api/records/{id}              its games
    GET  /api/records/{id}/games/{n}    one game, replayed by the engine: every position and move
    POST /api/analyse                   {analyser, state, top?}: policy / search top moves and the value
    POST /api/values                    {analyser, states | game, from?}: each position's value (red's side)

Finished games are appended to `<out>/games.jsonl` (the project's record format); the app
writes nothing else, and nowhere else.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import colony_env as ce
from colony_env.constants import DEFAULT_MAX_PLIES

from colony_training.eval.agent_specs import SPEC_HELP, AgentSpecError, parse_agent_spec
from colony_training.eval.records import GameRecord, RecordError, parse_records, read_records, write_records
from . import thinker as thinking
from .views import action_cells, explain_click, legal_view, position_view
from .worker import TOP_MOVES

STATIC_DIR = Path(__file__).parent / "static"
HUMAN = "human"
COLOURS = ("red", "blue")
RECORD_FILE = "games.jsonl"
RESIGNATION = "resignation"  # end_reason of a resigned game's record (not a rule: the players stopped)
MAX_JSON_BYTES = 4 << 20  # an analysis of a whole game sends every position (~200 bytes each)
MAX_RECORD_BYTES = 64 << 20
MAX_STATES_PER_REQUEST = 5000
MAX_TOP = 50
MAX_PLIES_LIMIT = 10_000
MAX_SEED = 2**63 - 1
SEED_HIGH = 2**62  # range of the per-move seeds drawn from a game's generator
DEFAULT_WORKERS = 2
DEFAULT_THINK_LIMIT = 120.0  # seconds; a fresh install compiles the search kernels on first use
DEFAULT_MAX_GAMES = 64
MAX_RECORD_FILES = 32  # record files kept for replay; the oldest upload is dropped beyond this
SUGGESTED_AGENTS = ("random", "greedy", "mcts:200")


@dataclass
class WebConfig:
    """Settings of one server (the `colony-web` options)."""

    out_dir: Path = Path("runs") / "web"
    """Finished games are appended to OUT/games.jsonl; nothing else is written."""
    workers: int = DEFAULT_WORKERS
    """Worker processes that run the agents' searches and the analyses."""
    think_limit: float = DEFAULT_THINK_LIMIT
    """Seconds an agent's move or an analysis may take before its worker is stopped."""
    records: list[Path] = field(default_factory=list)
    """games.jsonl files (or folders holding them) offered in the Replay tab."""
    checkpoints: list[Path] = field(default_factory=list)
    """Checkpoints offered as analysers and opponents."""
    max_games: int = DEFAULT_MAX_GAMES
    """Games kept in memory; the least recently used one is dropped beyond this."""
    save_games: bool = True


def _error(status: int, message: str) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


# --- request parsing -------------------------------------------------------------------
async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _error(413, f"request body of {int(declared)} bytes is over the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _error(413, f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _json_object(request: Request, allowed: tuple[str, ...]) -> dict[str, Any]:
    raw = await _body(request, MAX_JSON_BYTES)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _error(400, f"request body is not valid JSON ({getattr(e, 'msg', e)}); send a JSON object") from None
    if not isinstance(data, dict):
        raise _error(400, f"request body must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise _error(400, f"unknown field(s) {unknown}; allowed: {list(allowed)}")
    return data


def _int(data: dict[str, Any], key: str, default: int | None, low: int, high: int) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _error(400, f"field {key!r} must be an integer in {low}..{high}, got {value!r}")
    return value


def _str(data: dict[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise _error(400, f"field {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _state(value: Any, what: str = "state") -> ce.GameState:
    try:
        return ce.GameState.from_dict(value)
    except (ValueError, TypeError, KeyError) as e:
        raise _error(400, f"{what} is not a valid position (docs/rules.md R9): {e}") from None


def _spec(text: str, what: str) -> str:
    """Check the syntax of an agent spec here (cheap); the worker then builds it."""
    try:
        return parse_agent_spec(text).text
    except AgentSpecError as e:
        raise _error(400, f"{what}: {e}") from None


# --- games -----------------------------------------------------------------------------
class Game:
    """One game in the page: players (human or agent spec), every position, and the moves."""

    def __init__(self, gid: str, players: dict[str, str], seed: int | None, initial: ce.GameState) -> None:
        self.id = gid
        self.players = players
        self.seed = seed
        self.states = [initial]
        self.actions: list[int] = []
        self.moves: list[str] = []
        self.movers: list[str] = []
        self.rng = np.random.default_rng(None if seed is None else [seed, 1])  # agents' per-move seeds
        self.resigned: str | None = None
        self.thinking = False
        self.saved: Path | None = None
        self.save_error: str | None = None
        self.touched = time.monotonic()

    @property
    def state(self) -> ce.GameState:
        return self.states[-1]

    @property
    def over(self) -> bool:
        return self.state.is_over or self.resigned is not None

    def player(self, colour: str) -> str:
        return self.players[colour]

    def human_to_move(self) -> bool:
        return not self.over and self.players[str(self.state.to_move)] == HUMAN

    def play(self, action: int) -> None:
        """Apply an action through the engine (`IllegalActionError` leaves the game as it was)."""
        before = self.state
        after = ce.apply_action(before, action)
        self.moves.append(ce.action_to_str(action, before))
        self.movers.append(str(before.to_move))
        self.actions.append(int(action))
        self.states.append(after)

    def undo(self) -> None:
        if self.thinking:
            raise _error(409, "an agent is thinking; undo when it has moved")
        humans = [c for c in COLOURS if self.players[c] == HUMAN]
        if not self.actions:
            raise _error(409, "nothing to undo: no move has been played")
        if humans and not any(m in humans for m in self.movers):
            raise _error(409, "nothing to undo: you have not moved yet")
        self.resigned = None
        while True:  # take back the agents' replies and then the human's own last move
            mover = self.movers.pop()
            self.actions.pop()
            self.moves.pop()
            self.states.pop()
            if not humans or mover in humans:
                break

    def record(self) -> GameRecord:
        agents = {c: ("human" if p == HUMAN else p) for c, p in self.players.items()}
        rec = GameRecord.from_game(self.states[0], self.actions, agents, meta={"source": "colony-web", "seed": self.seed})
        if self.resigned is not None:
            rec.result = "blue" if self.resigned == "red" else "red"
            rec.end_reason = RESIGNATION
            rec.meta["resigned"] = self.resigned
        return rec

    def view(self) -> dict[str, Any]:
        state = self.state
        out = position_view(state)
        if self.resigned is not None:
            out.update(over=True, end_reason=RESIGNATION, result="blue" if self.resigned == "red" else "red")
        last = action_cells(self.actions[-1], self.states[-2]) if self.actions else None
        out.update(
            id=self.id,
            players=self.players,
            seed=self.seed,
            moves=self.moves,
            movers=self.movers,
            actions=self.actions,
            last=last,
            thinking=self.thinking,
            resigned=self.resigned,
            legal=legal_view(state) if self.human_to_move() and not self.thinking else None,
            saved=None if self.saved is None else str(self.saved),
            save_error=self.save_error,
        )
        return out


@dataclass
class RecordFile:
    """A games.jsonl file offered for replay (uploaded or named on the command line)."""

    id: str
    name: str
    records: list[GameRecord]

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "games": [{"index": i, "agents": r.agents, "result": r.result, "end_reason": r.end_reason,
                       "plies": len(r.actions)} for i, r in enumerate(self.records)],
        }


def _record_paths(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        out.extend(sorted(p.rglob("*.jsonl")) if p.is_dir() else [p])
    return out


class App:
    """The server's state: games, record files, the thinker; the route handlers."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.games: dict[str, Game] = {}
        self.record_files: dict[str, RecordFile] = {}
        self.load_errors: list[str] = []
        self.thinker: thinking.Thinker | None = None
        for path in _record_paths(config.records):
            try:
                self._add_records(path.name, read_records(path))
            except RecordError as e:
                self.load_errors.append(str(e))
                print(f"colony-web: warning: {e}", file=sys.stderr)

    def _add_records(self, name: str, records: list[GameRecord]) -> RecordFile:
        while len(self.record_files) >= MAX_RECORD_FILES:
            del self.record_files[next(iter(self.record_files))]
        rid = secrets.token_hex(6)
        self.record_files[rid] = RecordFile(rid, name, records)
        return self.record_files[rid]

    async def _think(self, job: str, bad_input_status: int, **kwargs: Any) -> Any:
        assert self.thinker is not None, "the thinker starts with the app (lifespan)"
        try:
            return await self.thinker.run(job, **kwargs)
        except thinking.ThinkTimeout as e:
            raise _error(504, str(e)) from None
        except thinking.WorkerCrashed as e:
            raise _error(502, str(e)) from None
        except thinking.JobFailed as e:
            raise _error(bad_input_status, str(e)) from None

    def _game(self, gid: str) -> Game:
        game = self.games.get(gid)
        if game is None:
            raise _error(404, f"no game {gid!r} on this server (it may have been dropped after a restart or as the least recently used)")
        game.touched = time.monotonic()
        return game

    def _save(self, game: Game) -> None:
        if not self.config.save_games or not game.over or game.saved is not None:
            return
        path = self.config.out_dir / RECORD_FILE
        try:
            write_records(path, [game.record()], append=True)
            game.saved = path
        except OSError as e:
            game.save_error = f"could not save the game to {path}: {e.strerror or e}"

    # --- handlers ---------------------------------------------------------------------
    async def index(self, request: Request) -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    async def info(self, request: Request) -> JSONResponse:
        checkpoints = [str(p) for p in self.config.checkpoints]
        return JSONResponse({
            "spec_help": SPEC_HELP,
            "agents": [HUMAN, *SUGGESTED_AGENTS, *(f"checkpoint:{c}" for c in checkpoints)],
            "analysers": [f"checkpoint:{c}" for c in checkpoints] + [f"checkpoint:{c}:mcts:200" for c in checkpoints],
            "records": [f.summary() for f in self.record_files.values()],
            "load_errors": self.load_errors,
            "think_limit": self.config.think_limit,
            "out": str(self.config.out_dir / RECORD_FILE) if self.config.save_games else None,
        })

    async def new_game(self, request: Request) -> JSONResponse:
        data = await _json_object(request, ("red", "blue", "seed", "max_plies", "state"))
        players = {}
        for colour in COLOURS:
            text = _str(data, colour, HUMAN)
            players[colour] = HUMAN if text.lower() == HUMAN else _spec(text, f"{colour} player")
        seed = _int(data, "seed", None, 0, MAX_SEED)
        if "state" in data:  # a set-up position instead of a seeded start (R9); it carries its own max_plies
            if "max_plies" in data:
                raise _error(400, "send 'max_plies' or 'state', not both: a state has its own max_plies")
            initial = _state(data["state"])
            if initial.is_over:
                raise _error(400, f"the game is over ({initial.end_reason}) in this position; nothing to play")
        else:
            initial = ce.new_game(seed, max_plies=_int(data, "max_plies", DEFAULT_MAX_PLIES, 1, MAX_PLIES_LIMIT))
        for colour, spec in players.items():
            if spec != HUMAN:  # build it now (a checkpoint loads), so that a bad one is reported here
                try:
                    await self._think("check_spec", 400, spec=spec)
                except HTTPException as e:
                    raise _error(e.status_code, f"{colour} player: {e.detail}") from None
        while len(self.games) >= self.config.max_games:
            idle = [g for g in self.games.values() if not g.thinking]
            if not idle:
                raise _error(503, f"{len(self.games)} games are thinking at once; try again when one has moved")
            del self.games[min(idle, key=lambda g: g.touched).id]
        game = Game(secrets.token_hex(6), players, seed, initial)
        self.games[game.id] = game
        return JSONResponse(game.view(), status_code=201)

    async def get_game(self, request: Request) -> JSONResponse:
        return JSONResponse(self._game(request.path_params["gid"]).view())

    async def move(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        data = await _json_object(request, ("action", "move"))
        if game.over:
            raise _error(409, f"the game is over ({game.view()['end_reason']}); start a new game")
        if game.thinking:
            raise _error(409, f"{game.state.to_move} ({game.player(str(game.state.to_move))}) is thinking; wait for its move")
        if not game.human_to_move():
            mover = str(game.state.to_move)
            raise _error(409, f"{mover} is played by {game.player(mover)}, not by you; ask it to move (step)")
        if ("action" in data) == ("move" in data):
            raise _error(400, "send exactly one of 'action' (an id 0..16000) or 'move' (notation like 'd10-d7')")
        if "action" in data:
            action = _int(data, "action", None, 0, ce.N_ACTIONS - 1)
        else:
            try:
                action = ce.parse_action(_str(data, "move"), game.state)
            except ValueError as e:
                raise _error(400, str(e)) from None
        try:
            game.play(int(action))
        except ce.IllegalActionError as e:
            raise _error(400, str(e)) from None
        self._save(game)
        return JSONResponse(game.view())

    async def explain(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        cells = []
        for key in ("from", "to"):
            text = request.query_params.get(key)
            if text is None:
                cells.append(None)
                continue
            try:
                cells.append(ce.parse_cell(text))
            except ValueError as e:
                raise _error(400, f"{key}: {e}") from None
        if cells[0] is None:
            raise _error(400, "explain needs ?from=CELL (and optionally &to=CELL), e.g. ?from=e4&to=e6")
        if game.resigned is not None:
            return JSONResponse({"message": f"the game is over: {game.resigned} resigned"})
        return JSONResponse({"message": explain_click(game.state, cells[0], cells[1])})

    async def step(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        await _json_object(request, ())
        if game.over:
            raise _error(409, f"the game is over ({game.view()['end_reason']}); start a new game")
        mover = str(game.state.to_move)
        spec = game.player(mover)
        if game.thinking:
            raise _error(409, f"{mover} ({spec}) is already thinking")
        if spec == HUMAN:
            raise _error(409, f"{mover} is yours to move: click a satellite and a target")
        game.thinking = True
        try:
            before = game.state
            action = await self._think("act", 502, spec=spec, packed=before.to_array(),
                                       seed=int(game.rng.integers(SEED_HIGH)))
            try:
                game.play(int(action))
            except ce.IllegalActionError as e:  # an agent must never do this; say so instead of crashing
                raise _error(502, f"agent {spec} chose an illegal action: {e}") from None
        finally:
            game.thinking = False
        self._save(game)
        return JSONResponse(game.view())

    async def undo(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        await _json_object(request, ())
        game.undo()
        game.saved = None  # the game goes on; if it ends again, that ending is saved too
        return JSONResponse(game.view())

    async def resign(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        data = await _json_object(request, ("colour",))
        colour = _str(data, "colour")
        if colour not in COLOURS:
            raise _error(400, f"field 'colour' must be 'red' or 'blue', got {colour!r}")
        if game.over:
            raise _error(409, "the game is already over")
        if game.player(colour) != HUMAN:
            raise _error(409, f"{colour} is played by {game.player(colour)}; only a human side can resign")
        if game.thinking:
            raise _error(409, "an agent is thinking; resign when it has moved")
        game.resigned = colour
        self._save(game)
        return JSONResponse(game.view())

    async def upload_records(self, request: Request) -> JSONResponse:
        name = request.query_params.get("name") or "uploaded.jsonl"
        raw = await _body(request, MAX_RECORD_BYTES)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _error(400, f"{name} is not UTF-8 text; a record file is JSON lines") from None
        try:
            records = parse_records(text, name)
        except RecordError as e:
            raise _error(400, str(e)) from None
        return JSONResponse(self._add_records(name, records).summary(), status_code=201)

    def _record_file(self, rid: str) -> RecordFile:
        f = self.record_files.get(rid)
        if f is None:
            raise _error(404, f"no record file {rid!r} on this server; upload it again")
        return f

    async def get_records(self, request: Request) -> JSONResponse:
        return JSONResponse(self._record_file(request.path_params["rid"]).summary())

    async def get_record_game(self, request: Request) -> JSONResponse:
        f = self._record_file(request.path_params["rid"])
        n = request.path_params["n"]
        if not 0 <= n < len(f.records):
            raise _error(404, f"game {n} is out of range: {f.name} holds games 0..{len(f.records) - 1}")
        rec = f.records[n]
        try:
            states = rec.replay()  # the engine checks every action and the stored result
        except RecordError as e:
            raise _error(400, f"{f.name} game {n}: {e}") from None
        moves = [ce.action_to_str(a, s) for a, s in zip(rec.actions, states)]
        return JSONResponse({
            "name": f.name,
            "index": n,
            "agents": rec.agents,
            "result": rec.result,
            "end_reason": rec.end_reason,
            "moves": moves,
            "actions": rec.actions,
            "movers": [str(s.to_move) for s in states[:-1]],
            "positions": [position_view(s) for s in states],
            "last": [None] + [action_cells(a, s) for a, s in zip(rec.actions, states)],
        })

    async def analyse(self, request: Request) -> JSONResponse:
        data = await _json_object(request, ("analyser", "state", "top", "seed"))
        spec = _spec(_str(data, "analyser"), "analyser")
        if "state" not in data:
            raise _error(400, "field 'state' is required: the position to analyse (docs/rules.md R9)")
        state = _state(data["state"])
        if state.is_over:
            raise _error(400, f"the game is over ({state.end_reason}) in this position: nothing to analyse")
        top = _int(data, "top", TOP_MOVES, 1, MAX_TOP)
        seed = _int(data, "seed", 0, 0, MAX_SEED)
        result = await self._think("analyse", 400, spec=spec, packed=state.to_array(), top=top, seed=seed)
        return JSONResponse({"analyser": spec, "to_move": str(state.to_move), **result})

    async def values(self, request: Request) -> JSONResponse:
        data = await _json_object(request, ("analyser", "states", "game", "from"))
        spec = _spec(_str(data, "analyser"), "analyser")
        if ("states" in data) == ("game" in data):
            raise _error(400, "send exactly one of 'states' (a list of positions, docs/rules.md R9) or 'game' (a game id, with 'from': first ply)")
        if "game" in data:
            game = self._game(_str(data, "game"))
            first = _int(data, "from", 0, 0, len(game.states) - 1)
            states = [s.to_array() for s in game.states[first:first + MAX_STATES_PER_REQUEST]]
        else:
            raw = data["states"]
            if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_STATES_PER_REQUEST:
                raise _error(400, f"field 'states' must be a list of 1..{MAX_STATES_PER_REQUEST} positions (docs/rules.md R9)")
            states = [_state(s, f"states[{i}]").to_array() for i, s in enumerate(raw)]
        red = await self._think("values", 400, spec=spec, states=states)
        return JSONResponse({"analyser": spec, "red_values": red})


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)


async def _server_error(request: Request, exc: Exception) -> JSONResponse:
    first = (str(exc).strip().splitlines() or [""])[0]
    return JSONResponse({"error": f"internal error: {type(exc).__name__}: {first[:300]}"}, status_code=500)


def create_app(config: WebConfig | None = None) -> Starlette:
    """The Starlette application; its worker processes start and stop with it (lifespan)."""
    state = App(config or WebConfig())

    @asynccontextmanager
    async def lifespan(app: Starlette):
        state.thinker = thinking.Thinker(state.config.workers, state.config.think_limit)
        try:
            yield
        finally:
            state.thinker.close()

    routes = [
        Route("/", state.index),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/api/info", state.info),
        Route("/api/games", state.new_game, methods=["POST"]),
        Route("/api/games/{gid}", state.get_game),
        Route("/api/games/{gid}/move", state.move, methods=["POST"]),
        Route("/api/games/{gid}/explain", state.explain),
        Route("/api/games/{gid}/step", state.step, methods=["POST"]),
        Route("/api/games/{gid}/undo", state.undo, methods=["POST"]),
        Route("/api/games/{gid}/resign", state.resign, methods=["POST"]),
        Route("/api/records", state.upload_records, methods=["POST"]),
        Route("/api/records/{rid}", state.get_records),
        Route("/api/records/{rid}/games/{n:int}", state.get_record_game),
        Route("/api/analyse", state.analyse, methods=["POST"]),
        Route("/api/values", state.values, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.state.colony = state
    return app
