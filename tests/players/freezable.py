#!/usr/bin/env python3
"""A player whose processes keep the CPU busy, to be frozen while it is not asked.

    freezable.py MODE

It answers `ready` to `start`, and `done N` to any other line but `quit` (at which it
exits), N the number of SIGCONT signals it has seen, which it counts in a handler.

MODE:
  family  at `start`, before its answer, forks two busy children; one forks a busy grandchild,
          the other calls setsid first and forks a busy grandchild too
  tricks  as `family`, but each of its processes ignores SIGTSTP, SIGTTIN and SIGTTOU, and
          sends SIGCONT to every one forked before it, and to the program, without end
  burn    spends about 200 ms of CPU time on each line before its answer
  sleep   sleeps 100 ms on each line before its answer
Its forks bear its command line; it never writes to standard error.
Only the standard library: it runs under any Python 3.
"""

import contextlib
import os
import signal
import sys
import time

BURN_S = 0.2
SLEEP_S = 0.1


def busy(family: list[int]) -> None:
    """Spin without end; with `family` (the pids of the others), continue each of them too."""
    while True:
        for pid in family:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)


def fork_busy(family: list[int], setsid: bool = False, grandchild: bool = False) -> int:
    """A busy child (which calls setsid first, and forks a busy grandchild, if told); its pid."""
    pid = os.fork()
    if pid:
        return pid
    if setsid:
        os.setsid()
    if grandchild and os.fork() == 0:
        busy(family)
    busy(family)
    return 0


def main() -> None:
    mode = sys.argv[1]
    continued = [0]
    signal.signal(signal.SIGCONT, lambda *_: continued.append(1))
    if mode == "tricks":
        for ignored in (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
            signal.signal(ignored, signal.SIG_IGN)  # inherited by its forks
    family: list[int] = [os.getpid()]
    for line in sys.stdin:
        word = line.split(maxsplit=1)[0] if line.strip() else ""
        if word == "quit":
            return
        if word == "start" and mode in ("family", "tricks"):
            # The later children continue the earlier ones (and the program itself).
            watched = family if mode == "tricks" else []
            family.append(fork_busy(list(watched), grandchild=True))
            family.append(fork_busy(list(watched), setsid=True, grandchild=True))
        if mode == "burn" and word != "start":
            until = time.process_time() + BURN_S
            while time.process_time() < until:
                pass
        if mode == "sleep" and word != "start":
            time.sleep(SLEEP_S)
        print("ready" if word == "start" else f"done {len(continued) - 1}", flush=True)


if __name__ == "__main__":
    main()
