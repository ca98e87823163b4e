#!/usr/bin/env python3
"""The hostile bot of benchmarks/arena_soak.py: the sample random player, which meanwhile
fills its $TMPDIR.

    filling_bot.py MIB      plays random moves; a thread writes files into $TMPDIR until
                            they hold MIB MiB, trying again each second once a write fails
                            (a full disk, a quota), so that it takes any room freed

Only the standard library: the referee's jail shows the bot's own directory, not the referee.
"""

import os
import runpy
import sys
import threading
import time

CHUNK = 8 * 1024 * 1024


def fill(directory, mib):
    zeros = b"\0" * CHUNK
    written, number = 0, 0
    while written < mib * 1024 * 1024:
        try:
            with open(os.path.join(directory, f"fill-{number}"), "wb") as out:
                out.write(zeros)
            written += CHUNK
            number += 1
        except OSError:
            time.sleep(1)


threading.Thread(
    target=fill, args=(os.environ.get("TMPDIR", "."), int(sys.argv[1])), daemon=True
).start()
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_player.py"))
