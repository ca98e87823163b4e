"""Answers kept for a moment, by what was asked: a crowd reading one page, or one reader
asking for it again and again, costs the arena's process one query a moment, not one each.
Each query holds the interpreter the ladder referees its matches in.

An answer past its moment is given as it is, and made anew meanwhile in a thread of its own:
no one waits for an answer asked before but the one who first asks for it, or asks after it
was cleared. Those asking for what has no answer yet wait for the one being made rather
than make it again, and different things asked are made at once: a bot's matches never
wait for another's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

# The answers kept at most: the oldest asked goes first.
MOST = 64


class Fresh:
    """Answers made by `make`, served as made for `seconds`, then as made last while they
    are made anew."""

    def __init__(self, seconds: float, most: int = MOST) -> None:
        self.seconds = seconds
        self.most = most
        # Each answer and when it was made, the most recently asked last.
        self._kept: OrderedDict[Hashable, tuple[float, bytes]] = OrderedDict()
        # What is being made, each held by its maker until it is kept.
        self._making: dict[Hashable, threading.Lock] = {}
        # Counted up by each `clear`: an answer begun before one is not kept.
        self._cleared = 0
        self._lock = threading.Lock()

    def get(self, asked: Hashable, make: Callable[[], bytes]) -> bytes:
        while True:
            with self._lock:
                kept = self._kept.get(asked)
                flight = self._making.get(asked)
                if kept is not None:
                    self._kept.move_to_end(asked)
                    stale = time.monotonic() - kept[0] > self.seconds
                    if stale and flight is None:
                        flight = self._flight(asked)
                        begun = self._cleared
                        threading.Thread(
                            target=self._again, args=(asked, make, flight, begun), daemon=True
                        ).start()
                    return kept[1]
                if flight is None:
                    flight = self._flight(asked)
                    begun = self._cleared
                    break
            # Being made by another: waited for, then looked for again.
            with flight:
                pass
        return self._made(asked, make, flight, begun)

    def clear(self) -> None:
        """Forget every answer: what they showed has changed. One being made meanwhile is
        given to those who asked for it, and not kept."""
        with self._lock:
            self._kept.clear()
            self._cleared += 1

    def _flight(self, asked: Hashable) -> threading.Lock:
        """A lock held while `asked` is made, which those asking for it meanwhile wait on."""
        flight = self._making[asked] = threading.Lock()
        flight.acquire()
        return flight

    def _made(
        self, asked: Hashable, make: Callable[[], bytes], flight: threading.Lock, begun: int
    ) -> bytes:
        try:
            made = make()
            with self._lock:
                if self._cleared == begun:
                    self._kept[asked] = (time.monotonic(), made)
                    self._kept.move_to_end(asked)
                    while len(self._kept) > self.most:
                        self._kept.popitem(last=False)
            return made
        finally:
            with self._lock:
                del self._making[asked]
            flight.release()

    def _again(
        self, asked: Hashable, make: Callable[[], bytes], flight: threading.Lock, begun: int
    ) -> None:
        """Made anew in a thread; if that fails (the database out, say), the last answer is
        forgotten: the next to ask makes it, and is told why it cannot be made."""
        try:
            self._made(asked, make, flight, begun)
        except Exception:
            with self._lock:
                self._kept.pop(asked, None)
