"""The intake's line: which queued version it takes next, fairly between authors.

Authors take turns, as in a round robin: the next version is the oldest queued one of the
author the intake served least recently (an author it is working for now, most recently
of all). So an author's second submission waits until every author who was waiting has had
their first taken, however many the first author sent before them, and a version's place
in line is where the same turns bring it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from referee.arena.store.db import IN_INTAKE, Bot, Step, StepKind, Version, VersionState

# An author the intake never served stands before any it did.
NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class Waiting:
    """A queued version as the line sees it: its author, and when it was submitted."""

    version: int
    author: int
    submitted_at: dt.datetime


def in_turns(
    waiting: Sequence[Waiting], served: Mapping[int, dt.datetime], busy: frozenset[int]
) -> list[int]:
    """The versions of `waiting` in the order the intake takes them: authors in turn, each
    time the one served least recently (`served`: when the intake last took a version of
    each author it has taken; `busy`: the authors it is working for now, served last of
    all), each turn that author's oldest queued version."""
    queues: dict[int, list[Waiting]] = {}
    for version in sorted(waiting, key=lambda v: (v.submitted_at, v.version)):
        queues.setdefault(version.author, []).append(version)

    def turn(author: int) -> tuple[bool, dt.datetime, dt.datetime, int]:
        oldest = queues[author][0]
        return (author in busy, served.get(author, NEVER), oldest.submitted_at, oldest.version)

    authors = sorted(queues, key=turn)
    order: list[int] = []
    for depth in range(max((len(queue) for queue in queues.values()), default=0)):
        order.extend(
            queues[author][depth].version for author in authors if depth < len(queues[author])
        )
    return order


def line(session: Session) -> list[int]:
    """The queued versions, in the order the intake takes them."""
    author = Bot.author_id
    waiting = [
        Waiting(version, owner, submitted)
        for version, owner, submitted in session.execute(
            select(Version.id, author, Version.submitted_at)
            .join(Bot)
            .where(Version.state == VersionState.QUEUED)
        )
    ]
    if not waiting:
        return []
    served = {
        owner: last
        for owner, last in session.execute(
            select(author, func.max(Step.started_at))
            .select_from(Step)
            .join(Version)
            .join(Bot)
            .where(Step.kind == StepKind.UNPACK)
            .group_by(author)
        )
    }
    busy = frozenset(
        session.scalars(
            select(author).select_from(Version).join(Bot).where(Version.state.in_(list(IN_INTAKE)))
        )
    )
    return in_turns(waiting, served, busy)
