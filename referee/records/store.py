"""Transcripts written from an event loop that times players.

A transcript is rendered and written in a thread, where its JSON and a slow disk hold no
clock (`referee.pauses`); once begun, a write is finished whatever happens to its caller.
A match's file is whole (a rename) before the match's players play again, so a referee
killed at any moment loses no match that has ended: the kernel has the file. Putting it on
the disk, which only a machine that stops (a power cut) needs, is one journal commit per
file. A tournament's matches of instant players end hundreds of times a second, and a
commit each cost 9% of their rate on a virtual disk; so a run's transcripts reach the disk
together, at the end of a match, once the oldest has waited a quarter of a second
(`TranscriptStore`): between matches, as a commit per match was, not while a clock runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from referee.records.files import sync_files
from referee.records.signing import SigningKey
from referee.records.transcript import Transcript, write_transcript

# How long a tournament's transcript may be whole in its file before the end of a match
# puts it on the disk, with those written since: one journal commit for all of them.
SYNC_DELAY_S = 0.25
# ... and before it is put there anyway, when no match ends meanwhile.
SYNC_LATEST_S = 1.0


async def store_transcript(path: Path, transcript: Transcript, key: SigningKey | None) -> None:
    """`write_transcript`, on the disk when it returns."""
    await asyncio.to_thread(write_transcript, path, transcript, key)


class TranscriptStore:
    """Where a run writes its transcripts: each is whole in its file when `store` returns.
    The `store` that finds the oldest not yet on the disk `sync_delay_s` old puts them all
    there before it returns (at the end of a match, off the clocks of a run that plays one
    at a time); one not put there by a store is put there at most SYNC_LATEST_S after it was
    written, and all of them by the time `close` returns. With no delay, each is on the
    disk when `store` returns.

    A transcript whole in its file but not yet on the disk is lost only if the machine stops;
    the next run then finds it missing or unreadable, and plays the match again."""

    def __init__(self, key: SigningKey | None, sync_delay_s: float = SYNC_DELAY_S) -> None:
        self._key = key
        self._delay_s = sync_delay_s
        self._unsynced: list[Path] = []
        self._oldest = 0.0  # when the oldest of them was written, on the loop's clock
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
        now = asyncio.get_running_loop().time()
        if not self._unsynced:
            self._oldest = now
        self._unsynced.append(path)
        if now - self._oldest >= self._delay_s:
            self._cancel_timer()
            sync = self._sync()
            if sync is not None:
                await asyncio.shield(sync)
            self._raise_failure()
        elif self._timer is None:
            self._timer = asyncio.create_task(self._sync_late())

    async def close(self) -> None:
        """Put every transcript written so far on the disk, now."""
        self._cancel_timer()
        self._sync()
        # Shielded: a caller cancelled meanwhile (Ctrl-C) still leaves them on the disk.
        await asyncio.shield(asyncio.gather(*self._syncs, return_exceptions=True))
        self._raise_failure()

    def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()  # it only sleeps until its sync

    async def _sync_late(self) -> None:
        await asyncio.sleep(SYNC_LATEST_S)
        self._timer = None
        self._sync()

    def _sync(self) -> asyncio.Future[None] | None:
        """Begin the sync of the files written since the last, in a thread."""
        paths, self._unsynced = self._unsynced, []
        if not paths:
            return None
        # Handed to a thread at once: begun, it is finished whatever happens to the loop.
        sync = asyncio.get_running_loop().run_in_executor(None, sync_files, paths)
        self._syncs.add(sync)
        sync.add_done_callback(self._synced)
        return sync

    def _synced(self, sync: asyncio.Future[None]) -> None:
        self._syncs.discard(sync)
        if not sync.cancelled():
            self._failure = self._failure or sync.exception()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure
