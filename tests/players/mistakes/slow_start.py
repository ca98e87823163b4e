"""Takes longer than the start clock the tests give it to answer `start`, then plays the
first legal move: the slow start validate must measure and name. The wait begins when
`start` is read: begun at the process's start, it would overlap what the referee does
before it sends `start`, longer on a loaded machine, and the ready measured come early."""

import sys
import time

for line in sys.stdin:
    words = line.split()
    if words[0] == "start":
        time.sleep(float(sys.argv[1]))
        print("ready", flush=True)
    elif words[0] == "go":
        print(words[3], flush=True)
    elif words[0] == "quit":
        break
