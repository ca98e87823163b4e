#!/usr/bin/env python3
"""A player that is late by construction, and otherwise answers at once with its last legal
move (a move a test can tell from any other player's). Its late answers are its first legal
move instead, told from any answer it gives in time.

    late.py HOLD UNTIL [--as ROLE]

In each match it holds back its answers to its first HOLD `go` requests: no sleep decides
that they are late, for each is written only once the referee has gone on without it.
UNTIL says when they are written, all together: `go`, just before its answer to the next
`go`; `end`, when the match's end is told; `never`. With --as, it holds back only in the
matches where it plays ROLE. At each `start` it says on standard error `playing id=ID`,
ID being its process's own, to tell a reused process from a fresh one.
"""

import os
import re
import sys

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")


def main() -> None:
    hold, until = int(sys.argv[1]), sys.argv[2]
    options = dict(zip(sys.argv[3::2], sys.argv[4::2], strict=False))
    me = os.urandom(8).hex()
    held: list[str] = []
    goes, holding = 0, False
    for line in sys.stdin:
        words = line.split(maxsplit=3)
        if not words:
            continue
        if words[0] == "start":
            goes, held = 0, []
            role = line.split()[3]
            holding = options.get("--as", role) == role
            sys.stderr.write(f"playing id={me}\n")
            sys.stderr.flush()
            print("ready", flush=True)
        elif words[0] == "go":
            goes += 1
            legal = MOVE.findall(words[3])
            if holding and goes <= hold:
                held.append(legal[0])
                continue
            move = legal[-1]
            if until == "go":
                move = "\n".join([*held, move])
                held = []
            print(move, flush=True)
        elif words[0] == "end" and until == "end" and held:
            print("\n".join(held), flush=True)
            held = []
        elif words[0] == "quit":
            return


if __name__ == "__main__":
    main()
