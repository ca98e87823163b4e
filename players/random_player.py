#!/usr/bin/env python3
"""A player that picks a uniformly random legal move. It uses nothing but the protocol.

Usage: random_player.py [--seed N]   (a seed makes its choices repeatable)
"""

import random
import re
import sys

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")


def main() -> None:
    seed = int(sys.argv[2]) if sys.argv[1:2] == ["--seed"] else None
    rng = random.Random(seed)
    for line in sys.stdin:
        words = line.split(maxsplit=3)
        if not words:
            continue
        if words[0] == "start":
            print("ready", flush=True)
        elif words[0] == "go":
            legal = MOVE.findall(words[3]) if len(words) > 3 else []
            print(rng.choice(legal), flush=True)
        elif words[0] == "quit":
            return


if __name__ == "__main__":
    main()
