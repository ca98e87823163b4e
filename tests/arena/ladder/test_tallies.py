"""The bots' meetings as recording counts them (`tallies.Meetings`), on SQLite and PostgreSQL:
each bot's best seat of a match against each other bot's, added to what the table holds,
by two recorders at once as by one."""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from referee.arena.ladder import tallies
from referee.arena.store.db import Match, MatchState, Meeting, Seat, Version, utcnow
from referee.arena.store.home import Arena
from tests.support.arena import add_version
from tests.support.arena_databases import ArenaMaker

# (bot, opponent, matches, wins, draws, losses)
Row = tuple[int, int, int, int, int, int]


def meetings(arena: Arena) -> list[Row]:
    columns = (Meeting.bot_id, Meeting.opponent_id, Meeting.matches)
    counts = (Meeting.wins, Meeting.draws, Meeting.losses)
    with arena.database.session() as session:
        found = session.execute(select(*columns, *counts).order_by(Meeting.bot_id)).all()
    return [tuple(row) for row in found]  # type: ignore[misc]


def finished(session: Session, seated: list[tuple[int, float | None]]) -> Match:
    """A done match of `seated` (version, points), flushed, its versions loaded."""
    match = Match(key=f"m-{uuid.uuid4().hex}", game="ticblock", seed=1)
    match.state, match.finished_at = MatchState.DONE, utcnow()
    match.seats = [
        Seat(index=index, role=f"r{index}", version_id=version, points=points)
        for index, (version, points) in enumerate(seated)
    ]
    session.add(match)
    session.flush()
    return match


def bot_of(arena: Arena, version: int) -> int:
    with arena.database.session() as session:
        return session.get_one(Version, version).bot_id


def test_each_bots_best_seat_meets_each_other_bots(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    ann, bob, cat = (add_version(arena, name) for name in ("ann", "bob", "cat"))
    a, b, c = (bot_of(arena, v) for v in (ann, bob, cat))
    with arena.database.session() as session:
        ann2 = Version(bot_id=a, number=2, state="placing", run="run", archive_sha256="1" * 64)
        session.add(ann2)
        session.flush()
        counted = tallies.Meetings()
        counted.add(finished(session, [(ann, 1.0), (bob, 0.0)]))
        counted.add(finished(session, [(bob, 0.5), (ann2.id, 0.5)]))
        # No result: a match of neither.
        counted.add(finished(session, [(cat, None), (ann, None)]))
        # Two versions of one bot: no meeting.
        counted.add(finished(session, [(ann, 1.0), (ann2.id, 0.0)]))
        counted.save(session)
    assert meetings(arena) == sorted(
        [
            (a, b, 2, 1, 1, 0),
            (a, c, 1, 0, 0, 0),
            (b, a, 2, 0, 1, 1),
            (c, a, 1, 0, 0, 0),
        ]
    )
    with arena.database.session() as session:
        counted.add(finished(session, [(cat, 1.0), (bob, 0.0)]))
        counted.add(finished(session, [(ann, 0.0), (bob, 1.0)]))
        counted.save(session)
    assert meetings(arena) == sorted(
        [
            (a, b, 3, 1, 1, 1),
            (a, c, 1, 0, 0, 0),
            (b, a, 3, 1, 1, 1),
            (b, c, 1, 0, 0, 1),
            (c, a, 1, 0, 0, 0),
            (c, b, 1, 1, 0, 0),
        ]
    )


def test_two_recorders_at_once_each_add_their_meeting(make_arena: ArenaMaker) -> None:
    """The second waits for the first's row and adds to what it committed: none is lost."""
    arena = make_arena()
    ann, bob = (add_version(arena, name) for name in ("ann", "bob"))
    a, b = bot_of(arena, ann), bot_of(arena, bob)
    failures: list[BaseException] = []

    def second() -> None:
        try:
            with arena.database.session() as session:
                counted = tallies.Meetings()
                counted.add(finished(session, [(bob, 1.0), (ann, 0.0)]))
                counted.save(session)
        except BaseException as error:
            failures.append(error)

    with arena.database.session() as session:
        counted = tallies.Meetings()
        counted.add(finished(session, [(ann, 1.0), (bob, 0.0)]))
        counted.save(session)
        other = threading.Thread(target=second)
        other.start()
        # It waits for this transaction, which holds the rows it writes (PostgreSQL) or the
        # database (SQLite), until this one commits.
        other.join(0.5)
    other.join(30)
    assert not other.is_alive() and failures == []
    assert meetings(arena) == [(a, b, 2, 1, 0, 1), (b, a, 2, 1, 0, 1)]
