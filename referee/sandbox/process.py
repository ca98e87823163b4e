"""A program confined by its limits and isolation: started, watched, told when it ends, killed.

Its end is a callback, not a poll: a pidfd (Linux 5.3) becomes readable when the program
exits, and `wait4` then reaps it with the kernel's own account of its peak memory, so a
program that dies at its memory cap is named for the limit whatever it does as it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.clock import REAP_PATIENCE_S, now
from referee.sandbox.cgroups import Cgroup, MemoryCgroup, PidsCgroup
from referee.sandbox.isolation import (
    LIBC,
    Protections,
    child_setup,
    machine_protections,
    minimal_environment,
    private_directory,
)
from referee.sandbox.limits import (
    MIB,
    SAMPLE_EVERY_S,
    Limits,
    allow_cpu,
    limit_of_signal,
    over_limit,
    over_memory,
)
from referee.sandbox.proc import ProcessTable, Stats, group_stats, group_usage, stats_of

_PR_SET_CHILD_SUBREAPER = 36
_REAP_POLL_S = 0.01


@dataclass(frozen=True)
class ProcessEnd:
    """How a program ended: its return code (negative: a signal), and the limit it went over."""

    code: int
    limit: str | None

    @property
    def reason(self) -> str:
        code = self.code
        return f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"


class ConfinedProcess:
    """One program in its own process group (and cgroup, where there is one), under its limits.

    `on_end` is called once, from the event loop, when the program has exited and been reaped.
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        limits: Limits,
        private: Path,
        cgroups: tuple[PidsCgroup | None, MemoryCgroup | None],
        protections: Protections,
        table: ProcessTable | None,
        on_end: Callable[[ProcessEnd], None],
    ) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.limits = limits
        self.end: ProcessEnd | None = None
        self._private = private
        self._cgroup, self._memory = cgroups
        self._protections = protections
        self._table = table
        self._on_end = on_end
        self._over: str | None = None
        self._cpu_at_match_start = 0.0
        self._gone = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._pidfd = os.pidfd_open(self.pid)
        self._loop.add_reader(self._pidfd, self.poll)
        self._watchdog = self._loop.create_task(self._watch_usage())

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        cwd: Path | None,
        env: Mapping[str, str],
        limits: Limits,
        table: ProcessTable | None,
        on_end: Callable[[ProcessEnd], None],
    ) -> ConfinedProcess:
        """Start `argv` with pipes for its standard streams; OSError when it cannot be run."""
        _become_subreaper()
        private = private_directory()
        protections = machine_protections()
        # Made for each process: the caps count this player's processes alone.
        cgroup = memory = None
        with contextlib.suppress(OSError):
            if protections.cgroups is not None:
                cgroup = PidsCgroup.make(protections.cgroups, limits.processes)
            if protections.memory is not None:
                memory = MemoryCgroup.make(protections.memory, limits.memory_mb * MIB)
        made = [group for group in (cgroup, memory) if group is not None]
        try:
            popen = subprocess.Popen(
                protections.command(tuple(argv)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd or private,
                env=minimal_environment(env, private),
                start_new_session=True,
                preexec_fn=child_setup(limits, protections, made),
            )
        except (OSError, subprocess.SubprocessError):
            _clean_up(private, made)
            raise
        return cls(popen, limits, private, (cgroup, memory), protections, table, on_end)

    def new_match(self) -> None:
        """The CPU time allowed per match counts from now."""
        self._cpu_at_match_start = group_usage(self.stats()).cpu_s
        allow_cpu(self.pid, group_usage(stats_of([self.pid])).cpu_s, self.limits)

    def stats(self) -> Stats:
        """Its living processes: those in its cgroup, else those in its process group."""
        groups = self._cgroups()
        if groups:
            return stats_of(groups[0].members())
        return self._table.group(self.pid) if self._table else group_stats(self.pid)

    def left_running(self) -> int:
        """How many of its processes are running (zombies aside)."""
        return sum(1 for _, fields in self.stats() if fields[0] != b"Z")

    def poll(self) -> ProcessEnd | None:
        """Reap the program if it has exited, and report its end; how it ended, if it has."""
        if self.end is None:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid == 0:
                return None
            code = self._protections.return_code(os.waitstatus_to_exitcode(status))
            self.popen.returncode = code
            limit = (
                self._over
                or limit_of_signal(code)
                or self._stopped_by_cgroup()
                or over_memory(usage.ru_maxrss * 1024, self.limits)
            )
            self.end = ProcessEnd(code, limit)
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._gone.set()
            self._on_end(self.end)
        return self.end

    async def kill(self) -> None:
        """Kill all its processes, reap them, and remove its directory and cgroup."""
        self._watchdog.cancel()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        escaped = [pid for group in self._cgroups() for pid in group.kill()]
        await self.exited()
        await _reap(self.pid, escaped)
        with contextlib.suppress(asyncio.CancelledError):
            await self._watchdog
        _clean_up(self._private, self._cgroups())

    def _cgroups(self) -> list[Cgroup]:
        return [group for group in (self._cgroup, self._memory) if group is not None]

    async def exited(self, limit_s: float = REAP_PATIENCE_S) -> bool:
        """Whether the program has exited (and been reaped) within `limit_s`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._gone.wait(), limit_s)
        return self._gone.is_set()

    def _stopped_by_cgroup(self) -> str | None:
        """The limit a cgroup has enforced: `processes` when its cap refused the player a
        process or thread, `memory_mb` when the kernel killed one of its processes for memory."""
        if self._cgroup is not None and self._cgroup.refused_forks():
            return "processes"
        if self._memory is not None and self._memory.out_of_memory_kills():
            return "memory_mb"
        return None

    async def _watch_usage(self) -> None:
        """Kill the program's processes as soon as together they go over one of its limits."""
        while self.end is None:
            usage = group_usage(self.stats())
            limit = self._stopped_by_cgroup() or over_limit(
                usage, self.limits, self._cpu_at_match_start
            )
            if limit is not None:
                self._over = limit
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
                return
            await asyncio.sleep(SAMPLE_EVERY_S)


def _clean_up(private: Path, cgroups: Sequence[Cgroup]) -> None:
    """Remove the private directory and the cgroups, once the processes are gone."""
    shutil.rmtree(private, ignore_errors=True)
    for cgroup in cgroups:
        cgroup.remove()


def _become_subreaper() -> None:
    """Adopt orphaned descendants, so a player's leftover children are reaped here.

    Without it they would be reparented to PID 1, which on some machines never reaps them.
    """
    if LIBC is not None:
        LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def group_members(pgid: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, state) of every process in a process group, from /proc."""
    return _members(group_stats(pgid))


def _members(stats: Stats) -> list[tuple[int, int, str]]:
    return [(pid, int(fields[1]), fields[0].decode()) for pid, fields in stats]


async def _reap(pgid: int, others: Sequence[int] = ()) -> None:
    """Wait for every killed member of the group, and `others`, to go; reap those left to us."""
    deadline = now() + REAP_PATIENCE_S
    me = os.getpid()
    while now() < deadline:
        escaped = [(pid, fields) for pid, fields in stats_of(others) if int(fields[2]) != pgid]
        members = _members(group_stats(pgid) + escaped)
        pids = {pid for pid, _, _ in members}
        for pid, parent, state in members:
            if parent == me and state == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        # Zombies whose parent is outside the group and is not us are not ours to reap.
        if all(state == "Z" and parent not in (me, *pids) for _, parent, state in members):
            return
        await asyncio.sleep(_REAP_POLL_S)
