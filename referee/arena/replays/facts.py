"""What a match page, its replay and its live view need of a match: its state, game and
transcript, and each seat's role, player, bot and author, read in one query. A finished
match's facts never change, so the last few thousand asked are kept (`Kept`): a reader
opening finished matches' pages again and again, or a crowd opening one, costs no query in
the arena's process, whose interpreter the ladder referees its matches in."""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from referee.arena.accounts.auth import may_read_private
from referee.arena.store.db import Author, Bot, Match, MatchState, Seat, Version, player_name
from referee.arena.store.errors import NotFound
from referee.arena.store.home import Arena, inside
from referee.arena.store.queries import storable

# The finished matches whose facts are kept at most: the least recently asked goes first.
MOST = 4096


@dataclass(frozen=True)
class SeatFacts:
    """A seat of a match: its role, its version's name as a player, its bot and author."""

    role: str
    player: str
    bot: str
    author_id: int


@dataclass(frozen=True)
class Facts:
    """A match as its pages show it; `transcript` is relative to the arena's directory."""

    key: str
    state: str
    game: str
    transcript: str | None
    seats: tuple[SeatFacts, ...]
    # When its play began: None while it waits, queued or claimed (`queue.begun`).
    started_at: dt.datetime | None = None

    @property
    def being_played(self) -> bool:
        """Whether its play has begun and not ended."""
        return self.state == MatchState.RUNNING and self.started_at is not None

    @property
    def players(self) -> dict[str, str]:
        """Each role's player (`db.player_name`), in seat order."""
        return {seat.role: seat.player for seat in self.seats}

    @property
    def bots(self) -> dict[str, str]:
        """Each player's bot, by its name as a player."""
        return {seat.player: seat.bot for seat in self.seats}

    def readable(self, viewer: Author | None) -> frozenset[str]:
        """The roles whose bots' logs `viewer` may read (`auth.may_read_private`)."""
        return frozenset(
            seat.role for seat in self.seats if may_read_private(viewer, seat.author_id)
        )

    def transcript_in(self, directory: Path) -> Path:
        """Where the transcript is, under the arena's `directory`; NotFound if it has none."""
        if self.transcript is None:
            raise NotFound(f"match {self.key} has no transcript")
        return inside(directory, self.transcript)


def read(arena: Arena, key: str) -> Facts:
    """The facts of the match of that key, as the database has them now; NotFound if none."""
    rows: list[tuple[Any, ...]] = []
    if storable(key):
        query = (
            select(
                Match.key,
                Match.state,
                Match.game,
                Match.transcript,
                Match.started_at,
                Seat.role,
                Bot.name,
                Version.number,
                Bot.author_id,
            )
            .outerjoin(Seat, Seat.match_id == Match.id)
            .outerjoin(Version, Version.id == Seat.version_id)
            .outerjoin(Bot, Bot.id == Version.bot_id)
            .where(Match.key == key)
            .order_by(Seat.index)
        )
        with arena.database.session() as session:
            rows = [tuple(row) for row in session.execute(query)]
    if not rows:
        raise NotFound(f"no match {key[:64]!r}")
    found_key, state, game, transcript, started_at = rows[0][:5]
    seats = tuple(
        SeatFacts(role, player_name(bot, number), bot, author_id)
        for *_, role, bot, number, author_id in rows
        if role is not None
    )
    return Facts(found_key, state, game, transcript, seats, started_at)


class Kept:
    """Facts read by `read`, those of finished matches kept."""

    def __init__(self, arena: Arena, most: int = MOST) -> None:
        self._arena = arena
        self._most = most
        self._lock = threading.Lock()
        self._done: OrderedDict[str, Facts] = OrderedDict()

    def of(self, key: str) -> Facts:
        """The facts of match `key`; NotFound if there is no such match."""
        with self._lock:
            kept = self._done.get(key)
            if kept is not None:
                self._done.move_to_end(key)
                return kept
        facts = read(self._arena, key)
        if facts.state == MatchState.DONE:
            with self._lock:
                self._done[key] = facts
                while len(self._done) > self._most:
                    self._done.popitem(last=False)
        return facts
