"""Opening books: files of openings, one a line, each the joint moves of a game's first
steps; every move checked legal when the book is read, so that a bad line is found before a
tournament starts, not in its thousandth match.

A line is the steps of one opening separated by `;`, each step the moves of every role in
role order, as a `moves` line gives them (`noop` for a role that has no choice), in any case
and spacing. `#` starts a comment; blank lines are skipped. The format is documented in
`docs/tournaments.md` (Openings).
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from referee.errors import ConfigError, GameFault
from referee.games import Game, canonical_spelling
from referee.protocol import split_moves
from referee.records.files import read_text
from referee.records.transcript import BookLine

# Where the books that ship with the built-in games are, one `<game id>.txt` each.
BOOKS = Path(__file__).resolve().parent.parent / "games" / "books"
# What `openings: built-in` names: the book of the game's own.
BUILT_IN = "built-in"
# A book is a file a person writes: bounds no real one comes near.
MAX_BOOK_BYTES = 4 * 1024 * 1024
MAX_BOOK_LINES = 100_000
# A step's moves are split at this.
STEP_SEPARATOR = ";"


class Order(StrEnum):
    """Which line of a book a round plays: the lines as the file has them, or shuffled by the
    tournament's seed."""

    IN_ORDER = "in-order"
    SHUFFLED = "shuffled"


@dataclass(frozen=True)
class Book:
    """A game's openings, in the order they are played."""

    source: str
    lines: tuple[BookLine, ...]

    def line_for(self, number: int) -> BookLine:
        """The opening of the `number`th round (from 0), or of a pairing that has no round (a
        ladder's, by its seed): the book's lines over again after its last."""
        return self.lines[number % len(self.lines)]


def read_book(path: Path, shown: str, game: Game, order: Order, seed: int) -> Book:
    """The book at `path` (named `shown` in errors and records) for `game`, its lines in
    `order` (shuffled by `seed`); ConfigError naming the file, line and step of its first
    bad move."""
    text = read_text(path, ConfigError, MAX_BOOK_BYTES)
    lines: list[BookLine] = []
    for number, raw in enumerate(text.splitlines(), 1):
        body = raw.partition("#")[0].strip()
        if not body:
            continue
        if len(lines) == MAX_BOOK_LINES:
            raise ConfigError(f"{shown}:{number}: more than {MAX_BOOK_LINES} openings")
        lines.append(BookLine(shown, number, _steps(body, game, f"{shown}:{number}")))
    if not lines:
        raise ConfigError(f"{shown}: no openings in the file (one a line, steps split by ';')")
    if order is Order.SHUFFLED:
        random.Random(f"book {seed}").shuffle(lines)
    return Book(shown, tuple(lines))


def built_in_book(game: Game, order: Order, seed: int) -> Book | None:
    """The book that ships with a built-in game; None for a game that has none."""
    path = BOOKS / f"{game.id}.txt"
    if not path.is_file():
        return None
    return read_book(path, f"{BUILT_IN}:{game.id}.txt", game, order, seed)


def _steps(body: str, game: Game, where: str) -> list[list[str]]:
    """The joint moves of one line, each checked legal in the state the ones before reach."""
    state: Hashable = game.initial_state()
    steps: list[list[str]] = []
    for number, text in enumerate(body.split(STEP_SEPARATOR), 1):
        at = f"{where}: step {number}"
        try:
            if game.is_terminal(state):
                raise ConfigError(f"{at}: the game is over after step {number - 1}")
            if text.count("(") != text.count(")"):
                raise ConfigError(f"{at}: its parentheses do not balance: {text.strip()}")
            moves = split_moves(text)
            if len(moves) != len(game.roles):
                raise ConfigError(
                    f"{at}: {len(moves)} moves for {game.id}'s {len(game.roles)} roles"
                    f" ({', '.join(game.roles)}, in that order; noop for a role with no choice)"
                )
            joint = []
            for role, move in enumerate(moves):
                legal = game.legal_moves(state, role)
                found = next((m for m in legal if m == canonical_spelling(move)), None)
                if found is None:
                    shown = ", ".join(legal[:8]) + (", ..." if len(legal) > 8 else "")
                    raise ConfigError(
                        f"{at}: {move} is not a legal move of {game.roles[role]} there"
                        f" (legal: {shown})"
                    )
                joint.append(found)
            state = game.next_state(state, tuple(joint))
        except GameFault as fault:
            raise ConfigError(f"{at}: {fault}") from None
        steps.append(list(joint))
    return steps
