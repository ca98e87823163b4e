"""Isolation: what the machine lets the referee keep from a player, probed once.

A network namespace of its own (by unsharing in the child, else through bubblewrap), a pids
cgroup, a private working directory and a minimal environment; and the function the child
runs between fork and exec to put its limits and isolation in place.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from referee.sandbox.cgroups import (
    Cgroup,
    MemoryCgroup,
    PidsCgroup,
    controller_parent,
    remove_stale,
)
from referee.sandbox.leftovers import left_by_killed_referees, owned_prefix, processes_in
from referee.sandbox.limits import SAMPLE_EVERY_S, Limits, rlimits

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_LAST_CAP = Path("/proc/sys/kernel/cap_last_cap")
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
# Loaded once here: the code that runs in a forked child before exec must not load libraries.
LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
PRIVATE_KIND = "player"
# What a minimal environment keeps from the referee's.
_KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
# The whole file system as it is, a network namespace of its own, and death with its parent.
_BUBBLEWRAP_OPTIONS = ("--dev-bind", "/", "/", "--unshare-net", "--die-with-parent")


@dataclass(frozen=True)
class Protections:
    """Which protections this machine gives; `why_not` says why the missing ones are missing."""

    network: bool
    network_how: str
    why_not: tuple[str, ...]
    cgroups: Path | None = None  # where a player's pids cgroup is made, if it can be
    bubblewrap: str | None = None  # the bwrap program, when it is what keeps the network out
    memory: Path | None = None  # where a player's memory cgroup is made, if it can be

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

    def summary(self) -> str:
        """The active protections in one line, the missing ones last."""
        rows = self.rows()
        text = ", ".join(name for name, active, _ in rows if active)
        missing = [name for name, active, _ in rows if not active]
        return text + (f"; not on this machine: {', '.join(missing)}" if missing else "")

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
                "memory cgroup",
                self.memory is not None,
                f"one per player under {self.memory}: the kernel stops a player over its memory"
                if self.memory
                else "unavailable: no writable memory cgroup",
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
            (
                "no privileges",
                LIBC is not None,
                "no capabilities (bounding set emptied before exec), no_new_privs: a player"
                " run as root cannot raise its priority or enter the referee's namespaces",
            ),
        ]


def _unshare_network() -> None:
    """In the forked child: a network namespace of its own, with only a loopback that is down."""
    assert LIBC is not None
    if LIBC.unshare(_CLONE_NEWNET) != 0 and LIBC.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


@functools.cache
def machine_protections() -> Protections:
    """Probe once what this machine gives: a network namespace, pids and memory cgroups."""
    return replace(
        _network(), cgroups=_cgroup_parent(PidsCgroup), memory=_cgroup_parent(MemoryCgroup)
    )


def _network() -> Protections:
    """Whether a child can be given a network namespace of its own.

    Its own unshare first; else bubblewrap, when installed, which may be let do what the
    referee may not (a setuid program, or one a security profile allows namespaces).
    """
    if LIBC is None:
        return Protections(False, "not on Linux", ("network isolation needs Linux",))
    try:
        subprocess.run(["true"], preexec_fn=_unshare_network, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as error:
        refused = f"cannot unshare: {error}"
    else:
        return Protections(True, "a network namespace of its own (unshare)", ())
    bubblewrap = shutil.which("bwrap")
    if bubblewrap is None:
        refused += "; bubblewrap (bwrap) is not installed"
    else:
        wrapped = Protections(
            True, "a network namespace of its own (bubblewrap)", (), bubblewrap=bubblewrap
        )
        try:
            subprocess.run(wrapped.command(("true",)), check=True, timeout=10, capture_output=True)
        except (OSError, subprocess.SubprocessError) as error:
            refused += f"; bubblewrap failed: {error}"
        else:
            return wrapped
    reason = f"no network namespace for players ({refused}); players can reach the network"
    return Protections(False, "unavailable: " + refused, (reason,))


def _cgroup_parent(kind: type[Cgroup]) -> Path | None:
    """Where player cgroups of a kind can be made: found, and one made and removed there."""
    parent = controller_parent(kind.kind)
    if parent is None:
        return None
    try:
        kind.create(parent, {}).remove()
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


def child_setup(
    limits: Limits, protections: Protections, cgroups: Sequence[Cgroup]
) -> Callable[[], None]:
    """The function the child runs after fork, before exec: limits, isolation, death with us."""
    # A backstop above the limit, so that a bomb slow enough is still seen and named by the
    # sampling; RLIMIT_NPROC counts all the user's processes, the other players' too.
    nproc = None if os.geteuid() == 0 else _user_processes() + 2 * limits.processes
    settings = rlimits(limits, nproc)
    capabilities = range(int(_CAP_LAST_CAP.read_text()) + 1) if _CAP_LAST_CAP.exists() else ()

    def setup() -> None:
        for cgroup in cgroups:
            cgroup.join()
        if LIBC is not None:
            LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        for which, value in settings:
            resource.setrlimit(which, (value, value))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s + 1, resource.RLIM_INFINITY))
        # Below the referee's priority: a spinning player cannot starve the referee's clock.
        os.nice(5)
        if protections.unshare:
            _unshare_network()
        # bubblewrap, where it is the isolation, may need to be setuid, and sets no_new_privs
        # for the program itself.
        if LIBC is not None and protections.bubblewrap is None:
            # Last, as they are needed above: with an empty bounding set a program run as root
            # has no capabilities after exec (it cannot renice itself up, join the referee's
            # namespaces, or trace); no_new_privs keeps a setuid program from giving them back.
            # Without the right to drop them (not root), there are none to drop.
            for capability in capabilities:
                LIBC.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)
            LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)

    return setup


def private_directory() -> Path:
    """A fresh directory for one player process to work in."""
    return Path(tempfile.mkdtemp(prefix=owned_prefix(PRIVATE_KIND)))


def remove_left_behind() -> None:
    """Kill what the players of referees killed with SIGKILL left running, and remove their
    directories and cgroups.

    A cgroup holds all of a player's processes; without one, a process is known by the
    player directory it was given as HOME, TMPDIR or working directory.
    """
    protections = machine_protections()
    for parent, kind in ((protections.cgroups, PidsCgroup), (protections.memory, MemoryCgroup)):
        if parent is not None:
            remove_stale(parent, kind)
    directories = [
        directory
        for directory in left_by_killed_referees(Path(tempfile.gettempdir()), PRIVATE_KIND)
        if _owned(directory)
    ]
    for pid in processes_in(directories):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


def _owned(path: Path) -> bool:
    try:
        return path.stat().st_uid == os.getuid()
    except OSError:
        return False


def minimal_environment(extra: Mapping[str, str], private: Path) -> dict[str, str]:
    """The few variables a program needs, its own temporary home, and the player's settings."""
    kept = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    return {**kept, "HOME": str(private), "TMPDIR": str(private), **extra}
