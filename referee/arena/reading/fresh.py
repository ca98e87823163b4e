"""Answers kept for a moment, by what was asked: a crowd reading one page, or one reader
asking for it again and again, costs the arena's process one query a moment, not one each.
Each query holds the interpreter the ladder referees its matches in."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

# The answers kept at most: the oldest asked goes first.
MOST = 64


class Fresh:
    """Answers made by `make`, served as made for `seconds`; those asking while one is made
    wait for it rather than make it again."""

    def __init__(self, seconds: float, most: int = MOST) -> None:
        self.seconds = seconds
        self.most = most
        self._kept: OrderedDict[Hashable, tuple[float, bytes]] = OrderedDict()
        self._making = threading.Lock()

    def get(self, asked: Hashable, make: Callable[[], bytes]) -> bytes:
        with self._making:
            kept = self._kept.get(asked)
            if kept is not None and time.monotonic() - kept[0] <= self.seconds:
                self._kept.move_to_end(asked)
                return kept[1]
            made = make()
            self._kept[asked] = (time.monotonic(), made)
            self._kept.move_to_end(asked)
            while len(self._kept) > self.most:
                self._kept.popitem(last=False)
            return made

    def clear(self) -> None:
        """Forget every answer: what they showed has changed."""
        with self._making:
            self._kept.clear()
