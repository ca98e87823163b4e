"""Riding out the database: what counts as its outage, what the arena does meanwhile, and
for how long.

An outage is the database not answering (a lost connection, a server restarting or
stopped) or not writing (a full disk, a database made read-only). Every session notes it
here (`Database.session`): a request is answered 503 with Retry-After
(`DatabaseUnavailable`), and the ladder and the intake, whose database work runs through
`Rider`, try it again with a growing wait. A database that does not answer for the arena's
`database_wait_s` ends `serve` with its own error (`DatabaseLost`); a full disk is waited
out however long it lasts, since only room made on it ends it, and the arena goes on by
itself once there is room again.

A retried piece of work must be idempotent: each of the ladder's and the intake's reads its
rows again, and writes only what is not yet written (a match recorded is done, and is not
recorded twice).
"""

from __future__ import annotations

import asyncio
import errno
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar

from sqlalchemy.exc import (
    DBAPIError,
    DisconnectionError,
    InterfaceError,
    OperationalError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout

from referee.arena.store.errors import Busy
from referee.errors import ArenaError

T = TypeVar("T")

# What a client is told to wait before it asks again.
RETRY_AFTER_S = 5
# The waits between tries of a piece of work: doubling from the first to the last.
FIRST_WAIT_S = 0.2
LAST_WAIT_S = 5.0
# The words by which a database says its disk is full, and its errno for a file's write.
_DISK_FULL = ("database or disk is full", "no space left on device", "disk quota exceeded")
_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY_ERRNOS = (errno.EROFS,)
# The room the arena keeps on its disk: below it, it takes no submission and plays no match,
# whose archives, builds and transcripts would fill it, and waits for room to be made.
MIN_FREE_BYTES = 32 * 1024 * 1024
_MIB = 1024 * 1024


class DatabaseUnavailable(Busy):
    """The database does not answer or cannot write, for now (HTTP 503, Retry-After)."""

    def __init__(self, outage: Outage) -> None:
        super().__init__(outage.line())
        self.outage = outage
        self.retry_after_s = RETRY_AFTER_S


class DatabaseLost(ArenaError):
    """The database stayed unavailable for longer than the arena waits for it."""


class Trouble(Enum):
    """What is wrong: the database does not answer (or is read-only); a write failed for a
    full disk; the arena's disk has less than MIN_FREE_BYTES free."""

    DOWN = "down"
    FULL = "full"
    LOW = "low"


@dataclass(frozen=True)
class Outage:
    """The database's trouble of the moment: its own error (or the room left), what kind
    of trouble, and since when (a monotonic time)."""

    problem: str
    trouble: Trouble
    since: float
    # Begun by a session that writes: a database that reads but cannot write (a file or
    # disk made read-only) is not back until a write is.
    on_write: bool = False

    @property
    def disk_full(self) -> bool:
        """Waited out however long it lasts: only room made on the disk ends it."""
        return self.trouble is not Trouble.DOWN

    def line(self) -> str:
        """What a client refused is told: why, without the database's own words, which
        may name the arena's machine."""
        if self.disk_full:
            return (
                "the arena's disk is full: it takes no submission and plays no match until"
                " there is room; try again later"
            )
        return "the arena's database is unavailable for a moment; try again shortly"

    def logged(self) -> str:
        """What the arena's log and its organiser are told: the database's own error too."""
        if self.disk_full:
            return (
                f"the arena's disk is full ({self.problem}): no submission is taken and no"
                " match played until there is room"
            )
        return (
            f"the arena's database is unavailable ({self.problem}): the ladder and the intake"
            " wait for it"
        )

    def over(self) -> str:
        """What the arena's log is told when it ends."""
        took = f"{time.monotonic() - self.since:.1f} s"
        if self.disk_full:
            return f"the arena's disk has room again, after {took}: it takes submissions and plays"
        return f"the arena's database answers again, after {took}"


def trouble_of(error: BaseException) -> Trouble | None:
    """The trouble `error` is, if it is an outage; None for any other error (a broken rule,
    a bug), which is not tried again."""
    if isinstance(error, OSError):
        if error.errno in _DISK_ERRNOS:
            return Trouble.FULL
        return Trouble.DOWN if error.errno in _READ_ONLY_ERRNOS else None
    lost = isinstance(error, DBAPIError) and error.connection_invalidated
    kinds = OperationalError | InterfaceError | DisconnectionError | PoolTimeout
    if not (lost or isinstance(error, kinds)):
        return None
    said = str(getattr(error, "orig", None) or error).lower()
    return Trouble.FULL if any(words in said for words in _DISK_FULL) else Trouble.DOWN


class Watch:
    """An arena's database as its sessions find it: the outage under way, if any. Shared by
    the API's threads, the ladder and the intake; its listeners hear its start and end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outage: Outage | None = None
        self._listeners: list[Callable[[str], None]] = []

    def listen(self, told: Callable[[str], None]) -> None:
        """Tell `told` a line when an outage starts, changes its kind, and ends."""
        self._listeners.append(told)

    @property
    def outage(self) -> Outage | None:
        return self._outage

    def failed(self, problem: str, trouble: Trouble, wrote: bool = False) -> DatabaseUnavailable:
        """A session (one that writes, if `wrote`) failed for `problem`: the outage it is
        part of, as the error to raise."""
        with self._lock:
            now = self._outage
            # A disk found short of room stays so until room is found: a write that failed
            # for it meanwhile says no more.
            kept = now is not None and now.trouble is Trouble.LOW and trouble is Trouble.FULL
            started = (now is None or now.trouble is not trouble) and not kept
            if started:
                since = now.since if now is not None else time.monotonic()
                self._outage = Outage(problem, trouble, since, wrote)
            outage = self._outage
        assert outage is not None
        if started:
            self._tell(outage.logged())
        return DatabaseUnavailable(outage)

    def answered(self, wrote: bool) -> None:
        """A session committed: the database answers, and it writes if `wrote`; a disk
        found short of room (`room`) is not over until room is found, nor one begun by a
        write until a write is made."""
        self._end({Trouble.DOWN, Trouble.FULL} if wrote else {Trouble.DOWN}, wrote)

    def room(self, directory: Path) -> None:
        """DatabaseUnavailable if the disk of `directory` (the arena's: its database on
        SQLite, its archives, builds and transcripts) has less than MIN_FREE_BYTES free."""
        try:
            free = shutil.disk_usage(directory).free
        except OSError:
            return  # the arena's own work will say what is wrong
        if free < MIN_FREE_BYTES:
            raise self.failed(
                f"{free // _MIB} MiB free, less than {MIN_FREE_BYTES // _MIB} MiB", Trouble.LOW
            )
        self._end({Trouble.LOW})

    def _end(self, troubles: set[Trouble], wrote: bool = True) -> None:
        with self._lock:
            ended = self._outage
            if ended is None or ended.trouble not in troubles or (ended.on_write and not wrote):
                return
            self._outage = None
        self._tell(ended.over())

    def _tell(self, line: str) -> None:
        for told in self._listeners:
            told(line)


class Rider:
    """Database work (blocking) run in a thread, and run again with a growing wait for as
    long as the database is unavailable: DatabaseLost once it has not answered for
    `wait_s`; a full disk is waited out."""

    def __init__(self, wait_s: float) -> None:
        self._wait_s = wait_s

    async def __call__(self, work: Callable[[], T]) -> T:
        wait = FIRST_WAIT_S
        while True:
            try:
                return await asyncio.to_thread(work)
            except DatabaseUnavailable as error:
                outage = error.outage
                if not outage.disk_full and time.monotonic() - outage.since >= self._wait_s:
                    raise DatabaseLost(
                        f"the arena's database did not answer for {self._wait_s:g} s:"
                        f" {outage.problem}"
                    ) from None
            await asyncio.sleep(wait)
            wait = min(2 * wait, LAST_WAIT_S)


class ReadOnlySeen(ArenaError):
    """SQLite found the database's file read-only: this process's hold on it stays so."""


async def watch_read_only(seen: Callable[[], bool], every_s: float = 0.5) -> None:
    """Raise ReadOnlySeen once `seen()` (`Database.read_only_seen`): what the process has
    open of a file SQLite found read-only stays read-only after the file is writable again,
    so the process that watches this ends, and serve starts it again to open the file
    afresh (a read-only file has to be waited out by a new process each time)."""
    while not seen():
        await asyncio.sleep(every_s)
    raise ReadOnlySeen(
        "the arena's database file was found read-only: this process starts again to open it afresh"
    )
