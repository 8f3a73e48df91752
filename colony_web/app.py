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
    POST /api/games/{id}/stop           the searching agent plays its best move so far (its quick first pass)
    POST /api/games/{id}/undo           back to before the last human move (or one ply between agents); a
                                        finished game is recorded as it ended and cannot be undone
    GET  /api/games/{id}/record         the game so far as one games.jsonl record
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

import asyncio
import re
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
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import colony_env as ce
from colony_env.constants import DEFAULT_MAX_PLIES

from colony_training.eval.agent_specs import SPEC_HELP, AgentSpecError, parse_agent_spec
from colony_training.eval.records import GameRecord, RecordError, write_records
from . import schema, store
from . import thinker as thinking
from .store import MAX_FILES as MAX_RECORD_FILES  # noqa: F401  (re-exported: the bound the tests check)
from .store import RecordFile, RecordReader, RecordStore, TooLarge, read_file
from .views import action_cells, explain_click, legal_view, position_view
from .worker import TOP_MOVES

STATIC_DIR = Path(__file__).parent / "static"
HUMAN = "human"
COLOURS = ("red", "blue")
RECORD_FILE = "games.jsonl"
RESIGNATION = "resignation"  # end_reason of a resigned game's record (not a rule: the players stopped)
MAX_JSON_BYTES = 4 << 20  # an analysis of a whole game sends every position (~200 bytes each)
MAX_DRAIN_BYTES = 1 << 30  # of a refused body, read before answering; past this the connection just closes
MAX_ERROR_CHARS = 500
MAX_STATES_PER_REQUEST = 5000
MAX_TOP = 50
MAX_PLIES_LIMIT = 10_000
MAX_SEED = 2**63 - 1
SEED_HIGH = 2**62  # range of the per-move seeds drawn from a game's generator
DEFAULT_WORKERS = 2
DEFAULT_THINK_LIMIT = 120.0  # seconds; a fresh install compiles the search kernels on first use
DEFAULT_MAX_GAMES = 64
# the menus: the shipped networks by name first (agent_specs.SHIPPED_AGENTS), then the built-in agents
SUGGESTED_AGENTS = ("zero", "zero:az:200", "ppo", "ppo:mcts:200", "mcts:200", "greedy", "random")
SUGGESTED_ANALYSERS = ("zero", "zero:az:200", "ppo", "ppo:mcts:200", "mcts:200")


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
    """The body, at most `limit` bytes (a 413 beyond; `DrainBodies` reads the rest, so the client gets it)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _error(413, f"request body of {int(declared)} bytes is over the limit of {limit} bytes")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _error(413, f"request body is over the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise _error(400, "the client went away before its request body arrived") from None
    return b"".join(chunks)


async def _parsed(request: Request, body: schema.Body) -> dict[str, Any]:
    """The request's JSON body checked against its endpoint's schema (a one-line 400 if it does not fit)."""
    raw = await _body(request, MAX_JSON_BYTES)
    try:
        return body.check(schema.parse_json(raw) if raw.strip() else {})
    except schema.SchemaError as e:
        raise _error(400, str(e)) from None


def _spec(text: str, what: str) -> str:
    """Check the syntax of an agent spec here (cheap), and that a checkpoint is a readable file; the worker builds it."""
    try:
        parsed = parse_agent_spec(text)
    except AgentSpecError as e:
        raise _error(400, f"{what}: {e}") from None
    if parsed.kind == "checkpoint" and not _readable(parsed.path):
        # one wording for a missing and an unreadable path: a reply never tells which files exist
        raise _error(400, f"{what}: cannot load checkpoint {parsed.path[:200]!r}: no readable checkpoint file at that "
                          "path (expected a .pt file written by colony-train or colony-zero)")
    return parsed.text


QUICK_SHARE = 8  # a search's quick first pass has 1/8 of its simulations (Stop plays its move)
_SIMULATIONS = re.compile(r"(^mcts:|:mcts:|:az:)(\d+)", re.IGNORECASE)


def quick_spec(spec: str) -> str | None:
    """The same search with QUICK_SHARE times fewer simulations (`zero:az:200` -> `zero:az:25`), or None
    for an agent that does not search."""
    match = None
    for match in _SIMULATIONS.finditer(spec):  # the last one: a checkpoint's path may hold ':mcts:' too
        pass
    if match is None:
        return None
    fewer = max(1, int(match.group(2)) // QUICK_SHARE)
    return spec[:match.start(2)] + str(fewer) + spec[match.end(2):]


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return Path(path).is_file()
    except (OSError, ValueError):  # missing, unreadable, a folder, a name the OS refuses
        return False


PLAYER = schema.Str()
NEW_GAME = schema.Body({"red": PLAYER, "blue": PLAYER, "seed": schema.Int(0, MAX_SEED, nullable=True),
                        "max_plies": schema.Int(1, MAX_PLIES_LIMIT), "state": schema.State()})
MOVE = schema.Body({"action": schema.Int(0, ce.N_ACTIONS - 1), "move": schema.Str(max_len=40)})
EMPTY = schema.Body({})
RESIGN = schema.Body({"colour": schema.Str(choices=COLOURS)}, {"colour": "field 'colour' is required: 'red' or 'blue'"})
ANALYSER_MISSING = "field 'analyser' must be a non-empty string: an agent spec (e.g. 'zero', 'zero:az:200', 'mcts:200')"
ANALYSE = schema.Body(
    {"analyser": PLAYER, "state": schema.State(), "top": schema.Int(1, MAX_TOP), "seed": schema.Int(0, MAX_SEED)},
    {"analyser": ANALYSER_MISSING, "state": "field 'state' is required: the position to analyse (docs/rules.md R9)"},
)
VALUES = schema.Body(
    {"analyser": PLAYER, "states": schema.ListOf(schema.State(), 1, MAX_STATES_PER_REQUEST, "positions (docs/rules.md R9)"),
     "game": schema.Str(max_len=64), "from": schema.Int(0, MAX_PLIES_LIMIT)},
    {"analyser": ANALYSER_MISSING},
)


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
        self.best_so_far: int | None = None  # while a search thinks: the move of its first, quick pass
        self.stop: asyncio.Event | None = None  # set by the player's Stop, or to cancel the search
        self.cancelled = False  # the search was stopped to undo or resign: it plays nothing
        self.idle: asyncio.Event | None = None  # set when the step in flight has ended
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
        if self.over:  # its record is written: taking moves back would leave it there, or write a second one
            how = f"{self.resigned} resigned" if self.resigned else self.state.end_reason
            raise _error(409, f"the game is over ({how}) and recorded as it ended; start a new game, "
                              "or study it in the Replay tab")
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
            best_so_far=None if self.best_so_far is None else ce.action_to_str(self.best_so_far, state),
            stoppable=self.thinking and self.best_so_far is not None,
            resigned=self.resigned,
            legal=legal_view(state) if self.human_to_move() and not self.thinking else None,
            saved=None if self.saved is None else str(self.saved),
            save_error=self.save_error,
        )
        return out


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
        self.records = RecordStore()
        self.load_errors: list[str] = []
        self.thinker: thinking.Thinker | None = None
        for path in _record_paths(config.records):
            try:
                self.records.add(read_file(path, secrets.token_hex(6)))
            except RecordError as e:
                self.load_errors.append(str(e))
                print(f"colony-web: warning: {e}", file=sys.stderr)

    def interrupt(self) -> None:
        """The server is stopping: end the searches in flight, so their requests answer (a 503) at once."""
        if self.thinker is not None:
            self.thinker.interrupt()

    async def _think(self, job: str, bad_input_status: int, **kwargs: Any) -> Any:
        """A worker job's result, its failures as HTTP errors (`thinking.Stopped` passes through)."""
        assert self.thinker is not None, "the thinker starts with the app (lifespan)"
        try:
            return await self.thinker.run(job, **kwargs)
        except thinking.ThinkTimeout as e:
            raise _error(504, str(e)) from None
        except thinking.WorkerCrashed as e:
            raise _error(502, str(e)) from None
        except thinking.ThinkerClosed as e:
            raise _error(503, str(e)) from None
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
            "analysers": [*SUGGESTED_ANALYSERS, *(f"checkpoint:{c}" for c in checkpoints),
                          *(f"checkpoint:{c}:mcts:200" for c in checkpoints)],
            "records": self.records.summaries(),
            "load_errors": self.load_errors,
            "think_limit": self.config.think_limit,
            "out": str(self.config.out_dir / RECORD_FILE) if self.config.save_games else None,
        })

    async def new_game(self, request: Request) -> JSONResponse:
        data = await _parsed(request, NEW_GAME)
        players = {}
        for colour in COLOURS:
            text = data.get(colour, HUMAN)
            players[colour] = HUMAN if text.lower() == HUMAN else _spec(text, f"{colour} player")
        seed = data.get("seed")
        if "state" in data:  # a set-up position instead of a seeded start (R9); it carries its own max_plies
            if "max_plies" in data:
                raise _error(400, "send 'max_plies' or 'state', not both: a state has its own max_plies")
            initial = data["state"]
            if initial.is_over:
                raise _error(400, f"the game is over ({initial.end_reason}) in this position; nothing to play")
        else:
            initial = ce.new_game(seed, max_plies=data.get("max_plies", DEFAULT_MAX_PLIES))
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
        data = await _parsed(request, MOVE)
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
            action = data["action"]
        else:
            try:
                action = ce.parse_action(data["move"], game.state)
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
        await _parsed(request, EMPTY)
        if game.over:
            raise _error(409, f"the game is over ({game.view()['end_reason']}); start a new game")
        mover = str(game.state.to_move)
        spec = game.player(mover)
        if game.thinking:
            raise _error(409, f"{mover} ({spec}) is already thinking")
        if spec == HUMAN:
            raise _error(409, f"{mover} is yours to move: click a satellite and a target")
        game.thinking, game.best_so_far, game.stop, game.cancelled = True, None, asyncio.Event(), False
        game.idle = asyncio.Event()
        try:
            before = game.state
            seed = int(game.rng.integers(SEED_HIGH))
            quick = quick_spec(spec)
            action = None
            try:
                if quick is not None:  # a search: a short pass first, so that Stop has a move to play
                    game.best_so_far = await self._think("act", 502, spec=quick, packed=before.to_array(), seed=seed,
                                                         stop=game.stop)
                action = await self._think("act", 502, spec=spec, packed=before.to_array(), seed=seed, stop=game.stop)
            except thinking.Stopped:  # Stop plays the quick pass's move; an undo or a resignation, nothing
                action = None if game.cancelled else game.best_so_far
            if action is not None:
                try:
                    game.play(int(action))
                except ce.IllegalActionError as e:  # an agent must never do this; say so instead of crashing
                    raise _error(502, f"agent {spec} chose an illegal action: {e}") from None
        finally:
            game.thinking, game.best_so_far, game.stop = False, None, None
            game.idle.set()
        self._save(game)
        return JSONResponse(game.view())

    async def stop(self, request: Request) -> JSONResponse:
        """Stop the search of the agent to move: it plays the best move found so far (its quick pass)."""
        game = self._game(request.path_params["gid"])
        await _parsed(request, EMPTY)
        if not game.thinking or game.stop is None:
            raise _error(409, "nothing to stop: no agent is thinking")
        if game.best_so_far is None:
            raise _error(409, "the search has no move yet (its first, short pass is still running); stop again in a moment")
        game.stop.set()
        return JSONResponse({"stopping": True, "plays": ce.action_to_str(game.best_so_far, game.state)})

    async def _cancel_thinking(self, game: Game) -> None:
        """Stop the agent's search without its move (the player undoes or resigns meanwhile)."""
        if game.thinking and game.stop is not None and game.idle is not None:
            game.cancelled = True
            game.stop.set()
            await game.idle.wait()

    async def undo(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        await _parsed(request, EMPTY)
        if not game.over and any(game.player(c) == HUMAN for c in COLOURS):
            await self._cancel_thinking(game)  # undo while the agent thinks: its search ends, unplayed
        game.undo()
        return JSONResponse(game.view())

    async def get_record(self, request: Request) -> JSONResponse:
        """The game so far as one games.jsonl record (the page's Download)."""
        return JSONResponse(self._game(request.path_params["gid"]).record().to_json())

    async def resign(self, request: Request) -> JSONResponse:
        game = self._game(request.path_params["gid"])
        colour = (await _parsed(request, RESIGN))["colour"]
        if game.over:
            raise _error(409, "the game is already over")
        if game.player(colour) != HUMAN:
            raise _error(409, f"{colour} is played by {game.player(colour)}; only a human side can resign")
        await self._cancel_thinking(game)  # resigning while the agent thinks: its search ends, unplayed
        game.resigned = colour
        self._save(game)
        return JSONResponse(game.view())

    async def upload_records(self, request: Request) -> JSONResponse:
        name = (request.query_params.get("name") or "uploaded.jsonl").strip()[:200] or "uploaded.jsonl"
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > store.MAX_UPLOAD_BYTES:
            raise _error(413, f"{name} ({int(declared)} bytes) is over the limit of {store.MAX_UPLOAD_BYTES} bytes "
                              "for one record file")
        reader = RecordReader(name)
        try:  # line by line as the text arrives: the text itself is never held
            async for chunk in request.stream():
                reader.feed(chunk)
            parsed = reader.finish(secrets.token_hex(6))
        except TooLarge as e:
            raise _error(413, str(e)) from None
        except ClientDisconnect:
            raise _error(400, "the client went away before its request body arrived") from None
        except RecordError as e:
            raise _error(400, str(e)) from None
        same = self.records.same(parsed.name, parsed.digest)
        if same is not None:  # the same file uploaded again: one entry in the menu
            return JSONResponse(same.summary(), status_code=200)
        return JSONResponse(self.records.add(parsed).summary(), status_code=201)

    def _record_file(self, rid: str) -> RecordFile:
        f = self.records.get(rid)
        if f is None:
            raise _error(404, f"no record file {rid[:40]!r} on this server; upload it again")
        return f

    async def get_records(self, request: Request) -> JSONResponse:
        return JSONResponse(self._record_file(request.path_params["rid"]).summary())

    async def get_record_game(self, request: Request) -> JSONResponse:
        f = self._record_file(request.path_params["rid"])
        n = request.path_params["n"]
        if not 0 <= n < len(f):
            raise _error(404, f"game {n} is out of range: {f.name} holds games 0..{len(f) - 1}")
        rec = f.game(n)
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
        data = await _parsed(request, ANALYSE)
        spec = _spec(data["analyser"], "analyser")
        state = data["state"]
        if state.is_over:
            raise _error(400, f"the game is over ({state.end_reason}) in this position: nothing to analyse")
        top, seed = data.get("top", TOP_MOVES), data.get("seed", 0)
        result = await self._think("analyse", 400, spec=spec, packed=state.to_array(), top=top, seed=seed)
        return JSONResponse({"analyser": spec, "to_move": str(state.to_move), **result})

    async def values(self, request: Request) -> JSONResponse:
        data = await _parsed(request, VALUES)
        spec = _spec(data["analyser"], "analyser")
        if ("states" in data) == ("game" in data):
            raise _error(400, "send exactly one of 'states' (a list of positions, docs/rules.md R9) or 'game' (a game id, with 'from': first ply)")
        if "game" in data:
            game = self._game(data["game"])
            first = data.get("from", 0)
            if first > len(game.states) - 1:
                raise _error(400, f"field 'from' must be an integer in 0..{len(game.states) - 1} (a ply of this game), got {first}")
            states = [s.to_array() for s in game.states[first:first + MAX_STATES_PER_REQUEST]]
        else:
            if "from" in data:
                raise _error(400, "field 'from' goes with 'game' (the first ply to evaluate), not with 'states'")
            states = [s.to_array() for s in data["states"]]
        red = await self._think("values", 400, spec=spec, states=states)
        return JSONResponse({"analyser": spec, "red_values": red})


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    line = " ".join(str(exc.detail).split())  # one line, whatever a message quoted
    return JSONResponse({"error": line if len(line) <= MAX_ERROR_CHARS else line[:MAX_ERROR_CHARS] + "..."},
                        status_code=exc.status_code)


class DrainBodies:
    """ASGI middleware: read what is left of a request body before the response starts.

    A server that answers early (a 413, a 404) and closes the connection with the client's bytes
    still unread makes the client's system see a reset instead of the answer.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        done = False

        async def tracked() -> dict:
            nonlocal done
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                done = True
            return message

        async def drained_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                left = MAX_DRAIN_BYTES
                while not done and left > 0:
                    left -= len((await tracked()).get("body", b""))
            await send(message)

        await self.app(scope, tracked, drained_send)


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
        Route("/api/games/{gid}/stop", state.stop, methods=["POST"]),
        Route("/api/games/{gid}/undo", state.undo, methods=["POST"]),
        Route("/api/games/{gid}/record", state.get_record),
        Route("/api/games/{gid}/resign", state.resign, methods=["POST"]),
        Route("/api/records", state.upload_records, methods=["POST"]),
        Route("/api/records/{rid}", state.get_records),
        Route("/api/records/{rid}/games/{n:int}", state.get_record_game),
        Route("/api/analyse", state.analyse, methods=["POST"]),
        Route("/api/values", state.values, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(DrainBodies)],
                    exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.state.colony = state
    return app
