#!/usr/bin/env python3
"""A player that picks a uniformly random legal move. It uses nothing but the protocol.

Usage: random_player.py [--seed N]

With a seed its choices in a match depend only on the seed and the match id, so they are
the same whether the process plays one match or many.
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
            if seed is not None:
                rng.seed(f"{seed} {words[1]}")
            print("ready", flush=True)
        elif words[0] == "go":
            legal = MOVE.findall(words[3]) if len(words) > 3 else []
            print(rng.choice(legal), flush=True)
        elif words[0] == "quit":
            return


if __name__ == "__main__":
    main()
