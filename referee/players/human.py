"""A person at the terminal as a player: the board, numbered legal moves, and a checked prompt.

It reads the referee's lines like any program, through the protocol module, keeping its own
copy of the state from the `start` and `moves` lines. People are not timed: the clocks bind
programs only. Lines are read from the terminal without a thread (`TerminalInput`), so that
Ctrl-C ends a wait for a move at once.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Awaitable, Callable, Hashable, Sequence

from referee.clock import now
from referee.errors import MoveError, PlayerCrashed, PlayerResigned
from referee.games import Game
from referee.players.base import Player, PlayerSpec, Reply
from referee.protocol import READY, End, EndReason, Go, Moves, Start, parse, start_game

Read = Callable[[str], Awaitable[str]]

HELP = """\
Choose your move: type its number, or the move itself, e.g. {example}.
  moves   list your legal moves again
  board   show the board
  rules   the rules of the game
  help    this text
  quit    leave the match (you lose it)
An empty line asks again."""


class HumanPlayer(Player):
    """Asks a person for each move through `read` (a prompt in, a line out) and `show`."""

    def __init__(self, read: Read, show: Callable[[str], None]) -> None:
        self.spec = PlayerSpec.human()
        self.log_path = None
        self._read = read
        self._show = show
        self._game: Game | None = None
        self._state: Hashable = None
        self._role = 0
        self._left = False

    @property
    def alive(self) -> bool:
        return not self._left

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        return None

    async def request(self, line: str, limit_s: float) -> Reply | None:
        began = now()
        message = parse(line)
        if isinstance(message, Start):
            self._game = start_game(message)
            self._role = self._game.role_index(message.role)
            self._state = self._game.initial_state()
            # Not `referee rules ID`: a rulesheet's id is its file's stem, which that cannot find.
            self._show(
                f"You play {message.role} in {self._game.id}."
                " At your turn, type rules to read its rules, help for more."
            )
            return Reply(READY, 0.0)
        game = self._game
        assert game is not None and isinstance(message, Go)
        legal = list(message.legal)
        self._show(f"\n{game.id}, step {message.step}: {self._legend(game)}")
        self._show(game.render(self._state))
        self._show(f"Your moves (type a number or the move; help for more):\n{move_menu(legal)}")
        while True:
            text = (await self._line(f"{game.roles[self._role]}> ")).strip()
            choice = self._choice(game, text, legal)
            if choice is not None:
                return Reply(choice, (now() - began) * 1000)

    def _choice(self, game: Game, text: str, legal: list[str]) -> str | None:
        """The move `text` chooses, or None after saying what to do instead."""
        command = text.lower()
        if not text:
            return None
        if command == "help":
            self._show(HELP.format(example=legal[0]))
        elif command == "moves":
            self._show(move_menu(legal))
        elif command == "board":
            self._show(game.render(self._state))
        elif command == "rules":
            self._show(game.rules)
        elif command == "quit":
            self._left = True
            raise PlayerResigned("typed quit at the prompt")
        elif text.isdigit():
            if 1 <= int(text) <= len(legal):
                return legal[int(text) - 1]
            self._show(f"no move numbered {text}: choose 1 to {len(legal)}, or type help")
        else:
            try:
                move = game.parse_move(text)
            except MoveError as error:
                self._show(f"{error}; type a number from 1 to {len(legal)}, or help")
                return None
            if move in legal:
                return move
            self._show(f"{move} is not legal now; type moves to see the legal ones")
        return None

    def _legend(self, game: Game) -> str:
        """`you are xcplayer: X; obplayer: O; . empty`: whose marks are whose on the board."""
        if not game.marks:  # a GDL game: its board shows the rulesheet's own words
            return f"you are {game.roles[self._role]}"
        others = [
            f"{role}: {mark}"
            for index, (role, mark) in enumerate(zip(game.roles, game.marks, strict=True))
            if index != self._role
        ]
        mine = f"you are {game.roles[self._role]}: {game.marks[self._role]}"
        return "; ".join([mine, *others, game.legend])

    async def _line(self, prompt: str) -> str:
        try:
            return await self._read(prompt)
        except EOFError:
            # Not a resignation: the end of input is what a closed terminal, or a script's
            # piped moves running out, look like too, and nobody chose to give the match up.
            # The seat is gone, as a program that closed its output is.
            self._left = True
            raise PlayerCrashed("its input ended (Ctrl-D, or the end of piped input)") from None

    async def send(self, line: str, limit_s: float) -> None:
        message = parse(line)
        if self._game is None:
            return
        if isinstance(message, Moves):
            joint = tuple(self._game.parse_move(move) for move in message.joint)
            self._state = self._game.next_state(self._state, joint)
        elif isinstance(message, End) and message.reason is not EndReason.ABORTED:
            self._show(self._game.render(self._state))

    async def close(self) -> None:
        self._left = True


def move_menu(legal: Sequence[str]) -> str:
    """The legal moves numbered from 1: a grid of cells for each kind of placement move
    (`(mark ROW COLUMN)`), a numbered list for the others."""
    cells: dict[str, dict[tuple[str, str], int]] = {}
    listed = []
    for number, move in enumerate(legal, start=1):
        words = move.strip("()").split()
        if move.startswith("(") and len(words) == 3:
            cells.setdefault(words[0], {})[(words[1], words[2])] = number
        else:
            listed.append((number, move))
    parts = []
    for name, grid in cells.items():
        if len(grid) == 1:
            (((row, column), number),) = grid.items()
            listed.append((number, f"({name} {row} {column})"))
            continue
        parts.append(_grid(name, grid))
    parts += [f"{number:>4}  {move}" for number, move in sorted(listed)]
    return "\n".join(parts)


def _grid(name: str, grid: dict[tuple[str, str], int]) -> str:
    rows = sorted({row for row, _ in grid}, key=_natural)
    columns = sorted({column for _, column in grid}, key=_natural)
    width = max(len(text) for text in [*columns, *(str(n) for n in grid.values())]) + 1
    label = max(len(row) for row in rows) + 2
    # A grid of any two arguments (a bid and a tiebreaker too), not only of a board's cells:
    # the header says which argument runs which way.
    header = f"({name} ROW COLUMN), ROW down the side, COLUMN across the top:"
    lines = [header, " " * label + "".join(c.rjust(width) for c in columns)]
    for row in rows:
        numbers = (str(grid[row, column]) if (row, column) in grid else "." for column in columns)
        lines.append(row.rjust(label) + "".join(n.rjust(width) for n in numbers))
    return "\n".join(lines)


def _natural(text: str) -> tuple[str, int]:
    """Sort key: `c2` before `c10`, `b` before `c`."""
    found = re.fullmatch(r"(\D*)(\d+)", text)
    return (found[1], int(found[2])) if found else (text, 0)


class TerminalInput:
    """Lines typed at a terminal (or piped in), read as the event loop finds them ready.

    Not a thread blocked in input(): Ctrl-C ends the wait at once, and nothing is left
    reading standard input when the referee exits.
    """

    def __init__(self, fd: int = 0, show: Callable[[str], None] | None = None) -> None:
        self._fd = fd
        self._show = show or _prompt
        self._buffer = b""
        self._ended = False

    async def line(self, prompt: str) -> str:
        self._show(prompt)
        while b"\n" not in self._buffer and not self._ended:
            await self._readable()
            chunk = os.read(self._fd, 4096)
            self._ended = not chunk
            self._buffer += chunk
        if not self._buffer:
            raise EOFError
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(self._fd, wake)
        except PermissionError:
            return  # a regular file, which epoll cannot watch: its reads never wait
        try:
            await ready
        finally:
            loop.remove_reader(self._fd)


def _prompt(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def terminal_reader() -> Read:
    """How to read a person's lines: from the terminal's file descriptor when standard input
    has one, else (a test's fake input) through input() in a thread."""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return lambda prompt: asyncio.to_thread(input, prompt)
    return TerminalInput(fd).line
