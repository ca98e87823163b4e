"""The rows a request names, found or refused: a bot by its name, a version by its id, a
match by its key. The reads (`views`) and the changes (`submissions`) look them up alike,
so that a name no one has is the same 404 to both."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from referee.arena.store.db import Bot, Match, Seat, Version
from referee.arena.store.errors import NotFound
from referee.arena.store.queries import storable

# The largest id a row may have on every database (a 32-bit integer column).
MAX_ID = 2**31 - 1
# A match's seats, each with its version and bot: what showing a match needs, in one load.
WITH_SEATS = selectinload(Match.seats).selectinload(Seat.version).selectinload(Version.bot)


def bot_named(session: Session, name: str) -> Bot:
    """The bot of that name, its versions loaded (by number); NotFound if none."""
    found = None
    if storable(name):
        query = select(Bot).where(Bot.name == name).options(selectinload(Bot.versions))
        found = session.scalar(query)
    if found is None:
        raise NotFound(f"no bot {name[:60]!r}")
    return found


def version_by_id(session: Session, version_id: int) -> Version:
    """The version of that id; NotFound if none."""
    # An id past the column's range is no version's, and the database would refuse the query.
    found = session.get(Version, version_id) if 0 < version_id <= MAX_ID else None
    if found is None:
        raise NotFound(f"no version {version_id}")
    return found


def match_by_key(session: Session, key: str) -> Match:
    """The match of that key, its seats loaded (`WITH_SEATS`); NotFound if none."""
    found = None
    if storable(key):
        found = session.scalar(select(Match).where(Match.key == key).options(WITH_SEATS))
    if found is None:
        raise NotFound(f"no match {key[:64]!r}")
    return found
