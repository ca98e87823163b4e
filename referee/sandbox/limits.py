"""What one player may use, and how its use is measured against that.

Some limits are set in the child before it execs (`rlimits`); others can only be watched
from outside, because they are of all a player's processes together: the memory, the CPU
time and the number of its processes (`over_limit`, on a `Usage` sampled by the sandbox).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from dataclasses import dataclass, fields
from pathlib import Path

from referee.errors import ConfigError

MIB = 1024 * 1024
# The largest a kernel lets pid_max be: more processes than any machine can have.
_PID_MAX_LIMIT = 4_194_304
_NR_OPEN = Path("/proc/sys/fs/nr_open")
# How often each player's use is sampled.
SAMPLE_EVERY_S = 0.1


@dataclass(frozen=True)
class Limits:
    """What one player may use; each limit is named in the fault of a player that exceeds it."""

    memory_mb: int = 1024  # resident memory of all its processes together
    cpu_s: int = 300  # CPU seconds per match, all its processes together
    processes: int = 64  # processes and threads
    open_files: int = 256  # per process
    file_size_mb: int = 64  # largest file it may write

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


def rlimits(limits: Limits, nproc: int | None, memory_cgroup: bool) -> list[tuple[int, int]]:
    """The (resource, value) pairs to set in the child, soft and hard alike; `memory_cgroup`
    says whether the child is in a memory cgroup that caps what it uses."""
    settings = [
        (resource.RLIMIT_AS, address_space_bytes(limits, memory_cgroup)),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * MIB),
        (resource.RLIMIT_CORE, 0),
    ]
    if nproc is not None:
        settings.append((resource.RLIMIT_NPROC, nproc))
    return settings


def allow_cpu(pid: int, used_s: float, limits: Limits) -> None:
    """Let a process use `cpu_s` more seconds from now: a reused process gets a fresh allowance."""
    soft = int(used_s) + limits.cpu_s + 1
    # Gone already, or the platform cannot: the sampled group time still counts.
    with contextlib.suppress(OSError, ValueError):
        resource.prlimit(pid, resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
