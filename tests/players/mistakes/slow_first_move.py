"""A bot that answers ready at once and loads its tables at its first move of each match,
taking one and a half play clocks for it: late for that move, and awake half a clock before
its next move's time is up, however busy the machine."""

import random
import re
import sys
import time

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")
loaded = False
for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        play_ms = int(line.split()[5])
        loaded = False
        print("ready", flush=True)
    elif words[0] == "go":
        if not loaded:
            time.sleep(1.5 * play_ms / 1000)  # "loading the opening book"
            loaded = True
        print(random.choice(MOVE.findall(words[3])), flush=True)
    elif words[0] == "quit":
        break
