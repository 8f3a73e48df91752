"""`colony-play`: a human plays Colony against any agent spec in the terminal.

    colony-play greedy                 # you are red (you move first)
    colony-play mcts:200 --colour blue --seed 7

Type moves in human notation (`d10-d7`, displacement `c4-g4>h3`, `pass`); `moves` lists
the legal ones, `undo` takes back your last move (and the agent's reply), `board`
redraws, `help` shows the commands, `quit` ends. An illegal move is explained by the
engine's reason (rule number included) and nothing changes. The game is saved as a
JSON-lines record at the end (`colony-replay FILE` shows it again).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import colony_env as ce
from colony_env.agents import Agent
from colony_env.constants import DEFAULT_MAX_PLIES, MAX_PLIES_LIMIT, PASS_ACTION

from ..cli import console_script, report_error
from ..config import SEED_MAX
from ..runlog import output_file_problem
from . import agent_specs
from .agent_specs import AgentSpecError, make_agent
from .records import GameRecord, board_display, write_records

HELP = (
    "commands: a move like 'd10-d7', a displacement like 'c4-g4>h3', 'pass' (only when nothing else is legal), "
    "'moves' (list legal moves), 'undo', 'board', 'help', 'quit'"
)
DEFAULT_RECORD_DIR = Path("runs") / "games"
COLOURS = ("red", "blue", "random")
MAX_INPUT_CHARS = 200
"""Longer input lines are refused without echoing them (no move or command is near this long)."""


# Placeholders of the spec table in agent_specs' docstring, and what the examples put in their place.
EXAMPLE_VALUES = (("PATH", "checkpoints/colony_ppo.pt"), ("OPT...", "puct"), ("SUFFIX", "az:200"), ("N", "200"),
                  ("C", "2"))
_SPEC_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.*?)\s*\|\s*$")


def spec_forms() -> list[tuple[str, str, str]]:
    """(form, meaning, example) for every agent-spec form, read from the table in
    `colony_training.eval.agent_specs`' docstring, so the help can never miss a form listed there."""
    forms = []
    for line in (agent_specs.__doc__ or "").splitlines():
        m = _SPEC_ROW.match(line.strip())
        if m and m.group(1) != "spec":
            example = m.group(1)
            for placeholder, value in EXAMPLE_VALUES:
                example = example.replace(placeholder, value)
            forms.append((m.group(1), m.group(2).replace("`", ""), example))
    return forms


def spec_epilog() -> str:
    lines = ["agent specs (the same strings colony-eval takes):"]
    for form, meaning, example in spec_forms():
        lines.append(f"  {form}")
        lines.append(f"      {meaning}")
        if example != form:
            lines.append(f"      e.g. colony-play {example}")
    lines.append("In the game type 'moves' to list the legal moves, 'help' for the commands.")
    return "\n".join(lines)


def legal_moves_text(state: ce.GameState) -> str:
    """The legal actions in notation, one line per moving satellite."""
    by_source: dict[str, list[str]] = {}
    for a in ce.legal_actions(state):
        text = ce.action_to_str(int(a), state)
        by_source.setdefault(text.split("-")[0], []).append(text)
    lines = [f"{len(ce.legal_actions(state))} legal moves:"]
    for src in sorted(by_source, key=lambda s: ce.parse_cell(s) if s != "pass" else -1):
        lines.append(f"  {src}: " + " ".join(by_source[src]))
    return "\n".join(lines)


class PlaySession:
    """One game between a human (through `read`/`write`) and an agent; testable without a terminal."""

    def __init__(
        self,
        agent: Agent,
        human: ce.Colour,
        seed: int | None = None,
        max_plies: int = DEFAULT_MAX_PLIES,
        read: Callable[[str], str] = input,
        write: Callable[[str], None] = print,
    ) -> None:
        self.agent = agent
        self.human = human
        self.seed = seed
        self.initial = ce.new_game(seed, max_plies=max_plies)
        self.rng = np.random.default_rng(None if seed is None else [seed, 1])
        self.read = read
        self.write = write
        self.states = [self.initial]
        self.actions: list[int] = []
        self.movers: list[ce.Colour] = []
        self.quit = False

    @property
    def state(self) -> ce.GameState:
        return self.states[-1]

    def _play(self, action: int) -> None:
        after = ce.apply_action(self.state, action)  # first: an illegal action must leave the history untouched
        self.movers.append(self.state.to_move)
        self.states.append(after)
        self.actions.append(int(action))

    def undo(self) -> bool:
        """Take back everything since (and including) the human's last action."""
        if self.human not in self.movers:
            return False
        while self.movers:
            mover = self.movers.pop()
            self.actions.pop()
            self.states.pop()
            if mover == self.human:
                break
        return True

    def human_turn(self) -> None:
        state = self.state
        legal = ce.legal_actions(state)
        if len(legal) == 1 and int(legal[0]) == PASS_ACTION:
            self.write(f"{state.to_move} (you) has no legal move and passes (R4.3)")
            self._play(PASS_ACTION)
            return
        while True:
            try:
                text = self.read(f"{state.to_move} (you) > ").strip()
            except EOFError:
                self.quit = True
                return
            cmd = text.lower()
            if not cmd:
                continue
            if len(text) > MAX_INPUT_CHARS:
                self.write(f"that line has {len(text)} characters, more than any move or command; type 'help' for the commands")
                continue
            if cmd in ("quit", "exit", "resign", "q"):
                self.quit = True
                return
            if cmd in ("help", "h"):
                self.write(HELP)
            elif cmd in ("moves", "legal", "?", "m"):
                self.write(legal_moves_text(state))
            elif cmd == "board":
                self.write(board_display(state))
            elif cmd in ("undo", "u"):
                if self.undo():
                    self.write("undone: your last move and the replies to it")
                    self.write(board_display(self.state))
                    return
                self.write("nothing to undo: you have not moved yet")
            else:
                try:
                    action = ce.parse_action(text, state)
                    self._play(action)
                    return
                except ce.IllegalActionError as e:
                    self.write(f"{e}; type 'moves' for the legal ones")
                except ValueError as e:  # unreadable text -> the commands; a cell out of reach -> the legal moves
                    unreadable = str(e).startswith("cannot read") or "is not a cell" in str(e)
                    self.write(f"{e}; type " + ("'help' for the commands" if unreadable else "'moves' for the legal ones"))

    def agent_turn(self) -> None:
        state = self.state
        action = self.agent.act(state, self.rng)
        self.write(f"{state.to_move} ({self.agent.name}) plays {ce.action_to_str(action, state)}")
        self._play(action)

    def run(self) -> GameRecord:
        """Play to the end (or until the human quits); the game's record."""
        self.write(f"you are {self.human}, {self.agent.name} is {self.human.opponent}; {HELP}")
        self.write(board_display(self.state))
        while not self.state.is_over and not self.quit:
            if self.state.to_move == self.human:
                self.human_turn()
            else:
                self.agent_turn()
                self.write(board_display(self.state))
        if self.quit:
            self.write("game abandoned")
        else:
            w = self.state.winner
            verdict = "draw" if w is None else ("you win" if w == self.human else f"{self.agent.name} wins")
            self.write(f"game over ({self.state.end_reason}): {verdict}")
        names = {str(self.human): "human", str(self.human.opponent): self.agent.name}
        meta = {"seed": self.seed, "human": str(self.human), "abandoned": self.quit}
        return GameRecord.from_game(self.initial, self.actions, names, meta)


@console_script
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="colony-play", description="Play Colony against an agent in the terminal.",
                                     epilog=spec_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agent", help="the opponent's agent spec, e.g. greedy, mcts:200 or "
                        "checkpoint:checkpoints/colony_ppo.pt:mcts:200 (all forms below)")
    parser.add_argument("--colour", choices=COLOURS, default="red", help="your colour (red moves first; default red)")
    parser.add_argument("--seed", type=int, default=None, help="setup seed (default: random)")
    parser.add_argument("--max-plies", type=int, default=DEFAULT_MAX_PLIES, help="ply limit (R6.2)")
    parser.add_argument("--record", type=Path, default=None, help="record file to append the game to "
                        "(default runs/games/play-<time>.jsonl)")
    parser.add_argument("--no-record", action="store_true", help="do not save the game")
    args = parser.parse_args(argv)
    record_path = None if args.no_record else (args.record or DEFAULT_RECORD_DIR / f"play-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    try:
        if args.seed is not None and not 0 <= args.seed <= SEED_MAX:
            raise AgentSpecError(f"--seed must be in 0..{SEED_MAX}, got {args.seed}")
        if not 1 <= args.max_plies <= MAX_PLIES_LIMIT:
            raise AgentSpecError(f"--max-plies must be in 1..{MAX_PLIES_LIMIT}, got {args.max_plies}")
        problem = None if record_path is None else output_file_problem(record_path)
        if problem:  # found now, not after the game
            raise AgentSpecError(f"--record: {problem}")
        agent = make_agent(args.agent)
    except AgentSpecError as e:
        return report_error("colony-play", str(e))
    colour = args.colour
    if colour == "random":
        colour = ("red", "blue")[int(np.random.default_rng(args.seed).integers(2))]
    session = PlaySession(agent, ce.RED if colour == "red" else ce.BLUE, seed=args.seed, max_plies=args.max_plies)
    try:
        record = session.run()
    except KeyboardInterrupt:
        print("\ngame abandoned")
        session.quit = True
        names = {str(session.human): "human", str(session.human.opponent): agent.name}
        record = GameRecord.from_game(session.initial, session.actions, names, {"seed": args.seed, "abandoned": True})
    if record_path is not None:
        return _save_record(record_path, record)
    return 0


def _save_record(path: Path, record: GameRecord) -> int:
    """Append the game to `path`; if that fails after all (disk full), save it elsewhere rather than lose it."""
    try:
        write_records(path, [record], append=True)
        print(f"saved the game to {path} (colony-replay {path})")
        return 0
    except OSError as e:
        fallback = Path(tempfile.gettempdir()) / f"colony-play-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
        try:
            write_records(fallback, [record], append=True)
            where = f"saved it to {fallback} instead"
        except OSError:
            where = "and could not save it anywhere; its moves: " + " ".join(record.moves)
        print(f"colony-play: error: cannot write {str(path)!r} ({e.strerror or type(e).__name__}); {where}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
