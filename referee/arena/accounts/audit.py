"""The audit log: every sign-in, failed sign-in and sign-out, every submission (taken or
refused) and every organiser's action, as a row the organiser reads (page and API).

A row says when, who (an author's name; none for a stranger or the command line), what, of
which object, from which client address, and one line of detail. It never holds a token or
a session id: a failed sign-in is recorded without the text that was given.

A stranger decides how many failed sign-ins there are, so they are bounded: from one address
at most `FAILED_PER_ADDRESS` rows in `FAILED_WINDOW`, from all at most `FAILED_IN_ALL`, and
past either a single row says that no more are recorded until the window has passed. An
author's refused submissions are bounded alike (`REFUSED_PER_AUTHOR`); a request with no
author's token is refused before it is anyone's, and is not recorded. The
address over its bound is also answered 429 for a wrong token (a right one still signs in:
a class behind one address is not locked out by one student's typing). An author's upload
that stalled is a row of its own, never left out: it counts in the author's hourly cap of
submissions, which bounds these rows too.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from referee.arena.store.db import AuditEntry, Database, utcnow

FAILED_WINDOW = dt.timedelta(minutes=15)
FAILED_PER_ADDRESS = 10
FAILED_IN_ALL = 500
REFUSED_PER_AUTHOR = 20
# The most rows a page of the log holds, and its default.
MAX_LIMIT = 200
DEFAULT_LIMIT = 50
# What a row's free text may hold: an object's name, a refusal's line.
TEXT_CHARS = 300
# Who did it, when no author did: the organiser at the arena's own command line.
COMMAND_LINE = "command line"


class Action(StrEnum):
    SIGNIN = "signin"
    SIGNIN_FAILED = "signin failed"
    # No more failed sign-ins are recorded from an address (or from any) for a while.
    SIGNIN_LIMITED = "signin limited"
    SIGNOUT = "signout"
    SUBMITTED = "submitted"
    SUBMISSION_REFUSED = "submission refused"
    # No more refused submissions of an author are recorded for a while.
    SUBMISSIONS_LIMITED = "submissions limited"
    # An author's archive came too slowly and was refused (`uploads`).
    UPLOAD_STALLED = "upload stalled"
    SUSPENDED = "suspend"
    REINSTATED = "reinstate"
    PAUSED = "pause"
    RESUMED = "resume"
    REPLAYED = "replay"
    TOKEN_REPLACED = "token replaced"
    TOKEN_REVOKED = "token revoked"
    SESSIONS_REVOKED = "sessions revoked"
    FINAL = "final"


@dataclass(frozen=True)
class Entry:
    """A row as the organiser reads it."""

    id: int
    at: dt.datetime
    author: str | None
    action: str
    subject: str
    address: str
    detail: str

    def shown(self) -> dict[str, object]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "author": self.author,
            "action": self.action,
            "object": self.subject,
            "address": self.address,
            "detail": self.detail,
        }


def record(
    database: Database,
    action: Action,
    author: str | None,
    address: str,
    subject: str = "",
    detail: str = "",
) -> None:
    """Write a row; its texts cut to one short line each."""
    with database.session() as session:
        session.add(
            AuditEntry(
                at=utcnow(),
                author=author,
                action=action,
                subject=_line(subject),
                address=address[:64],
                detail=_line(detail),
            )
        )


def signin_failed(database: Database, address: str) -> int | None:
    """Record a failed sign-in from `address`, within the bounds: None, or, past the
    address's bound, the seconds until it may try again."""
    now = utcnow()
    recent = AuditEntry.at > now - FAILED_WINDOW
    failed = select(func.count(), func.min(AuditEntry.at)).where(
        AuditEntry.action == Action.SIGNIN_FAILED, recent
    )
    with database.session() as session:
        mine, first = session.execute(failed.where(AuditEntry.address == address)).one()
        everyone = session.execute(failed).one()[0]
        if mine < FAILED_PER_ADDRESS and everyone < FAILED_IN_ALL:
            session.add(AuditEntry(at=now, action=Action.SIGNIN_FAILED, address=address[:64]))
            return None
        # Noted once a window: for the address, or (address "") for all of them.
        noted = address[:64] if mine >= FAILED_PER_ADDRESS else ""
        _note_limit(session, Action.SIGNIN_LIMITED, None, noted, now)
        if mine < FAILED_PER_ADDRESS:
            return None
        return max(1, math.ceil((first + FAILED_WINDOW - now).total_seconds()))


def submission_refused(
    database: Database, author: str, address: str, subject: str, detail: str
) -> None:
    """Record a refused submission, at most `REFUSED_PER_AUTHOR` of an author's in
    `FAILED_WINDOW` (a client retrying in a loop is noted once past that)."""
    now = utcnow()
    refused = select(func.count()).where(
        AuditEntry.action == Action.SUBMISSION_REFUSED,
        AuditEntry.author == author,
        AuditEntry.at > now - FAILED_WINDOW,
    )
    with database.session() as session:
        if (session.scalar(refused) or 0) >= REFUSED_PER_AUTHOR:
            _note_limit(session, Action.SUBMISSIONS_LIMITED, author, "", now)
            return
        session.add(
            AuditEntry(
                at=now,
                author=author,
                action=Action.SUBMISSION_REFUSED,
                subject=_line(subject),
                address=address[:64],
                detail=_line(detail),
            )
        )


def stalled_uploads(
    session: Session, author: str, since: dt.datetime, limit: int
) -> list[dt.datetime]:
    """When the author's uploads stalled after `since`: the oldest `limit`, oldest first."""
    stalled = (
        select(AuditEntry.at)
        .where(
            AuditEntry.action == Action.UPLOAD_STALLED,
            AuditEntry.author == author,
            AuditEntry.at > since,
        )
        .order_by(AuditEntry.at)
        .limit(limit)
    )
    return list(session.scalars(stalled).all())


def last_stall(session: Session, author: str, since: dt.datetime) -> dt.datetime | None:
    """When the author's last upload after `since` stalled; None if none did."""
    latest = select(func.max(AuditEntry.at)).where(
        AuditEntry.action == Action.UPLOAD_STALLED,
        AuditEntry.author == author,
        AuditEntry.at > since,
    )
    return session.scalar(latest)


def _note_limit(
    session: Session, action: Action, author: str | None, address: str, now: dt.datetime
) -> None:
    """Say once a window that rows of a kind are no longer recorded (for an author or an
    address, or for all: address "")."""
    said = select(AuditEntry.id).where(
        AuditEntry.action == action,
        AuditEntry.author.is_(None) if author is None else AuditEntry.author == author,
        AuditEntry.address == address,
        AuditEntry.at > now - FAILED_WINDOW,
    )
    if session.scalar(said.limit(1)) is not None:
        return
    whence = author or address or "all addresses"
    minutes = FAILED_WINDOW.seconds // 60
    detail = f"too many from {whence}: no more recorded for up to {minutes} min"
    session.add(AuditEntry(at=now, author=author, action=action, address=address, detail=detail))


def entries(database: Database, before: int | None, limit: int) -> list[Entry]:
    """The newest `limit` rows, or the newest before the row `before`: newest first."""
    query = select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)
    if before is not None:
        query = query.where(AuditEntry.id < before)
    with database.session() as session:
        rows = session.scalars(query).all()
        return [
            Entry(row.id, row.at, row.author, row.action, row.subject, row.address, row.detail)
            for row in rows
        ]


def _line(text: str) -> str:
    return " ".join(text.split())[:TEXT_CHARS]
