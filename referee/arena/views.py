"""What the arena shows, as JSON-ready dicts: the leaderboard, bots, versions and their steps,
matches and the bots' logs. Every read takes the viewer, and what it shows them of a bot is
`auth.may_read_private`'s to say: an author reads their own bots' reasons, advice, verdicts,
build output and logs, the organiser everyone's; the rest is anyone's who may read at all."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session, aliased, selectinload

from referee.arena.auth import may_read_private
from referee.arena.db import (
    IN_INTAKE,
    ON_LADDER,
    Author,
    Bot,
    Match,
    MatchState,
    RatingPoint,
    Seat,
    Step,
    Version,
    VersionState,
    organisers_version,
    rating_point,
    utcnow,
)
from referee.arena.errors import Forbidden, NotFound
from referee.arena.home import Arena
from referee.arena.rows import WITH_SEATS, bot_named, match_by_key, version_by_id
from referee.errors import ArenaError
from referee.records.verify import FileVerdict, verify_file
from referee.tournaments.results import LOGS

# A page of matches: what one request may ask for, and gets unasked.
MAX_LIMIT = 200
DEFAULT_LIMIT = 50
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
    with arena.database.session() as session:
        names = session.scalars(select(Bot.name).where(Bot.author_id == viewer.id)).all()
    return {
        "name": viewer.name,
        "organiser": viewer.organiser,
        "bots": sorted(names),
        "my_bots": my_bots(arena, viewer),
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
    with arena.database.session() as session:
        return [
            {
                "name": bot.name,
                "created_at": when(bot.created_at),
                "versions": [_version_summary(v, True) for v in reversed(bot.versions)],
            }
            for bot in session.scalars(query).all()
        ]


def bot_exists(arena: Arena, name: str) -> None:
    """Nothing if a bot of that name exists; NotFound, as the API says it, if not."""
    with arena.database.session() as session:
        bot_named(session, name)


def version_logs_readable(arena: Arena, viewer: Author, version_id: int) -> bool:
    """Whether the viewer may read the version's step logs (`may_read_private`); NotFound if
    there is no such version."""
    with arena.database.session() as session:
        return may_read_private(viewer, version_by_id(session, version_id).bot.author_id)


def match_logs_readable(arena: Arena, viewer: Author, key: str) -> frozenset[str]:
    """The roles of a match whose bots' logs the viewer may read (`may_read_private`)."""
    with arena.database.session() as session:
        found = match_by_key(session, key)
        return frozenset(
            seat.role
            for seat in found.seats
            if may_read_private(viewer, seat.version.bot.author_id)
        )


def leaderboard(arena: Arena) -> Json:
    """The versions on the ladder, best first; those not yet rated, then the suspended, last.
    The same for every viewer who may read it (`auth.may_read_leaderboard`)."""
    # The rating a day ago: the last point before then, else the first.
    day_ago = utcnow() - dt.timedelta(days=1)
    then = func.coalesce(
        rating_point(RatingPoint.rating, Version.id, at_or_before=day_ago),
        rating_point(RatingPoint.rating, Version.id, newest=False),
    )
    query = (
        select(Version, Bot.name, Author.name, then)
        .join(Bot, Version.bot_id == Bot.id)
        .join(Author, Bot.author_id == Author.id)
        .where(Version.state.in_(_LISTED))
    )
    with arena.database.session() as session:
        rows = session.execute(query).all()

    def order(row: Any) -> tuple[bool, bool, float, str]:
        version, bot, _, _ = row
        rating = version.rating if version.rating is not None else 0.0
        return (version.state == VersionState.SUSPENDED, version.rating is None, -rating, bot)

    entries = []
    rank = 0
    for version, bot, author, rating_then in sorted(rows, key=order):
        ranked = version.state in ON_LADDER and version.rating is not None
        rank += ranked
        entries.append(
            {
                "rank": rank if ranked else None,
                "bot": bot,
                "version": version.number,
                "author": author,
                "state": version.state,
                "rating": version.rating,
                "margin": version.margin,
                "interval": _interval(version),
                "matches": version.matches,
                "faults": version.faults,
                "change_day": (
                    None
                    if version.rating is None or rating_then is None
                    else version.rating - rating_then
                ),
            }
        )
    return {"leaderboard": entries}


def bots(arena: Arena, viewer: Author) -> Json:
    query = (
        select(Bot).options(selectinload(Bot.versions), selectinload(Bot.author)).order_by(Bot.name)
    )
    with arena.database.session() as session:
        found = session.scalars(query).all()
        listed = [
            {
                "name": bot.name,
                "author": bot.author.name,
                "created_at": when(bot.created_at),
                "versions": len(bot.versions),
                "latest": _version_summary(bot.versions[-1], False) if bot.versions else None,
                "ladder": _summary_of(organisers_version(bot.versions)),
            }
            for bot in found
        ]
    return {"bots": listed}


def bot(arena: Arena, viewer: Author, name: str) -> Json:
    with arena.database.session() as session:
        found = bot_named(session, name)
        private = may_read_private(viewer, found.author_id)
        return {
            "name": found.name,
            "author": found.author.name,
            "created_at": when(found.created_at),
            "versions": [_version_summary(v, private) for v in reversed(found.versions)],
            "history": _history(session, found.id),
            "head_to_head": _head_to_head(session, found.id),
        }


def _history(session: Session, bot_id: int) -> list[Json]:
    """The rating points of every version of a bot, oldest first, the newest HISTORY_LIMIT."""
    newest = session.execute(
        select(Version.number, RatingPoint.at, RatingPoint.rating, RatingPoint.margin)
        .join(Version, Version.id == RatingPoint.version_id)
        .where(Version.bot_id == bot_id)
        .order_by(RatingPoint.at.desc(), RatingPoint.id.desc())
        .limit(HISTORY_LIMIT)
    ).all()
    return [
        {"version": number, "at": when(at), "rating": rating, "margin": margin}
        for number, at, rating, margin in reversed(newest)
    ]


def _head_to_head(session: Session, bot_id: int) -> list[Json]:
    """Every version of a bot against every version of each other bot it met, by opponent:
    the finished matches, and those won, drawn and lost (a match that ended without a
    result is in none of the three)."""
    mine, theirs = aliased(Seat), aliased(Seat)
    my_version, their_version = aliased(Version), aliased(Version)

    def counted(condition: ColumnElement[bool]) -> ColumnElement[int]:
        return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

    rows = session.execute(
        select(
            Bot.name,
            func.count(),
            counted(mine.points > theirs.points),
            counted(mine.points == theirs.points),
            counted(mine.points < theirs.points),
        )
        .select_from(mine)
        .join(my_version, my_version.id == mine.version_id)
        .join(Match, Match.id == mine.match_id)
        .join(theirs, (theirs.match_id == mine.match_id) & (theirs.id != mine.id))
        .join(their_version, their_version.id == theirs.version_id)
        .join(Bot, Bot.id == their_version.bot_id)
        .where(my_version.bot_id == bot_id, Bot.id != bot_id, Match.state == MatchState.DONE)
        .group_by(Bot.name)
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
        shown = _version_summary(found, private)
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


def matches(arena: Arena, viewer: Author, bot_name: str | None, limit: int) -> Json:
    """The latest finished matches, of one bot if named: newest first, `limit` at most."""
    query = (
        select(Match)
        .where(Match.state == MatchState.DONE)
        .options(WITH_SEATS)
        .order_by(Match.finished_at.desc(), Match.id.desc())
        .limit(max(1, min(limit, MAX_LIMIT)))
    )
    with arena.database.session() as session:
        if bot_name is not None:
            found = bot_named(session, bot_name)
            played = (
                select(Seat.match_id).join(Version).where(Version.bot_id == found.id).distinct()
            )
            query = query.where(Match.id.in_(played))
        return {"matches": [_match(match) for match in session.scalars(query).all()]}


def running(arena: Arena) -> list[Json]:
    """The matches being played, oldest first, RUNNING_LIMIT at most."""
    query = (
        select(Match)
        .where(Match.state == MatchState.RUNNING)
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
    shown["transcript"] = None
    if found.transcript is not None:
        path = _inside(arena.directory, found.transcript)
        try:
            shown["transcript"] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            shown["transcript"] = None
    return shown


def match_replay(arena: Arena, key: str) -> FileVerdict:
    """A match's transcript, replayed by the rules and its signature checked with the arena's
    key, as `verify_file` does; NotFound for no such match or one with no transcript. It
    costs a match's worth of CPU: callers bound how many run at once (`replays.Replays`)."""
    with arena.database.session() as session:
        found = match_by_key(session, key)
    if found.transcript is None:
        raise NotFound(f"match {found.key} has no transcript")
    return verify_file(_inside(arena.directory, found.transcript), arena.key.public)


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
    path = _inside(arena.results, f"{LOGS}/{found.key}.{seats[0].role}.log")
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


def _version_summary(version: Version, private: bool) -> Json:
    shown: Json = {
        "id": version.id,
        "bot": version.bot.name,
        "number": version.number,
        "state": version.state,
        "submitted_at": when(version.submitted_at),
        "updated_at": when(version.updated_at),
        "rating": version.rating,
        "margin": version.margin,
        "interval": _interval(version),
        "matches": version.matches,
        "faults": version.faults,
    }
    if private:
        shown["reason"] = version.reason
        shown["advice"] = version.advice.splitlines()
    return shown


def _summary_of(version: Version | None) -> Json | None:
    return None if version is None else _version_summary(version, False)


def _step(step: Step, private: bool) -> Json:
    shown: Json = {
        "kind": step.kind,
        "state": step.state,
        "started_at": when(step.started_at),
        "finished_at": when(step.finished_at),
    }
    if private:
        shown["verdict"] = step.verdict
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


def _interval(version: Version) -> list[float] | None:
    if version.rating is None or version.margin is None:
        return None
    return [version.rating - version.margin, version.rating + version.margin]


def _inside(root: Path, relative: str) -> Path:
    """`relative` under `root`, refused if it would lead out (the database is trusted, but a
    path read from it is still checked before it is opened)."""
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise NotFound(f"{relative[:80]!r}: not in the arena")
    return path
