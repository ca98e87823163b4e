"""A bot that prints what it is thinking to standard output, before each move."""

import random
import re
import sys

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")

for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        print("ready", flush=True)
    elif words[0] == "go":
        legal = MOVE.findall(words[3])
        # Both lines in one write, so they reach the referee together however loaded the
        # machine: the debug line is the answer, the move a line nobody asked for. Two
        # writes let the move arrive after the next request, as that one's answer.
        sys.stdout.write(f"thinking, legal moves: {len(legal)}\n{random.choice(legal)}\n")
        sys.stdout.flush()
    elif words[0] == "quit":
        break
