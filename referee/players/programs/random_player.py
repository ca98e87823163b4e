#!/usr/bin/env python3
"""A player that picks a uniformly random legal move.

Usage: random_player.py [--seed N] [--think-ms MS]

With a seed its choices in a match depend only on the seed and the match id, so they are
the same whether the process plays one match or many. With --think-ms it first spins for
MS milliseconds of CPU time at each move, as a player that searches would: on a core it
shares, its answer takes longer.
"""

import argparse
import random
import sys
import time

from referee.protocol import READY, Go, Quit, Start, parse


def think(seconds: float) -> None:
    """Spin until this process has used `seconds` more of CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int)
    parser.add_argument("--think-ms", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for line in sys.stdin:
        message = parse(line)
        if isinstance(message, Start):
            if args.seed is not None:
                rng.seed(f"{args.seed} {message.match_id}")
            print(READY, flush=True)
        elif isinstance(message, Go):
            think(args.think_ms / 1000)
            print(rng.choice(message.legal), flush=True)
        elif isinstance(message, Quit):
            return


if __name__ == "__main__":
    main()
