"""Transcripts replayed on request, a few at once: each takes a core for as long as its
match's rules take, so a crowd that asks again and again is refused rather than queued."""

from __future__ import annotations

import threading

from referee.arena import views
from referee.arena.errors import Busy
from referee.arena.home import Arena
from referee.records.verify import FileVerdict

# Transcripts replayed at once, by one `Replays`.
REPLAYS_AT_ONCE = 2


class Replays:
    """`views.match_replay`, REPLAYS_AT_ONCE at a time at most, each in its caller's thread;
    Busy past them at once, rather than a queue that anyone who asks again and again fills."""

    def __init__(self, arena: Arena) -> None:
        self._arena = arena
        self._slots = threading.BoundedSemaphore(REPLAYS_AT_ONCE)

    def verdict(self, key: str) -> FileVerdict:
        if not self._slots.acquire(blocking=False):
            raise Busy(f"{REPLAYS_AT_ONCE} replays under way; try again in a moment")
        try:
            return views.match_replay(self._arena, key)
        finally:
            self._slots.release()
