#!/usr/bin/env python3
"""A player that writes every line it is told to standard error (its seat's log), prefixed
`told: `, and answers each `go` with its first legal move."""

import re
import sys

MOVE = re.compile(r"\((?:[^()]|\([^()]*\))*\)|[^\s()]+")

for line in sys.stdin:
    print("told:", line.rstrip("\n"), file=sys.stderr, flush=True)
    words = line.split(maxsplit=3)
    if words and words[0] == "start":
        print("ready", flush=True)
    elif words and words[0] == "go":
        print(MOVE.findall(words[3])[0], flush=True)
    elif words and words[0] == "quit":
        break
