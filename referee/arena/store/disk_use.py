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
from collections.abc import Iterator
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
    meanwhile. Only the first is waited for. A measure of a season's arena takes seconds;
    no request waits for it but the first."""

    def __init__(self, arena: Arena, fresh_s: float = FRESH_S) -> None:
        self._arena = arena
        self._fresh_s = fresh_s
        # Held to read or set the last measure, and whether one is being taken.
        self._lock = threading.Lock()
        # Held while the first measure is taken, which those asking meanwhile wait for.
        self._first = threading.Lock()
        self._last: tuple[float, DiskUse] | None = None
        self._measuring = False

    def current(self) -> DiskUse:
        """The last measure, and a new one begun if it is older than `fresh_s`; the first
        measure, taken now if there is none (blocks meanwhile: call it from a thread)."""
        with self._lock:
            last = self._last
            if last is not None:
                stale = time.monotonic() - last[0] > last[1].fresh_s(self._fresh_s)
                if stale and not self._measuring:
                    self._measuring = True
                    threading.Thread(target=self._again, name="disk meter", daemon=True).start()
                return last[1]
        with self._first:
            with self._lock:
                if self._last is not None:
                    return self._last[1]
            found = measure(self._arena)
            with self._lock:
                self._last = (time.monotonic(), found)
            return found

    def _again(self) -> None:
        """A new measure, shown once taken; the last one stays while the database does not
        answer (the next request past `fresh_s` tries again)."""
        try:
            found: DiskUse | None = measure(self._arena)
        except Busy:
            found = None
        with self._lock:
            if found is not None:
                self._last = (time.monotonic(), found)
            self._measuring = False


def measure(arena: Arena) -> DiskUse:
    """What each author's versions and their seats' logs take of the arena's disk now."""
    started = time.monotonic()
    with arena.database.session() as session:
        authors = session.scalars(select(Author.name)).all()
        versions = session.execute(
            select(Version.id, Author.name).join(Bot, Version.bot_id == Bot.id).join(Author)
        ).all()
    whose = dict(versions)
    logs = dict.fromkeys(authors, 0)
    # Only the matches whose seats left a log are looked up (a bot that writes nothing to
    # its standard error leaves none), a batch at a time: never every seat of the season.
    for batch in _log_batches(arena.results / LOGS):
        with arena.database.session() as session:
            seats = session.execute(
                select(Match.key, Seat.role, Seat.version_id)
                .join(Seat, Seat.match_id == Match.id)
                .where(Match.key.in_(batch))
            )
            for key, role, version_id in seats:
                logs[whose[version_id]] += batch[key].get(role, 0)
    counts = dict.fromkeys(authors, 0)
    bots = dict.fromkeys(authors, 0)
    archives = dict.fromkeys(authors, 0)
    for version_id, author in versions:
        counts[author] += 1
        bots[author] += tree_bytes(arena.bot_directory(version_id))
        # As submitted, and as packed for the workers (`bot_bundles.py`).
        archives[author] += _file_bytes(arena.archive(version_id))
        archives[author] += _file_bytes(arena.bundle(version_id))
    found = [
        AuthorDisk(name, counts[name], bots[name], archives[name], logs[name]) for name in authors
    ]
    found.sort(key=lambda author: (-author.total_bytes, author.author))
    return DiskUse(
        measured_at=utcnow(),
        took_s=time.monotonic() - started,
        free_bytes=shutil.disk_usage(arena.directory).free,
        authors=tuple(found),
    )


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


def _log_batches(directory: Path) -> Iterator[dict[str, dict[str, int]]]:
    """The logs in `directory` that hold blocks (`KEY.ROLE.log`), LOG_BATCH at a time: the
    bytes of each, by its match's key and its role."""
    batch: dict[str, dict[str, int]] = {}
    held = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                key, _, rest = entry.name.partition(".")
                try:
                    size = entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue
                if not size or not rest.endswith(".log"):
                    continue
                batch.setdefault(key, {})[rest.removesuffix(".log")] = size
                held += 1
                if held >= LOG_BATCH:
                    yield batch
                    batch, held = {}, 0
    except OSError:
        pass
    if batch:
        yield batch
