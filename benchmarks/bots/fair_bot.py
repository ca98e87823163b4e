#!/usr/bin/env python3
"""The players of benchmarks/fairness.py and arena_rush.py: one script, a mode each.

    fair_bot.py quiet               answers at once, then waits for its next request
    fair_bot.py spin                answers at once; a child of it spins the CPU all the time
    fair_bot.py work N              runs a loop of N iterations, then answers
    fair_bot.py sleep FRACTION      sleeps FRACTION of its clock, then answers
    fair_bot.py think FRACTION      spins the CPU until FRACTION of its clock has passed
    fair_bot.py uci FRACTION        the sleeper, speaking UCI (for fastchess)
    fair_bot.py calibrate MS        prints the N for which `work N` takes MS ms alone

Every mode answers the first legal move (UCI: a knight out and back, the same for both
sides, so that a game ends by repetition). The sleeper writes, before its answer, one line to
standard error: `slept MATCH ROLE STEP MS`, MS the time from reading its request to writing
its answer, by its own monotonic clock; under UCI it reports that time as `info ... time`,
which fastchess compares with its own.

Only the standard library: the referee's jail shows a benchmark's program, not the referee.
"""

import os
import sys
import time
from collections.abc import Iterator

# The moves of the UCI mode, by the number of plies played: white's knight goes out and
# back, then black's; the position after four plies is the first one again.
KNIGHT_MOVES = ("g1f3", "g8f6", "f3g1", "f6g8")
# How many iterations the spinning child runs between looks at whether its parent is gone.
SPIN_CHUNK = 1_000_000


def work(iterations: int) -> int:
    """A fixed amount of CPU work, the same each time."""
    total = 0
    for i in range(iterations):
        total += i
    return total


def calibrate(ms: float) -> int:
    """The iterations `work` does in `ms` on this core, the fastest of a few tries (the
    others were interrupted by other work on the machine)."""
    probe = 1_000_000
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        work(probe)
        best = min(best, time.perf_counter() - began)
    return round(probe * ms / 1000 / best)


def first_move(moves: str) -> str:
    """The first of a `go` line's moves: an atom, or a list up to its closing parenthesis."""
    if not moves.startswith("("):
        return moves.split()[0]
    depth = 0
    for end, char in enumerate(moves):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return moves[: end + 1]
    return moves


def spin_child() -> None:
    """Start a child that spins until its parent is gone (then it is reparented)."""
    parent = os.getpid()
    if os.fork() == 0:
        while os.getppid() == parent:
            work(SPIN_CHUNK)
        os._exit(0)


def requests() -> Iterator[tuple[float, str, list[str]]]:
    """Each line that is not blank, with when it was read and its words, until the end."""
    while line := sys.stdin.readline():
        read_at = time.monotonic()
        words = line.split()
        if words:
            yield read_at, line, words


def referee_loop(mode: str, argument: str) -> None:
    """Play the referee's protocol (docs/protocol.md): `start` -> ready, `go` -> a move."""
    if mode == "spin":
        spin_child()
    match, role = "", ""
    for read_at, line, words in requests():
        if words[0] == "start":
            match, role = words[1], words[3]
            answer = "ready"
        elif words[0] == "go":
            step, clock_ms = words[1], int(words[2])
            if mode == "work":
                work(int(argument))
            elif mode == "think":
                until = read_at + float(argument) * clock_ms / 1000
                while time.monotonic() < until:
                    work(10_000)
            elif mode == "sleep":
                time.sleep(float(argument) * clock_ms / 1000)
                took = (time.monotonic() - read_at) * 1000
                sys.stderr.write(f"slept {match} {role} {step} {took:.3f}\n")
                sys.stderr.flush()
            answer = first_move(line.split(maxsplit=3)[3])
        elif words[0] == "quit":
            return
        else:
            continue
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def uci_loop(fraction: float) -> None:
    """The sleeper under UCI: `go movetime MS` (or a clock) -> sleep, then `bestmove`."""
    plies = 0
    for read_at, _, words in requests():
        if words[0] == "uci":
            print("id name fair_bot\nuciok", flush=True)
        elif words[0] == "isready":
            print("readyok", flush=True)
        elif words[0] == "position":
            plies = len(words) - words.index("moves") - 1 if "moves" in words else 0
        elif words[0] == "go":
            options = dict(zip(words[1::2], words[2::2], strict=False))
            side = "wtime" if plies % 2 == 0 else "btime"
            clock_ms = int(options.get("movetime") or options[side])
            time.sleep(fraction * clock_ms / 1000)
            took = (time.monotonic() - read_at) * 1000
            move = KNIGHT_MOVES[plies % len(KNIGHT_MOVES)]
            print(f"info depth 1 time {int(took)} score cp 0 pv {move}", flush=True)
            print(f"bestmove {move}", flush=True)
        elif words[0] == "quit":
            return


def main() -> None:
    mode, argument = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "calibrate":
        print(calibrate(float(argument)))
    elif mode == "uci":
        uci_loop(float(argument))
    else:
        referee_loop(mode, argument)


if __name__ == "__main__":
    main()
