#!/usr/bin/env python3
"""A player that picks a uniformly random legal move.

Usage: random_player.py [--seed N] [--think-ms MS]

With a seed its choices in a match depend only on the seed and the match id, so they are
the same whether the process plays one match or many. With --think-ms it first spins for
MS milliseconds of CPU time at each move, as a player that searches would: on a core it
shares, its answer takes longer.
"""

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
    # By hand, not argparse: its import alone is a good part of this program's start.
    options = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    seed = int(options["--seed"]) if "--seed" in options else None
    think_s = int(options.get("--think-ms", 0)) / 1000
    rng = random.Random(seed)
    for line in sys.stdin:
        message = parse(line)
        if isinstance(message, Start):
            if seed is not None:
                rng.seed(f"{seed} {message.match_id}")
            print(READY, flush=True)
        elif isinstance(message, Go):
            think(think_s)
            print(rng.choice(message.legal), flush=True)
        elif isinstance(message, Quit):
            return


if __name__ == "__main__":
    main()
