"""Isolation: what the machine lets the referee keep from a player, probed once.

The jail (bubblewrap: namespaces, mounts, a user of its own) where it works, else a network
namespace unshared in the child; cgroups for pids, memory and CPU time; a private working
directory and a minimal environment; and the function the child runs between fork and exec
to put its limits in place.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from referee.sandbox.cgroups import (
    Cgroup,
    CpuCgroup,
    CpusetCgroup,
    FreezerCgroup,
    Freezing,
    MemoryCgroup,
    PidsCgroup,
    WeightCgroup,
    autogrouped,
    controller_parent,
    freezer_parents,
    remove_stale,
)
from referee.sandbox.cores import available_cores, format_cores
from referee.sandbox.jail import JAIL_PROCESSES, SEAT_UIDS, Jail, Place
from referee.sandbox.leftovers import left_by_killed_referees, owned_prefix, processes_in
from referee.sandbox.limits import (
    SAMPLE_EVERY_S,
    Limits,
    address_space_bytes,
    inherited_notes,
    rlimits,
)
from referee.sandbox.proc import group_stats, reap_zombies
from referee.sandbox.runtimes import runtime_environment

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
# Players run below the referee's priority: a spinning player cannot starve its clocks.
PLAYER_NICENESS = 5
# Where the kernel weighs each session as one process at nice 0 (autogroup), a player's
# processes, weighed together in a cpu cgroup, weigh as one such session: any lower, every
# busy process elsewhere on the machine would come before its clock (at nice 5's weight a
# seat got a quarter of a core beside one busy loop, and lost on time), while the referee,
# whose loop mostly sleeps, is served first when it wakes either way.
PLAYER_WEIGHT_NICENESS = 0
_PROBE_TIMEOUT_S = 10
# How a player's memory is limited without a memory cgroup, and what that costs: as doctor's
# table and validate's warning say it.
_ADDRESS_SPACE_ONLY = (
    "only by its address space, at twice memory_mb, and the sampling: a JVM, Go, .NET or Node"
    " program reserves more than it uses and may not start"
)


@dataclass(frozen=True)
class Protections:
    """Which protections this machine gives; `why_not` says why the missing ones are missing."""

    network: bool
    network_how: str
    why_not: tuple[str, ...]
    jail: Jail | None = None  # bubblewrap's jail, where it works
    cgroups: Path | None = None  # where a player's pids cgroup is made, if it can be
    memory: Path | None = None  # where a player's memory cgroup is made, if it can be
    cpu: Path | None = None  # where a player's CPU accounting cgroup is made, if it can be
    cpuset: Path | None = None  # where a player's cpuset cgroup is made, if it can be
    freezer: Path | None = None  # where a player's freezer cgroup is made, if it can be
    weight: Path | None = None  # where a player's cpu weight cgroup is made, if it can be

    @property
    def freezing(self) -> Freezing:
        """How a player's processes are stopped while it is not asked."""
        if self.freezer is None:
            return Freezing.SIGNALS
        return FreezerCgroup.freezing(self.freezer)

    @property
    def memory_by_cgroup(self) -> bool:
        """Whether a player's memory is capped by a memory cgroup, on what it uses; else only
        its address space is capped, at twice `memory_mb`, and its use sampled."""
        return self.memory is not None

    @property
    def unshare(self) -> bool:
        """Whether the child itself unshares its network before exec (there is no jail)."""
        return self.network and self.jail is None

    @property
    def jail_processes(self) -> int:
        """The jail's own processes, among each player's but not the player's: none without."""
        return JAIL_PROCESSES if self.jail is not None else 0

    @property
    def own_user(self) -> bool:
        """Whether each player process runs as a uid of its own (the jail of a root referee)."""
        return self.jail is not None and self.jail.setpriv is not None

    @property
    def memory_warning(self) -> str:
        """What a player's memory limit means without a memory cgroup; "" with one."""
        if self.memory_by_cgroup:
            return ""
        return f"memory is limited {_ADDRESS_SPACE_ONLY} (no memory cgroup on this machine)"

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
        jailed = self.jail is not None
        no_jail = "unavailable: no working bubblewrap (bwrap)"
        return [
            (
                "limits in each process",
                True,
                "setrlimit in the child: address space, CPU, file size, open files, no core",
            ),
            (
                "memory limited by what it uses",
                self.memory_by_cgroup,
                "the memory cgroup (no swap) caps what it uses; its address space is only a"
                f" backstop, {_gib(address_space_bytes(Limits(), True))} at the default limits"
                if self.memory_by_cgroup
                else _ADDRESS_SPACE_ONLY,
            ),
            (
                "use of all its processes watched",
                True,
                f"memory, CPU and processes sampled every {SAMPLE_EVERY_S * 1000:.0f} ms;"
                " killed over a limit",
            ),
            _cgroup_row("pids cgroup", self.cgroups, "firm process limit, no escape by setsid"),
            _cgroup_row("memory cgroup", self.memory, "the kernel stops a player over its memory"),
            _cgroup_row("CPU cgroup", self.cpu, "the CPU time of all its processes, gone ones too"),
            (
                "pinned to its match's cores",
                True,
                f"cores {format_cores(available_cores())} of this machine, a set per match;"
                + (
                    f" a cpuset cgroup per player under {self.cpuset}: it cannot widen them"
                    if self.cpuset is not None
                    else " CPU affinity, which a player could widen (no writable cpuset cgroup)"
                ),
            ),
            self._freezing_row(),
            (
                "per-user process limit",
                not root,
                "RLIMIT_NPROC: not enforced for root"
                if root
                else "RLIMIT_NPROC at the processes of this user plus twice the limit",
            ),
            (
                "a user of its own",
                jailed,
                (
                    f"a uid of its own per player process ({SEAT_UIDS.start} and up), no groups"
                    if self.own_user
                    else "a user namespace of its own, with no capabilities outside it"
                )
                if jailed
                else no_jail,
            ),
            (
                "own PID namespace",
                jailed,
                "it sees and can signal only its own processes" if jailed else no_jail,
            ),
            (
                "own mount namespace",
                jailed,
                "the system and its program read-only, one private writable directory, nothing else"
                if jailed
                else no_jail,
            ),
            ("own IPC and UTS namespaces", jailed, "bubblewrap" if jailed else no_jail),
            ("no network", self.network, self.network_how),
            (
                "private working directory",
                True,
                "a fresh directory, also TMPDIR and HOME"
                + (
                    f"; in the jail an empty file system in memory of disk_mb"
                    f" ({Limits().disk_mb} MiB by default): a full disk past it"
                    if jailed
                    else "; not capped without the jail"
                ),
            ),
            (
                "minimal environment",
                True,
                f"only {', '.join(_KEPT_VARIABLES)}, and its memory limit told to runtimes"
                f" ({', '.join(runtime_environment(Limits()))})",
            ),
            ("killed with the referee", LIBC is not None, "PR_SET_PDEATHSIG"),
            (
                "no privileges",
                LIBC is not None,
                "no capabilities, no_new_privs: it cannot raise its priority, trace, or enter"
                " the referee's namespaces",
            ),
            self._priority_row(),
        ]

    def _priority_row(self) -> tuple[str, bool, str]:
        """What its lower priority promises here: nice alone holds only where the kernel
        does not weigh each session as one (autogroup), or a cgroup weighs the player."""
        how = f"nice {PLAYER_NICENESS}, which it cannot lower"
        if self.weight is not None:
            return (
                "lower priority",
                True,
                f"{how}; all its processes weigh as one process at nice"
                f" {PLAYER_WEIGHT_NICENESS} in a cpu cgroup per player under {self.weight},"
                " however many it starts, in sessions of their own or not",
            )
        if autogrouped():
            return (
                "lower priority",
                False,
                f"{how}; but the kernel weighs each session as one process at nice 0"
                " (autogroup) and there is no writable cpu cgroup (v1): each process it"
                " starts in a session of its own weighs as much as the referee",
            )
        return ("lower priority", True, how)

    def _freezing_row(self) -> tuple[str, bool, str]:
        """What stopping an idle seat promises here (with `ponder: false`)."""
        if self.freezing is Freezing.SIGNALS:
            return (
                "frozen while not asked",
                False,
                "SIGSTOP and SIGCONT of each of its processes (no writable freezer cgroup):"
                " a parent sees SIGCHLD and a SIGCONT handler runs, so it can tell; and "
                + (
                    "a child that left its process group is not stopped"
                    if self.cgroups is None
                    else "a sibling may SIGCONT another between the signals"
                ),
            )
        return (
            "frozen while not asked",
            True,
            f"{self.freezing} under {self.freezer}: all its processes at once, new ones too,"
            " with no signal to it; all it can see, once thawed, is a wait it did not ask for"
            " (a voluntary context switch in /proc)",
        )


def _gib(size: int) -> str:
    return f"{size / 1024**3:g} GiB"


def _cgroup_row(name: str, parent: Path | None, what: str) -> tuple[str, bool, str]:
    if parent is None:
        return (name, False, f"unavailable: no writable {name}")
    return (name, True, f"one per player under {parent}: {what}")


def _unshare_network() -> None:
    """In the forked child: a network namespace of its own, with only a loopback that is down."""
    assert LIBC is not None
    if LIBC.unshare(_CLONE_NEWNET) != 0 and LIBC.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


@functools.cache
def machine_protections() -> Protections:
    """Probe once what this machine gives: the jail or a network namespace, and cgroups."""
    return replace(
        _isolation(),
        cgroups=_cgroup_parent(PidsCgroup),
        memory=_cgroup_parent(MemoryCgroup),
        cpu=_cgroup_parent(CpuCgroup),
        cpuset=_cgroup_parent(CpusetCgroup),
        freezer=_freezer_parent(),
        weight=_weight_parent(),
    )


def _isolation() -> Protections:
    """The jail, where bubblewrap works; else a network namespace unshared in the child."""
    if LIBC is None:
        return Protections(False, "not on Linux", ("isolation needs Linux",))
    jail, why_not = _jail()
    if jail is not None:
        return Protections(True, "a network namespace of its own (bubblewrap)", (), jail)
    try:
        subprocess.run(["true"], preexec_fn=_unshare_network, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as error:
        reason = f"{why_not}; cannot unshare a network namespace either: {error}"
        return Protections(
            False,
            f"unavailable: cannot unshare: {error}",
            (f"players are not jailed ({reason}): they can reach the network",),
        )
    return Protections(
        True,
        "a network namespace of its own (unshare)",
        (f"players are not jailed ({why_not}): they see the machine's files and processes",),
    )


def _jail() -> tuple[Jail | None, str]:
    """bubblewrap's jail, tried on `true`; or why there is none."""
    bubblewrap = shutil.which("bwrap")
    if bubblewrap is None:
        return None, "bubblewrap (bwrap) is not installed"
    setpriv = None
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return None, "setpriv (util-linux) is not installed"
    jail = Jail(bubblewrap, setpriv)
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory() as private:
        directory = Path(private)
        if setpriv is not None:
            os.chown(directory, SEAT_UIDS.start, SEAT_UIDS.start)
        place = Place(directory, directory, ())
        try:
            probe = subprocess.Popen(
                jail.command([true], place, SEAT_UIDS.start),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            return None, f"bubblewrap failed: {error}"
        try:
            _, stderr = probe.communicate(timeout=_PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            probe.kill()
            probe.wait()
            return None, f"bubblewrap did not finish within {_PROBE_TIMEOUT_S} s"
        finally:
            _reap_group(probe.pid)
    if probe.returncode != 0:
        said = stderr.decode(errors="replace").strip().splitlines()
        return None, f"bubblewrap failed: {said[-1] if said else probe.returncode}"
    return jail, ""


def _reap_group(pgid: int) -> None:
    """Reap what of a finished process group was left to this process (a subreaper): the
    jail's init outlives bubblewrap by a moment. Done once every member has ended: one left
    to a subreaper above this process (a service manager's, a test runner's) stays a
    zombie until that one reaps it, which is not to be waited for."""
    deadline = time.monotonic() + _PROBE_TIMEOUT_S
    while time.monotonic() < deadline:
        members = group_stats(pgid)
        reap_zombies(members)
        if all(fields[0] == b"Z" for _, fields in members):
            return
        time.sleep(0.005)


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


def _weight_parent() -> Path | None:
    """Where cpu weight cgroups can be made: cgroup v1's cpu hierarchy, where its shares
    weigh a player's processes (under cgroup v2 they would be a second cgroup of the one
    hierarchy its other cgroups are in)."""
    parent = _cgroup_parent(WeightCgroup)
    return parent if parent is not None and (parent / "cpu.shares").exists() else None


def _freezer_parent() -> Path | None:
    """Where freezer cgroups can be made: the first place where one was made and thawed."""
    for parent in freezer_parents():
        try:
            cgroup = FreezerCgroup.create(parent, {})
        except OSError:
            continue
        try:
            cgroup.thaw()
        except OSError:
            continue  # a kernel before 5.2 has no cgroup v2 freeze
        finally:
            cgroup.remove()
        return parent
    return None


def inherited_limits(seats: Iterable[Limits]) -> list[str]:
    """What the limits the referee was started under do to players with these limits: a note
    for each that lowers theirs; LimitTooLowError for one that leaves them too little."""
    return inherited_notes(seats, _user_processes(), machine_protections().memory_by_cgroup)


def _user_processes() -> int | None:
    """The processes of this user, which RLIMIT_NPROC counts; None for root, who is exempt."""
    if os.geteuid() == 0:
        return None
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


class SetupError(subprocess.SubprocessError):
    """A player's process could not be set up between fork and exec: the message says which
    step, which call and why."""


# One step of a child's setup: what it is for, its call as words, and the call.
_Step = tuple[str, str, Callable[[], object]]
_RLIMIT_NAMES = {getattr(resource, name): name for name in dir(resource) if name[:7] == "RLIMIT_"}


@contextlib.contextmanager
def child_setup(
    limits: Limits,
    protections: Protections,
    cgroups: Sequence[Cgroup],
    cores: frozenset[int] | None = None,
    idle: bool = False,
    memory_cgroup: bool = False,
) -> Iterator[Callable[[], None]]:
    """The function the child runs after fork, before exec (`preexec_fn`): limits, isolation,
    death with us, its match's `cores`, if it has some, and the idle scheduling class if
    `idle`. `memory_cgroup` says whether the program is in a memory cgroup (which caps its
    memory). Popen's failure in it leaves the block as a SetupError that says what failed.

    subprocess says no more of a failed `preexec_fn` than that it failed: the child writes
    what did to a pipe of its own, read once Popen has given up. The pipe is empty and the
    write short and non-blocking, so a child never waits on it.
    """
    steps = _setup_steps(limits, protections, cgroups, cores, idle, memory_cgroup)
    read, write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)

    def setup() -> None:
        for step, call, run in steps:
            try:
                run()
            except BaseException as error:
                said = f"{step}: {call} failed: {_error_words(error)}"
                with contextlib.suppress(OSError):
                    os.write(write, said.encode()[: select.PIPE_BUF])
                raise

    try:
        yield setup
    except subprocess.SubprocessError:
        try:
            said = os.read(read, select.PIPE_BUF).decode(errors="replace")
        except BlockingIOError:
            raise  # not the setup's failure: subprocess's own word stands
        raise SetupError(f"its process could not be set up before exec, {said}") from None
    finally:
        os.close(read)
        os.close(write)


def _setup_steps(
    limits: Limits,
    protections: Protections,
    cgroups: Sequence[Cgroup],
    cores: frozenset[int] | None,
    idle: bool,
    memory_cgroup: bool,
) -> list[_Step]:
    """The child's setup, in its order; everything it says made here, before the fork."""
    steps: list[_Step] = [
        ("joining its cgroup", f"write({cgroup.path / 'cgroup.procs'})", cgroup.join)
        for cgroup in cgroups
    ]
    if cores is not None:
        pin = functools.partial(os.sched_setaffinity, 0, cores)
        steps.append(("pinning it", f"sched_setaffinity(0, {format_cores(cores)})", pin))
    if LIBC is not None:
        die = functools.partial(LIBC.prctl, _PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        steps.append(("its death with the referee", "prctl(PR_SET_PDEATHSIG, SIGKILL)", die))
    for which, soft, hard in rlimits(limits, _user_processes(), memory_cgroup):
        limit = functools.partial(resource.setrlimit, which, (soft, hard))
        call = f"setrlimit({_RLIMIT_NAMES[which]}, {_rlimit_words(soft)}, {_rlimit_words(hard)})"
        steps.append(("its limits", call, limit))
    steps.append(("its priority", f"nice({PLAYER_NICENESS})", lambda: os.nice(PLAYER_NICENESS)))
    if idle:
        idle_class = functools.partial(os.sched_setscheduler, 0, os.SCHED_IDLE, os.sched_param(0))
        steps.append(("the idle class", "sched_setscheduler(0, SCHED_IDLE)", idle_class))
    if protections.unshare:
        steps.append(("a network of its own", "unshare(CLONE_NEWNET)", _unshare_network))
    # A root referee's jail needs its capabilities to be built; inside, setpriv drops them.
    if LIBC is not None and protections.jail is None:
        # Last, as they are needed above: with an empty bounding set a program run as root
        # has no capabilities after exec (it cannot renice itself up, join the referee's
        # namespaces, or trace). Without the right to drop them (not root), there are none.
        capabilities = range(int(_CAP_LAST_CAP.read_text()) + 1) if _CAP_LAST_CAP.exists() else ()
        drop = functools.partial(_drop_capabilities, LIBC, capabilities)
        steps.append(("no capabilities", "prctl(PR_CAPBSET_DROP, each)", drop))
    if LIBC is not None:
        # No setuid program gives back what was dropped.
        no_privileges = functools.partial(LIBC.prctl, _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        steps.append(("no new privileges", "prctl(PR_SET_NO_NEW_PRIVS, 1)", no_privileges))
    return steps


def _drop_capabilities(libc: ctypes.CDLL, capabilities: Sequence[int]) -> None:
    for capability in capabilities:
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)


def _rlimit_words(value: int) -> str:
    return "RLIM_INFINITY" if value == resource.RLIM_INFINITY else str(value)


def _error_words(error: BaseException) -> str:
    """An error as the child reports it: the errno's name and text where it has one."""
    if isinstance(error, OSError) and error.errno is not None:
        return f"{errno.errorcode.get(error.errno, error.errno)} ({error.strerror})"
    return str(error) or type(error).__name__


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
    # The freezer first: its kill lets frozen processes die (see FreezerCgroup.kill).
    for parent, kind in (
        (protections.freezer, FreezerCgroup),
        (protections.cgroups, PidsCgroup),
        (protections.memory, MemoryCgroup),
        (protections.cpu, CpuCgroup),
        (protections.cpuset, CpusetCgroup),
        (protections.weight, WeightCgroup),
    ):
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
    """Whether a player directory is this user's, or, for root, a seat user's it leased."""
    try:
        owner = path.stat().st_uid
    except OSError:
        return False
    return owner == os.getuid() or (os.getuid() == 0 and owner in SEAT_UIDS)


def minimal_environment(extra: Mapping[str, str], private: Path, limits: Limits) -> dict[str, str]:
    """The few variables a program needs, its own temporary home, its runtime's memory limit,
    and the player's settings: a variable the player sets is its own, whole."""
    kept = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    home = {"HOME": str(private), "TMPDIR": str(private)}
    return {**kept, **home, **runtime_environment(limits), **extra}
