#!/usr/bin/env python3
# A random player in Python, the minimal bot of docs/protocol.md: it answers `start` with
# `ready` and each `go` with one of the legal moves it lists, and leaves on `quit`.
import random
import re
import sys


def moves(text):
    """The moves of a list: each atom, or list with lists in it as deep as they go."""
    found, depth = [], 0
    for token in re.finditer(r"[()]|[^\s()]+", text):
        if depth == 0:
            begin = token.start()
        depth += {"(": 1, ")": -1}.get(token[0], 0)
        if depth == 0:
            found.append(text[begin : token.end()])
    return found


for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        print("ready", flush=True)
    elif words[0] == "go":
        print(random.choice(moves(words[3])), flush=True)
    elif words[0] == "quit":
        break
