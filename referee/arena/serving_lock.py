"""One `serve` to an arena: two would build a version twice, play twice the matches the
machine was sized for, and race each other's records.

The lock is the database's, where the arena's state is: on PostgreSQL an advisory lock,
held by a connection of its own for as long as the arena is served, so that a second
`serve` on any machine is refused; on SQLite, whose database is a file in the arena's
directory, a lock on a file beside it. Either is let go by the system when the process
ends, however it ends (a `kill -9` leaves no lock behind).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from referee.arena.db import database_problem
from referee.arena.home import Arena
from referee.errors import ArenaError

LOCK_FILE = "serve.lock"
# The advisory lock's key on PostgreSQL (a 64-bit number): "referee!" in ASCII. An arena
# has a database of its own, so one key serves every arena.
ADVISORY_KEY = int.from_bytes(b"referee!", "big") - 2**63
_REFUSED = "another `referee arena serve` is serving this arena"


@contextlib.contextmanager
def serving(arena: Arena) -> Iterator[None]:
    """Hold the arena's one lock while the block runs; ArenaError, in one line, if another
    process holds it."""
    if arena.database.url.startswith("sqlite"):
        with _file_lock(arena):
            yield
    else:
        with _advisory_lock(arena):
            yield


@contextlib.contextmanager
def _file_lock(arena: Arena) -> Iterator[None]:
    path = arena.directory / LOCK_FILE
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise ArenaError(f"{path}: cannot lock the arena: {error.strerror}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            shown = f" (process {holder})" if holder.isdigit() else ""
            raise ArenaError(f"{arena.directory}: {_REFUSED}{shown}") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _advisory_lock(arena: Arena) -> Iterator[None]:
    try:
        connection = arena.database.engine.connect()
    except SQLAlchemyError as error:
        raise ArenaError(f"the arena's database: {database_problem(error)}") from None
    try:
        try:
            held = connection.scalar(select(func.pg_try_advisory_lock(ADVISORY_KEY)))
            connection.commit()
        except SQLAlchemyError as error:
            raise ArenaError(f"the arena's database: {database_problem(error)}") from None
        if not held:
            raise ArenaError(f"{arena.directory}: {_REFUSED} (its database is locked)")
        yield
    finally:
        # Closing the session's connection lets the lock go with it.
        connection.invalidate()
        connection.close()
