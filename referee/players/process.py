"""A player program as a subprocess: its own process group, line I/O with deadlines, a capped log.

Modelled on python-chess's engine module: one asyncio transport per player, one outstanding
request at a time, absolute deadlines, and the process group killed in `finally`, always.
A reply that comes after its deadline is owed: it is dropped when it arrives, so it can never
be taken for the answer to the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shlex
import shutil
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from referee import protocol
from referee.clock import now
from referee.errors import (
    ConfigError,
    PlayerCrashed,
    PlayerStartError,
    PlayerTimeout,
    ProtocolViolation,
    ResourceExceeded,
)
from referee.sandbox.cgroups import PidsCgroup
from referee.sandbox.limits import (
    LIBC,
    SAMPLE_EVERY_S,
    Limits,
    ProcessTable,
    Protections,
    allow_cpu,
    child_setup,
    group_stats,
    group_usage,
    limit_of_signal,
    machine_protections,
    minimal_environment,
    over_limit,
    private_directory,
    stats_of,
)

LOG_LIMIT = 1024 * 1024
QUIT_GRACE_S = 1.0
_READ_CHUNK = 64 * 1024
_EXIT_DRAIN_S = 0.2
_EXIT_POLL_S = 0.01
_FLOOD_PAUSE_S = 0.001
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class PlayerSpec:
    """How to start a player: a name for tables, the argv, its environment and its limits.

    `cwd` is the directory it runs in; None gives it a private one, deleted when it ends.
    """

    name: str
    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_command(
        cls,
        name: str,
        command: str | Sequence[str],
        base: Path | None = None,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> PlayerSpec:
        """A spec from an argv list or a shell-style string (split, never run through a shell).

        Paths in the command are taken from `cwd`, else from `base` (by default the current
        directory), and made absolute, so that they still name the same files from a private
        working directory.
        """
        try:
            argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
        except ValueError as error:
            raise ConfigError(f"player {name}: cannot split command {command!r}: {error}") from None
        if not argv:
            raise ConfigError(f"player {name}: empty command")
        return cls(name, _absolute_paths(argv, cwd or base or Path.cwd()), cwd, dict(env or {}))

    def missing_program(self) -> str | None:
        """Why the program cannot be run, or None when it can."""
        program = self.argv[0]
        if "/" in program:
            found = (self.cwd or Path.cwd()) / program
            if not found.is_file():
                return f"no such program: {found}"
            if not os.access(found, os.X_OK):
                return f"not executable: {found} (run it through an interpreter, or chmod +x)"
            return None
        path = {**os.environ, **self.env}.get("PATH")
        if shutil.which(program, path=path) is None:
            return f"command {program!r} not found on PATH"
        return None


def _absolute_paths(argv: tuple[str, ...], base: Path) -> tuple[str, ...]:
    """The program when it is a path, and each argument naming something in `base`, made absolute.

    Options and other words are left as they are.
    """
    program, *arguments = argv
    if "/" in program:
        program = str(base / program)
    return (
        program,
        *(
            str(base / word) if word[:1] not in ("", "-") and (base / word).exists() else word
            for word in arguments
        ),
    )


@dataclass(frozen=True)
class Reply:
    """An answer line and the time from the request's write to the answer's read."""

    text: str
    elapsed_ms: float


class Player(ABC):
    """Something that speaks the protocol: a program in a subprocess, or a person."""

    spec: PlayerSpec
    log_path: Path | None

    @abstractmethod
    async def start(self) -> None:
        """Get ready to receive lines."""

    @abstractmethod
    def new_match(self) -> None:
        """A match begins: per-match allowances start again."""

    @abstractmethod
    async def request(self, line: str, limit_s: float) -> Reply:
        """Send a line that needs an answer and wait for the answer, at most `limit_s` seconds."""

    @abstractmethod
    async def send(self, line: str, limit_s: float) -> None:
        """Send a line that needs no answer; the player must take it within `limit_s`."""

    @abstractmethod
    async def close(self) -> None:
        """Say `quit`, give the player a moment to leave, and end it."""

    @property
    @abstractmethod
    def alive(self) -> bool:
        """Whether the player can still be spoken to."""


class AbsentPlayer(Player):
    """A player whose program could not be started: every request to it fails as a crash."""

    def __init__(self, spec: PlayerSpec, reason: str) -> None:
        self.spec = spec
        self.log_path = None
        self.reason = reason

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        return None

    async def request(self, line: str, limit_s: float) -> Reply:
        raise PlayerCrashed(self.reason)

    async def send(self, line: str, limit_s: float) -> None:
        raise PlayerCrashed(self.reason)

    async def close(self) -> None:
        return None

    @property
    def alive(self) -> bool:
        return False


@dataclass(frozen=True)
class Ending:
    """How a player process ended: by itself after `quit`, or killed; what it left running."""

    told_to_quit: bool
    exited_after_quit: bool
    left_behind: int


@dataclass
class _Line:
    text: str | None  # None for a line the protocol does not allow: too long, not UTF-8
    problem: str
    arrived: float


class PlayerProcess(Player):
    """A player program in its own process group, with standard error captured to a log."""

    def __init__(
        self,
        spec: PlayerSpec,
        log_path: Path,
        log_limit: int = LOG_LIMIT,
        table: ProcessTable | None = None,
    ) -> None:
        """`table`, when given, is shared with the other players: one scan of /proc serves all."""
        self.spec = spec
        self.log_path = log_path
        self._log_limit = log_limit
        self._table = table
        self._log: BinaryIO | None = None
        self._logged = 0
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._readers: tuple[asyncio.Task[None], ...] = ()
        self._pending: asyncio.Future[_Line] | None = None
        self._owed = 0
        self._gone: str | None = None
        self._gone_as: type[PlayerCrashed] = PlayerCrashed
        self._private: Path | None = None
        self._cgroup: PidsCgroup | None = None
        self._protections: Protections | None = None
        self._cpu_at_match_start = 0.0
        # What a validation looks at: lines nobody asked for (counted, the last one kept, so
        # a flood costs no memory), standard error, the ending.
        self.stray_count = 0
        self.last_stray: str | None = None
        self.stderr_bytes = 0
        self.ending: Ending | None = None

    @property
    def pid(self) -> int | None:
        """The process id of the player program (also its process group id)."""
        return self._process.pid if self._process else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._gone is None

    async def start(self) -> None:
        _become_subreaper()
        self.switch_log(self.log_path)
        self._private = private_directory()
        env = minimal_environment(self.spec.env, self._private)
        protections = machine_protections()
        if protections.cgroups is not None:
            # Made for each process: the cap counts this player's processes alone.
            with contextlib.suppress(OSError):
                self._cgroup = PidsCgroup.make(protections.cgroups, self.spec.limits.processes)
        setup = child_setup(self.spec.limits, protections.unshare, self._cgroup)
        self._protections = protections
        try:
            self._process = await asyncio.create_subprocess_exec(
                *protections.command(self.spec.argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.spec.cwd or self._private,
                env=env,
                start_new_session=True,
                preexec_fn=setup,
            )
        except (OSError, subprocess.SubprocessError) as error:
            self._close_log()
            self._clean_up()
            if self.log_path.stat().st_size == 0:
                self.log_path.unlink()
            reason = getattr(error, "strerror", None) or str(error)
            raise PlayerStartError(
                f"player {self.spec.name}: cannot start {self.spec.argv[0]!r}: {reason}"
            ) from None
        output = asyncio.create_task(self._read_output())
        self._readers = (output, asyncio.create_task(self._read_errors()))
        self._tasks = [
            *self._readers,
            asyncio.create_task(self._watch_exit(output)),
            asyncio.create_task(self._watch_usage()),
        ]

    def new_match(self) -> None:
        """The CPU time allowed per match counts from now."""
        self._cpu_at_match_start = group_usage(self._stats()).cpu_s
        if self._process is not None:
            allow_cpu(self._process.pid, self.spec.limits)

    def switch_log(self, path: Path) -> None:
        """Send what the player writes to standard error from now on to `path`, with a fresh cap.

        A process reused for several matches keeps one log per match this way.
        """
        self._close_log()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(path, "ab")  # noqa: SIM115 -- closed in _close_log()
        self.log_path = path
        self._logged = 0

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()

    async def request(self, line: str, limit_s: float) -> Reply:
        if self._pending is not None:
            raise RuntimeError("one request at a time")
        if self._gone is not None:
            raise self._gone_as(self._gone)
        pending = asyncio.get_running_loop().create_future()
        self._pending = pending
        try:
            sent = await self._write(line, limit_s)
            try:
                await asyncio.wait_for(asyncio.shield(pending), max(0.0, sent + limit_s - now()))
            except TimeoutError:
                if not pending.done():
                    self._owed += 1
                    raise PlayerTimeout(f"no answer within {limit_s * 1000:.0f} ms") from None
        finally:
            self._pending = None
            if pending.done() and not pending.cancelled():
                pending.exception()  # raised below if there is one; never left unretrieved
        reply = pending.result()
        elapsed = reply.arrived - sent
        if elapsed > limit_s:
            raise PlayerTimeout(
                f"answered after {elapsed * 1000:.0f} ms, limit {limit_s * 1000:.0f} ms"
            )
        if reply.text is None:
            raise ProtocolViolation(reply.problem)
        return Reply(reply.text, elapsed * 1000)

    async def send(self, line: str, limit_s: float) -> None:
        if self._gone is not None:
            raise self._gone_as(self._gone)
        await self._write(line, limit_s)

    async def close(self) -> None:
        process = self._process
        if process is None:
            return
        told = exited = False
        left_behind = 0
        try:
            if self.alive:
                told = True
                with contextlib.suppress(PlayerCrashed):
                    await self._write(protocol.QUIT, QUIT_GRACE_S)
                exited = await _exits_within(process, QUIT_GRACE_S)
                if exited:
                    left_behind = sum(1 for _, fields in self._stats() if fields[0] != b"Z")
        finally:
            self.ending = Ending(told, exited, left_behind)
            await self._kill()

    async def _kill(self) -> None:
        """Kill the whole process group, reap it, and stop reading its pipes."""
        process = self._process
        assert process is not None
        self._gone = self._gone or "ended by the referee"
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        escaped = self._cgroup.kill() if self._cgroup is not None else []
        await _exits_within(process)
        await _reap(process.pid, escaped)
        if process.stdin is not None:
            process.stdin.close()
        # The rest of its output is read to the end, but not for long: a process that left the
        # group may hold the pipes open. The transport is closed while the loop runs, as one
        # collected after the loop has closed fails; asyncio's Process has no public close.
        await asyncio.wait(self._readers, timeout=_EXIT_DRAIN_S)
        process._transport.close()  # type: ignore[attr-defined]
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._close_log()
        self._clean_up()

    def _clean_up(self) -> None:
        """Remove the private directory and the cgroup, once the processes are gone."""
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
        if self._cgroup is not None:
            self._cgroup.remove()

    async def _write(self, line: str, limit_s: float) -> float:
        """Write a line; the time it was written. A player that will not take it has crashed."""
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(line.encode() + b"\n")
            written = now()
            await asyncio.wait_for(process.stdin.drain(), limit_s)
        except (BrokenPipeError, ConnectionResetError):
            # Most often the program has exited: how it exited (a limit's signal) says more.
            if await _exits_within(process, _EXIT_DRAIN_S):
                assert process.returncode is not None
                self._ended(process.returncode)
            else:
                self._fail("closed its input")
            raise self._gone_as(self._gone or "closed its input") from None
        except TimeoutError:
            self._fail("stopped reading its input")
            raise PlayerCrashed("stopped reading its input") from None
        return written

    def _fail(self, reason: str, kind: type[PlayerCrashed] = PlayerCrashed) -> None:
        """The player can no longer be spoken to; a waiting request learns why."""
        if self._gone is None:
            self._gone, self._gone_as = reason, kind
        if self._pending is not None and not self._pending.done():
            self._pending.set_exception(self._gone_as(self._gone))

    def _ended(self, code: int) -> None:
        """The program exited with this return code: a crash, or a limit's signal or refusal."""
        if self._protections is not None:
            code = self._protections.return_code(code)
        limit = limit_of_signal(code) or self._refused_processes()
        if limit is None:
            self._fail(_exit_reason(code))
        else:
            self._exceeded(limit)

    def _exceeded(self, limit: str) -> None:
        """The player went over the limit called `limit`: a `resource` fault naming it."""
        self._fail(f"exceeded its {self.spec.limits.describe(limit)}", ResourceExceeded)

    def _refused_processes(self) -> str | None:
        """`processes` when the cgroup's cap has refused the player a process or thread."""
        return "processes" if self._cgroup is not None and self._cgroup.refused_forks() else None

    def _stats(self, table: ProcessTable | None = None) -> list[tuple[int, list[bytes]]]:
        """Its processes: those in its cgroup, else those in its process group.

        The group is found in `table` when a shared one is given, else by a scan of /proc.
        """
        if self._process is None:
            return []
        if self._cgroup is not None:
            return stats_of(self._cgroup.members())
        return table.group(self._process.pid) if table else group_stats(self._process.pid)

    async def _watch_usage(self) -> None:
        """Kill the player's processes as soon as together they go over one of its limits."""
        assert self._process is not None
        limits = self.spec.limits
        while self._process.returncode is None:
            usage = group_usage(self._stats(self._table))
            limit = self._refused_processes() or over_limit(usage, limits, self._cpu_at_match_start)
            if limit is not None:
                self._exceeded(limit)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._process.pid, signal.SIGKILL)
                return
            await asyncio.sleep(SAMPLE_EVERY_S)

    def _arrived(self, line: _Line) -> None:
        if line.text is not None and line.text.startswith("#"):
            self._write_log(line.text.encode() + b"\n")
            return
        if line.text is not None and not line.text.strip():
            return
        if self._owed:
            self._owed -= 1
            self._write_log(b"# referee: dropped a late answer\n")
        elif self._pending is not None and not self._pending.done():
            self._pending.set_result(line)
        else:
            self.stray_count += 1
            self.last_stray = line.text if line.text is not None else line.problem
            self._write_log(b"# referee: ignored a line nobody asked for\n")

    async def _read_output(self) -> None:
        """Split standard output into lines; one over 64 KiB is a protocol fault."""
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        buffer = bytearray()
        overlong = False
        while chunk := await stdout.read(_READ_CHUNK):
            arrived = now()
            lines = chunk.split(b"\n")
            for index, piece in enumerate(lines):
                complete = index < len(lines) - 1
                if not overlong:
                    buffer += piece
                    if len(buffer.rstrip(b"\r")) > protocol.LINE_LIMIT:
                        overlong = True
                        buffer.clear()
                        self._arrived(_Line(None, "a line longer than 64 KiB", arrived))
                if complete:
                    if not overlong:
                        self._arrived(_decode(bytes(buffer), arrived))
                    buffer.clear()
                    overlong = False
        # Output closes when the program exits, or when it closes it and goes on running.
        try:
            code = await asyncio.wait_for(asyncio.shield(self._process.wait()), _EXIT_DRAIN_S)
        except TimeoutError:
            self._fail("closed its output")
        else:
            self._ended(code)

    async def _read_errors(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while chunk := await self._process.stderr.read(_READ_CHUNK):
            self.stderr_bytes += len(chunk)
            self._write_log(chunk)
            if self._logged > self._log_limit:
                # Past the log's cap, drained slowly: a flood costs the referee little CPU.
                await asyncio.sleep(_FLOOD_PAUSE_S)

    async def _watch_exit(self, output: asyncio.Task[None]) -> None:
        process = self._process
        assert process is not None
        await _exits_within(process)
        code = process.returncode
        assert code is not None
        # An answer written just before exiting still counts: let the output be read first.
        await asyncio.wait({output}, timeout=_EXIT_DRAIN_S)
        self._ended(code)

    def _write_log(self, data: bytes) -> None:
        """Append to the player's log up to its size cap; the rest is counted, not kept."""
        if self._log is None or self._log.closed:
            return
        room = max(0, self._log_limit - self._logged)
        kept = data[:room]
        self._log.write(kept)
        if len(kept) < len(data) and self._logged + len(kept) == self._log_limit:
            self._log.write(f"\n# referee: log cut at {self._log_limit} bytes\n".encode())
        self._log.flush()
        self._logged += len(data)


async def _exits_within(process: asyncio.subprocess.Process, limit_s: float = math.inf) -> bool:
    """Whether the process exits within `limit_s` (by default, wait as long as it takes).

    Its return code, not `wait()`: that also waits for the pipes, which a child it left
    running may hold open.
    """
    deadline = now() + limit_s
    while process.returncode is None:
        if now() >= deadline:
            return False
        await asyncio.sleep(_EXIT_POLL_S)
    return True


def _exit_reason(code: int) -> str:
    return f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"


def _decode(raw: bytes, arrived: float) -> _Line:
    try:
        return _Line(raw.decode("utf-8").rstrip("\r"), "", arrived)
    except UnicodeDecodeError:
        return _Line(None, "a line that is not UTF-8", arrived)


def _become_subreaper() -> None:
    """Adopt orphaned descendants, so a player's leftover children are reaped here.

    Without it they would be reparented to PID 1, which on some machines never reaps them.
    """
    if LIBC is not None:
        LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def group_members(pgid: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, state) of every process in a process group, from /proc."""
    return _members(group_stats(pgid))


def _members(stats: Sequence[tuple[int, list[bytes]]]) -> list[tuple[int, int, str]]:
    return [(pid, int(fields[1]), fields[0].decode()) for pid, fields in stats]


async def _reap(pgid: int, others: Sequence[int] = (), patience_s: float = 2.0) -> None:
    """Wait for every killed member of the group, and `others`, to go; reap those left to us."""
    deadline = now() + patience_s
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
        await asyncio.sleep(0.01)
