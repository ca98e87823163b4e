#!/usr/bin/env python3
# A random player in Python, the minimal bot of docs/protocol.md: it answers `start` with
# `ready` and each `go` with one of the legal moves it lists, and leaves on `quit`.
import random
import re
import sys

MOVE = re.compile(r"\((?:[^()]|\([^()]*\))*\)|[^\s()]+")  # one move: (a list) or an atom

for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        print("ready", flush=True)
    elif words[0] == "go":
        legal = MOVE.findall(words[3])
        print(random.choice(legal), flush=True)
    elif words[0] == "quit":
        break
