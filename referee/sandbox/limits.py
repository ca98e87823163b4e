"""What one player may use, and how its use is measured against that.

Some limits are set in the child before it execs (`rlimits`); others can only be watched
from outside, because they are of all a player's processes together: the memory, the CPU
time and the number of its processes (`over_limit`, on a `Usage` sampled by the sandbox).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from referee.errors import ConfigError, LimitTooLowError

MIB = 1024 * 1024
# The largest a kernel lets pid_max be: more processes than any machine can have.
_PID_MAX_LIMIT = 4_194_304
_NR_OPEN = Path("/proc/sys/fs/nr_open")
# How often each player's use is sampled.
SAMPLE_EVERY_S = 0.1


@dataclass(frozen=True)
class Limits:
    """What one player may use; each limit is named in the fault of a player that exceeds it,
    but for `disk_mb`, which the program meets as a full disk (ENOSPC) where the jail caps it."""

    memory_mb: int = 1024  # resident memory of all its processes together
    cpu_s: int = 300  # CPU seconds per match, all its processes together
    processes: int = 64  # processes and threads
    open_files: int = 256  # per process
    file_size_mb: int = 64  # largest file it may write
    disk_mb: int = 256  # what its private directory (HOME and TMPDIR) may hold, in memory

    def __post_init__(self) -> None:
        highest = ceilings()
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"limit {item.name} must be a positive whole number")
            ceiling, why = highest[item.name]
            if value > ceiling:
                raise ConfigError(f"limit {item.name} must be at most {ceiling} ({why})")

    def describe(self, name: str) -> str:
        """The limit called `name` in words, for a fault: `memory limit 1024 MiB`."""
        words = {
            "memory_mb": f"memory limit {self.memory_mb} MiB",
            "cpu_s": f"CPU limit {self.cpu_s} s per match",
            "processes": f"process limit {self.processes} processes and threads",
            "open_files": f"open-file limit {self.open_files}",
            "file_size_mb": f"file-size limit {self.file_size_mb} MiB",
            "disk_mb": f"disk limit {self.disk_mb} MiB in its private directory",
        }
        return words[name]

    def summary(self) -> str:
        """Every limit in words, for a report."""
        return ", ".join(self.describe(item.name) for item in fields(self))


def ceilings() -> dict[str, tuple[int, str]]:
    """The highest value of each limit this machine can honour, and why it is that."""
    try:
        open_files = int(_NR_OPEN.read_text())
    except (OSError, ValueError):
        open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // MIB
    return {
        "memory_mb": (memory, "this machine's memory"),
        "cpu_s": (7 * 24 * 3600, "a week"),
        "processes": (_PID_MAX_LIMIT, "the most processes a Linux kernel allows"),
        "open_files": (open_files, "the most open files a process may have here"),
        "file_size_mb": (MIB, "1 TiB"),
        # The private directory is a file system in memory.
        "disk_mb": (memory, "this machine's memory"),
    }


@dataclass(frozen=True)
class Usage:
    """What a player's processes use at one moment, summed over its process group."""

    processes: int  # processes and threads
    memory_bytes: int  # proportional set size: shared pages divided among their sharers
    cpu_s: float  # user and system time of the living processes and the children they reaped


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


def over_memory(peak_bytes: int, limits: Limits, inherited_bytes: int = 0) -> str | None:
    """`memory_mb` when a process's peak resident memory, as the kernel counted it, was over.

    A child forked from the referee starts with the referee's resident pages until it execs,
    and the kernel's peak keeps them: a peak no higher than `inherited_bytes` (the referee's
    resident memory when it forked) says nothing of the program. A big referee (a large GDL game
    loaded) then leaves the cap to the cgroup and the watcher, which see only the program.
    """
    over = peak_bytes > limits.memory_mb * MIB and peak_bytes > inherited_bytes
    return "memory_mb" if over else None


# Where a memory cgroup holds what a player uses, the address space is only a backstop. Its
# floor is for what runtimes reserve whatever their limit (Node reserves 10 GiB for each
# WebAssembly memory; a JVM told 512 MiB reserves 2.7 GiB, mostly its compressed class space).
_BACKSTOP_FLOOR = 64 * 1024 * MIB
_BACKSTOP_TIMES = 8


def address_space_bytes(limits: Limits, memory_cgroup: bool) -> int:
    """The address space a player process may map.

    With a memory cgroup, the cgroup is the limit, on what a program uses: the address space
    is a backstop far above, which a runtime's reservations fit under. Without one, the
    address space is the only firm limit, at twice `memory_mb`: a program maps more than it
    touches, and the sampling and the kernel's peak count what it touches. A JVM, Go, .NET or
    Node program with default flags reserves more than that, and may not start.
    """
    memory = limits.memory_mb * MIB
    return max(_BACKSTOP_FLOOR, _BACKSTOP_TIMES * memory) if memory_cgroup else 2 * memory


def rlimits(limits: Limits, others: int | None, memory_cgroup: bool) -> list[tuple[int, int, int]]:
    """The (resource, soft, hard) limits to set in the child, each lowered to the referee's own
    (see `inherited`). `others` are the processes of the user the child runs as, which
    RLIMIT_NPROC counts with its own (None: not limited, a root referee); `memory_cgroup` says
    whether the child is in a memory cgroup that caps what it uses."""
    return [
        (which, _lowered(which, soft), _lowered(which, hard))
        for which, (soft, hard) in _wanted(limits, others, memory_cgroup).items()
    ]


def _wanted(limits: Limits, others: int | None, memory_cgroup: bool) -> dict[int, tuple[int, int]]:
    """The (soft, hard) limits a player is given where the referee itself has none."""
    space = address_space_bytes(limits, memory_cgroup)
    wanted = {
        resource.RLIMIT_AS: (space, space),
        resource.RLIMIT_NOFILE: (limits.open_files, limits.open_files),
        resource.RLIMIT_FSIZE: (limits.file_size_mb * MIB, limits.file_size_mb * MIB),
        resource.RLIMIT_CORE: (0, 0),
        # The hard limit open, so that `allow_cpu` can give a reused process more.
        resource.RLIMIT_CPU: (CPU_RLIMIT_ALLOWANCES * limits.cpu_s + 1, resource.RLIM_INFINITY),
    }
    if others is not None:
        # A backstop above the limit, so that a bomb slow enough is still seen and named by
        # the sampling; RLIMIT_NPROC counts all the user's processes, the other players' too.
        nproc = others + 2 * limits.processes
        wanted[resource.RLIMIT_NPROC] = (nproc, nproc)
    return wanted


# Each process's own RLIMIT_CPU, the kernel's backstop to the sampled limit of a match, is
# this many allowances of a match ahead of what it has used: then a reused player's
# processes need not be read and moved on at every match (`ConfinedProcess.new_match`), only
# once it has used a whole allowance since.
CPU_RLIMIT_ALLOWANCES = 2


def allow_cpu(pid: int, used_s: float, limits: Limits) -> None:
    """Move a process's own CPU limit on to CPU_RLIMIT_ALLOWANCES times `cpu_s` ahead of what
    it has used: a reused process gets fresh allowances."""
    soft = _lowered(resource.RLIMIT_CPU, int(used_s) + CPU_RLIMIT_ALLOWANCES * limits.cpu_s + 1)
    hard = _lowered(resource.RLIMIT_CPU, resource.RLIM_INFINITY)
    # Gone already, or the platform cannot: the sampled group time still counts.
    with contextlib.suppress(OSError, ValueError):
        resource.prlimit(pid, resource.RLIMIT_CPU, (soft, hard))


# Inherited limits. A referee started under a hard limit (by a batch system, a shared host's
# shell, `ulimit`) cannot give a player more: what would be more is lowered to it, once noted.


@dataclass(frozen=True)
class _Said:
    """How a limit the referee may inherit is said: what it limits, the shell's option that
    sets it, that option's unit, and the unit of the words."""

    what: str
    option: str
    option_unit: int = 1
    unit: int = 1
    unit_name: str = ""

    def amount(self, value: int) -> str:
        if self.unit == MIB and value < MIB:
            return f"{value // 1024} KiB"  # `ulimit -f 1` is not 0 MiB
        return f"{value // self.unit}{self.unit_name}"


_INHERITED = {
    resource.RLIMIT_AS: _Said("the address space", "ulimit -v", 1024, MIB, " MiB"),
    resource.RLIMIT_NPROC: _Said("the number of processes", "ulimit -u"),
    resource.RLIMIT_NOFILE: _Said("the number of open files", "ulimit -n"),
    resource.RLIMIT_FSIZE: _Said("the file size", "ulimit -f", 1024, MIB, " MiB"),
    resource.RLIMIT_CPU: _Said("the CPU time", "ulimit -t", 1, 1, " s"),
}
# The fewest open files a player can start with: the standard streams, the jail's two
# descriptors for them (7 and 8, see jail.py), and what an interpreter opens as it starts.
LEAST_OPEN_FILES = 16


def inherited(which: int) -> int | None:
    """The hard limit of `which` the referee was started under, if it has one: no player's
    can be higher."""
    hard = resource.getrlimit(which)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def _lowered(which: int, value: int) -> int:
    hard = inherited(which)
    if hard is None or (value != resource.RLIM_INFINITY and value <= hard):
        return value
    return hard


def inherited_notes(seats: Iterable[Limits], others: int | None, memory_cgroup: bool) -> list[str]:
    """A note for each limit the referee inherited that lowers a seat's, one whatever the
    number of seats; `others` and `memory_cgroup` as for `rlimits`.

    LimitTooLowError where one leaves a player too little to play: less address space than
    its memory limit (a player would fail at a limit it was not given), or fewer open files
    than a player starts with.
    """
    seats = list(seats)
    notes = []
    for which, said in _INHERITED.items():
        hard = inherited(which)
        if hard is None:
            continue
        for limits in seats:
            least, why, otherwise = _least(which, limits)
            if hard < least:
                raise LimitTooLowError(
                    f"{said.what} is limited to {said.amount(hard)} by the shell"
                    f" ({said.option}), {why}: start the referee under"
                    f" `{said.option} {-(-least // said.option_unit)}` or more{otherwise}"
                )
        wanted = [_wanted(limits, others, memory_cgroup).get(which) for limits in seats]
        if any(value is not None and _lowered(which, value[0]) < value[0] for value in wanted):
            notes.append(
                f"{said.what} is limited to {said.amount(hard)} by the shell ({said.option});"
                " each player's is lowered to it"
            )
    return notes


def _least(which: int, limits: Limits) -> tuple[int, str, str]:
    """The least of `which` a player with `limits` can play with, why, and what else would do."""
    if which == resource.RLIMIT_AS:
        memory = limits.memory_mb
        why = f"less than a player's memory limit of {memory} MiB"
        return memory * MIB, why, ", or give players less memory (memory_mb)"
    if which == resource.RLIMIT_NOFILE:
        return LEAST_OPEN_FILES, f"fewer than the {LEAST_OPEN_FILES} a player needs to start", ""
    return 0, "", ""


def own_limit(error: BaseException) -> str | None:
    """The line that says which inherited limit the referee itself ran out of, when that
    explains `error` (or one of a group's, a task group's that ran matches at once); else None."""
    if isinstance(error, BaseExceptionGroup):
        lines = (own_limit(inner) for inner in error.exceptions)
        return next((line for line in lines if line is not None), None)
    number = error.errno if isinstance(error, OSError) else None
    if isinstance(error, MemoryError) or number == errno.ENOMEM:
        which = resource.RLIMIT_AS
    elif isinstance(error, RuntimeError) and "can't start new thread" in str(error):
        # A thread's stack is mapped: the address space refuses it as the process count does.
        which = resource.RLIMIT_AS if inherited(resource.RLIMIT_AS) else resource.RLIMIT_NPROC
    else:
        errors = {
            errno.EMFILE: resource.RLIMIT_NOFILE,
            errno.EAGAIN: resource.RLIMIT_NPROC,
            errno.EFBIG: resource.RLIMIT_FSIZE,
        }
        if number not in errors:
            return None
        which = errors[number]
    hard = inherited(which)
    if hard is None:
        return None
    said = _INHERITED[which]
    return (
        f"the referee itself cannot run within {said.what}, limited to {said.amount(hard)} by"
        f" the shell ({said.option}): start it under a higher `{said.option}`"
    )
