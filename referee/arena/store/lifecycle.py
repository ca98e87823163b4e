"""A version's lifecycle: the moves its states allow, in one table (`MOVES`), and the only
functions that move a version. Whoever moves one (a submission, the intake, the ladder, the
organiser) calls them; a move the table does not allow is refused (`MoveRefused`).

The way in is queued -> building -> validating -> placing -> rated; failed and retired are
ends; a version on the ladder may be suspended, and is reinstated where its rating puts it.

A version's reason and advice belong to its state: each move sets them, empty unless the
move gives them (why it failed, was suspended or retired; validate's advice for a failure).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from sqlalchemy import ColumnExpressionArgument, select, update
from sqlalchemy.orm import Session

from referee.arena.store.db import IN_INTAKE, ON_LADDER, Bot, Version, VersionState, utcnow
from referee.errors import ArenaError

MOVES: Mapping[VersionState, frozenset[VersionState]] = MappingProxyType(
    {
        # Failed from queued too: the arena may fail to take a version in before it starts.
        VersionState.QUEUED: frozenset({VersionState.BUILDING, VersionState.FAILED}),
        # Queued again, from building or validating, when the arena stopped meanwhile.
        VersionState.BUILDING: frozenset(
            {VersionState.VALIDATING, VersionState.FAILED, VersionState.QUEUED}
        ),
        VersionState.VALIDATING: frozenset(
            {VersionState.PLACING, VersionState.FAILED, VersionState.QUEUED}
        ),
        VersionState.PLACING: frozenset(
            {VersionState.RATED, VersionState.SUSPENDED, VersionState.RETIRED}
        ),
        VersionState.RATED: frozenset({VersionState.SUSPENDED, VersionState.RETIRED}),
        VersionState.FAILED: frozenset(),
        # Back where its rating puts it: rated if it has one, else placing.
        VersionState.SUSPENDED: frozenset({VersionState.PLACING, VersionState.RATED}),
        VersionState.RETIRED: frozenset(),
    }
)


class MoveRefused(ArenaError):
    """A move of a version that its lifecycle does not allow."""

    def __init__(self, version: Version, to: VersionState) -> None:
        super().__init__(f"version {version.id} is {version.state}: it cannot become {to}")


def may_move(state: str, to: VersionState) -> bool:
    """Whether a version in `state` may move to `to`."""
    return to in MOVES[VersionState(state)]


def locked(session: Session, *where: ColumnExpressionArgument[bool]) -> Sequence[Version]:
    """The versions `where` says, by id, read afresh and locked until `session` ends: a move
    decided on a version's state is made on the state it has. On PostgreSQL their rows are
    locked, in the order of their ids, which every locker keeps, so that no two each wait
    for a row the other holds; on SQLite the session that writes holds the database from
    its start (`Database.session`)."""
    return session.scalars(
        select(Version)
        .where(*where)
        .order_by(Version.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()


def submitted(bot: Bot, number: int, archive_sha256: str, now: dt.datetime) -> Version:
    """A new version of `bot`, as every version starts: queued for the intake."""
    return Version(
        bot=bot,
        number=number,
        state=VersionState.QUEUED,
        archive_sha256=archive_sha256,
        submitted_at=now,
        updated_at=now,
    )


def move(
    version: Version,
    to: VersionState,
    reason: str = "",
    advice: str = "",
    now: dt.datetime | None = None,
) -> None:
    """Move `version` to `to`, with the reason and advice of its new state; MoveRefused if
    its lifecycle does not allow it."""
    if not may_move(version.state, to):
        raise MoveRefused(version, to)
    version.state, version.reason, version.advice = to, reason, advice
    version.updated_at = now or utcnow()


def requeue_interrupted(session: Session) -> None:
    """After a restart: the versions the intake was working on, queued again."""
    for state in IN_INTAKE:
        # The table says so; a bulk update would not ask it.
        assert may_move(state, VersionState.QUEUED), state
    session.execute(
        update(Version)
        .where(Version.state.in_(list(IN_INTAKE)))
        .values(state=VersionState.QUEUED, updated_at=utcnow())
    )


def place(session: Session, version: Version) -> None:
    """Put `version` on the ladder, placing, and retire its bot's other version on it: a
    bot plays the ladder with one version at a time, its newest."""
    versions = locked(session, Version.bot_id == version.bot_id)
    move(version, VersionState.PLACING)
    for old in versions:
        if old.id != version.id and old.state in ON_LADDER:
            move(old, VersionState.RETIRED, f"replaced by version {version.number}")


def suspend(version: Version, reason: str) -> None:
    """Take `version` off the ladder, with the reason its author is shown: the organiser's,
    or the ladder's for too many faults."""
    move(version, VersionState.SUSPENDED, reason)


def reinstate(version: Version) -> None:
    """Put a suspended version back on the ladder: rated if it has a rating, else placing."""
    move(version, VersionState.RATED if version.rating is not None else VersionState.PLACING)
