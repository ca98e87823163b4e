#!/usr/bin/env python3
"""The hostile bot of benchmarks/arena_soak.py: the sample random player, which fills its
$TMPDIR as it plays.

    filling_bot.py MIB      plays random moves; each time it reads a request it first
                            writes files into $TMPDIR for up to 0.1 s, until they hold MIB
                            MiB (a write that fails, on a full disk or past a quota, ends
                            that turn's writing: the next turn tries again)

Only the standard library: the referee's jail shows the bot's own directory, not the referee.
"""

import os
import runpy
import sys
import time

CHUNK = 8 * 1024 * 1024
TURN_S = 0.1


class Filling:
    """Standard input, read line by line, with $TMPDIR filled a little before each line."""

    def __init__(self, lines, directory, mib):
        self.lines = lines
        self.directory = directory
        self.chunks = mib * 1024 * 1024 // CHUNK
        self.written = 0

    def __iter__(self):
        return self

    def __next__(self):
        line = next(self.lines)
        ends = time.monotonic() + TURN_S
        while self.written < self.chunks and time.monotonic() < ends:
            try:
                with open(os.path.join(self.directory, f"fill-{self.written}"), "wb") as out:
                    out.write(bytes(CHUNK))
            except OSError:
                break
            self.written += 1
        return line


sys.stdin = Filling(iter(sys.stdin), os.environ.get("TMPDIR", "."), int(sys.argv[1]))
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_player.py"))
