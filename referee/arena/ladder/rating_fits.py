"""The ladder's ratings: fitted (by the one ratings module) from each pair of versions'
results, kept as matches are recorded, and saved with a history that grows with what
changes, not with how often they are fitted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import itertools
import time
from collections.abc import Mapping, Sequence

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, aliased

from referee.arena.store.db import (
    ON_LADDER,
    Match,
    MatchState,
    RatingPoint,
    Seat,
    Version,
    VersionState,
    rating_point,
    utcnow,
)
from referee.arena.store.home import Arena
from referee.arena.store.outages import Rider
from referee.tournaments.ratings import Pairing, Rating, fit

# Ratings are fitted at most this often, and a fit takes at most this share of the time: a
# fit of thousands of versions takes seconds of a core, which the ladder's matches and the
# pages share (one interpreter), so the next waits nine times as long as the last took.
RATE_S = 1.0
FIT_SHARE = 0.1
# A version's rating history gains a point when its rating moved by POINT_MOVE (Elo) since
# its last point and that point is POINT_S old: the history grows with what changes, at
# most a point per version per POINT_S, not with how often the ratings are fitted.
POINT_MOVE = 0.5
POINT_S = 10


class RatingFits:
    """The ratings of an arena's ladder: each pair of versions' results (the lower id first:
    games and the first's points), refitted at most every RATE_S when they changed."""

    def __init__(self, arena: Arena, ride: Rider) -> None:
        self._arena = arena
        self._ride = ride
        self._results: dict[tuple[int, int], tuple[float, float]] = {}
        self._unrated = False

    async def load(self) -> int:
        """The results so far, from the database: before any match is recorded. How many
        pairs of versions have results."""
        self._results = await self._ride(functools.partial(_load_results, self._arena))
        self._unrated = True
        return len(self._results)

    def took(self, results: Sequence[tuple[int, int, float]]) -> None:
        """A match was recorded: its pairs of versions and the first's points."""
        for a, b, scored in results:
            games, got = self._results.get((a, b), (0.0, 0.0))
            self._results[(a, b)] = (games + 1, got + scored)
        self._unrated = True

    async def run(self) -> None:
        """Fit and save the ratings whenever results came in, forever; cancel to stop."""
        while True:
            wait = RATE_S
            if self._unrated:
                took = await self.refit()
                wait = max(RATE_S, took * (1 - FIT_SHARE) / FIT_SHARE)
            await asyncio.sleep(wait)

    async def refit(self) -> float:
        """Fit the results so far and save the ratings: the seconds it took."""
        self._unrated = False
        begun = time.monotonic()
        await self._ride(functools.partial(_fit, self._arena, dict(self._results)))
        return time.monotonic() - begun


def _load_results(arena: Arena) -> dict[tuple[int, int], tuple[float, float]]:
    """Each pair of versions' results so far, summed by the database."""
    mine, theirs = aliased(Seat), aliased(Seat)
    query = (
        select(mine.version_id, theirs.version_id, func.count(), func.sum(mine.points))
        .join(theirs, (mine.match_id == theirs.match_id) & (mine.version_id < theirs.version_id))
        .join(Match, Match.id == mine.match_id)
        .where(Match.state == MatchState.DONE, mine.points.is_not(None))
        .group_by(mine.version_id, theirs.version_id)
    )
    with arena.database.session() as session:
        return {(a, b): (float(n), float(got or 0)) for a, b, n, got in session.execute(query)}


def _fit(arena: Arena, results: Mapping[tuple[int, int], tuple[float, float]]) -> None:
    played = [Pairing(str(a), str(b), n, got) for (a, b), (n, got) in results.items()]
    ratings = fit([*played, *_links(arena)])
    if not ratings:
        return
    with arena.database.session() as session:
        save_ratings(session, ratings, utcnow())


def _links(arena: Arena) -> list[Pairing]:
    """Each version that reached the ladder tied to its bot's version before it: a new
    version starts from its predecessor's rating with a wide interval, not from nowhere, and
    its own results soon outweigh the tie. A pair of no games, which the fit's prior
    (`ratings.PRIOR_DRAWS` virtual draws for every pair) alone ties."""
    reached = (*ON_LADDER, VersionState.RETIRED, VersionState.SUSPENDED)
    with arena.database.session() as session:
        rows = session.execute(
            select(Version.bot_id, Version.id)
            .where(Version.state.in_(reached))
            .order_by(Version.bot_id, Version.number)
        ).all()
    return [
        Pairing(str(before), str(after), 0.0, 0.0)
        for (bot, before), (same, after) in itertools.pairwise(rows)
        if bot == same
    ]


def save_ratings(session: Session, ratings: Sequence[Rating], now: dt.datetime) -> None:
    """The versions' fitted ratings (each rating's player is a version's id), and a point of
    history at `now` for each version that has none or whose rating moved (POINT_MOVE,
    POINT_S): in `session`, so that the history never says what the versions do not."""
    fitted = {int(r.player): r for r in ratings}
    if not fitted:
        return
    # By id, the order in which every writer locks versions (`lifecycle.locked`): no two
    # writers each wait for a row the other holds.
    session.execute(
        update(Version),
        [{"id": v, "rating": r.elo, "margin": r.margin} for v, r in sorted(fitted.items())],
    )
    last = session.execute(
        select(
            Version.id,
            rating_point(RatingPoint.at, Version.id),
            rating_point(RatingPoint.rating, Version.id),
        ).where(Version.id.in_(fitted))
    ).all()
    due = [
        RatingPoint(version_id=v, at=now, rating=fitted[v].elo, margin=fitted[v].margin)
        for v, at, rating in last
        if at is None
        or (now - at >= dt.timedelta(seconds=POINT_S) and abs(fitted[v].elo - rating) >= POINT_MOVE)
    ]
    session.add_all(due)
