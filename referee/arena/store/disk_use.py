"""What each author's bots take of the arena's disk, for the organiser: their versions'
directories (unpacked and built), their archives (as submitted, and as packed for the
workers), and their seats' logs.

A walk of a big tree takes long: a measure is taken in a thread (never the event loop), at
most once every `FRESH_S`; those who ask meanwhile are given the last one. Only the first
measure is waited for.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from referee.arena.store.db import Author, Bot, Match, Seat, Version, utcnow
from referee.arena.store.errors import Busy
from referee.arena.store.home import Arena
from referee.tournaments.results import LOGS

# How long a measure is shown before it is taken again, at least; and at least this many
# times as long as it took: a measure of a season's logs takes seconds of the arena's
# process, which the ladder's matches and the pages share.
FRESH_S = 30.0
FRESH_TIMES = 9
# The logs whose matches one query looks up.
LOG_BATCH = 2000


@dataclass(frozen=True)
class AuthorDisk:
    """What one author's bots take: the bytes of the blocks their files hold on disk."""

    author: str
    versions: int
    bots_bytes: int
    archives_bytes: int
    logs_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.bots_bytes + self.archives_bytes + self.logs_bytes

    def shown(self) -> dict[str, Any]:
        return {
            "author": self.author,
            "versions": self.versions,
            "bots_bytes": self.bots_bytes,
            "archives_bytes": self.archives_bytes,
            "logs_bytes": self.logs_bytes,
            "total_bytes": self.total_bytes,
        }


@dataclass(frozen=True)
class DiskUse:
    """A measure of the arena's disk: by author, the most first; when it was taken and how
    long it took; and what is free on the arena's file system."""

    measured_at: dt.datetime
    took_s: float
    free_bytes: int
    authors: tuple[AuthorDisk, ...]

    def fresh_s(self, least: float) -> float:
        """How long it is shown before it is taken again: at least `least`."""
        return max(least, FRESH_TIMES * self.took_s)

    def shown(self) -> dict[str, Any]:
        return {
            "measured_at": self.measured_at.isoformat(timespec="seconds"),
            "took_s": round(self.took_s, 3),
            "fresh_s": round(self.fresh_s(FRESH_S), 1),
            "free_bytes": self.free_bytes,
            "total_bytes": sum(author.total_bytes for author in self.authors),
            "authors": [author.shown() for author in self.authors],
        }


class DiskMeter:
    """The arena's disk by author, measured again once the last measure is `fresh_s` old
    (or FRESH_TIMES as old as it took): in a thread of its own, the last measure shown
    meanwhile. Only the first is waited for, which `begin` takes at once. The author of
    each log is looked up once, and kept while the log is there (the logs of a season's
    matches are many: a few tens of bytes each)."""

    def __init__(self, arena: Arena, fresh_s: float = FRESH_S) -> None:
        self._arena = arena
        self._fresh_s = fresh_s
        # Held to read or set the last measure, and whether one is being taken.
        self._lock = threading.Lock()
        # Held while the first measure is taken, which those asking meanwhile wait for.
        self._first = threading.Lock()
        self._last: tuple[float, DiskUse] | None = None
        self._measuring = False
        # Each log's author, by its file's name, as the last measure found them.
        self._whose: dict[str, str] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def begin(self) -> None:
        """Take the first measure now, in a thread: an arena served would have its organiser
        wait for it at their first look (a season's takes seconds)."""
        self._first.acquire()
        self._thread(self._take_first)

    def close(self) -> None:
        """Stop a measure under way, between two of its looks at the database."""
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def current(self) -> DiskUse:
        """The last measure, and a new one begun if it is older than `fresh_s`; the first
        measure, taken now if there is none (blocks meanwhile: call it from a thread)."""
        with self._lock:
            last = self._last
            if last is not None:
                stale = time.monotonic() - last[0] > last[1].fresh_s(self._fresh_s)
                if stale and not self._measuring:
                    self._measuring = True
                    self._thread(self._again)
                return last[1]
        with self._first:
            with self._lock:
                if self._last is not None:
                    return self._last[1]
            return self._measured()

    def _thread(self, work: Callable[[], object]) -> None:
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        thread = threading.Thread(target=work, name="disk meter", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _measured(self) -> DiskUse:
        found = measure(self._arena, self._whose, self._stop)
        with self._lock:
            self._last = (time.monotonic(), found)
        return found

    def _take_first(self) -> None:
        """The first measure, begun by `begin`, which holds `_first` for it. One that the
        database does not answer, or that is stopped, is taken by the next to ask."""
        try:
            self._measured()
        except (Busy, Stopped):
            pass
        finally:
            self._first.release()

    def _again(self) -> None:
        """A new measure, shown once taken; the last one stays while the database does not
        answer (the next request past `fresh_s` tries again)."""
        try:
            self._measured()
        except (Busy, Stopped):
            pass
        finally:
            with self._lock:
                self._measuring = False


class Stopped(Exception):
    """A measure stopped: the meter was closed."""


def measure(
    arena: Arena, whose: dict[str, str] | None = None, stop: threading.Event | None = None
) -> DiskUse:
    """What each author's versions and their seats' logs take of the arena's disk now.
    `whose`: the author of each log looked up before, by its file's name, which it updates
    (those looked up now added, those gone dropped). Stopped between two of its looks at
    the database once `stop` is set."""
    started = time.monotonic()
    with arena.database.session() as session:
        authors = session.scalars(select(Author.name)).all()
        versions = session.execute(
            select(Version.id, Author.name).join(Bot, Version.bot_id == Bot.id).join(Author)
        ).all()
    known = {} if whose is None else whose
    found = _logs_by_author(arena, dict(versions), known, stop)
    known.clear()
    known.update(found.whose)
    logs = dict.fromkeys(authors, 0)
    for author, size in found.bytes.items():
        logs[author] += size
    counts = dict.fromkeys(authors, 0)
    bots = dict.fromkeys(authors, 0)
    archives = dict.fromkeys(authors, 0)
    for version_id, author in versions:
        counts[author] += 1
        bots[author] += tree_bytes(arena.bot_directory(version_id))
        # As submitted, and as packed for the workers (`bot_bundles.py`).
        archives[author] += _file_bytes(arena.archive(version_id))
        archives[author] += _file_bytes(arena.bundle(version_id))
    authored = [
        AuthorDisk(name, counts[name], bots[name], archives[name], logs[name]) for name in authors
    ]
    authored.sort(key=lambda author: (-author.total_bytes, author.author))
    return DiskUse(
        measured_at=utcnow(),
        took_s=time.monotonic() - started,
        free_bytes=shutil.disk_usage(arena.directory).free,
        authors=tuple(authored),
    )


@dataclass
class _Logs:
    """The logs' bytes by author, and each log's author by its file's name."""

    bytes: dict[str, int]
    whose: dict[str, str]


def _logs_by_author(
    arena: Arena,
    version_authors: dict[int, str],
    known: dict[str, str],
    stop: threading.Event | None,
) -> _Logs:
    """The logs that hold bytes, each counted to its seat's author: those of `known` as it
    says, the others looked up, a batch at a time. Only the matches whose seats left a log
    are read (a bot that writes nothing to its standard error leaves none), and each once:
    never every seat of the season."""
    found = _Logs({}, {})
    # Logs not known yet: by match key, each role's file name and bytes.
    pending: dict[str, dict[str, tuple[str, int]]] = {}
    held = 0

    def counted(name: str, author: str, size: int) -> None:
        found.whose[name] = author
        found.bytes[author] = found.bytes.get(author, 0) + size

    def look_up() -> None:
        if stop is not None and stop.is_set():
            raise Stopped
        with arena.database.session() as session:
            seats = session.execute(
                select(Match.key, Seat.role, Seat.version_id)
                .join(Seat, Seat.match_id == Match.id)
                .where(Match.key.in_(pending))
            )
            for key, role, version_id in seats:
                name, size = pending[key].get(role, ("", 0))
                if name:
                    counted(name, version_authors[version_id], size)

    for name, key, role, size in _logs(arena.results / LOGS):
        if name in known:
            counted(name, known[name], size)
            continue
        pending.setdefault(key, {})[role] = (name, size)
        held += 1
        if held >= LOG_BATCH:
            look_up()
            pending, held = {}, 0
    if pending:
        look_up()
    return found


def tree_bytes(directory: Path) -> int:
    """The bytes of the blocks that a directory and everything under it hold, links not
    followed; 0 if there is no such directory. What vanishes meanwhile is not counted."""
    total = 0
    stack = [str(directory)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                total += entry.stat(follow_symlinks=False).st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            except OSError:
                continue
    return total


def _file_bytes(path: Path) -> int:
    try:
        return path.stat().st_blocks * 512
    except OSError:
        return 0


def _logs(directory: Path) -> Iterator[tuple[str, str, str, int]]:
    """The logs in `directory` (`KEY.ROLE.log`) that hold blocks: each one's file name, its
    match's key, its role and the bytes of its blocks."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                key, _, rest = entry.name.partition(".")
                if not rest.endswith(".log"):
                    continue
                try:
                    size = entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue
                if size:
                    yield entry.name, key, rest.removesuffix(".log"), size
    except OSError:
        return
