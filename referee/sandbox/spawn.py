"""A confined process's start: its private directory and cgroups made, its command put in
the jail as a user of its own, its child set up and spawned; and what is removed again once
it has ended, or if it cannot start. Watching it as it runs is process.py's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.sandbox.cgroups import (
    Cgroup,
    CpuCgroup,
    CpusetCgroup,
    FreezerCgroup,
    MemoryCgroup,
    PidsCgroup,
    WeightCgroup,
    weight_settings,
)
from referee.sandbox.cores import format_cores
from referee.sandbox.isolation import (
    LIBC,
    PLAYER_WEIGHT_NICENESS,
    Protections,
    child_setup,
    machine_protections,
    minimal_environment,
    private_directory,
)
from referee.sandbox.jail import Jail, Place, lease_seat_uid, program_files
from referee.sandbox.limits import MIB, Limits

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Cgroups:
    """A player process's cgroups, those the machine allows."""

    pids: PidsCgroup | None = None
    memory: MemoryCgroup | None = None
    cpu: CpuCgroup | None = None
    cpuset: CpusetCgroup | None = None
    freezer: FreezerCgroup | None = None
    weight: WeightCgroup | None = None

    @classmethod
    def make(
        cls,
        protections: Protections,
        limits: Limits,
        processes: int,
        cores: frozenset[int] | None,
    ) -> Cgroups:
        """Its cgroups, each allowing what `limits` do; `processes` counts the jail's too; on
        `cores`, if given."""
        pids = memory = cpu = cpuset = freezer = weight = None
        # A process is in one cgroup of a hierarchy: where the cpu controller shares
        # cpuacct's (mounted as cpu,cpuacct), the one cgroup counts and weighs.
        weighs_in_cpu = protections.weight is not None and protections.weight == protections.cpu
        with contextlib.suppress(OSError):
            if protections.cgroups is not None:
                pids = PidsCgroup.make(protections.cgroups, processes)
            if protections.memory is not None:
                memory = MemoryCgroup.make(protections.memory, limits.memory_mb * MIB)
            if protections.cpu is not None:
                settings = weight_settings(PLAYER_WEIGHT_NICENESS) if weighs_in_cpu else None
                cpu = CpuCgroup.make(protections.cpu, settings)
            if protections.cpuset is not None and cores is not None:
                cpuset = CpusetCgroup.make(protections.cpuset, format_cores(cores))
            if protections.freezer is not None:
                freezer = FreezerCgroup.make(protections.freezer)
            if protections.weight is not None and not weighs_in_cpu:
                weight = WeightCgroup.make(protections.weight, PLAYER_WEIGHT_NICENESS)
        return cls(pids, memory, cpu, cpuset, freezer, weight)

    def all(self) -> list[Cgroup]:
        # The freezer first: killed first, it lets its frozen processes die (see its kill).
        groups = (self.freezer, self.pids, self.memory, self.cpu, self.cpuset, self.weight)
        return [group for group in groups if group is not None]


@dataclass(frozen=True)
class Spawned:
    """A program just started: its process, and what was made for it."""

    popen: subprocess.Popen[bytes]
    private: Path
    cgroups: Cgroups
    protections: Protections


def spawn(
    argv: Sequence[str],
    cwd: Path | None,
    env: Mapping[str, str],
    limits: Limits,
    *,
    files: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    cores: frozenset[int] | None = None,
    idle: bool = False,
) -> Spawned:
    """Start `argv` with pipes for its standard streams; OSError when it cannot be run.

    In the jail, it reads its program's files and `files`, and never sees `hidden`; it
    writes in `writable` (made its seat user's: its owner's to take back after). Given
    `cores`, it and all its processes run on them alone. `idle` starts it in the idle
    scheduling class (see `ConfinedProcess.set_idle`).
    """
    become_subreaper()
    private = private_directory()
    protections = machine_protections()
    environment = minimal_environment(env, private, limits)
    # Made for each process: the caps count this player's processes alone.
    processes = limits.processes + protections.jail_processes
    cgroups = Cgroups.make(protections, limits, processes, cores)
    command = tuple(argv)
    # The jail's first shell joins the cgroups (see jail.py); without it, the child does.
    joined_in_child = cgroups.all()
    try:
        if protections.jail is not None:
            command = _jailed(
                protections.jail,
                command,
                environment,
                private,
                cwd,
                files,
                hidden,
                writable,
                limits,
                cgroups.all(),
            )
            joined_in_child = []
    except OSError:
        clean_up(private, cgroups.all())
        raise
    setup = child_setup(
        limits, protections, joined_in_child, cores, idle, cgroups.memory is not None
    )
    try:
        with setup as preexec:
            popen = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd or private,
                env=environment,
                start_new_session=True,
                preexec_fn=preexec,
            )
    except (OSError, subprocess.SubprocessError):
        clean_up(private, cgroups.all())
        raise
    return Spawned(popen, private, cgroups, protections)


def _jailed(
    jail: Jail,
    argv: tuple[str, ...],
    environment: Mapping[str, str],
    private: Path,
    cwd: Path | None,
    files: Sequence[Path],
    hidden: Sequence[Path],
    writable: Sequence[Path],
    limits: Limits,
    cgroups: Sequence[Cgroup],
) -> tuple[str, ...]:
    """The command that runs `argv` in the jail, in `cgroups`, as a user of its own under a
    root referee."""
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=environment.get("PATH"))
    # Said here, as exec would say it: in the jail, only the jail's shell is started from here.
    if program is None or not os.path.isfile(program):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
    if not os.access(program, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), argv[0])
    uid = lease_seat_uid(private) if jail.setpriv is not None else None
    if uid is not None:
        for directory in writable:
            _give(directory, uid)
    readable = (*program_files(argv, program, cwd), *files)
    place = Place(
        private,
        cwd or private,
        readable,
        tuple(hidden),
        limits.memory_mb * MIB,
        tuple(cgroup.path for cgroup in cgroups),
        tuple(writable),
        limits.disk_mb * MIB,
    )
    return jail.command(argv, place, uid)


def _give(directory: Path, uid: int) -> None:
    """Make `directory` and all it holds the seat user's, links not followed."""
    os.lchown(directory, uid, uid)
    for parent, directories, files in os.walk(directory):
        for name in (*directories, *files):
            os.lchown(os.path.join(parent, name), uid, uid)


def clean_up(private: Path, cgroups: Sequence[Cgroup]) -> None:
    """Remove the private directory and the cgroups, once the processes are gone."""
    shutil.rmtree(private, ignore_errors=True)
    for cgroup in cgroups:
        cgroup.remove()


def become_subreaper() -> None:
    """Adopt orphaned descendants, so a player's leftover children are reaped here.

    Without it they would be reparented to PID 1, which on some machines never reaps them.
    """
    if LIBC is not None:
        LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
