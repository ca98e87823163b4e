"""The interpreter's own pauses, kept off the players' clocks.

A clock stops when the event loop gets to the answer, so anything that holds the loop
holds a running clock: a player that answered in time can be judged late for the
referee's own pause. Two of those are the interpreter's:

- A full pass of the garbage collector walks every object the process has: 15-23 ms with a
  tournament's modules, games and Dask loaded, whenever the allocator's counts say, in the
  middle of a match. So, while matches are played, what exists once the run is set up
  (modules, rules, configs) is collected once and frozen out of every later pass
  (`gc.freeze`); the young generations are collected as usual (well under a millisecond:
  they hold only what was made since); and the oldest is never collected in a match, only
  between matches (`between_matches`), when the allocator's counts say it is due, as they
  would have without us (a pass after every match cost 1.7 ms of a 10 ms match of
  instant players); it holds only what the run has made and kept since it began:
  measured at 0.3-0.7 ms after hundreds of matches.
- A thread that runs Python code (writing a transcript, 3 ms of JSON) keeps the loop from
  the interpreter for up to its switch interval, 5 ms by default; it is 0.5 ms meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator

# A threshold the oldest generation's count never reaches: it is collected on demand only.
_NEVER = 2**31 - 1
# How long a thread may keep the interpreter from the loop that wants it, in seconds.
_SWITCH_S = 0.0005
# The collections of the middle generation after which the oldest is due: CPython's own
# threshold, kept by `between_matches` while `short_pauses` holds the oldest back.
_OLDEST_DUE = 10


@contextlib.contextmanager
def short_pauses() -> Iterator[None]:
    """While it is open, full passes of the collector come only from `between_matches`
    (what exists when it opens is never walked again until it closes), and a thread gives
    the interpreter up to the loop within half a millisecond."""
    gc.collect()
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], _NEVER)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(_SWITCH_S)
    try:
        yield
    finally:
        sys.setswitchinterval(switch)
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def between_matches() -> None:
    """A full pass of what is not frozen, when a match is over and its result recorded, if
    the oldest generation is due (the collections of the middle one since its last pass
    reached its threshold); none unless pauses are kept short (elsewhere the allocator's
    counts decide at any moment)."""
    if gc.get_threshold()[2] == _NEVER and gc.get_count()[2] >= _OLDEST_DUE:
        gc.collect()
