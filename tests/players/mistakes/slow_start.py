"""Takes longer than the start clock the tests give it before it reads `start`, then plays
the first legal move: the slow start validate must measure and name."""

import sys
import time

time.sleep(float(sys.argv[1]))
for line in sys.stdin:
    words = line.split()
    if words[0] == "start":
        print("ready", flush=True)
    elif words[0] == "go":
        print(words[3], flush=True)
    elif words[0] == "quit":
        break
