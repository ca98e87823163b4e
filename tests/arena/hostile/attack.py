#!/usr/bin/env python3
"""A hostile submission's program: one attack, at build time or at play time.

    attack.py build ATTACK   (the bot's `build`): attacks, and writes how each attempt went
                             to report.json in its directory, which the test reads
    attack.py play ATTACK    (the bot's `run`): attacks at start; if any attempt got what it
                             must not (a file's contents, a connection), it plays what it got
                             as its move and writes it to standard error, and exits, so that
                             the secret would land in validate's report; else it becomes
                             random_player.py, which sits beside it, and plays fair

What to aim at is in targets.json beside it, written by the test into the archive:
{"read": [PATH...], "write": [PATH...], "connect": [[HOST, PORT]...], "pids": [PID...],
 "link": TARGET, "marker": TEXT}. `read` is read, listed, or hard-linked into the bot;
`pids` (and the jail's init) are sent SIGKILL; a child is left sleeping with `marker` in its
command line; `link` is linked to from the bot's directory.
Only the standard library: it runs under any Python 3.
"""

import json
import os
import shutil
import signal
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def attempt(action):
    """("ok", what it got) or ("refused", why)."""
    try:
        return "ok", action()
    except OSError as error:
        return "refused", error.strerror or str(error)


def read(path):
    with open(path, "rb") as file:
        return file.read(1 << 20).decode("utf-8", "replace")


def listing(path):
    """What a directory holds besides the way to this bot's own (the jail makes the
    directories that lead to it, empty but for that)."""
    way = set(HERE.split(os.sep))
    return " ".join(sorted(set(os.listdir(path)) - way))


def write(path):
    with open(path, "w") as file:
        file.write("written by a hostile bot\n")
    return "written"


def connect(address):
    with socket.create_connection(tuple(address), timeout=3):
        return "connected"


def signal_each(pids):
    return {str(pid): attempt(lambda pid=pid: os.kill(pid, signal.SIGKILL)) for pid in pids}


def linger(marker):
    """A child in a session of its own, sleeping with the marker in its command line."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", marker])
        os._exit(0)
    os.wait()
    return "left"


def fork_bomb():
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)


def spin():
    while True:
        pass


def hog():
    kept = []
    while True:
        kept.append(bytearray(16 << 20))


def flood(stream, megabytes):
    line = "x" * 1023 + "\n"
    for _ in range(megabytes * 1024):
        stream.write(line)
    stream.flush()


def attacks(aim):
    """Each attack by name: a function that attempts it and gives its outcomes."""
    return {
        "read": lambda: {p: attempt(lambda p=p: read(p)) for p in aim["read"]},
        "list": lambda: {p: attempt(lambda p=p: listing(p)) for p in aim["read"]},
        "write": lambda: {p: attempt(lambda p=p: write(p)) for p in aim["write"]},
        "connect": lambda: {repr(a): attempt(lambda a=a: connect(a)) for a in aim["connect"]},
        "signal": lambda: signal_each([*aim["pids"], 1]),
        "parricide": lambda: signal_each([os.getppid()]),
        "linger": lambda: {"child": attempt(lambda: linger(aim["marker"]))},
        "link": lambda: {"link": attempt(lambda: os.symlink(aim["link"], "leaked"))},
        "hardlink": lambda: {p: attempt(lambda p=p: os.link(p, "linked")) for p in aim["read"]},
        "fifo": lambda: {"fifo": attempt(lambda: os.mkfifo("pipe"))},
        "setuid": lambda: {"setuid": attempt(setuid)},
        "forkbomb": fork_bomb,
        "loop": spin,
        "hog": hog,
        "outflood": lambda: flood(sys.stdout, 20),
        "errflood": lambda: flood(sys.stderr, 4),
        "sleep": lambda: time.sleep(600),
    }


def setuid():
    shutil.copy("/bin/sh", "sush")
    os.chmod("sush", 0o4755)
    return oct(os.stat("sush").st_mode)


def leaked(outcomes):
    """What an attempt got that it must not have: a file's contents, a connection."""
    return [
        f"{what}: {got}"
        for what, (how, got) in outcomes.items()
        if how == "ok" and got not in (None, "", "left")
    ]


def main():
    when, attack = sys.argv[1], sys.argv[2]
    with open(os.path.join(HERE, "targets.json")) as file:
        aim = json.load(file)
    outcomes = attacks(aim)[attack]()
    if when == "build":
        with open("report.json", "w") as report:
            json.dump(outcomes, report)
        return
    got = leaked(outcomes or {})
    if got:
        text = " ".join(got).replace("\n", " ")
        sys.stderr.write(f"LEAKED {text}\n")
        sys.stderr.flush()
        sys.stdout.write(f"{text}\n")
        sys.stdout.flush()
        sys.exit(3)
    os.execv(sys.executable, [sys.executable, os.path.join(HERE, "random_player.py")])


if __name__ == "__main__":
    main()
