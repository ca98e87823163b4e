"""Browsers signed in: the one home of the rules of a sign-in's session.

Signing in with a token makes a session: a new random id of 256 bits, which the browser
keeps in its HttpOnly cookie and the database keeps only as its hash (as it keeps tokens,
`tokens`). The token itself never goes in a cookie, so a cookie that leaks (a shared
computer, a browser's profile copied) is worth at most one session, which ends:

- `LIFETIME` after the sign-in, however busy it is;
- after `IDLE` without a request;
- when its browser signs out, the organiser signs its author out, or the author's token is
  replaced or revoked: the row is deleted, so a copy of the old cookie is no one's.

An id is always made here, never taken from a request (no session fixation), and an author
keeps at most `MAX_PER_AUTHOR` sessions: whoever holds a token cannot fill the table by
signing in again and again.
"""

from __future__ import annotations

import datetime as dt
import secrets

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from referee.arena.store.db import Author, Database, SignIn, utcnow
from referee.arena.store.tokens import MAX_TOKEN_CHARS, token_hash

# How long a sign-in lasts at most, and without a request.
LIFETIME = dt.timedelta(days=14)
IDLE = dt.timedelta(days=3)
# A session's last request is written no more often than this: a page polling every second
# would otherwise write the database every second.
SEEN_EVERY = dt.timedelta(minutes=5)
# Past this, an author's oldest sessions end when another begins.
MAX_PER_AUTHOR = 20


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def begin(database: Database, author_id: int, now: dt.datetime | None = None) -> str:
    """A new session of the author: its id, for the cookie (shown nowhere else)."""
    now = now or utcnow()
    session_id = new_session_id()
    with database.session() as session:
        # The table holds only sessions that may still be used.
        session.execute(delete(SignIn).where(SignIn.expires_at <= now))
        session.add(
            SignIn(
                id_hash=token_hash(session_id),
                author_id=author_id,
                created_at=now,
                seen_at=now,
                expires_at=now + LIFETIME,
            )
        )
        session.flush()
        kept = select(SignIn.id).where(SignIn.author_id == author_id)
        kept = kept.order_by(SignIn.created_at.desc(), SignIn.id.desc()).limit(MAX_PER_AUTHOR)
        session.execute(delete(SignIn).where(SignIn.author_id == author_id, SignIn.id.not_in(kept)))
    return session_id


def author_of(database: Database, session_id: str, now: dt.datetime | None = None) -> Author | None:
    """The author of a session that has not ended, found by its id's hash; None otherwise.
    An ended one is deleted as it is found."""
    if not session_id or len(session_id) > MAX_TOKEN_CHARS:
        return None
    now = now or utcnow()
    with database.session() as session:
        found = session.scalar(select(SignIn).where(SignIn.id_hash == token_hash(session_id)))
        if found is None:
            return None
        if now >= found.expires_at or now - found.seen_at >= IDLE:
            session.delete(found)
            return None
        if now - found.seen_at >= SEEN_EVERY:
            found.seen_at = now
        return session.get(Author, found.author_id)


def end(database: Database, session_id: str) -> str | None:
    """End one session (a sign-out): its author's name, or None if it had ended."""
    if not session_id or len(session_id) > MAX_TOKEN_CHARS:
        return None
    with database.session() as session:
        found = session.scalar(select(SignIn).where(SignIn.id_hash == token_hash(session_id)))
        if found is None:
            return None
        session.delete(found)
        return session.scalar(select(Author.name).where(Author.id == found.author_id))


def end_all(session: Session, author_id: int) -> int:
    """End every session of an author, in the caller's transaction: how many there were."""
    ended = session.scalars(select(SignIn.id).where(SignIn.author_id == author_id)).all()
    session.execute(delete(SignIn).where(SignIn.author_id == author_id))
    return len(ended)
