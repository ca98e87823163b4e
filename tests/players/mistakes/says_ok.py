"""A bot that answers `start` with `ok`, as another protocol would have it, not `ready`."""

import random
import re
import sys

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")

for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        print("ok", flush=True)
    elif words[0] == "go":
        print(random.choice(MOVE.findall(words[3])), flush=True)
    elif words[0] == "quit":
        break
