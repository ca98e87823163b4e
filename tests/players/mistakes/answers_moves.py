"""A bot that acknowledges every line it is sent, `moves` and `end` too, with `ok`."""

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
        print(random.choice(MOVE.findall(words[3])), flush=True)
    elif words[0] in ("moves", "end"):
        print("ok", flush=True)
    elif words[0] == "quit":
        break
