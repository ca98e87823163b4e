"""A bot that thinks too long: it answers `go` after SHARE times the time the line gives
it, at its moves numbered MOVE in each match (every move when none is given), and at once
at the others. tests/players/mistakes/slow_moves.go is the same bot in Go.

    slow_moves.py SHARE [MOVE ...]

Each sleep is at least its time: with SHARE over 1, the move is late however busy the
machine, and with SHARE far over 1 so late that the match may end, and `quit` come, first.
"""

import random
import re
import sys
import time

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")
share = float(sys.argv[1])
slow = {int(number) for number in sys.argv[2:]}
moved = 0
for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        moved = 0
        print("ready", flush=True)
    elif words[0] == "go":
        moved += 1
        if not slow or moved in slow:
            time.sleep(share * int(words[2]) / 1000)
        print(random.choice(MOVE.findall(words[3])), flush=True)
    elif words[0] == "quit":
        break
