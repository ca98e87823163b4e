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
        print(f"thinking, legal moves: {len(legal)}", flush=True)
        print(random.choice(legal), flush=True)
    elif words[0] == "quit":
        break
