"""The suite leaves nothing running: a plugin that fails a session which leaves a process of
its own behind, and ends what it left.

Whose processes: the controller (the pytest process `make test` starts; pytest-xdist's, or
the only one) becomes a subreaper at its start, so that a process orphaned anywhere below it
(a forkserver whose worker died, a player whose referee was killed) is adopted by it, not by
PID 1: every process the session started stays its descendant until it ends, whatever
environment it was given (a jailed player gets a minimal one) and however it detached
(setsid, a double fork). And it sets SESSION_VARIABLE to a value of the session's own, which
every process started since inherits unless given an environment of its own: it names the
session's processes to whoever looks (`/proc/PID/environ`), and finds one that a daemon
outside the tree was asked to start. Nothing else on a shared machine is either (another
session's processes carry another value).

When: at the session's end, once its fixtures are torn down and its xdist workers have
exited (pytest_sessionfinish, inside xdist's, which stops the workers). What still runs is
given the grace (`--leftovers-grace`, GRACE_S) to exit; then each is listed with its command
line, killed, and the run fails.

While the session runs, the controller of xdist's workers, which runs no test, reaps the
orphans adopted by it that have exited (`Reaper`); a controller that runs the tests itself
leaves its children to them, and reaps what is left at the end.
"""

from __future__ import annotations

import contextlib
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.sandbox.proc import descendants, reap_zombies, stats_of
from referee.sandbox.spawn import become_subreaper

# What every process of a session inherits: `<controller pid>-<random>`.
SESSION_VARIABLE = "REFEREE_TEST_SESSION"
# What a process on its way out is given to exit, at most; a loaded machine's included.
GRACE_S = 10.0
_POLL_S = 0.2
# How often the xdist controller reaps the orphans it adopted that have exited.
_REAP_EVERY_S = 1.0
# The key of terminalreporter's stats that the summary line counts them under:
# `12 passed, 1 left running in 3.05s`.
STATS_KEY = "left running"
_STASH = pytest.StashKey["Watch"]()


@dataclass(frozen=True)
class Leftover:
    """A process the session left running: its pid, its start time (clock ticks after boot,
    with the pid it names one process, never a later one given the same pid) and its
    command line."""

    pid: int
    started: int
    command: str

    # Counted in the summary line (STATS_KEY), and shown nowhere else by it.
    count_towards_summary = True


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--leftovers-grace",
        type=float,
        default=GRACE_S,
        metavar="S",
        help="seconds a process of the session has to exit once the session ends, before"
        f" it is listed, killed and the run failed (default {GRACE_S:g})",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before xdist starts its workers (at the session's start): they inherit the value.
    if _controller(config):
        config.stash[_STASH] = Watch.start(config.getoption("leftovers_grace"))


def pytest_sessionstart(session: pytest.Session) -> None:
    watch = session.config.stash.get(_STASH, None)
    if watch is not None and session.config.pluginmanager.has_plugin("dsession"):
        watch.reaper = Reaper.start()


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """Inside every other plugin's: the session's fixtures are torn down, xdist's workers
    have exited, and the terminal's summary is still to come."""
    result = yield
    watch = session.config.stash.get(_STASH, None)
    if watch is None:
        return result
    left = watch.finish()
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            processes = "process" if len(left) == 1 else "processes"
            reporter.write_sep("=", f"{len(left)} {processes} outlived the session", red=True)
            for process in left:
                reporter.write_line(f"{process.pid} {process.command}")
            reporter.write_line(f"(killed; they had {watch.grace_s:g} s to exit)")
            reporter.stats.setdefault(STATS_KEY, []).extend(left)
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return result


def _controller(config: pytest.Config) -> bool:
    """Whether this is the session's first process, not one of xdist's workers."""
    return not hasattr(config, "workerinput")


class Watch:
    """The controller's watch over the processes of its session."""

    def __init__(self, value: str, grace_s: float) -> None:
        self.value = value
        self.grace_s = grace_s
        self.reaper: Reaper | None = None

    @classmethod
    def start(cls, grace_s: float) -> Watch:
        become_subreaper()
        value = f"{os.getpid()}-{secrets.token_hex(8)}"
        os.environ[SESSION_VARIABLE] = value
        return cls(value, grace_s)

    def finish(self) -> list[Leftover]:
        """The processes of the session still running after the grace, killed."""
        if self.reaper is not None:
            self.reaper.stop()
        deadline = time.monotonic() + self.grace_s
        while (left := self.running()) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        found = {process.pid: process for process in left}
        # Killed, with whatever their end orphans (adopted here, or still marked).
        deadline = time.monotonic() + self.grace_s
        while left and time.monotonic() < deadline:
            for process in left:
                _kill(process)
            time.sleep(_POLL_S)
            left = self.running()
            found.update((process.pid, process) for process in left if process.pid not in found)
        return sorted(found.values(), key=lambda process: process.started)

    def running(self) -> list[Leftover]:
        """The session's processes that still run; those that ended and were left to this
        process reaped."""
        me = os.getpid()
        pids = (set(descendants(me)) | self.marked()) - {me, *_own_helpers()}
        stats = stats_of(pids)
        reap_zombies(stats)
        return [
            Leftover(pid, int(fields[19]), _command(pid))
            for pid, fields in stats
            if fields[0] != b"Z"
        ]

    def marked(self) -> set[int]:
        """The processes whose environment carries this session's value."""
        mark = f"{SESSION_VARIABLE}={self.value}".encode()
        found = set()
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if mark in Path(entry.path, "environ").read_bytes().split(b"\0"):
                    found.add(int(entry.name))
        return found


def _own_helpers() -> set[int]:
    """The helpers multiprocessing started for this process, if it ran tests (no xdist):
    its resource tracker and fork server, which end when it does."""
    tracker = getattr(multiprocessing.resource_tracker, "_resource_tracker", None)
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    pids = (getattr(tracker, "_pid", None), getattr(server, "_forkserver_pid", None))
    return {pid for pid in pids if pid is not None}


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "(gone)"
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or "(no command)"


def _kill(process: Leftover) -> None:
    """SIGKILL to the process, if it is still the one found (not a new one with its pid)."""
    try:
        handle = os.pidfd_open(process.pid)
    except OSError:
        return  # gone
    try:
        fields = stats_of([process.pid])
        if fields and int(fields[0][1][19]) == process.started:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(handle)


class Reaper:
    """A thread of xdist's controller that reaps its children that have exited: orphans
    adopted as a subreaper (its workers too, harmlessly: execnet's wait of one then finds
    it gone and takes it for an exit 0, which it does not look at)."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leftovers-reaper", daemon=True)

    @classmethod
    def start(cls) -> Reaper:
        reaper = cls()
        reaper._thread.start()
        return reaper

    def _run(self) -> None:
        while not self._stopped.wait(_REAP_EVERY_S):
            # Those of its descendants that are its children: one scan of /proc.
            reap_zombies(stats_of(descendants(os.getpid())))

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
