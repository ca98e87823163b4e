"""The CPU cores a referee gives its matches: each match its own set, never shared.

The cores are this process's CPU affinity, or those `REFEREE_CORES` names (`0-3,6`), which
is how the workers of one machine split it between them. They are dealt out in disjoint sets,
as many at once as there are; a match's players are pinned to its set.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from referee.errors import RefereeError

CORES_VARIABLE = "REFEREE_CORES"
# The C library's sched_getcpu, which Python's os lacks; None where there is none.
_GETCPU = getattr(ctypes.CDLL(None), "sched_getcpu", None) if sys.platform == "linux" else None


def parse_cores(text: str) -> tuple[int, ...]:
    """The cores of a list such as `0-3,6`, in order; ValueError for anything else."""
    cores: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        low, high = int(first), int(last) if dash else int(first)
        if low < 0 or high < low:
            raise ValueError(part)
        cores.update(range(low, high + 1))
    return tuple(sorted(cores))


def format_cores(cores: Iterable[int]) -> str:
    """Cores as the kernel lists them: `0-3,6`."""
    runs: list[list[int]] = []
    for core in sorted(cores):
        if runs and core == runs[-1][1] + 1:
            runs[-1][1] = core
        else:
            runs.append([core, core])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in runs)


def current_core() -> int | None:
    """The core this thread runs on as it asks (it may be moved at any moment after), if the
    system says."""
    if _GETCPU is None:
        return None
    core: int = _GETCPU()
    return core if core >= 0 else None


def available_cores(environ: Mapping[str, str] = os.environ) -> tuple[int, ...]:
    """The cores this process may give its matches: `REFEREE_CORES`, else its affinity."""
    text = environ.get(CORES_VARIABLE)
    if text is None:
        return tuple(sorted(os.sched_getaffinity(0)))
    try:
        cores = parse_cores(text)
    except ValueError:
        raise RefereeError(
            f"{CORES_VARIABLE}={text!r}: expected a list of cores such as 0-3,6"
        ) from None
    outside = set(cores) - os.sched_getaffinity(0)
    if outside:
        raise RefereeError(
            f"{CORES_VARIABLE}={text!r}: this process may not run on cores {format_cores(outside)}"
        )
    return cores


def split_cores(cores: Sequence[int], parts: int) -> list[tuple[int, ...]]:
    """`cores` in `parts` runs of consecutive cores, as even as they go (none empty)."""
    size, extra = divmod(len(cores), parts)
    runs, start = [], 0
    for index in range(parts):
        end = start + size + (index < extra)
        runs.append(tuple(cores[start:end]))
        start = end
    return runs


class CorePool:
    """Cores dealt out to matches, each core to one match at a time."""

    def __init__(self, cores: Sequence[int]) -> None:
        self.cores = tuple(cores)
        self._free = set(self.cores)
        # Matches waiting for cores, served in the order they came: one that needs many is
        # never passed over for ever by those that need fewer.
        self._waiting: deque[tuple[int, asyncio.Future[frozenset[int]]]] = deque()

    def capacity(self, per_match: int) -> int:
        """How many matches of `per_match` cores each can run at once."""
        return len(self.cores) // per_match

    def take(self, count: int) -> frozenset[int]:
        """`count` free cores, the lowest; RefereeError when fewer are free."""
        if len(self._free) < count:
            raise RefereeError(
                f"no {count} free cores among cores {format_cores(self.cores)}:"
                " more matches were started than they allow"
            )
        taken = frozenset(sorted(self._free)[:count])
        self._free -= taken
        return taken

    async def acquire(self, count: int) -> frozenset[int]:
        """`count` cores, once they are free and no match that asked before is waiting."""
        if not self._waiting and len(self._free) >= count:
            return self.take(count)
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append((count, waiter))
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give(waiter.result())  # dealt just as the match was called off
            raise

    def give(self, cores: frozenset[int]) -> None:
        """Cores back, once their match is over: to the matches waiting for them, in turn."""
        self._free |= cores
        while self._waiting:
            count, waiter = self._waiting[0]
            if waiter.done():
                self._waiting.popleft()
            elif len(self._free) >= count:
                self._waiting.popleft()
                waiter.set_result(self.take(count))
            else:
                return
