"""Transcripts replayed on request, in worker processes, kept as files, a few at once for each
requester.

A replay takes a core for as long as its match's rules take. In the arena's process it
would hold the interpreter that the ladder's referee shares, so the replays run in a pool
of WORKERS processes of their own (`replay_work`, at a lower priority), made on the first
replay and ended by `close` when the arena stops. What a replay showed is kept as a file
(`replay_cache`) and read back by whoever asks next, without a replay.

Each requester (an author, or an address for a reader with no token) has PER_REQUESTER
replays under way or waiting at most, and all of them together ADMITTED: past either, the
request is refused at once (`TurnTaken`, 503 with Retry-After), rather than queued where one
who asks again and again would fill the queue. Whoever else asks is still served.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from referee.arena.replays import work
from referee.arena.replays.cache import ReplayCache
from referee.arena.replays.facts import Kept
from referee.arena.replays.work import Kind, Replayed
from referee.arena.store.db import Author
from referee.arena.store.errors import Busy
from referee.arena.store.home import Arena

# Replays computed at once: the pool's processes.
WORKERS = 2
# Replays under way or waiting, at most, of one requester, and of all of them.
PER_REQUESTER = 1
ADMITTED = 8
# What a refused requester is told to wait before asking again.
RETRY_AFTER_S = 2
# Where the replays are kept, in the arena's directory.
DIRECTORY = "replays"


class TurnTaken(Busy):
    """A replay refused for now: its requester's turns, or all of them, are taken (503)."""

    retry_after_s = RETRY_AFTER_S


def requester(author: Author | None, address: str) -> str:
    """Whose turn a replay takes: the signed-in author's, else the client address's."""
    return f"author {author.id}" if author is not None else f"address {address}"


class Replays:
    """The arena's replays: kept, else computed by its workers, a few at once each; the
    matches' transcripts found through `facts` (by default, its own)."""

    def __init__(self, arena: Arena, facts: Kept | None = None, workers: int = WORKERS) -> None:
        self._arena = arena
        self._facts = facts or Kept(arena)
        self._workers = workers
        self._cache = ReplayCache(arena.directory / DIRECTORY)
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        # The replays under way or waiting, by requester.
        self._turns: dict[str, int] = {}

    @property
    def asked(self) -> int:
        """The replays under way or waiting."""
        with self._lock:
            return sum(self._turns.values())

    def page(self, asker: str, key: str, bot_pages: Mapping[str, str]) -> Replayed:
        """A match page's replay (`Kind.PAGE`), its players linked to `bot_pages`."""
        return self._replayed(asker, Kind.PAGE, key, bot_pages, kept=True)

    def verdict(self, asker: str, key: str) -> Replayed:
        """The organiser's replay: done again whatever is kept, for it checks the replay."""
        return self._replayed(asker, Kind.VERDICT, key, {}, kept=False)

    def export(self, asker: str, key: str) -> Replayed:
        """A match's GGP export (`Kind.EXPORT`)."""
        return self._replayed(asker, Kind.EXPORT, key, {}, kept=True)

    def _replayed(
        self, asker: str, kind: Kind, key: str, bot_pages: Mapping[str, str], kept: bool
    ) -> Replayed:
        """`kind`'s replay of match `key`, as kept, else computed by a worker in `asker`'s
        turn; NotFound for no such match or one with no transcript."""
        path = self._facts.of(key).transcript_in(self._arena.directory)
        public_key = self._arena.key.public
        try:
            sha256 = work.digest(path)
        except OSError:
            sha256 = ""  # not kept: the worker's verdict says why it cannot be read
        entry = None
        if kept and sha256:
            entry = self._cache.entry(kind, sha256, public_key, bot_pages)
            found = self._cache.get(entry)
            if found is not None:
                return found
        with self._turn(asker):
            done = self._computed(kind, str(path), public_key, dict(bot_pages))
        # Kept only as what was asked for: a transcript rewritten meanwhile is not.
        if entry is not None and done.transcript == sha256:
            self._cache.put(entry, done)
        return done

    @contextlib.contextmanager
    def _turn(self, asker: str) -> Iterator[None]:
        with self._lock:
            if self._turns.get(asker, 0) >= PER_REQUESTER:
                raise TurnTaken(f"your replay under way comes first ({PER_REQUESTER} at once)")
            if sum(self._turns.values()) >= ADMITTED:
                raise TurnTaken(f"{ADMITTED} replays under way or waiting")
            self._turns[asker] = self._turns.get(asker, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._turns[asker] -= 1
                if not self._turns[asker]:
                    del self._turns[asker]

    def _computed(
        self, kind: Kind, path: str, public_key: str, bot_pages: dict[str, str]
    ) -> Replayed:
        pool = self._started()
        try:
            try:
                # Looked up when called: a test may stand another module's function in.
                future = pool.submit(work.replayed, kind, path, public_key, bot_pages)
            except RuntimeError as error:  # the pool shut meanwhile, or broken
                raise CancelledError from error
            return future.result()
        except (BrokenProcessPool, CancelledError) as error:
            # Its worker died, or the arena is stopping: a pool broken is made anew.
            self._discard(pool)
            raise TurnTaken("the replay was cut short; try again in a moment") from error

    def _started(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Workers started afresh (a fork server's), not forks of this process, whose
                # threads, event loop and database connections they must not share.
                self._pool = ProcessPoolExecutor(
                    self._workers,
                    mp_context=multiprocessing.get_context("forkserver"),
                    initializer=work.lowered,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """End the workers, and the replays under way, whose askers are told to try again;
        a replay asked for after starts the workers again."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        # A replay takes as long as its match's rules: the arena's stop does not wait for it.
        workers = list(pool._processes.values())
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
