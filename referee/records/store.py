"""Transcripts written from an event loop that times players.

A transcript is rendered and written in a thread, where its JSON and a slow disk hold no
clock (`referee.pauses`); once begun, a write is finished whatever happens to its caller.
A match's file is whole (a rename) before the match's players play again, so a referee
killed at any moment loses no match that has ended: the kernel has the file. Putting it on
the disk, which only a machine that stops (a power cut) needs, is one journal commit per
file. A tournament's matches of instant players end hundreds of times a second, and a
commit each cost 9% of their rate on a virtual disk; so a run's transcripts reach the disk
together, a moment after their files are whole (`TranscriptStore`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from referee.records.files import sync_files
from referee.records.signing import SigningKey
from referee.records.transcript import Transcript, write_transcript

# How long a tournament's transcript may be whole in its file before it is on the disk: the
# transcripts of the matches that end meanwhile reach it in the same journal commit.
SYNC_DELAY_S = 0.25


async def store_transcript(path: Path, transcript: Transcript, key: SigningKey | None) -> None:
    """`write_transcript`, on the disk when it returns."""
    await asyncio.to_thread(write_transcript, path, transcript, key)


class TranscriptStore:
    """Where a run writes its transcripts: each is whole in its file when `store` returns,
    and on the disk at most `sync_delay_s` later (with those written meanwhile), all of them
    by the time `close` returns. With no delay, each is on the disk when `store` returns.

    A transcript whole in its file but not yet on the disk is lost only if the machine stops;
    the next run then finds it missing or unreadable, and plays the match again."""

    def __init__(self, key: SigningKey | None, sync_delay_s: float = SYNC_DELAY_S) -> None:
        self._key = key
        self._delay_s = sync_delay_s
        self._unsynced: list[Path] = []
        self._timer: asyncio.Task[None] | None = None
        self._syncs: set[asyncio.Future[None]] = set()
        self._failure: BaseException | None = None

    async def store(self, path: Path, transcript: Transcript) -> None:
        """Write `transcript` to `path`; a failed sync of earlier ones is raised here."""
        self._raise_failure()
        if not self._delay_s:
            await store_transcript(path, transcript, self._key)
            return
        await asyncio.to_thread(write_transcript, path, transcript, self._key, False)
        self._unsynced.append(path)
        if self._timer is None:
            self._timer = asyncio.create_task(self._sync_soon())

    async def close(self) -> None:
        """Put every transcript written so far on the disk, now."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()  # it only sleeps until the sync below
        self._sync()
        # Shielded: a caller cancelled meanwhile (Ctrl-C) still leaves them on the disk.
        await asyncio.shield(asyncio.gather(*self._syncs, return_exceptions=True))
        self._raise_failure()

    async def _sync_soon(self) -> None:
        await asyncio.sleep(self._delay_s)
        self._timer = None
        self._sync()

    def _sync(self) -> None:
        """Begin the sync of the files written since the last, in a thread."""
        paths, self._unsynced = self._unsynced, []
        if not paths:
            return
        sync = asyncio.ensure_future(asyncio.to_thread(sync_files, paths))
        self._syncs.add(sync)
        sync.add_done_callback(self._synced)

    def _synced(self, sync: asyncio.Future[None]) -> None:
        self._syncs.discard(sync)
        if not sync.cancelled():
            self._failure = self._failure or sync.exception()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure
