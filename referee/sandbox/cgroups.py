"""A pids cgroup for each player process: a firm cap on its processes, and all of them found.

A process group is left with `setsid`, and counting its members every 100 ms lets a fast fork
bomb run ahead; a cgroup is neither. It is used where the machine lets the referee make one
(the cgroup v1 pids hierarchy, or cgroup v2 with the pids controller enabled for children).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import tempfile
import time
from pathlib import Path

from referee.sandbox.leftovers import left_by_killed_referees, owned_prefix

_PROC_CGROUP = Path("/proc/self/cgroup")
_MOUNTINFO = Path("/proc/self/mountinfo")
_KILL_ROUNDS = 100
_KIND = "pids"


class PidsCgroup:
    """One player process's cgroup: its processes can number at most `max`; none can leave."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def make(cls, parent: Path, processes: int) -> PidsCgroup:
        """A new cgroup under `parent` that allows at most `processes` processes and threads."""
        cgroup = cls(Path(tempfile.mkdtemp(prefix=owned_prefix(_KIND), dir=parent)))
        try:
            (cgroup.path / "pids.max").write_text(str(processes))
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
        """The living processes in it (a zombie has left its cgroup)."""
        return [int(pid) for pid in _read(self.path / "cgroup.procs").split()]

    def refused_forks(self) -> int:
        """How many times a process in it was refused a new process or thread by the cap."""
        for line in _read(self.path / "pids.events").splitlines():
            name, _, count = line.partition(" ")
            if name == "max":
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


def remove_stale(parent: Path) -> None:
    """Kill what runs in the cgroups left under `parent` by referees that were killed, and
    remove them."""
    for entry in left_by_killed_referees(parent, _KIND):
        cgroup = PidsCgroup(entry)
        cgroup.kill()
        cgroup.remove()


def pids_parent() -> Path | None:
    """Where this process may make pids cgroups: the directory of its own pids cgroup, or None."""
    try:
        own = dict(line.split(":", 2)[1:] for line in _PROC_CGROUP.read_text().splitlines())
        mounts = _MOUNTINFO.read_text().splitlines()
    except (OSError, ValueError):
        return None
    hierarchy = next((key for key in own if "pids" in key.split(",")), None)
    for line in mounts:
        before, _, after = line.partition(" - ")
        root, mount = before.split()[3:5]
        described = after.split()  # file system type, source, super options
        if len(described) < 3:
            continue
        kind, _, options = described[:3]
        if kind == "cgroup" and "pids" in options.split(",") and hierarchy is not None:
            directory = Path(mount, os.path.relpath(own[hierarchy], root))
        elif kind == "cgroup2" and "" in own:
            directory = Path(mount, os.path.relpath(own[""], root))
            if "pids" not in _read(directory / "cgroup.subtree_control").split():
                continue
        else:
            continue
        if os.access(directory, os.W_OK):
            return directory
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
