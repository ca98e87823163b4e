#!/usr/bin/env python3
"""A player that plays random legal moves, and at `start` attacks what a player must not reach.

    hostile.py ATTACK [TARGETS]

TARGETS: a directory the test writes `targets.json` into once both players run:
{"referee": PID, "opponent": [PID...], "port": N, "read": [PATH...]}; the bot waits for it.
Each attack says on stderr what it tried and how it went, one line each:
`ATTACK WHAT: ok ...` or `ATTACK WHAT: refused (ERROR)`.

ATTACK:
  setns    enters the referee's network namespace (/proc/PID/ns/net), and connects to PORT
  write    writes `zzz` into the opponent's standard output, through /proc/PID/fd/1
  escape   moves itself into the root pids, memory, cpuacct and cpu cgroups, starts a session of
           its own, clears its death signal, and leaves a child sleeping
  read     reads each path of `read` (a file, or a directory's listing), /etc/shadow, /tmp,
           and the referee's command line and working directory
  renice   raises its priority to -5
  signal   sends SIGSTOP, then SIGKILL, to the referee and to the opponent
  keeper   attacks nothing: writes a secret into its HOME, and plays
  probe    attacks nothing: says what it sees of its sandbox as one JSON line
           `probe {...}`, and plays
Only the standard library: it runs under any Python 3.
"""

import ctypes
import json
import os
import random
import re
import signal
import socket
import sys
import time

MOVE = re.compile(r"\([^()]*\)|[^\s()]+")
SECRET = "keeper-secret-7f3a"
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


def say(attack: str, what: str, outcome: str) -> None:
    sys.stderr.write(f"{attack} {what}: {outcome}\n")
    sys.stderr.flush()


def attempt(attack: str, what: str, action) -> None:
    """Run `action`, and say how it went."""
    try:
        result = action()
    except OSError as error:
        say(attack, what, f"refused ({error.strerror or error})")
    else:
        say(attack, what, "ok" + (f" {result}" if result else ""))


def targets(directory: str) -> dict:
    path = os.path.join(directory, "targets.json")
    deadline = time.monotonic() + 20
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    with open(path) as file:
        return json.load(file)


def checked(code: int) -> int:
    if code != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return code


def setns(aim: dict) -> None:
    def enter() -> None:
        descriptor = os.open(f"/proc/{aim['referee']}/ns/net", os.O_RDONLY)
        checked(LIBC.setns(descriptor, _CLONE_NEWNET))

    attempt("setns", "enter the referee's network", enter)
    attempt(
        "setns",
        f"connect to port {aim['port']}",
        lambda: socket.create_connection(("127.0.0.1", aim["port"]), timeout=2).close(),
    )


def write(aim: dict) -> None:
    def into(pid: int) -> None:
        with open(f"/proc/{pid}/fd/1", "w") as pipe:
            pipe.write("zzz\n")

    for pid in aim["opponent"]:
        attempt("write", f"into the output of {pid}", lambda pid=pid: into(pid))


def escape() -> None:
    for controller in ("pids", "memory", "cpuacct", "cpu", ""):
        path = os.path.join("/sys/fs/cgroup", controller, "cgroup.procs")

        def move(path: str = path) -> None:
            with open(path, "w") as procs:
                procs.write(str(os.getpid()))

        attempt("escape", f"join {path}", move)
    done, told = os.pipe()
    if os.fork() == 0:
        os.setsid()
        LIBC.prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)
        os.write(told, b"!")
        time.sleep(300)
        os._exit(0)
    os.read(done, 1)
    say("escape", "leave a child in a session of its own", "ok")


def read(aim: dict) -> None:
    paths = [*aim["read"], "/etc/shadow"]
    paths += [f"/proc/{aim['referee']}/cmdline", f"/proc/{aim['referee']}/cwd"]

    def content(path: str) -> str:
        if os.path.isdir(path):
            return " ".join(sorted(os.listdir(path)))
        with open(path, "rb") as file:
            return file.read(4096).decode(errors="replace").replace("\n", " ")

    for path in paths:
        attempt("read", path, lambda path=path: content(path))
    say("read", "/tmp", "ok " + " ".join(sorted(os.listdir("/tmp"))))


def renice() -> None:
    attempt("renice", "to -5", lambda: os.setpriority(os.PRIO_PROCESS, 0, -5))


def send_signals(aim: dict) -> None:
    for name, signal_number in (("SIGSTOP", signal.SIGSTOP), ("SIGKILL", signal.SIGKILL)):
        for who, pids in (("referee", [aim["referee"]]), ("opponent", aim["opponent"])):
            for pid in pids:
                attempt(
                    "signal",
                    f"{name} to the {who} {pid}",
                    lambda p=pid, s=signal_number: os.kill(p, s),
                )


def keep() -> None:
    with open(os.path.join(os.environ["HOME"], "secret.txt"), "w") as file:
        file.write(SECRET)


def _size(path: str) -> int:
    space = os.statvfs(path)
    return space.f_blocks * space.f_frsize


def probe() -> None:
    """What this process sees of its sandbox."""

    def status(key: str) -> str:
        with open("/proc/self/status") as lines:
            return next(line.split(":", 1)[1].strip() for line in lines if line.startswith(key))

    def can(action) -> bool:
        try:
            action()
        except OSError:
            return False
        return True

    def write_into(directory: str) -> None:
        with open(os.path.join(directory, "probe.txt"), "w") as file:
            file.write("x")

    def unshare_network() -> None:
        checked(LIBC.unshare(_CLONE_NEWNET))

    here = os.path.dirname(os.path.abspath(__file__))
    with open("/proc/self/uid_map") as uid_map:
        mapping = uid_map.read().split()
    with open("/proc/self/limits") as limits:
        limit_lines = limits.read().splitlines()
    seen = {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": os.getgroups(),
        "uid_map": mapping,
        "pid": os.getpid(),
        "processes": sorted(int(name) for name in os.listdir("/proc") if name.isdigit()),
        "hostname": socket.gethostname(),
        "ipc": os.readlink("/proc/self/ns/ipc"),
        "uts": os.readlink("/proc/self/ns/uts"),
        "mnt": os.readlink("/proc/self/ns/mnt"),
        "net": os.readlink("/proc/self/ns/net"),
        "pid_ns": os.readlink("/proc/self/ns/pid"),
        "cap_eff": status("CapEff"),
        "cap_bnd": status("CapBnd"),
        "no_new_privs": status("NoNewPrivs"),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "renice": can(lambda: os.setpriority(os.PRIO_PROCESS, 0, -5)),
        "unshare": can(unshare_network),
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
        "cwd": os.getcwd(),
        "environment": dict(os.environ),
        "write_private": can(lambda: write_into(os.environ["HOME"])),
        # The size of the file system its private directory is (a tmpfs of disk_mb).
        "private_bytes": _size(os.environ["TMPDIR"]),
        "write_program": can(lambda: write_into(here)),
        "write_system": can(lambda: write_into("/usr")),
        "write_tmp": can(lambda: write_into("/tmp")),
        "write_root": can(lambda: write_into("/")),
        "write_dev": can(lambda: write_into("/dev")),
        "write_shared_memory": can(lambda: write_into("/dev/shm")),
        "root": sorted(os.listdir("/")),
        "tmp": sorted(os.listdir("/tmp")),
        "limits": [
            line
            for line in limit_lines
            if line.startswith(("Max processes", "Max open", "Max address space"))
        ],
    }
    sys.stderr.write("probe " + json.dumps(seen) + "\n")
    sys.stderr.flush()


def attack_now(attack: str, aim: dict) -> None:
    if attack in ("setns", "write", "read"):
        {"setns": setns, "write": write, "read": read}[attack](aim)
    elif attack == "signal":
        send_signals(aim)
    else:
        {"escape": escape, "renice": renice, "keeper": keep, "probe": probe}[attack]()


def main() -> None:
    attack = sys.argv[1]
    for line in sys.stdin:
        words = line.split(maxsplit=3)
        if not words:
            continue
        if words[0] == "start":
            attack_now(attack, targets(sys.argv[2]) if len(sys.argv) > 2 else {})
            print("ready", flush=True)
        elif words[0] == "go":
            print(random.choice(MOVE.findall(words[3])), flush=True)
        elif words[0] == "quit":
            return


if __name__ == "__main__":
    main()
