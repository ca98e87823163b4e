"""All time logic of a match: the monotonic clock, the clocks' settings and time banks."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from referee.errors import ConfigError

now = time.monotonic


@dataclass(frozen=True)
class Clocks:
    """A match's clocks in milliseconds; the time bank is extra time each player may draw on."""

    start_ms: int = 10_000
    play_ms: int = 1_000
    time_bank_ms: int = 0

    def __post_init__(self) -> None:
        for name in ("start_ms", "play_ms"):
            if getattr(self, name) <= 0:
                clock = name.replace("_ms", " clock")
                raise ConfigError(f"{clock} must be a positive number of ms")
        if self.time_bank_ms < 0:
            raise ConfigError("time bank must be zero or a positive number of ms")


class TimeBank:
    """One player's remaining bank in one match: what it may spend beyond the play clock."""

    def __init__(self, bank_ms: int) -> None:
        self.remaining_ms = bank_ms

    def allowance_ms(self, clock_ms: int) -> int:
        """The whole time a player has for one answer: the clock plus what is left in the bank."""
        return clock_ms + self.remaining_ms

    def charge(self, clock_ms: int, elapsed_ms: float) -> bool:
        """Pay for an answer; False when it took longer than the allowance (a timeout)."""
        if elapsed_ms > self.allowance_ms(clock_ms):
            return False
        overshoot = math.ceil(elapsed_ms - clock_ms)
        if overshoot > 0:
            self.remaining_ms = max(0, self.remaining_ms - overshoot)
        return True
