"""What the organiser does to an author's account: replace their token (the new one shown
once, the old one no one's at once), revoke it (no token is theirs until it is replaced),
and sign them out of every browser. Each ends the author's sessions (`sessions`), so a
browser signed in with the old token is signed out too. The command line and the organiser's
page call the same functions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from referee.arena.accounts import sessions
from referee.arena.store.db import Author, Database, SignIn
from referee.arena.store.errors import NotFound
from referee.arena.store.tokens import new_token, token_hash


@dataclass(frozen=True)
class Account:
    """An author as the organiser's page lists them."""

    name: str
    organiser: bool
    # Whether a token is theirs (False once revoked, until it is replaced).
    has_token: bool
    # Browsers signed in.
    sessions: int

    def shown(self) -> dict[str, object]:
        return asdict(self)


def accounts(database: Database) -> list[Account]:
    """Every author, by name."""
    signed_in = (
        select(func.count())
        .where(SignIn.author_id == Author.id)
        .correlate(Author)
        .scalar_subquery()
    )
    query = select(Author.name, Author.organiser, Author.token_hash, signed_in)
    with database.session() as session:
        rows = session.execute(query.order_by(Author.name_key)).all()
    return [
        Account(name, organiser, hashed is not None, count)
        for name, organiser, hashed, count in rows
    ]


def replace_token(database: Database, name: str) -> str:
    """Give the author `name` a new token, shown once: the old one, and every session, ends."""
    token = new_token()
    _change(database, name, token_hash(token))
    return token


def revoke_token(database: Database, name: str) -> int:
    """Take the author's token away, and end their sessions (how many there were)."""
    return _change(database, name, None)


def sign_out_everywhere(database: Database, name: str) -> int:
    """End every session of the author: how many there were."""
    with database.session() as session:
        return sessions.end_all(session, _named(session, name).id)


def _change(database: Database, name: str, hashed: str | None) -> int:
    with database.session() as session:
        author = _named(session, name)
        author.token_hash = hashed
        return sessions.end_all(session, author.id)


def _named(session: Session, name: str) -> Author:
    found = session.scalar(select(Author).where(Author.name == name))
    if found is None:
        raise NotFound(f"no author {name[:64]!r}")
    return found
