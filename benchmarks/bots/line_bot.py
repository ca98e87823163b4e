"""A double-tictactoe player of a set strength: at each move, with probability P, it takes a
cell that completes a line of its own, else one that stops the opponent completing one;
otherwise, or when there is neither, a random legal move. Its random choices are seeded by
the match, its seat and SALT, so that a match played again is played the same, and another
SALT plays another tournament.

Usage: python line_bot.py P [SALT]
"""

from __future__ import annotations

import random
import re
import sys

# Each move is `(markK R C)`: board K (1 or 2), row R and column C (1 to 3).
MARK = re.compile(r"\(mark([12]) ([123]) ([123])\)")
MOVE = re.compile(r"\([^()]*\)|[^\s()]+")
LINES = [
    *[{(r, c) for c in (1, 2, 3)} for r in (1, 2, 3)],
    *[{(r, c) for r in (1, 2, 3)} for c in (1, 2, 3)],
    {(1, 1), (2, 2), (3, 3)},
    {(1, 3), (2, 2), (3, 1)},
]


def completes(marks: set[tuple[int, int]], cell: tuple[int, int]) -> bool:
    return any(cell in line and line - {cell} <= marks for line in LINES)


def choose(moves: list[str], mine: dict[int, set], theirs: dict[int, set], rng, skill) -> str:
    if rng.random() < skill:
        for own in (mine, theirs):  # a line of its own first, then a block
            for move in moves:
                found = MARK.fullmatch(move)
                if found:
                    board, cell = int(found[1]), (int(found[2]), int(found[3]))
                    if completes(own[board], cell):
                        return move
    return rng.choice(moves)


def main() -> None:
    skill = float(sys.argv[1])
    salt = sys.argv[2] if len(sys.argv) > 2 else ""
    rng = random.Random()
    me = 0
    marks: list[dict[int, set]] = [{1: set(), 2: set()}, {1: set(), 2: set()}]
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "start":
            match_id, role = words[1], words[3]
            me = 0 if role == "xplayer" else 1
            rng = random.Random(f"{match_id} {role} {skill} {salt}")
            marks = [{1: set(), 2: set()}, {1: set(), 2: set()}]
            print("ready", flush=True)
        elif words[0] == "moves":
            for index, move in enumerate(MOVE.findall(line.split(maxsplit=2)[2])):
                found = MARK.fullmatch(move)
                if found:
                    marks[index][int(found[1])].add((int(found[2]), int(found[3])))
        elif words[0] == "go":
            moves = MOVE.findall(line.split(maxsplit=3)[3])
            print(choose(moves, marks[me], marks[1 - me], rng, skill), flush=True)
        elif words[0] == "quit":
            break


if __name__ == "__main__":
    main()
