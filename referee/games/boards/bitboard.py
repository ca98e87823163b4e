"""Boards as integer bit masks: one bit per cell, set when the cell is taken."""

import random


def blank_bits(occupied: int, cells: int) -> list[int]:
    """The indices of the cells below `cells` whose bit is clear."""
    return [b for b in range(cells) if not occupied >> b & 1]


def random_blank(occupied: int, cells: int, rng: random.Random) -> int:
    """A uniformly random clear bit below `cells`; at least one must be clear."""
    # Rejection sampling: no list is built, and each draw is uniform over the clear bits.
    while True:
        b = rng.randrange(cells)
        if not occupied >> b & 1:
            return b
