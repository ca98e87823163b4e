"""Cgroups for each player process: a firm cap on its processes and on its memory, its CPU
time counted, all its processes found, and all of them stopped at once while it is not asked.

A process group is left with `setsid`, and counting its members every 100 ms lets a fast fork
bomb or a memory hog run ahead; a cgroup is neither. They are used where the machine lets the
referee make them (the cgroup v1 pids and memory hierarchies, or cgroup v2 with the
controller enabled for children).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import tempfile
import time
from enum import StrEnum
from pathlib import Path
from typing import ClassVar, Self

from referee.sandbox.leftovers import left_by_killed_referees, owned_prefix

_PROC_CGROUP = Path("/proc/self/cgroup")
_MOUNTINFO = Path("/proc/self/mountinfo")
_KILL_ROUNDS = 100
_AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


class Cgroup:
    """One player process's cgroup of one controller: what is in it cannot leave it."""

    kind: ClassVar[str]

    def __init__(self, path: Path) -> None:
        self.path = path
        # Files read or written often, kept open: a pread or write is a few us, an open more.
        self._open: dict[str, int] = {}

    def _descriptor(self, name: str, flags: int) -> int:
        if name not in self._open:
            self._open[name] = os.open(self.path / name, flags | os.O_CLOEXEC)
        return self._open[name]

    @classmethod
    def create(cls, parent: Path, settings: dict[str, str]) -> Self:
        """A new cgroup under `parent`, named for this referee, with these files written."""
        cgroup = cls(Path(tempfile.mkdtemp(prefix=owned_prefix(cls.kind), dir=parent)))
        try:
            for name, value in settings.items():
                (cgroup.path / name).write_text(value)
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    def join(self) -> None:
        """Move the calling process in; run in the child between fork and exec."""
        descriptor = os.open(self.path / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(descriptor, str(os.getpid()).encode())
        finally:
            os.close(descriptor)

    def members(self) -> list[int]:
        """The living processes in it (a zombie has left its cgroup): its file opened afresh
        each time, as cgroup v1 serves an open file the list it read for up to a second."""
        return [int(pid) for pid in _read(self.path / "cgroup.procs").split()]

    def count(self, events: str, name: str) -> int:
        """The count called `name` in a file of `name count` lines, such as `pids.events`:
        sampled every 100 ms on the loop that reads the answers, so read from a kept file."""
        try:
            text = os.pread(self._descriptor(events, os.O_RDONLY), 4096, 0).decode()
        except OSError:
            text = ""
        for line in text.splitlines():
            key, _, count = line.partition(" ")
            if key == name:
                return int(count)
        return 0

    def kill(self) -> list[int]:
        """SIGKILL every process in it, those that left the process group too; the pids killed."""
        killed: set[int] = set()
        # Several rounds: a process may fork between the reading of the list and its death.
        for _ in range(_KILL_ROUNDS):
            members = self.members()
            if not members:
                break
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed.update(members)
        return sorted(killed)

    def remove(self) -> None:
        """Delete the cgroup once its killed processes have left it (zombies do not count)."""
        for descriptor in self._open.values():
            os.close(descriptor)
        self._open.clear()
        for _ in range(_KILL_ROUNDS):
            try:
                os.rmdir(self.path)
            except OSError as error:
                # Busy while a killed process is still on its way out.
                if error.errno != errno.EBUSY or not self.members():
                    return
                time.sleep(0.01)
            else:
                return


class PidsCgroup(Cgroup):
    """Its processes and threads can number at most `pids.max`."""

    kind = "pids"

    @classmethod
    def make(cls, parent: Path, processes: int) -> PidsCgroup:
        """A cgroup that allows at most `processes` processes and threads."""
        return cls.create(parent, {"pids.max": str(processes)})

    def refused_forks(self) -> int:
        """How many times a process in it was refused a new process or thread by the cap."""
        return self.count("pids.events", "max")


class MemoryCgroup(Cgroup):
    """The memory of all its processes together is capped; the kernel kills one over it."""

    kind = "memory"

    @classmethod
    def make(cls, parent: Path, limit_bytes: int) -> MemoryCgroup:
        """A cgroup whose processes may use `limit_bytes` together (cgroup v1 or v2)."""
        if (parent / "memory.limit_in_bytes").exists():
            # No swap either: memory and swap together (where the kernel counts swap) at the
            # same cap, set after the memory alone, which it may not be below.
            swap = {"memory.memsw.limit_in_bytes": str(limit_bytes)}
            settings = {"memory.limit_in_bytes": str(limit_bytes)}
            has_swap_file = (parent / "memory.memsw.limit_in_bytes").exists()
            return cls.create(parent, settings | (swap if has_swap_file else {}))
        return cls.create(parent, {"memory.max": str(limit_bytes), "memory.swap.max": "0"})

    def out_of_memory_kills(self) -> int:
        """How many of its processes the kernel killed for going over the limit."""
        if (self.path / "memory.oom_control").exists():
            return self.count("memory.oom_control", "oom_kill")
        return self.count("memory.events", "oom_kill")


class CpuCgroup(Cgroup):
    """The CPU time of all its processes, those that have exited too, as the kernel counts it
    (cgroup v1 `cpuacct`)."""

    kind = "cpuacct"

    @classmethod
    def make(cls, parent: Path, settings: dict[str, str] | None = None) -> CpuCgroup:
        """A cgroup that counts the CPU time of its processes, with `settings` written (a
        weight, where the cpu controller shares its hierarchy)."""
        return cls.create(parent, settings or {})

    def cpu_s(self) -> float | None:
        """The CPU seconds its processes have used, or None if the kernel does not say."""
        try:
            text = os.pread(self._descriptor("cpuacct.usage", os.O_RDONLY), 64, 0).strip()
        except OSError:
            return None
        return int(text) / 1e9 if text.isdigit() else None


class WeightCgroup(Cgroup):
    """All its processes together weigh as one process at a nice value against the others
    of the machine, where a nice value alone does not hold: the kernel's autogroup weighs
    each session as one process at nice 0 whatever its processes' nice values, so a player
    that starts processes in sessions of their own would weigh as much as the referee's
    whole session for each of them (a process in any cgroup but the root is not autogrouped).
    cgroup v1 `cpu.shares`."""

    kind = "cpu"

    @classmethod
    def make(cls, parent: Path, nice: int) -> WeightCgroup:
        """A cgroup whose processes weigh together as one at `nice`."""
        return cls.create(parent, weight_settings(nice))


def weight_settings(nice: int) -> dict[str, str]:
    """What makes a cgroup v1 of the cpu controller weigh as one process at `nice`: the
    kernel's weight of a nice value, 1024 at 0 and 1.25 times less at each step."""
    return {"cpu.shares": str(round(1024 / 1.25**nice))}


def autogrouped() -> bool:
    """Whether the kernel groups the scheduling by session (autogroup)."""
    return _read(_AUTOGROUP).strip() == "1"


class CpusetCgroup(Cgroup):
    """Its processes run only on its cores: a process in it cannot widen its own affinity
    past them, and a new set of cores moves them all at once."""

    kind = "cpuset"

    @classmethod
    def make(cls, parent: Path, cores: str) -> CpusetCgroup:
        """A cgroup whose processes run on `cores` (as `0-3,6`), on the parent's memory nodes."""
        # cgroup v1 takes no process until both are set; v2 inherits the memory nodes.
        mems = _read(parent / "cpuset.mems").strip()
        return cls.create(parent, {"cpuset.cpus": cores, **({"cpuset.mems": mems} if mems else {})})

    def pin(self, cores: str) -> None:
        """Move its processes to `cores`."""
        (self.path / "cpuset.cpus").write_text(cores)


class Freezing(StrEnum):
    """How a player's processes are stopped while it is not asked."""

    CGROUP_V2 = "cgroup v2 freeze"
    CGROUP_V1 = "cgroup v1 freezer"
    SIGNALS = "SIGSTOP and SIGCONT"


class FreezerCgroup(Cgroup):
    """Its processes are stopped all at once, and let run again, by one write to a file kept
    open: cgroup v2's `cgroup.freeze`, or cgroup v1's `freezer.state`.

    Both writes return with the processes woken (the kernel wakes each in the write), so a
    clock started after `thaw` charges none of the waking to them; a freeze completes a moment
    later, which nothing waits for.
    """

    kind = "freezer"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        v2 = (path / "cgroup.freeze").exists()
        self._file = "cgroup.freeze" if v2 else "freezer.state"
        self._frozen, self._thawed = (b"1", b"0") if v2 else (b"FROZEN", b"THAWED")

    @classmethod
    def make(cls, parent: Path) -> FreezerCgroup:
        """A cgroup whose processes can be frozen and thawed."""
        return cls.create(parent, {})

    @staticmethod
    def freezing(parent: Path) -> Freezing:
        """The mechanism of the freezer cgroups made under `parent`."""
        v2 = (parent / "cgroup.controllers").exists()
        return Freezing.CGROUP_V2 if v2 else Freezing.CGROUP_V1

    def freeze(self) -> None:
        """Stop every process in it, those it starts meanwhile too."""
        self._write(self._frozen)

    def thaw(self) -> None:
        """Let every process in it run again; they are runnable when this returns."""
        self._write(self._thawed)

    def _write(self, state: bytes) -> None:
        os.write(self._descriptor(self._file, os.O_WRONLY), state)

    def kill(self) -> list[int]:
        """SIGKILL every process in it, frozen or not: a process frozen by cgroup v1 dies of
        SIGKILL only once thawed, so the signal goes first and the thaw after, and none runs
        a moment of its own code meanwhile."""
        first = self.members()
        for pid in first:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.thaw()
        return sorted({*first, *super().kill()})


def remove_stale(parent: Path, kind: type[Cgroup]) -> None:
    """Kill what runs in the cgroups of `kind` left under `parent` by referees that were
    killed, and remove them."""
    for entry in left_by_killed_referees(parent, kind.kind):
        cgroup = kind(entry)
        cgroup.kill()
        cgroup.remove()


def controller_parent(controller: str) -> Path | None:
    """Where this process may make cgroups of `controller` (`pids`, `memory`): the directory
    of its own cgroup of that controller, or None."""
    for v2, controllers, directory in _own_cgroups():
        if v2:
            controllers = _read(directory / "cgroup.subtree_control").split()
        if controller in controllers and os.access(directory, os.W_OK):
            return directory
    return None


def freezer_parents() -> list[Path]:
    """Where this process may make freezer cgroups, the best first: its own cgroup v2
    directory (any cgroup v2 but the root can be frozen, with no controller to enable), then
    its cgroup v1 freezer's.

    cgroup v2 first: measured on Linux 6.18 with a spinning process, a freeze and a thaw
    cost 25 us each there, against about 100 us under v1, whose first frozen cgroup switches
    a kernel-wide static key each time; and a v1 thaw stalled the writer for ms at times.
    """
    found = []
    for v2, controllers, directory in _own_cgroups():
        # Moving a process between v2 cgroups needs their common ancestor's procs file.
        procs = directory / "cgroup.procs"
        writable = os.access(directory, os.W_OK) and (not v2 or os.access(procs, os.W_OK))
        if writable and (v2 or "freezer" in controllers):
            found.append((not v2, directory))
    return [directory for _, directory in sorted(found)]


def _own_cgroups() -> list[tuple[bool, list[str], Path]]:
    """(cgroup v2?, controllers of a v1 hierarchy, directory) of each cgroup of this process
    that the machine has mounted."""
    try:
        own = dict(line.split(":", 2)[1:] for line in _PROC_CGROUP.read_text().splitlines())
        mounts = _MOUNTINFO.read_text().splitlines()
    except (OSError, ValueError):
        return []
    found = []
    for line in mounts:
        before, _, after = line.partition(" - ")
        root, mount = before.split()[3:5]
        described = after.split()  # file system type, source, super options
        if len(described) < 3:
            continue
        kind, _, options = described[:3]
        controllers = options.split(",")
        hierarchy = next((k for k in own if k and set(k.split(",")) <= set(controllers)), None)
        if kind == "cgroup" and hierarchy is not None:
            found.append((False, controllers, Path(mount, os.path.relpath(own[hierarchy], root))))
        elif kind == "cgroup2" and "" in own:
            found.append((True, [], Path(mount, os.path.relpath(own[""], root))))
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
