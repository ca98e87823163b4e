"""What a request for a list of matches asks: its filters (a bot, its opponent, a game, the
bot's result), its page's size, and where the page starts. A page starts after the last
match of the one before, named by an opaque cursor: the moment that match finished and its
id, the order the list is in, so that matches finishing between two pages move nothing."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from referee.arena.store.queries import storable, whole_number
from referee.arena.store.rows import MAX_ID

# A page of matches: what one request may ask for, and gets unasked.
MAX_LIMIT = 200
DEFAULT_LIMIT = 50
# The longest name, game or cursor a request may give: longer is no one's.
MAX_TEXT = 200
_PARAMETERS = ("bot", "opponent", "game", "result", "cursor", "limit")


class BadQuery(ValueError):
    """A request's filters that cannot be: the message says which and why, in one line."""


class Result(StrEnum):
    """A match as the bot it is asked of sees it."""

    WIN = "win"
    DRAW = "draw"
    LOSS = "loss"


@dataclass(frozen=True)
class Cursor:
    """Where a page of matches starts: after the match that finished at `finished_at` with
    `match_id`, in the list's order (newest first)."""

    finished_at: dt.datetime
    match_id: int

    def encode(self) -> str:
        text = f"{self.finished_at.astimezone(dt.UTC).isoformat()}|{self.match_id}"
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        problem = BadQuery(f"cursor {text[:40]!r}: not one this arena gave; start again")
        if len(text) > MAX_TEXT:
            raise problem
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            moment, number = raw.split("|")
            finished_at = dt.datetime.fromisoformat(moment)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise problem from None
        match_id = whole_number(number, 10)
        if finished_at.tzinfo is None or match_id is None or match_id > MAX_ID:
            raise problem
        return cls(finished_at, match_id)


@dataclass(frozen=True)
class MatchQuery:
    """The matches asked for: of `bot` (and of `opponent`, if named), of `game`, that `bot`
    ended with `result`; `limit` of them after `after` (from the newest if None)."""

    bot: str | None = None
    opponent: str | None = None
    game: str | None = None
    result: Result | None = None
    after: Cursor | None = None
    limit: int = DEFAULT_LIMIT


def parse_query(items: Sequence[tuple[str, str]]) -> MatchQuery:
    """A request's query parameters as a MatchQuery; BadQuery for one unknown, repeated,
    empty or out of range. A limit past MAX_LIMIT is MAX_LIMIT."""
    given: dict[str, str] = {}
    for name, value in items:
        if name not in _PARAMETERS:
            raise BadQuery(f"unknown parameter {name[:40]!r}: give {', '.join(_PARAMETERS)}")
        if name in given:
            raise BadQuery(f"{name}: give it once")
        if not value or len(value) > MAX_TEXT or not storable(value):
            raise BadQuery(f"{name}: give a value of 1 to {MAX_TEXT} characters, none a NUL")
        given[name] = value
    text = given.get("limit", str(DEFAULT_LIMIT))
    limit = whole_number(text, 6)
    if limit is None or limit < 1:
        raise BadQuery(f"limit {text[:20]!r}: a number from 1 to {MAX_LIMIT}")
    result = given.get("result")
    if result is not None and result not in set(Result):
        raise BadQuery(f"result {result[:20]!r}: one of {', '.join(Result)}")
    if result is not None and "bot" not in given:
        raise BadQuery("result: name the bot whose result it is (bot=NAME)")
    cursor = given.get("cursor")
    return MatchQuery(
        bot=given.get("bot"),
        opponent=given.get("opponent"),
        game=given.get("game"),
        result=None if result is None else Result(result),
        after=None if cursor is None else Cursor.decode(cursor),
        limit=min(limit, MAX_LIMIT),
    )
