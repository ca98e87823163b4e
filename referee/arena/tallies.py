"""What versions made of their finished matches, as the leaderboard shows it: wins, draws and
losses, the score, and the last match. A seat won if its points beat the best of the other
bots' seats in the match, drew if they equal it, and lost if they fall short (for two seats,
as `views._head_to_head` counts); a match that ended without a result is in none of the
three. Each figure is read for every version at once, in one grouped query."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session, aliased

from referee.arena.db import Match, MatchState, Seat, Version


@dataclass(frozen=True)
class Results:
    """A version's results: its decided matches, and its last finished match, if any."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    last_key: str | None = None
    last_at: dt.datetime | None = None

    @property
    def score(self) -> float | None:
        """The share of the points won, a win counting 1 and a draw a half, as in chess:
        0.5 is even. None before any decided match."""
        decided = self.wins + self.draws + self.losses
        return None if decided == 0 else (self.wins + self.draws / 2) / decided


def results(session: Session, versions: Collection[int]) -> defaultdict[int, Results]:
    """The results of each of `versions`; a version with none has empty `Results`."""
    found: defaultdict[int, Results] = defaultdict(Results)
    if not versions:
        return found
    counts = _counts(session, versions)
    last = {version_id: (key, at) for version_id, key, at in _last_matches(session, versions)}
    for version_id in counts.keys() | last.keys():
        wins, draws, losses = counts.get(version_id, (0, 0, 0))
        key, at = last.get(version_id, (None, None))
        found[version_id] = Results(wins, draws, losses, key, at)
    return found


def _counts(session: Session, versions: Collection[int]) -> dict[int, tuple[int, int, int]]:
    """Each version's wins, draws and losses: each seat against the best of the other bots'
    seats in its match, then summed by version."""
    mine, theirs = aliased(Seat), aliased(Seat)
    my_version, their_version = aliased(Version), aliased(Version)
    seats = (
        select(
            mine.version_id.label("version_id"),
            mine.points.label("points"),
            func.max(theirs.points).label("best"),
        )
        .join(Match, Match.id == mine.match_id)
        .join(my_version, my_version.id == mine.version_id)
        .join(theirs, (theirs.match_id == mine.match_id) & (theirs.id != mine.id))
        .join(their_version, their_version.id == theirs.version_id)
        .where(
            mine.version_id.in_(versions),
            Match.state == MatchState.DONE,
            their_version.bot_id != my_version.bot_id,
        )
        .group_by(mine.id, mine.version_id, mine.points)
        .subquery()
    )

    def counted(condition: ColumnElement[bool]) -> ColumnElement[int]:
        return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

    rows = session.execute(
        select(
            seats.c.version_id,
            counted(seats.c.points > seats.c.best),
            counted(seats.c.points == seats.c.best),
            counted(seats.c.points < seats.c.best),
        ).group_by(seats.c.version_id)
    ).all()
    return {version_id: (won, drawn, lost) for version_id, won, drawn, lost in rows}


def _last_matches(
    session: Session, versions: Collection[int]
) -> list[tuple[int, str, dt.datetime]]:
    """Each version's last finished match: its key and when it finished."""
    newest = (
        select(
            Seat.version_id.label("version_id"),
            Match.key.label("key"),
            Match.finished_at.label("finished_at"),
            func.row_number()
            .over(
                partition_by=Seat.version_id,
                order_by=(Match.finished_at.desc(), Match.id.desc()),
            )
            .label("place"),
        )
        .join(Match, Match.id == Seat.match_id)
        .where(
            Seat.version_id.in_(versions),
            Match.state == MatchState.DONE,
            Match.finished_at.is_not(None),
        )
        .subquery()
    )
    rows = session.execute(
        select(newest.c.version_id, newest.c.key, newest.c.finished_at).where(newest.c.place == 1)
    ).all()
    return [(version_id, key, at) for version_id, key, at in rows]
