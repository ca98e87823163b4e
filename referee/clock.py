"""Every time rule of a match: the clocks, time banks, the timeout verdicts, and the graces.

A player's time is counted from the moment its request was written to the moment its answer
was read, on the monotonic clock. Whether an answer came in time is decided here and nowhere
else; so is every other wait the referee allows a player.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from referee.errors import ConfigError, PlayerTimeout

now = time.monotonic

# The longest clock: a day. A longer one would hold a tournament for as long as a player likes.
MAX_CLOCK_MS = 86_400_000
# The longest time margin, a day too: a margin is a wait the referee adds to every answer.
MAX_MARGIN_MS = MAX_CLOCK_MS
# The clocks a transcript records (`Clocks.recorded`): the margin is recorded beside them.
CLOCK_FIELDS = ("start_ms", "play_ms", "time_bank_ms")
# A line that needs no answer (`moves`, `end`) must be taken within this, or the player has
# stopped reading its input.
SEND_LIMIT_S = 5.0
# After `quit`, a program may take this long to exit by itself before it is killed.
QUIT_GRACE_S = 1.0
# The longest a reused process is let run between matches to write the late answers it owes
# (each has one more of its clock, up to this): then a fresh process plays its next match.
SETTLE_S = 1.0
# Output closed while the program runs on: how long to wait for its exit before calling it
# a program that closed its output (both happen together when a program exits).
EXIT_GRACE_S = 0.2
# A seat that is not asked (under `ponder: false`) is frozen once it has been so this long,
# or at once after it was seen using more than the allowance of CPU time while not asked in
# a match: a seat that waits for its input, as nearly every one does, is never frozen when
# the next request comes sooner (in a fast match, and between matches while the transcript
# is written), which saves a write each way per step.
IDLE_GRACE_S = 0.005
IDLE_CPU_ALLOWANCE_S = 0.002
# How long killed processes may take to be gone before the referee stops waiting for them.
REAP_PATIENCE_S = 2.0
# What ending one process can take: the grace after quit, then killing and reaping.
CLOSE_S = QUIT_GRACE_S + REAP_PATIENCE_S + 1.0
# A GGP player's answer to ABORT is awaited this long, as ggp-base's server does.
ABORT_S = 1.0
# What `referee serve` keeps of each GGP clock for itself: the HTTP exchange and the rules.
GATEWAY_MARGIN_MS = 500
# How long `referee serve` waits for a whole request, or for its answer to be taken.
GATEWAY_READ_S = 10.0


def abandoned_after_s(play_ms: int) -> float:
    """How long a match may go without a request before `referee serve` drops it."""
    return max(60.0, 10 * play_ms / 1000)


@dataclass(frozen=True)
class Clocks:
    """A seat's clocks in milliseconds; the time bank is extra time each player may draw on.

    `margin_ms` is how late an answer may come and still be in time (cutechess's
    `timemargin`): 0, the default, judges exactly. It forgives lateness, and is never told
    to a player: a player is told its clocks, and a bank never grows by it.
    """

    start_ms: int = 10_000
    play_ms: int = 1_000
    time_bank_ms: int = 0
    margin_ms: int = 0

    def __post_init__(self) -> None:
        for clock, value, lowest in (
            ("start clock", self.start_ms, 1),
            ("play clock", self.play_ms, 1),
            ("time bank", self.time_bank_ms, 0),
            ("time margin", self.margin_ms, 0),
        ):
            if value < lowest:
                what = "a positive number" if lowest else "zero or a positive number"
                raise ConfigError(f"{clock} must be {what} of ms")
            if value > MAX_CLOCK_MS:
                raise ConfigError(f"{clock} must be at most {MAX_CLOCK_MS} ms (a day)")

    def recorded(self) -> dict[str, int]:
        """The clocks as a transcript records them, without the margin (recorded apart)."""
        return {name: getattr(self, name) for name in CLOCK_FIELDS}

    def verdict(self, elapsed_ms: float | None, limit_ms: float) -> PlayerTimeout | None:
        """`verdict` with this margin: the timeout of an answer for `limit_ms`, if late."""
        return verdict(elapsed_ms, limit_ms, self.margin_ms)

    def wait_ms(self, limit_ms: float) -> float:
        """How long the referee waits for an answer whose limit is `limit_ms`: the margin
        more."""
        return limit_ms + self.margin_ms

    def bank(self) -> TimeBank:
        """A fresh time bank for a seat with these clocks, judging with this margin."""
        return TimeBank(self.time_bank_ms, self.margin_ms)


def ggp_seconds(clocks: Clocks) -> tuple[int, int]:
    """The start and play clocks a GGP player is told: whole seconds, rounded down.

    The player is judged by the clocks in milliseconds, so what it is told is never more
    than it has; a clock of 5500 ms tells 5 s and leaves 0.5 s for the network. The margin
    is not told.
    ConfigError for a clock under a second, which a GGP player cannot be told.
    """
    for clock, value in (("start clock", clocks.start_ms), ("play clock", clocks.play_ms)):
        if value < 1000:
            raise ConfigError(
                f"a GGP player is told its clocks in whole seconds: the {clock} must be at"
                f" least 1000 ms, not {value}"
            )
    return clocks.start_ms // 1000, clocks.play_ms // 1000


def is_late(elapsed_ms: float, limit_ms: float, margin_ms: int = 0) -> bool:
    """Whether an answer that took `elapsed_ms` is late for `limit_ms`, `margin_ms` forgiven:
    the one rule of lateness, for the match and for the replay that checks it."""
    return elapsed_ms > limit_ms + margin_ms


def limit_text(limit_ms: float, margin_ms: int = 0) -> str:
    """A limit as a fault or a check names it: `200 ms`, or `200 ms + 1000 ms margin`."""
    margin = f" + {margin_ms} ms margin" if margin_ms else ""
    return f"{limit_ms:.0f} ms{margin}"


def verdict(elapsed_ms: float | None, limit_ms: float, margin_ms: int = 0) -> PlayerTimeout | None:
    """The timeout of an answer that took `elapsed_ms` (None: none came), or None if in time:
    within `limit_ms`, or late by no more than `margin_ms`."""
    if elapsed_ms is None:
        return PlayerTimeout(f"no answer within {limit_text(limit_ms, margin_ms)}")
    if is_late(elapsed_ms, limit_ms, margin_ms):
        return PlayerTimeout(
            f"answered after {elapsed_ms:.0f} ms, limit {limit_text(limit_ms, margin_ms)}"
        )
    return None


class TimeBank:
    """One player's remaining bank in one match: what it may spend beyond the play clock.

    An answer late by no more than `margin_ms` is in time; what it took beyond the clock is
    paid from the bank as far as the bank goes, and the margin forgives the rest."""

    def __init__(self, bank_ms: int, margin_ms: int = 0) -> None:
        self.remaining_ms = bank_ms
        self.margin_ms = margin_ms

    def allowance_ms(self, clock_ms: int) -> int:
        """The whole time a player has for one answer: the clock plus what is left in the bank."""
        return clock_ms + self.remaining_ms

    def charge(self, clock_ms: int, elapsed_ms: float | None) -> PlayerTimeout | None:
        """Pay for an answer (None: none came); its timeout, or None when it came in time."""
        late = verdict(elapsed_ms, self.allowance_ms(clock_ms), self.margin_ms)
        if late is None and elapsed_ms is not None:
            overshoot = math.ceil(elapsed_ms - clock_ms)
            if overshoot > 0:
                self.remaining_ms = max(0, self.remaining_ms - overshoot)
        return late
