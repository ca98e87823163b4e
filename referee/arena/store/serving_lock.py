"""One `serve` to an arena: two would build a version twice, play twice the matches the
machine was sized for, and race each other's records.

The lock is the database's, where the arena's state is: on PostgreSQL an advisory lock,
held by a connection of its own for as long as the arena is served, so that a second
`serve` on any machine is refused; on SQLite, whose database is a file in the arena's
directory, a lock on a file beside it. Either is let go by the system when the process
ends, however it ends (a `kill -9` leaves no lock behind).

A PostgreSQL server restarted under the arena, which rides it out (`outages`), lets the
advisory lock go with the connection: `Held.keep` takes it again once the server is back,
or ends `serve` if another has taken it meanwhile.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator

from sqlalchemy import Connection, func, select
from sqlalchemy.exc import SQLAlchemyError

from referee.arena.store.db import database_problem
from referee.arena.store.home import Arena
from referee.arena.store.outages import Trouble
from referee.errors import ArenaError

LOCK_FILE = "serve.lock"
# The advisory lock's key on PostgreSQL (a 64-bit number): "referee!" in ASCII. An arena
# has a database of its own, so one key serves every arena.
ADVISORY_KEY = int.from_bytes(b"referee!", "big") - 2**63
_REFUSED = (
    "another `referee arena serve` is serving this arena,"
    " or `referee arena final` playing its final"
)


class Held:
    """The arena's lock, held: `keep` makes sure it still is."""

    def __init__(self, keep: Callable[[], bool] = lambda: False) -> None:
        self._keep = keep

    def keep(self) -> bool:
        """Take the lock again if its connection was lost (a database server restarted):
        whether it had to; ArenaError if another `serve` took it meanwhile;
        DatabaseUnavailable while the database does not answer. Blocking: run it in a
        thread."""
        return self._keep()


@contextlib.contextmanager
def serving(arena: Arena) -> Iterator[Held]:
    """Hold the arena's one lock while the block runs; ArenaError, in one line, if another
    process holds it."""
    if arena.database.url.startswith("sqlite"):
        with _file_lock(arena):
            yield Held()
    else:
        with _advisory_lock(arena) as held:
            yield held


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
def _advisory_lock(arena: Arena) -> Iterator[Held]:
    try:
        connection = arena.database.engine.connect()
    except SQLAlchemyError as error:
        raise ArenaError(f"the arena's database: {database_problem(error)}") from None
    # The connection that holds the lock; None once lost, until it is taken again.
    holder: list[Connection | None] = [connection]

    def keep() -> bool:
        current = holder[0]
        if current is not None:
            try:
                current.exec_driver_sql("SELECT 1")
                current.commit()
                return False
            except SQLAlchemyError:
                holder[0] = None
                _let_go(current)
        with arena.database.session() as session:
            session.execute(select(1))  # DatabaseUnavailable while the database is away
        fresh = arena.database.engine.connect()
        try:
            _take(arena, fresh, "another `serve` took it while the database was away")
        except SQLAlchemyError as error:
            _let_go(fresh)
            raise arena.database.watch.failed(database_problem(error), Trouble.DOWN) from None
        except BaseException:
            _let_go(fresh)
            raise
        holder[0] = fresh
        return True

    try:
        try:
            _take(arena, connection, "its database is locked")
        except SQLAlchemyError as error:
            raise ArenaError(f"the arena's database: {database_problem(error)}") from None
        yield Held(keep)
    finally:
        if holder[0] is not None:
            _let_go(holder[0])


def _let_go(connection: Connection) -> None:
    """Closing the lock's connection, not to the pool, lets the lock go with it."""
    with contextlib.suppress(SQLAlchemyError):
        connection.invalidate()
        connection.close()


def _take(arena: Arena, connection: Connection, why: str) -> None:
    """The advisory lock taken on `connection`; ArenaError if another holds it."""
    held = connection.scalar(select(func.pg_try_advisory_lock(ADVISORY_KEY)))
    connection.commit()
    if not held:
        raise ArenaError(f"{arena.directory}: {_REFUSED} ({why})")
