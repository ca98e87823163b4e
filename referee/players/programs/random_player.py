#!/usr/bin/env python3
"""A player that picks a uniformly random legal move.

Usage: random_player.py [--seed N]

With a seed its choices in a match depend only on the seed and the match id, so they are
the same whether the process plays one match or many.
"""

import random
import sys

from referee.protocol import READY, Go, Quit, Start, parse


def main() -> None:
    seed = int(sys.argv[2]) if sys.argv[1:2] == ["--seed"] else None
    rng = random.Random(seed)
    for line in sys.stdin:
        message = parse(line)
        if isinstance(message, Start):
            if seed is not None:
                rng.seed(f"{seed} {message.match_id}")
            print(READY, flush=True)
        elif isinstance(message, Go):
            print(rng.choice(message.legal), flush=True)
        elif isinstance(message, Quit):
            return


if __name__ == "__main__":
    main()
