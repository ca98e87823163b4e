"""What the arena shows, as JSON-ready dicts: the leaderboard, bots, versions and their steps,
matches and the bots' logs. Every read takes the viewer, and what it shows them of a bot is
`auth.may_read_private`'s to say: an author reads their own bots' reasons, advice, verdicts,
build output and logs, the organiser everyone's; the rest is anyone's who may read at all."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, Select, exists, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased, selectinload

from referee.arena.accounts.auth import may_read_private
from referee.arena.intake import turns
from referee.arena.ladder import tallies
from referee.arena.reading.match_lists import Cursor, MatchQuery, Result
from referee.arena.store.db import (
    IN_INTAKE,
    ON_LADDER,
    Author,
    Bot,
    Match,
    MatchState,
    Meeting,
    RatingPoint,
    Seat,
    Step,
    Version,
    VersionState,
    organisers_version,
    rating_point,
    utcnow,
)
from referee.arena.store.errors import Forbidden, NotFound
from referee.arena.store.home import Arena, inside
from referee.arena.store.rows import WITH_SEATS, bot_named, match_by_key, version_by_id
from referee.errors import ArenaError
from referee.tournaments.results import LOGS

# A bot's rating history: its newest points, enough for a chart.
HISTORY_LIMIT = 500
# The running matches that the status lists.
RUNNING_LIMIT = 50
# What one request reads of a bot's log; the rest is in the arena's directory.
LOG_LIMIT = 1024 * 1024
# The versions the leaderboard lists: those the ladder plays, and those it stopped playing
# for faults, whose state says so.
_LISTED = (*ON_LADDER, VersionState.SUSPENDED)

Json = dict[str, Any]


def when(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")


def me(arena: Arena, viewer: Author) -> Json:
    mine = my_bots(arena, viewer)
    return {
        "name": viewer.name,
        "organiser": viewer.organiser,
        "bots": [bot["name"] for bot in mine],
        "my_bots": mine,
    }


def my_bots(arena: Arena, viewer: Author) -> list[Json]:
    """The viewer's own bots by name, each with every version, newest first, as its author
    reads it: with its reason and validate's advice (an author's home page)."""
    query = (
        select(Bot)
        .where(Bot.author_id == viewer.id)
        .options(selectinload(Bot.versions))
        .order_by(Bot.name)
    )
    centre = arena.config.rating_centre
    with arena.database.session() as session:
        places = _places(session)
        return [
            {
                "name": bot.name,
                "created_at": when(bot.created_at),
                "versions": [
                    _version_summary(v, True, centre, places.get(v.id))
                    for v in reversed(bot.versions)
                ],
            }
            for bot in session.scalars(query).all()
        ]


def _places(session: Session) -> dict[int, int]:
    """Each queued version's place in the intake's line, from 1."""
    return {version: place for place, version in enumerate(turns.line(session), start=1)}


def bot_exists(arena: Arena, name: str) -> None:
    """Nothing if a bot of that name exists; NotFound, as the API says it, if not."""
    with arena.database.session() as session:
        bot_named(session, name)


def version_logs_readable(arena: Arena, viewer: Author, version_id: int) -> bool:
    """Whether the viewer may read the version's step logs (`may_read_private`); NotFound if
    there is no such version."""
    with arena.database.session() as session:
        return may_read_private(viewer, version_by_id(session, version_id).bot.author_id)


def leaderboard(arena: Arena) -> Json:
    """The versions on the ladder, best first; those not yet rated, then the suspended, last.
    The same for every viewer who may read it (`auth.may_read_leaderboard`). A version's
    change over a day is there once it has a rating point a day old: its last at or before
    then. Read in one query, as rows: every reader's page asks for it."""
    day_ago = utcnow() - dt.timedelta(days=1)
    then = rating_point(RatingPoint.rating, Version.id, at_or_before=day_ago)
    query = (
        select(
            Bot.name,
            Version.number,
            Author.name,
            Version.state,
            Version.rating,
            Version.margin,
            Version.matches,
            Version.faults,
            then,
            Version.wins,
            Version.draws,
            Version.losses,
            Match.key,
            Match.finished_at,
        )
        .join(Bot, Version.bot_id == Bot.id)
        .join(Author, Bot.author_id == Author.id)
        .outerjoin(Match, Match.id == Version.last_match_id)
        .where(Version.state.in_(_LISTED))
    )
    centre = arena.config.rating_centre
    with arena.database.session() as session:
        rows = session.execute(query).all()

    def order(row: Any) -> tuple[bool, bool, float, str]:
        bot, _, _, state, rating = row[:5]
        return (state == VersionState.SUSPENDED, rating is None, -(rating or 0.0), bot)

    entries = []
    rank = 0
    for row in sorted(rows, key=order):
        bot, number, author, state, rating, margin, matches, faults, rating_then = row[:9]
        ranked = state in ON_LADDER and rating is not None
        rank += ranked
        entries.append(
            {
                "rank": rank if ranked else None,
                "bot": bot,
                "version": number,
                "author": author,
                "state": state,
                "rating": _centred(rating, centre),
                "margin": margin,
                "interval": _interval(rating, margin, centre),
                "matches": matches,
                "faults": faults,
                "change_day": (
                    None if rating is None or rating_then is None else rating - rating_then
                ),
                **_results(tallies.Results(*row[9:])),
            }
        )
    return {"leaderboard": entries}


def bots(arena: Arena, viewer: Author) -> Json:
    """Every bot: its author, its newest version and the one the organiser acts on. Read as
    rows, not objects, and of the versions only their states but for those shown: a
    season's thousand bots and their versions are the organiser's page, asked for again
    and again."""
    centre = arena.config.rating_centre
    with arena.database.session() as session:
        found = session.execute(
            select(Bot.id, Bot.name, Author.name, Bot.created_at).join(Author).order_by(Bot.name)
        ).all()
        states: dict[int, list[_State]] = {}
        for bot_id, version_id, state in session.execute(
            select(Version.bot_id, Version.id, Version.state).order_by(
                Version.bot_id, Version.number
            )
        ):
            states.setdefault(bot_id, []).append(_State(version_id, state))
        chosen = {bot_id: (mine[-1].id, _organisers(mine)) for bot_id, mine in states.items()}
        wanted = {version_id for pair in chosen.values() for version_id in pair if version_id}
        shown = {
            version_id: _version_summary(_Shown(version_id, *facts), False, centre)
            for version_id, *facts in session.execute(
                select(*_SHOWN).join(Bot).where(Version.id.in_(wanted))
            )
        }
    listed = []
    for bot_id, name, author, created_at in found:
        latest, ladder = chosen.get(bot_id, (None, None))
        listed.append(
            {
                "name": name,
                "author": author,
                "created_at": when(created_at),
                "versions": len(states.get(bot_id, [])),
                "latest": None if latest is None else shown[latest],
                "ladder": None if ladder is None else shown[ladder],
            }
        )
    return {"bots": listed}


@dataclass(frozen=True)
class _State:
    """A version's state, as the organiser's choice of it needs (`organisers_version`)."""

    id: int
    state: str


def _organisers(versions: list[_State]) -> int | None:
    chosen = organisers_version(versions)
    return None if chosen is None else chosen.id


def bot(arena: Arena, viewer: Author, name: str) -> Json:
    with arena.database.session() as session:
        found = bot_named(session, name)
        private = may_read_private(viewer, found.author_id)
        centre = arena.config.rating_centre
        return {
            "name": found.name,
            "author": found.author.name,
            "created_at": when(found.created_at),
            "versions": [_version_summary(v, private, centre) for v in reversed(found.versions)],
            "history": _history(session, found.id, centre),
            "head_to_head": _head_to_head(session, found.id),
        }


def _history(session: Session, bot_id: int, centre: float) -> list[Json]:
    """The rating points of every version of a bot, oldest first, the newest HISTORY_LIMIT."""
    newest = session.execute(
        select(Version.number, RatingPoint.at, RatingPoint.rating, RatingPoint.margin)
        .join(Version, Version.id == RatingPoint.version_id)
        .where(Version.bot_id == bot_id)
        .order_by(RatingPoint.at.desc(), RatingPoint.id.desc())
        .limit(HISTORY_LIMIT)
    ).all()
    return [
        {"version": number, "at": when(at), "rating": rating + centre, "margin": margin}
        for number, at, rating, margin in reversed(newest)
    ]


def _head_to_head(session: Session, bot_id: int) -> list[Json]:
    """Every version of a bot against every version of each other bot it met, by opponent:
    the finished matches, and those won, drawn and lost (a match that ended without a
    result is in none of the three). Read as `tallies` keeps them, one row an opponent."""
    rows = session.execute(
        select(Bot.name, Meeting.matches, Meeting.wins, Meeting.draws, Meeting.losses)
        .join(Bot, Bot.id == Meeting.opponent_id)
        .where(Meeting.bot_id == bot_id)
        .order_by(Bot.name)
    ).all()
    return [
        {"opponent": name, "matches": n, "wins": won, "draws": drawn, "losses": lost}
        for name, n, won, drawn, lost in rows
    ]


def version(arena: Arena, viewer: Author, version_id: int) -> Json:
    with arena.database.session() as session:
        found = version_by_id(session, version_id)
        private = may_read_private(viewer, found.bot.author_id)
        place = _places(session).get(found.id)
        shown = _version_summary(found, private, arena.config.rating_centre, place)
        shown["steps"] = [_step(step, private) for step in found.steps]
        if private:
            shown["run"] = found.run
            shown["build"] = found.build
        return shown


def step_log(arena: Arena, viewer: Author, version_id: int, kind: str) -> Json:
    """A step's log (the build's output, validate's report): its author's and the organiser's."""
    with arena.database.session() as session:
        found = version_by_id(session, version_id)
        if not may_read_private(viewer, found.bot.author_id):
            raise Forbidden(f"version {version_id}: its logs are its author's")
        steps = [step for step in found.steps if step.kind == kind]
        if not steps:
            raise NotFound(f"version {version_id} has no {kind[:20]!r} step")
        return dict(_step(steps[-1], True), log=steps[-1].log)


def matches(arena: Arena, viewer: Author, asked: MatchQuery) -> Json:
    """The finished matches `asked` for, newest first: a page of `asked.limit` at most, and
    the cursor of the next page (`next`, None after the last). NotFound for a bot or an
    opponent no one has.

    A page is read from where the last one ended, never counted from the newest, and in an
    index's order, from the cursor's moment down: the season's from the finished matches'
    index (state, finished_at, id), a bot's from its own seats' (bot_id, finished_at,
    match_id), however long ago it played. A page costs the same at the millionth match as
    at the first."""
    with arena.database.session() as session:
        named = asked.bot if asked.bot is not None else asked.opponent
        if named is None:
            chosen = _finished(asked, Match.finished_at, Match.id)
            chosen = chosen.where(Match.state == MatchState.DONE)
            if asked.game is not None:
                chosen = chosen.where(Match.game == asked.game)
            newest = chosen.order_by(Match.finished_at.desc(), Match.id.desc())
            rows = session.execute(newest.limit(asked.limit + 1))
        else:
            bot_id = bot_named(session, named).id
            chosen = _finished(asked, Seat.finished_at, Seat.match_id)
            chosen = chosen.where(Seat.bot_id == bot_id)
            if asked.game is not None:
                chosen = chosen.join(Match, Match.id == Seat.match_id)
                chosen = chosen.where(Match.game == asked.game)
            if asked.bot is not None and asked.opponent is not None:
                opponent_id = bot_named(session, asked.opponent).id
                chosen = chosen.where(_played_by(opponent_id, Seat.match_id))
            if asked.result is not None:
                chosen = chosen.where(_result_is(bot_id, asked.result, Seat.match_id))
            newest = chosen.order_by(Seat.finished_at.desc(), Seat.match_id.desc())
            # A match of two of the bot's versions is there once for each seat: read in
            # the index's order until the page has enough matches, not sorted to set them
            # aside.
            rows = session.execute(newest.execution_options(yield_per=4 * asked.limit + 4))
        page: list[tuple[dt.datetime, int]] = []
        for at, row_id in rows:
            if at is not None and (not page or page[-1][1] != row_id):
                page.append((at, row_id))
            if len(page) > asked.limit:
                break
        rows.close()
        shown = _matches_of(session, [row_id for _, row_id in page[: asked.limit]])
    following = None
    if len(page) > asked.limit:
        at, row_id = page[asked.limit - 1]
        following = Cursor(at, row_id).encode()
    return {"matches": shown, "next": following}


def _matches_of(session: Session, ids: list[int]) -> list[Json]:
    """The matches of `ids`, in that order, as the API shows them."""
    if not ids:
        return []
    query = select(Match).where(Match.id.in_(ids)).options(WITH_SEATS)
    found = {match.id: match for match in session.scalars(query)}
    return [_match(found[row_id]) for row_id in ids]


def _finished(
    asked: MatchQuery,
    moment: InstrumentedAttribute[dt.datetime | None],
    row: InstrumentedAttribute[int],
) -> Select[dt.datetime | None, int]:
    """The moments and ids of finished matches after `asked`'s cursor (if given): of the
    matches themselves, or of seats (`moment` and `row`, their match's). A match has its
    moment once it is done, and only then."""
    query = select(moment, row).where(moment.is_not(None))
    after = asked.after
    if after is not None:
        # The bound on the moment alone is what an index range starts from; the rest sets
        # aside the matches of that moment the page before gave.
        query = query.where(
            moment <= after.finished_at,
            (moment < after.finished_at) | (row < after.match_id),
        )
    return query


def _played_by(bot_id: int, match_id: InstrumentedAttribute[int]) -> ColumnElement[bool]:
    """Whether a bot played the match of `match_id` (any of its versions)."""
    theirs = aliased(Seat)
    return exists().where(theirs.match_id == match_id, theirs.bot_id == bot_id)


def _result_is(
    bot_id: int, result: Result, match_id: InstrumentedAttribute[int]
) -> ColumnElement[bool]:
    """Whether the match of `match_id` ended with `result` for a bot: the best points of its
    seats against the best of the other bots' (`tallies` counts the leaderboard's results
    alike)."""

    def best(mine: bool) -> ScalarSelect[float | None]:
        seat = aliased(Seat)
        whose = seat.bot_id == bot_id if mine else seat.bot_id != bot_id
        return (
            select(func.max(seat.points)).where(seat.match_id == match_id, whose).scalar_subquery()
        )

    if result is Result.WIN:
        return best(True) > best(False)
    if result is Result.DRAW:
        return best(True) == best(False)
    return best(True) < best(False)


def running(arena: Arena) -> list[Json]:
    """The matches being played, the longest played first, RUNNING_LIMIT at most: those
    whose play has begun, not those claimed that wait their turn (`queue.begun`)."""
    query = (
        select(Match)
        .where(Match.state == MatchState.RUNNING, Match.started_at.is_not(None))
        .options(WITH_SEATS)
        .order_by(Match.started_at, Match.id)
        .limit(RUNNING_LIMIT)
    )
    with arena.database.session() as session:
        return [_match(found) for found in session.scalars(query).all()]


def match(arena: Arena, viewer: Author, key: str) -> Json:
    """A match and its transcript (the record, as signed), if it was written."""
    with arena.database.session() as session:
        found = match_by_key(session, key)
        shown = _match(found)
    # Its plays lost to the arena's failures, none rated; why, to the organiser only (a
    # venue's error may name its machines).
    shown["lost"] = found.lost
    if viewer.organiser:
        shown["lost_why"] = found.lost_why
    shown["transcript"] = None
    if found.transcript is not None:
        path = inside(arena.directory, found.transcript)
        try:
            shown["transcript"] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            shown["transcript"] = None
    return shown


def seats_with_logs(arena: Arena, key: str, roles: Iterable[str]) -> set[str]:
    """The roles of `roles` in match `key` (as the database has them) whose bots wrote to
    their logs: a bot that wrote nothing to its standard error leaves no log, or an empty
    one."""
    written = set()
    for role in roles:
        with contextlib.suppress(OSError, NotFound):
            path = inside(arena.results, f"{LOGS}/{key}.{role}.log")
            if path.stat().st_size > 0:
                written.add(role)
    return written


def seat_log(arena: Arena, viewer: Author, key: str, role: str) -> Json:
    """What a seat's bot wrote to its log in a match: its author's and the organiser's."""
    with arena.database.session() as session:
        found = match_by_key(session, key)
        seats = [seat for seat in found.seats if seat.role == role]
        if not seats:
            raise NotFound(f"match {key[:64]!r} has no role {role[:40]!r}")
        if not may_read_private(viewer, seats[0].version.bot.author_id):
            raise Forbidden(f"match {found.key}, {role}: the log is its bot's author's")
    # Named from the database's key and role, never from the request's text.
    path = inside(arena.results, f"{LOGS}/{found.key}.{seats[0].role}.log")
    try:
        with path.open("rb") as source:
            data = source.read(LOG_LIMIT + 1)
    except FileNotFoundError:
        raise NotFound(f"match {found.key}, {role}: no log") from None
    except OSError as error:
        raise ArenaError(
            f"match {found.key}, {role}: cannot read the log: {error.strerror}"
        ) from None
    return {
        "match": found.key,
        "role": role,
        "truncated": len(data) > LOG_LIMIT,
        "log": data[:LOG_LIMIT].decode("utf-8", "replace"),
    }


def intake_status(arena: Arena) -> Json:
    """How many versions wait for the intake, and how many it is working on."""
    waiting = (VersionState.QUEUED, *IN_INTAKE)
    with arena.database.session() as session:
        states = session.scalars(select(Version.state).where(Version.state.in_(waiting))).all()
    return {state.value: states.count(state) for state in waiting}


@dataclass(frozen=True)
class _Shown:
    """What the API shows of a version, read from its row (`_SHOWN`) or its object."""

    id: int
    bot: str
    number: int
    state: str
    submitted_at: dt.datetime
    updated_at: dt.datetime
    rating: float | None
    margin: float | None
    matches: int
    faults: int
    reason: str
    advice: str

    @classmethod
    def of(cls, version: Version) -> _Shown:
        return cls(
            version.id,
            version.bot.name,
            version.number,
            version.state,
            version.submitted_at,
            version.updated_at,
            version.rating,
            version.margin,
            version.matches,
            version.faults,
            version.reason,
            version.advice,
        )


# `_Shown`'s columns, in its order.
_SHOWN = (
    Version.id,
    Bot.name,
    Version.number,
    Version.state,
    Version.submitted_at,
    Version.updated_at,
    Version.rating,
    Version.margin,
    Version.matches,
    Version.faults,
    Version.reason,
    Version.advice,
)


def _version_summary(
    version: Version | _Shown, private: bool, centre: float, place: int | None = None
) -> Json:
    """A version as the API shows it; `place`: its place in the intake's line, if queued."""
    if isinstance(version, Version):
        version = _Shown.of(version)
    shown: Json = {
        "id": version.id,
        "bot": version.bot,
        "number": version.number,
        "state": version.state,
        "submitted_at": when(version.submitted_at),
        "updated_at": when(version.updated_at),
        "rating": _centred(version.rating, centre),
        "margin": version.margin,
        "interval": _interval(version.rating, version.margin, centre),
        "matches": version.matches,
        "faults": version.faults,
        "place_in_line": place,
    }
    if private:
        shown["reason"] = version.reason
        shown["advice"] = version.advice.splitlines()
    return shown


def _step(step: Step, private: bool) -> Json:
    shown: Json = {
        "kind": step.kind,
        "state": step.state,
        "started_at": when(step.started_at),
        "finished_at": when(step.finished_at),
    }
    if private:
        shown["verdict"] = step.verdict
        # Whether it has a log to read: a step that wrote nothing (an unpack refused) has
        # none to offer.
        shown["has_log"] = bool(step.log)
    return shown


def _match(match: Match) -> Json:
    return {
        "key": match.key,
        "game": match.game,
        "state": match.state,
        "placement": match.placement,
        "opening": match.opening,
        "started_at": when(match.started_at),
        "finished_at": when(match.finished_at),
        "summary": match.summary,
        "seats": [
            {
                "role": seat.role,
                "bot": seat.version.bot.name,
                "version": seat.version.number,
                "points": seat.points,
                "faulted": seat.faulted,
            }
            for seat in match.seats
        ],
    }


def _results(found: tallies.Results) -> Json:
    last = None
    if found.last_key is not None:
        last = {"key": found.last_key, "finished_at": when(found.last_at)}
    return {
        "wins": found.wins,
        "draws": found.draws,
        "losses": found.losses,
        "score": found.score,
        "last_match": last,
    }


def _centred(rating: float | None, centre: float) -> float | None:
    """A rating as shown: the ladder fits them with their mean at 0; the organiser says where
    they are centred (`ArenaConfig.rating_centre`)."""
    return None if rating is None else rating + centre


def _interval(fitted: float | None, margin: float | None, centre: float) -> list[float] | None:
    rating = _centred(fitted, centre)
    if rating is None or margin is None:
        return None
    return [rating - margin, rating + margin]
