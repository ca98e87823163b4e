"""What a reasoning child does when the referee that started it is gone.

A referee killed outright (`kill -9`, the OOM killer, a lost machine) cannot kill its
children, and a child working on a state that blows up would go on to its own deadline
with its memory: up to an hour and `state_memory_mb` after a `kill -9` that a tournament is
meant to resume from. So each child watches whether its parent is still there.
"""

from __future__ import annotations

import os
import threading
import time

# How often the child looks; clingo lets go of the GIL while it grounds, so it can.
_INTERVAL_S = 0.5
# The child's exit status when its parent was gone: nobody is left to read it.
ORPHANED = 9


def end_with_parent() -> None:
    """Exit this process soon after the process that started it has ended."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_INTERVAL_S)
        os._exit(ORPHANED)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
