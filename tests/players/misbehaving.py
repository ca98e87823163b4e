#!/usr/bin/env python3
"""A player that plays random legal moves but misbehaves in one chosen way.

    misbehaving.py MODE [--at N] [--delay-ms MS] [--say-pids]

MODE, done at the N-th `go` (default 1) unless it says otherwise:
  silent-start  never answers `start`
  bad-ready     answers `start` with `ok`
  late          answers after --delay-ms (every `go` when --at is 0)
  illegal       answers `noop`, a move of the game that is not legal for the role in control
  garbage       answers a line that is no move at all
  huge          answers with a 1 MiB line
  not-utf8      answers with bytes that are not UTF-8
  exit          exits with code 3
  close-stdout  closes its standard output and stays alive
  ignore-term   plays well, but ignores SIGTERM and `quit`
  child         starts a child process at `start` and leaves it behind at `quit`
  stderr-flood  writes 5 MiB to standard error at `start`
  chatty        answers each `moves` line, which needs no answer, with `ok`
  memory-hog    allocates memory until it is stopped
  memory-spike  touches --mb MiB of memory at once, writes a comment, and exits with code 1
                before any sampling can see it
  fork-bomb     starts up to 200 sleeping processes, --delay-ms apart, then plays on; when a
                fork is refused, says after how many on stderr and exits with code 1
  cpu-spinner   spins on the CPU without end, never answering again
  stderr-stream writes to standard error without end from a thread, and plays on
  flood         from the N-th `go` on, a thread writes blank lines to standard output without
                end, and the program plays on
  partial       writes part of a line with no end, and stays silent until the next request
  connect       at `start`, connects to 127.0.0.1:--port and says on stderr how it went
  orphan        starts a child that holds its output, then exits with code 3
  escape        at `start`, starts a child that leaves the process group (setsid) and sleeps
  privileges    at `start`, tries to raise its priority and writes to stderr how it went
                (renice=ok or renice=refused) and its CapEff and NoNewPrivs status lines
  cores         at each `start`, writes the cores it may run on (cores=0-1), then tries to run
                on every core of the machine and writes those it then may (widened=...)
  environment   at `start`, writes its working directory (cwd=...) and environment to stderr,
                one NAME=value per line
  scheduling    as it starts and at each `start`, writes an id of its own (its pid in a jail
                is always 2) and its scheduling policy to stderr (`born id=I policy=N`,
                `playing id=I policy=N`)
--say-pids: at `start`, say on stderr `pids:` and this process's pid and its child's (as its
PID namespace numbers them). Its children are forks: they bear its command line.
"""

import argparse
import os
import random
import re
import signal
import socket
import sys
import threading
import time

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--at", type=int, default=1)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--say-pids", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mb", type=int, default=0)
    args = parser.parse_args()
    pids = [os.getpid()]
    me = os.urandom(8).hex()
    if args.mode == "scheduling":
        sys.stderr.write(f"born id={me} policy={os.sched_getscheduler(0)}\n")
        sys.stderr.flush()
    if args.mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    goes = 0
    for line in sys.stdin:
        words = line.split(maxsplit=3)
        if not words:
            continue
        if words[0] == "start":
            if args.mode == "child":
                pids.append(sleeper())
            if args.mode == "connect":
                connect(args.port)
            if args.mode == "escape":
                pids.append(escape())
            if args.mode == "privileges":
                privileges()
            if args.mode == "cores":
                cores()
            if args.mode == "scheduling":
                sys.stderr.write(f"playing id={me} policy={os.sched_getscheduler(0)}\n")
                sys.stderr.flush()
            if args.mode == "environment":
                sys.stderr.write(f"cwd={os.getcwd()}\n")
                sys.stderr.write("".join(f"{k}={v}\n" for k, v in sorted(os.environ.items())))
                sys.stderr.flush()
            if args.mode == "stderr-flood":
                sys.stderr.write("noise " * (5 * 1024 * 1024 // 6))
                sys.stderr.flush()
            if args.say_pids:
                sys.stderr.write(f"pids: {' '.join(map(str, pids))}\n")
                sys.stderr.flush()
            if args.mode == "bad-ready":
                print("ok", flush=True)
            elif args.mode != "silent-start":
                print("ready", flush=True)
        elif words[0] == "go":
            goes += 1
            answer = random.choice(MOVE.findall(words[3]))
            if goes == args.at or (args.at == 0 and args.mode == "late"):
                answer = misbehave(args.mode, args.delay_ms, answer, args.mb)
            if answer:
                print(answer, flush=True)
        elif words[0] == "moves" and args.mode == "chatty":
            print("ok", flush=True)
        elif words[0] == "quit":
            if args.mode == "ignore-term":
                time.sleep(300)
            return


def connect(port: int) -> None:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        sys.stderr.write(f"connected to port {port}\n")
    except OSError as error:
        sys.stderr.write(f"could not connect to port {port}: {error}\n")
    sys.stderr.flush()


def cores() -> None:
    sys.stderr.write(f"cores={allowed()}\n")
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except OSError as error:
        sys.stderr.write(f"widen={error.strerror}\n")
    sys.stderr.write(f"widened={allowed()}\n")
    sys.stderr.flush()


def allowed() -> str:
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("Cpus_allowed_list"))


def privileges() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -5)
        sys.stderr.write("renice=ok\n")
    except OSError:
        sys.stderr.write("renice=refused\n")
    with open("/proc/self/status") as status:
        sys.stderr.write("".join(line for line in status if line.startswith(("CapEff", "NoNew"))))
    sys.stderr.flush()


def sleeper() -> int:
    """Start a child that sleeps; its pid."""
    child = os.fork()
    if child == 0:
        time.sleep(300)
        os._exit(0)
    return child


def escape() -> int:
    """Start a child in a session of its own, out of the player's process group; its pid."""
    done, told = os.pipe()
    child = os.fork()
    if child == 0:
        os.setsid()
        os.write(told, b"!")
        time.sleep(300)
        os._exit(0)
    os.read(done, 1)
    return child


def forever(work) -> None:
    threading.Thread(target=lambda: [work() for _ in iter(int, 1)], daemon=True).start()


def misbehave(mode: str, delay_ms: int, answer: str, mb: int = 0) -> str:
    """The line to send instead of a good answer, or no line at all."""
    if mode == "memory-spike":
        spike = b"\x01" * (mb * 1024 * 1024)
        print(f"# touched {len(spike)} bytes; bye", flush=True)
        sys.exit(1)
    if mode == "memory-hog":
        hoard = []
        while True:
            hoard.append(b"\x01" * (8 * 1024 * 1024))
            time.sleep(0.005)
    elif mode == "fork-bomb":
        for count in range(200):
            try:
                child = os.fork()
            except OSError:
                sys.stderr.write(f"fork refused after {count}\n")
                sys.exit(1)
            if child == 0:
                time.sleep(60)
                os._exit(0)
            time.sleep(delay_ms / 1000)
    elif mode == "cpu-spinner":
        while True:
            sum(range(10_000))
    elif mode == "flood":
        out = sys.stdout.buffer
        forever(lambda: (out.write(b"\n" * 60_000), out.flush()))
    elif mode == "partial":
        sys.stdout.write(answer[: len(answer) // 2])
        sys.stdout.flush()
        return ""
    elif mode == "stderr-stream":
        forever(lambda: sys.stderr.write("noise " * 10_000))
    elif mode == "orphan":
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)
        sys.exit(3)
    elif mode == "late":
        time.sleep(delay_ms / 1000)
    elif mode == "illegal":
        return "noop"
    elif mode == "garbage":
        return "I think, therefore I am!"
    elif mode == "huge":
        return "x" * (1024 * 1024)
    elif mode == "not-utf8":
        sys.stdout.flush()
        sys.stdout.buffer.write(b"(place \xff\xfe 5)\n")
        sys.stdout.buffer.flush()
        return "# that was my move"
    elif mode == "exit":
        sys.exit(3)
    elif mode == "close-stdout":
        sys.stdout.close()
        os.close(1)
        time.sleep(300)
    return answer


if __name__ == "__main__":
    main()
