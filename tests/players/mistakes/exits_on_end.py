"""A bot that reads the goals at `end` as numbers only, so the reason word makes it crash."""

import random
import re
import sys

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")

for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        print("ready", flush=True)
    elif words[0] == "go":
        print(random.choice(MOVE.findall(words[3])), flush=True)
    elif words[0] == "end":
        goals = [int(goal) for goal in line.split()[1:]]
        print(f"# my goal: {goals[0]}", flush=True)
    elif words[0] == "quit":
        break
