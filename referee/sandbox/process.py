"""A program confined by its limits and isolation, once started (spawn.py): watched against
its limits, frozen and thawed, pinned, told when it ends, killed and reaped.

Its end is a callback, not a poll: a pidfd (Linux 5.3) becomes readable when the program
exits, and `wait4` then reaps it with the kernel's own account of its peak memory, so a
program that dies at its memory cap is named for the limit whatever it does as it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from referee.clock import REAP_PATIENCE_S, now
from referee.sandbox.cgroups import Cgroup
from referee.sandbox.cores import format_cores
from referee.sandbox.jail import Jail
from referee.sandbox.limits import (
    CPU_RLIMIT_ALLOWANCES,
    SAMPLE_EVERY_S,
    Limits,
    Usage,
    allow_cpu,
    limit_of_signal,
    over_limit,
    over_memory,
)
from referee.sandbox.proc import (
    ProcessTable,
    Stats,
    descendants,
    group_cpu_s,
    group_stats,
    group_usage,
    own_cpu_s,
    reap_zombies,
    resident_bytes,
    stats_of,
)
from referee.sandbox.spawn import Spawned, clean_up, spawn

_REAP_POLL_S = 0.01
# Rounds of moving a player's processes to a scheduling class: one that forks without end is
# not worth waiting for (it plays on in the class it is in).
_SCHEDULING_ROUNDS = 100
_REAP_FIRST_POLL_S = 0.0005
# Stopping a player by signals, without a freezer cgroup: rounds until each of its processes
# is seen stopped, a short wait apart, for at most this long (a process stops when it next
# runs; one that forks or continues another without end is not worth waiting for).
_STOP_POLL_S = 0.0005
_STOP_PATIENCE_S = 0.05
_STOPPED = (b"T", b"t", b"Z")


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
    """One program in its jail, its own process group and its cgroups (those the machine
    allows), under its limits.

    `on_end` is called once, from the event loop, when the program has exited and been reaped.
    """

    def __init__(
        self,
        spawned: Spawned,
        limits: Limits,
        table: ProcessTable | None,
        on_end: Callable[[ProcessEnd], None],
    ) -> None:
        self.popen = spawned.popen
        self.pid = spawned.popen.pid
        self.limits = limits
        self.end: ProcessEnd | None = None
        self._private = spawned.private
        self._cgroups = spawned.cgroups
        self._protections = spawned.protections
        self._table = table
        self._on_end = on_end
        # The cores it runs on, if it is pinned.
        self.cores: frozenset[int] | None = None
        self._over: str | None = None
        self._cpu_at_match_start = 0.0
        # The CPU cgroup's count up to which every process's own RLIMIT_CPU still leaves a
        # whole match's allowance (`new_match`): the cgroup is made before any process.
        self._rlimits_ahead_until: float = (CPU_RLIMIT_ALLOWANCES - 1) * limits.cpu_s
        self._frozen = False
        self._killed = False
        # What the child's peak memory holds of the referee's from before it exec'd.
        self._inherited_rss = resident_bytes()
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
        *,
        files: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        cores: frozenset[int] | None = None,
        idle: bool = False,
    ) -> ConfinedProcess:
        """Start `argv` as `spawn` does, to be watched until it ends; OSError when it cannot
        be run."""
        spawned = spawn(
            argv,
            cwd,
            env,
            limits,
            files=files,
            hidden=hidden,
            writable=writable,
            cores=cores,
            idle=idle,
        )
        process = cls(spawned, limits, table, on_end)
        process.cores = cores
        return process

    def new_match(self) -> None:
        """The CPU time allowed per match counts from now."""
        counted = self._cgroups.cpu.cpu_s() if self._cgroups.cpu is not None else None
        if counted is not None:
            self._cpu_at_match_start = counted
            # Every process's own limit was set CPU_RLIMIT_ALLOWANCES ahead of its use when
            # it was born or last moved on, and what each has used since is at most what
            # the cgroup counted since: while that is under one allowance, each still has a
            # whole one ahead, and its processes need not be read.
            if counted <= self._rlimits_ahead_until:
                return
            self._rlimits_ahead_until = counted + (CPU_RLIMIT_ALLOWANCES - 1) * self.limits.cpu_s
            pids = self.pids()
        else:
            stats = self.stats()
            self._cpu_at_match_start = group_cpu_s(stats)
            pids = [pid for pid, _ in stats]
        for pid in pids:
            used = own_cpu_s(pid)
            if used is not None:
                allow_cpu(pid, used, self.limits)

    def set_idle(self, idle: bool) -> None:
        """Let its processes run only when nothing else wants their cores (`idle`: a player
        started ahead of its match, or leaving after it, cannot slow a match's players), or
        as every player runs. Its new processes take the class of their parent."""
        policy = os.SCHED_IDLE if idle else os.SCHED_OTHER
        # Until a round finds all of them in the class: a process forked meanwhile by one not
        # yet moved is found in the next. The jail's processes are there before its shell has
        # joined all of its cgroups: a spare woken for its match as it starts has them found
        # as descendants too (a scan of /proc, which a process put to idle can do without).
        for _ in range(_SCHEDULING_ROUNDS):
            moved = False
            found = {self.pid, *self.pids(), *(() if idle else descendants(self.pid))}
            for pid in found:
                with contextlib.suppress(OSError):
                    if os.sched_getscheduler(pid) != policy:
                        os.sched_setscheduler(pid, policy, os.sched_param(0))
                        moved = True
            if not moved:
                return

    @property
    def private(self) -> Path:
        """Its private directory: its HOME and TMPDIR, removed when it ends."""
        return self._private

    def private_holds_files(self) -> bool:
        """Whether its private directory holds anything: an entry, or in the jail space that a
        file deleted but still open keeps. In the jail the directory is seen through one of
        its processes (its mount namespace): none while the jail is being built, when it holds
        nothing yet. If it cannot be seen, it is taken to hold files."""
        try:
            if self._protections.jail is None:
                return _holds_files(self._private)
            outside = self._private.stat().st_dev
        except OSError:
            return True
        ours = _mount_namespace("self")
        unseen = False
        for pid in self.pids():
            theirs = _mount_namespace(str(pid))
            if theirs is None or theirs == ours:
                continue  # gone, or bubblewrap's own process outside the jail
            seen = Path(f"/proc/{pid}/root{self._private}")
            try:
                if seen.stat().st_dev == outside:
                    continue  # its file system not mounted yet
                space = os.statvfs(seen)
                return space.f_blocks != space.f_bfree or _holds_files(seen)
            except FileNotFoundError:
                continue  # its jail not built yet, or the process gone
            except OSError:
                unseen = True
        return unseen

    @property
    def frozen(self) -> bool:
        """Whether its processes are stopped (`freeze`) until `thaw`."""
        return self._frozen

    def freeze(self) -> None:
        """Stop all its processes, and those they start, until `thaw`: by its freezer cgroup,
        else by SIGSTOP. Nothing is done if they are stopped already, or killed."""
        if self._frozen or self._killed:
            return
        self._frozen = True
        if self._cgroups.freezer is not None:
            self._cgroups.freezer.freeze()
        else:
            self._stop_all()

    def thaw(self) -> None:
        """Let all its processes run again; they are runnable when this returns. Nothing is
        done if they are not stopped."""
        if not self._frozen:
            return
        self._frozen = False
        if self._cgroups.freezer is not None:
            self._cgroups.freezer.thaw()
            return
        # A stopped process forks nothing: one round finds them all. SIGCONT wakes a process
        # within the call.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGCONT)
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGCONT)

    def _stop_all(self) -> None:
        """SIGSTOP its processes (those in its cgroup, which a setsid does not leave, else its
        process group) in rounds until each is seen stopped: one not yet stopped may fork, or
        continue one that was, between the reading of the list and the signals."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGSTOP)
        deadline = now() + _STOP_PATIENCE_S
        while True:
            running = [pid for pid, fields in self.stats(fresh=True) if fields[0] not in _STOPPED]
            if not running or now() >= deadline:
                return
            for pid in running:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGSTOP)
            time.sleep(_STOP_POLL_S)

    def pids(self) -> list[int]:
        """Its living processes: those in its cgroup, else those in its process group."""
        groups = self._cgroups.all()
        if groups:
            return groups[0].members()
        return [pid for pid, _ in self.stats()]

    def pin(self, cores: frozenset[int]) -> None:
        """Move all its processes to `cores` (a reused player, for its next match)."""
        cpuset = self._cgroups.cpuset
        if cpuset is not None and cores == self.cores:
            return  # the kernel has kept them there; a rewrite costs the kernel dearly
        self.cores = cores
        if cpuset is not None:
            # The kernel sets the mask of every process in it to the new cores.
            cpuset.pin(format_cores(cores))
            return
        for pid, _ in self.stats():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(pid, cores)

    def usage(self) -> Usage:
        """What the player's processes use together: its CPU time as its CPU cgroup counts it,
        where it has one; the jail's processes aside."""
        stats = self.stats()
        usage = group_usage(stats)
        return replace(
            usage,
            processes=max(0, usage.processes - self._protections.jail_processes),
            cpu_s=self.cpu_s(stats),
        )

    def cpu_s(self, stats: Stats | None = None) -> float:
        """The CPU seconds of its processes: as its CPU cgroup counts it, where it has one (one
        small read; the processes that have ended included), else as /proc does for its
        living processes, `stats` if given (else read now)."""
        counted = self._cgroups.cpu.cpu_s() if self._cgroups.cpu is not None else None
        if counted is not None:
            return counted
        return group_cpu_s(self.stats(fresh=True) if stats is None else stats)

    def stats(self, fresh: bool = False) -> Stats:
        """Its living processes: those in its cgroup, else those in its process group (from
        the shared scan of /proc, unless `fresh`)."""
        groups = self._cgroups.all()
        if groups:
            return stats_of(groups[0].members())
        if self._table is not None and not fresh:
            return self._table.group(self.pid)
        return group_stats(self.pid)

    async def left_running(self) -> int:
        """How many of its processes are running (zombies aside), once it has exited.

        In the jail, none can be: bubblewrap ends as the program does, and the kernel then
        kills what is left in its PID namespace, which this waits for.
        """
        deadline = now() + REAP_PATIENCE_S
        while self._protections.jail is not None and self._running() and now() < deadline:
            await asyncio.sleep(_REAP_POLL_S)
        return self._running()

    def _running(self) -> int:
        return sum(1 for _, fields in self.stats() if fields[0] != b"Z")

    def poll(self) -> ProcessEnd | None:
        """Reap the program if it has exited, and report its end; how it ended, if it has."""
        if self.end is None:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid == 0:
                return None
            code = os.waitstatus_to_exitcode(status)
            if self._protections.jail is not None:
                code = Jail.return_code(code)
            self.popen.returncode = code
            limit = (
                self._over
                or limit_of_signal(code)
                or self._stopped_by_cgroup()
                or over_memory(usage.ru_maxrss * 1024, self.limits, self._inherited_rss)
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
        self._killed = True
        self._frozen = False
        # SIGKILL ends a process stopped by SIGSTOP, or frozen by cgroup v2; a process frozen
        # by cgroup v1 ends once its freezer cgroup, killed first, has thawed it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        escaped = [pid for group in self._cgroups.all() for pid in group.kill()]
        await self.exited()
        groups = self._cgroups.all()
        if groups:
            await _reap_cgroup(self.pid, groups[0], escaped)
        else:
            await _reap(self.pid, escaped)
        with contextlib.suppress(asyncio.CancelledError):
            await self._watchdog
        clean_up(self._private, self._cgroups.all())

    async def exited(self, limit_s: float = REAP_PATIENCE_S) -> bool:
        """Whether the program has exited (and been reaped) within `limit_s`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit_s):
                await self._gone.wait()
        return self._gone.is_set()

    def _stopped_by_cgroup(self) -> str | None:
        """The limit a cgroup has enforced: `processes` when its cap refused the player a
        process or thread, `memory_mb` when the kernel killed one of its processes for memory."""
        pids, memory = self._cgroups.pids, self._cgroups.memory
        if pids is not None and pids.refused_forks():
            return "processes"
        if memory is not None and memory.out_of_memory_kills():
            return "memory_mb"
        return None

    async def _watch_usage(self) -> None:
        """Kill the program's processes as soon as together they go over one of its limits.

        The sampling runs on the loop that reads answers, so what it costs delays them: a
        frozen player uses nothing and is not sampled, and one whose cgroups cap its
        processes and memory (the kernel enforces those) has only its CPU time read, one
        counter, not every one of its processes in /proc.
        """
        while self.end is None:
            if not self._frozen:
                limit = self._stopped_by_cgroup() or over_limit(
                    self._sampled(), self.limits, self._cpu_at_match_start
                )
                if limit is not None:
                    self._over = limit
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(self.pid, signal.SIGKILL)
                    return
            await asyncio.sleep(SAMPLE_EVERY_S)

    def _sampled(self) -> Usage:
        """What the watcher compares with the limits: the CPU time alone where the kernel
        caps the rest, else all of `usage`."""
        groups = self._cgroups
        if groups.pids is not None and groups.memory is not None and groups.cpu is not None:
            return Usage(processes=0, memory_bytes=0, cpu_s=self.cpu_s())
        return self.usage()


def _holds_files(directory: Path) -> bool:
    """Whether a directory has an entry; OSError if it cannot be read."""
    with os.scandir(directory) as entries:
        return next(entries, None) is not None


def _mount_namespace(pid: str) -> int | None:
    """The mount namespace a process is in, or None if it is gone or cannot be seen."""
    try:
        return os.stat(f"/proc/{pid}/ns/mnt").st_ino
    except OSError:
        return None


def can_wake_idle() -> bool:
    """Whether a process started idle (`ConfinedProcess.set_idle`) can be made to run as
    every player again: by root alone, for a player's RLIMIT_NICE does not allow it."""
    return os.geteuid() == 0


def group_members(pgid: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, state) of every process in a process group, from /proc."""
    return _members(group_stats(pgid))


def _members(stats: Stats) -> list[tuple[int, int, str]]:
    return [(pid, int(fields[1]), fields[0].decode()) for pid, fields in stats]


async def _reap_cgroup(pgid: int, cgroup: Cgroup, others: Sequence[int]) -> None:
    """`_reap` for a player with a cgroup, which holds all its living processes: no scan of
    /proc (a read of every process on the machine, each time), and a short first wait."""
    deadline = now() + REAP_PATIENCE_S
    pause = _REAP_FIRST_POLL_S
    while True:
        ours = _reap_children(pgid, others)
        if (not ours and not cgroup.members()) or now() >= deadline:
            return
        await asyncio.sleep(pause)
        pause = min(2 * pause, _REAP_POLL_S)


def _reap_children(pgid: int, others: Sequence[int]) -> bool:
    """Reap this process's children in the group, and those of `others` that are its
    children, that have ended; whether some of its children there still run."""
    running = False
    while True:
        try:
            ended = os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG)
        except ChildProcessError:
            break  # none of its children is in the group
        if ended is None:
            running = True
            break
    for pid in others:
        with contextlib.suppress(ChildProcessError):
            running |= os.waitpid(pid, os.WNOHANG)[0] == 0
    return running


async def _reap(pgid: int, others: Sequence[int] = ()) -> None:
    """Wait for every killed member of the group, and `others`, to go; reap those left to us."""
    deadline = now() + REAP_PATIENCE_S
    me = os.getpid()
    while now() < deadline:
        escaped = [(pid, fields) for pid, fields in stats_of(others) if int(fields[2]) != pgid]
        stats = group_stats(pgid) + escaped
        reap_zombies(stats)
        members = _members(stats)
        pids = {pid for pid, _, _ in members}
        # Zombies whose parent is outside the group and is not us are not ours to reap.
        if all(state == "Z" and parent not in (me, *pids) for _, parent, state in members):
            return
        await asyncio.sleep(_REAP_POLL_S)
