"""Protocol version 3 (`docs/protocol.md`): every line built and parsed here, and framing.

The referee, the built-in players and the person at the terminal all go through this
module, so that the syntax of a line has one home. A message is a dataclass whose `str()`
is its line; `parse` turns a line back into one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from referee.games import Game

# Version 2 adds the rulesheet to `start` for a GDL game; built-in games' lines are version 1's.
# Version 3 tells a seat of a game of imperfect information (GDL-II) its own move and its
# percepts after a step (`sees`), never the others' moves; other games' lines are version 2's.
VERSION = 3
LINE_LIMIT = 64 * 1024
# What a player may write for one request, its answer included (comments, blank lines, and
# what it left in its pipe since the last request): more is a protocol fault of that request.
OUTPUT_BUDGET_BYTES = 4 * LINE_LIMIT
OUTPUT_BUDGET_LINES = 4096
# The rest of a line already found over-long is skipped up to this, apart from the budget.
SKIP_LIMIT = 256 * LINE_LIMIT
READY = "ready"
COMMENT = "#"
# The tokens of a list of moves: a move is an atom or a list, whose arguments may be lists
# in turn (GDL function terms), nested as deep as the rules nest them.
_TOKEN = re.compile(r"[()]|[^\s()]+")
# The moves of a list nested three deep at most, as nearly all are: one pass in C, where the
# tokens are a Python loop (a player's parse of a `go` line of hex's 121 moves took 3x longer).
_SHALLOW_MOVE = re.compile(r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|[^\s()]+")


class EndReason(StrEnum):
    """Why a match ended: the one word an `end` line gives."""

    TERMINAL = "terminal"
    FORFEIT = "forfeit"
    ABORTED = "aborted"


class MessageError(ValueError):
    """A line of a known message type whose fields are not what the protocol says."""


@dataclass(frozen=True)
class Start:
    """A new match begins; the player answers `ready`. A GDL game's rules come on the line."""

    match_id: str
    game_id: str
    role: str
    start_ms: int
    play_ms: int
    rules: str | None = None

    def __str__(self) -> str:
        line = f"start {self.match_id} {self.game_id} {self.role} {self.start_ms} {self.play_ms}"
        return f"{line} {self.rules}" if self.rules else line


@dataclass(frozen=True)
class Go:
    """The player must choose one of `legal` for `step` within `ms`."""

    step: int
    ms: int
    legal: tuple[str, ...]

    def __str__(self) -> str:
        return f"go {self.step} {self.ms} {' '.join(self.legal)}"


@dataclass(frozen=True)
class Moves:
    """The joint move applied at `step`, in role order."""

    step: int
    joint: tuple[str, ...]

    def __str__(self) -> str:
        return f"moves {self.step} {' '.join(self.joint)}"


@dataclass(frozen=True)
class Sees:
    """What one seat of a game of imperfect information is told of `step`: its own move,
    and what it perceives, as the rules say (none, often)."""

    step: int
    move: str
    percepts: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(("sees", str(self.step), self.move, *self.percepts))


@dataclass(frozen=True)
class End:
    """The match is over: the goals in role order, and why."""

    goals: tuple[int, ...]
    reason: EndReason

    def __str__(self) -> str:
        return f"end {' '.join(str(goal) for goal in self.goals)} {self.reason}"


@dataclass(frozen=True)
class Quit:
    """The referee is done with this process."""

    def __str__(self) -> str:
        return "quit"


Message = Start | Go | Moves | Sees | End | Quit


def start_rules(game: Game) -> str | None:
    """What `start` carries after its five fields: a GDL game's rulesheet on one line."""
    # Imported here, not above: a player that only parses lines (the built-in random one)
    # starts without loading every engine and the GDL reasoner, a good part of its start.
    from referee.games import GdlGame

    return game.one_line if isinstance(game, GdlGame) else None


def start_game(message: Start) -> Game:
    """The game a `start` line is for: the rulesheet it carries, else the built-in game it names."""
    from referee.games import get_game, load_text  # as in start_rules

    return load_text(message.rules, message.game_id) if message.rules else get_game(message.game_id)


def split_moves(text: str) -> list[str]:
    """The moves in a list of moves on one line, as the protocol splits them: each atom or
    balanced list at the top level (an unbalanced rest is no move)."""
    found = _SHALLOW_MOVE.findall(text)
    # Every parenthesis in a move: each list was balanced and shallow, and matched whole (an
    # atom outside the lists is always matched).
    joined = "".join(found)
    if joined.count("(") == text.count("(") and joined.count(")") == text.count(")"):
        return found
    moves: list[str] = []
    depth = 0
    begin = 0
    for token in _TOKEN.finditer(text):
        if token.group() == "(":
            if depth == 0:
                begin = token.start()
            depth += 1
        elif token.group() == ")":
            if depth:
                depth -= 1
                if depth == 0:
                    moves.append(text[begin : token.end()])
        elif depth == 0:
            moves.append(token.group())
    return moves


def parse(line: str) -> Message | None:
    """The message a referee line carries; None for a blank line or an unknown message type.

    MessageError when a known type has fields the protocol does not allow.
    """
    kind, _, rest = line.strip().partition(" ")
    words = rest.split()
    try:
        if kind == "start" and len(words) >= 5:
            rules = rest.split(maxsplit=5)[5] if len(words) > 5 else None
            return Start(words[0], words[1], words[2], int(words[3]), int(words[4]), rules)
        if kind == "go" and len(words) >= 2:
            return Go(int(words[0]), int(words[1]), tuple(split_moves(rest.split(maxsplit=2)[2])))
        if kind == "moves" and words:
            return Moves(int(words[0]), tuple(split_moves(rest.split(maxsplit=1)[1])))
        if kind == "sees" and len(words) >= 2:
            move, *percepts = split_moves(rest.split(maxsplit=1)[1])
            return Sees(int(words[0]), move, tuple(percepts))
        if kind == "end" and words:
            return End(tuple(int(goal) for goal in words[:-1]), EndReason(words[-1]))
        if kind == "quit" and not words:
            return Quit()
    except (ValueError, IndexError):
        raise MessageError(f"malformed {kind} line: {line.strip()!r}") from None
    if kind in ("start", "go", "moves", "sees", "end", "quit"):
        raise MessageError(f"malformed {kind} line: {line.strip()!r}")
    return None


def is_comment(answer: str) -> bool:
    """A player line that the referee keeps in the log and otherwise ignores."""
    return answer.startswith(COMMENT)


def is_ready(answer: str) -> bool:
    """Whether an answer to `start` says ready (any case, spaces around it allowed)."""
    return answer.strip().lower() == READY


@dataclass(frozen=True)
class Line:
    """One line a player wrote: its text, or None with the problem when the protocol forbids it."""

    text: str | None
    problem: str = ""


class LineReader:
    """Splits a player's output into lines as they arrive: UTF-8, `\\n` (or `\\r\\n`), 64 KiB.

    A line over the limit is reported once, as soon as it is over, and the rest of it is
    skipped: a player cannot make the referee hold more than one line's worth of its output.
    """

    def __init__(self, limit: int = LINE_LIMIT) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._overlong = False

    @property
    def partial(self) -> bool:
        """Whether part of a line has arrived without its end."""
        return bool(self._buffer) or self._overlong

    @property
    def skipping(self) -> bool:
        """Whether the rest of a line already reported as over-long is being skipped."""
        return self._overlong

    def reset(self) -> None:
        """Forget a line begun and never ended: it is not the start of the next one."""
        self._buffer.clear()
        self._overlong = False

    def feed(self, data: bytes) -> list[Line]:
        """The lines that `data` completes, in order."""
        lines = []
        pieces = data.split(b"\n")
        for index, piece in enumerate(pieces):
            complete = index < len(pieces) - 1
            if not self._overlong:
                self._buffer += piece
                if len(self._buffer.rstrip(b"\r")) > self._limit:
                    self._overlong = True
                    self._buffer.clear()
                    lines.append(Line(None, f"a line longer than {self._limit // 1024} KiB"))
            if complete:
                if not self._overlong:
                    lines.append(_decode(bytes(self._buffer)))
                self._buffer.clear()
                self._overlong = False
        return lines


def _decode(raw: bytes) -> Line:
    try:
        return Line(raw.decode("utf-8").rstrip("\r"))
    except UnicodeDecodeError:
        return Line(None, "a line that is not UTF-8")
