"""What an untrusted player may use, and what it is kept from: limits, and isolation.

Limits are set in the child before it execs (setrlimit) and watched from the referee while
it runs (`Usage`, sampled from /proc), because some cannot be set per process: the memory
and the CPU time of all a player's processes together, and how many processes it has.
Isolation is what the machine allows: a network namespace of its own (no network), a
private working directory, and a minimal environment.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from referee.errors import ConfigError
from referee.sandbox.cgroups import PidsCgroup, pids_parent, remove_stale
from referee.sandbox.leftovers import left_by_killed_referees, owned_prefix

MIB = 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICKS = os.sysconf("SC_CLK_TCK")
# How often each player's use is sampled.
SAMPLE_EVERY_S = 0.1
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
# Loaded once here: the code that runs in a forked child before exec must not load libraries.
LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
_PRIVATE_KIND = "player"
# What a minimal environment keeps from the referee's.
_KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
# The whole file system as it is, a network namespace of its own, and death with its parent.
_BUBBLEWRAP_OPTIONS = ("--dev-bind", "/", "/", "--unshare-net", "--die-with-parent")


@dataclass(frozen=True)
class Limits:
    """What one player may use; each limit is named in the fault of a player that exceeds it."""

    memory_mb: int = 1024  # resident memory of all its processes together
    cpu_s: int = 300  # CPU seconds per match, all its processes together
    processes: int = 64  # processes and threads
    open_files: int = 256  # per process
    file_size_mb: int = 64  # largest file it may write

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"limit {item.name} must be a positive whole number")

    def describe(self, name: str) -> str:
        """The limit called `name` in words, for a fault: `memory limit 1024 MiB`."""
        words = {
            "memory_mb": f"memory limit {self.memory_mb} MiB",
            "cpu_s": f"CPU limit {self.cpu_s} s per match",
            "processes": f"process limit {self.processes} processes and threads",
            "open_files": f"open-file limit {self.open_files}",
            "file_size_mb": f"file-size limit {self.file_size_mb} MiB",
        }
        return words[name]

    def summary(self) -> str:
        """Every limit in words, for a report."""
        return ", ".join(self.describe(item.name) for item in fields(self))


@dataclass(frozen=True)
class Usage:
    """What a player's processes use at one moment, summed over its process group."""

    processes: int  # processes and threads
    memory_bytes: int  # proportional set size: shared pages divided among their sharers
    cpu_s: float  # user and system time of the living processes and the children they reaped


def _stat(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def stats_of(pids: Iterable[int]) -> list[tuple[int, list[bytes]]]:
    """(pid, stat fields) of each of these processes that still exists."""
    return [(pid, fields_) for pid in pids if (fields_ := _stat(pid)) is not None]


def group_stats(pgid: int) -> list[tuple[int, list[bytes]]]:
    """(pid, stat fields) of every process in a process group, from one scan of /proc."""
    return [(pid, fields_) for pid, fields_ in _every_stat() if int(fields_[2]) == pgid]


def _every_stat() -> list[tuple[int, list[bytes]]]:
    return stats_of(int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit())


class ProcessTable:
    """One scan of /proc shared by the players watched at about the same time.

    Without cgroups, a player's processes are found by reading every process's stat, which
    costs in proportion to the processes on the machine; one scan then serves every player.
    """

    def __init__(self, max_age_s: float = SAMPLE_EVERY_S / 2) -> None:
        """A scan serves every player sampled within `max_age_s` of it (half a period)."""
        self._max_age_s = max_age_s
        self._scanned_at = -math.inf
        self._groups: dict[int, list[tuple[int, list[bytes]]]] = {}

    def group(self, pgid: int) -> list[tuple[int, list[bytes]]]:
        """(pid, stat fields) of the processes in a group, as of a scan at most max_age_s old."""
        if time.monotonic() - self._scanned_at > self._max_age_s:
            self._groups = defaultdict(list)
            for pid, fields_ in _every_stat():
                self._groups[int(fields_[2])].append((pid, fields_))
            self._scanned_at = time.monotonic()
        return self._groups.get(pgid, [])


def group_usage(stats: Iterable[tuple[int, list[bytes]]]) -> Usage:
    """Sum the use of these processes ((pid, stat fields) pairs); a zombie counts for nothing."""
    threads = resident = ticks = 0
    for pid, fields_ in stats:
        if fields_[0] == b"Z":
            continue
        ticks += sum(int(value) for value in fields_[11:15])
        threads += int(fields_[17])
        resident += _proportional_memory(pid, int(fields_[21]) * _PAGE)
    return Usage(threads, resident, ticks / _TICKS)


def _proportional_memory(pid: int, resident: int) -> int:
    """A process's share of memory (Pss): pages it shares with its forks count once in all.

    Resident size (`resident`) when the kernel does not say, which counts shared pages in full.
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resident


def over_limit(usage: Usage, limits: Limits, cpu_at_start_s: float) -> str | None:
    """The name of the first limit this use exceeds, or None."""
    if usage.processes > limits.processes:
        return "processes"
    if usage.memory_bytes > limits.memory_mb * MIB:
        return "memory_mb"
    if usage.cpu_s - cpu_at_start_s > limits.cpu_s:
        return "cpu_s"
    return None


def limit_of_signal(code: int) -> str | None:
    """The limit whose signal ended a process with this return code, if it was one."""
    return {-signal.SIGXCPU: "cpu_s", -signal.SIGXFSZ: "file_size_mb"}.get(code)


def allow_cpu(pid: int, limits: Limits) -> None:
    """Let a process use `cpu_s` more seconds from now: a reused process gets a fresh allowance."""
    fields_ = _stat(pid)
    used = group_usage([(pid, fields_)]).cpu_s if fields_ is not None else 0.0
    soft = int(used) + limits.cpu_s + 1
    # Gone already, or the platform cannot: the sampled group time still counts.
    with contextlib.suppress(OSError, ValueError):
        resource.prlimit(pid, resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


@dataclass(frozen=True)
class Protections:
    """Which protections this machine gives; `why_not` says why the missing ones are missing."""

    network: bool
    network_how: str
    why_not: tuple[str, ...]
    cgroups: Path | None  # where a player's pids cgroup is made, if it can be
    bubblewrap: str | None = None  # the bwrap program, when it is what keeps the network out

    @property
    def unshare(self) -> bool:
        """Whether the child itself unshares its network before exec (not through bubblewrap)."""
        return self.network and self.bubblewrap is None

    def command(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """The argv to start: the program's, run in bubblewrap when that is how it is isolated."""
        if self.bubblewrap is None:
            return argv
        return (self.bubblewrap, *_BUBBLEWRAP_OPTIONS, "--", *argv)

    def return_code(self, code: int) -> int:
        """The program's own return code; bubblewrap reports a death by signal N as 128 + N."""
        if self.bubblewrap is not None and 128 < code <= 128 + signal.SIGRTMAX:
            return 128 - code
        return code

    def to_json(self) -> list[dict[str, Any]]:
        """The rows as records: protection, active, how."""
        return [{"protection": n, "active": a, "how": h} for n, a, h in self.rows()]

    def rows(self) -> list[tuple[str, bool, str]]:
        """(protection, active, how) for each, as `referee doctor` shows them."""
        root = os.geteuid() == 0
        return [
            (
                "limits in each process",
                True,
                "setrlimit in the child: address space, CPU, file size, open files, no core",
            ),
            (
                "use of all its processes watched",
                True,
                f"memory, CPU and processes sampled from /proc every {SAMPLE_EVERY_S * 1000:.0f}"
                " ms; killed over a limit",
            ),
            (
                "pids cgroup",
                self.cgroups is not None,
                f"one per player under {self.cgroups}: firm process limit, no escape by setsid"
                if self.cgroups
                else "unavailable: no writable pids cgroup",
            ),
            (
                "per-user process limit",
                not root,
                "RLIMIT_NPROC: not enforced for root"
                if root
                else "RLIMIT_NPROC at the processes of this user plus twice the limit",
            ),
            ("no network", self.network, self.network_how),
            ("private working directory", True, "a fresh directory, also TMPDIR and HOME"),
            ("minimal environment", True, f"only {', '.join(_KEPT_VARIABLES)}"),
            ("killed with the referee", LIBC is not None, "PR_SET_PDEATHSIG"),
        ]


def _unshare_network() -> None:
    """In the forked child: a network namespace of its own, with only a loopback that is down."""
    assert LIBC is not None
    if LIBC.unshare(_CLONE_NEWNET) != 0 and LIBC.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


@functools.cache
def machine_protections() -> Protections:
    """Probe once whether a child can be given a network namespace and a pids cgroup.

    Its own unshare first; else bubblewrap, when installed, which may be let do what the
    referee may not (a setuid program, or one a security profile allows namespaces).
    """
    cgroups = _cgroups_parent()
    if LIBC is None:
        return Protections(False, "not on Linux", ("network isolation needs Linux",), cgroups)
    try:
        subprocess.run(["true"], preexec_fn=_unshare_network, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as error:
        refused = f"cannot unshare: {error}"
    else:
        return Protections(True, "a network namespace of its own (unshare)", (), cgroups)
    bubblewrap = shutil.which("bwrap")
    if bubblewrap is None:
        refused += "; bubblewrap (bwrap) is not installed"
    else:
        wrapped = Protections(
            True, "a network namespace of its own (bubblewrap)", (), cgroups, bubblewrap
        )
        try:
            subprocess.run(wrapped.command(("true",)), check=True, timeout=10, capture_output=True)
        except (OSError, subprocess.SubprocessError) as error:
            refused += f"; bubblewrap failed: {error}"
        else:
            return wrapped
    reason = f"no network namespace for players ({refused}); players can reach the network"
    return Protections(False, "unavailable: " + refused, (reason,), cgroups)


def _cgroups_parent() -> Path | None:
    """Where player cgroups can be made: found, and a cgroup made and removed there."""
    parent = pids_parent()
    if parent is None:
        return None
    try:
        PidsCgroup.make(parent, 1).remove()
    except OSError:
        return None
    return parent


def _user_processes() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


def child_setup(limits: Limits, unshare: bool, cgroup: PidsCgroup | None) -> Callable[[], None]:
    """The function the child runs after fork, before exec: limits, isolation, death with us."""
    # A backstop above the limit, so that a bomb slow enough is still seen and named by the
    # sampling; RLIMIT_NPROC counts all the user's processes, the other players' too.
    nproc = None if os.geteuid() == 0 else _user_processes() + 2 * limits.processes
    settings = [
        (resource.RLIMIT_AS, 2 * limits.memory_mb * MIB),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * MIB),
        (resource.RLIMIT_CORE, 0),
    ]
    if nproc is not None:
        settings.append((resource.RLIMIT_NPROC, nproc))

    def setup() -> None:
        if cgroup is not None:
            cgroup.join()
        if LIBC is not None:
            LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        for which, value in settings:
            resource.setrlimit(which, (value, value))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s + 1, resource.RLIM_INFINITY))
        # Below the referee's priority: a spinning player cannot starve the referee's clock.
        os.nice(5)
        if unshare:
            _unshare_network()

    return setup


def private_directory() -> Path:
    """A fresh directory for one player process to work in."""
    return Path(tempfile.mkdtemp(prefix=owned_prefix(_PRIVATE_KIND)))


def remove_left_behind() -> None:
    """Remove the player directories and cgroups of referees that were killed (SIGKILL)."""
    for directory in left_by_killed_referees(Path(tempfile.gettempdir()), _PRIVATE_KIND):
        with contextlib.suppress(OSError):
            if directory.stat().st_uid == os.getuid():
                shutil.rmtree(directory, ignore_errors=True)
    parent = machine_protections().cgroups
    if parent is not None:
        remove_stale(parent)


def minimal_environment(extra: Mapping[str, str], private: Path) -> dict[str, str]:
    """The few variables a program needs, its own temporary home, and the player's settings."""
    kept = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    return {**kept, "HOME": str(private), "TMPDIR": str(private), **extra}
