"""A submission's build: its `build` shell line run in the jail the players get (no network,
a seat user of its own, its cgroups), in the bot's directory, the one place it may write.

Its output is kept as a log (the first part of it, with a line saying where it was cut) and a
tail for the author. Once it has ended, nothing it started runs on (the jail's PID namespace
and cgroups are killed), and what it left is made the referee's, read-only to the bot, with
the one mode rule of unpacked files; a link out of the directory, a fifo, a socket or a
device it made fails it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from referee.arena.intake.archive import mode_of, show, special_kind, walk
from referee.arena.store.config import BuildLimits
from referee.arena.store.db import STEP_LOG_LIMIT
from referee.arena.store.manifest import bot_environment
from referee.clock import now
from referee.sandbox.jail import system_roots
from referee.sandbox.limits import MIB, Limits
from referee.sandbox.process import ConfinedProcess, ProcessEnd

SHELL = "/bin/sh"
# The head of the output kept, with room in a step's log for the line saying where it was cut.
LOG_BYTES = STEP_LOG_LIMIT - 1024
TAIL_LINES = 20
# The tail is taken from the last bytes of the output: a line without an end cannot fill memory.
_TAIL_BYTES = 64 * 1024
_TAIL_LINE_CHARS = 300
# What a build may use besides its time and memory (the arena's config): processes (a
# compiler forks) and what it may leave in the bot's directory.
PROCESSES = 256
DISK_MB = 1024
DISK_FILES = 100_000
# How often what a build has written is looked at.
DISK_EVERY_S = 0.5
FIRST = asyncio.FIRST_COMPLETED
# How long the build's pipes may stay open once it has been killed.
_PIPES_CLOSE_S = 5.0


@dataclass(frozen=True)
class BuildResult:
    """How a build went: `verdict` in one line, and the last lines of its output."""

    passed: bool
    verdict: str
    log_tail: str


class _Output:
    """The build's standard output and error together: the head kept for the log, the last
    bytes for the tail, and the count of what was cut."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = LOG_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
        self.tail.append(data)
        self._tail_bytes += len(data)
        while self._tail_bytes - len(self.tail[0]) >= _TAIL_BYTES:
            self._tail_bytes -= len(self.tail.popleft())

    def log(self) -> bytes:
        cut = self.total - len(self.head)
        if cut <= 0:
            return bytes(self.head)
        ending = b"" if self.head.endswith(b"\n") else b"\n"
        return bytes(self.head) + ending + f"[cut here: {cut} more bytes not kept]\n".encode()

    def last_lines(self) -> str:
        text = b"".join(self.tail)[-_TAIL_BYTES:].decode("utf-8", "replace")
        lines = text.splitlines()[-TAIL_LINES:]
        return "\n".join(line[:_TAIL_LINE_CHARS] for line in lines)


class _Pipe(asyncio.Protocol):
    def __init__(self, output: _Output) -> None:
        self.output = output
        self.closed = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.output.add(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def build(directory: Path, command: str, limits: BuildLimits, log: Path) -> BuildResult:
    """Run the shell line `command` in `directory`, in the jail, within `limits`; its output
    goes to `log`, after the line itself. The directory is left the referee's, readable to
    every seat user."""
    cores = os.cpu_count() or 1
    confined = Limits(
        memory_mb=limits.memory_mb,
        cpu_s=limits.seconds * cores,
        processes=PROCESSES,
        open_files=1024,
        file_size_mb=DISK_MB,
        # Its HOME and TMPDIR: a compiler's temporary files, in memory.
        disk_mb=DISK_MB,
    )
    output = _Output()
    ended: asyncio.Future[ProcessEnd] = asyncio.get_running_loop().create_future()

    def on_end(end: ProcessEnd) -> None:
        if not ended.done():
            ended.set_result(end)

    started = now()
    try:
        process = ConfinedProcess.start(
            (SHELL, "-c", command),
            directory,
            bot_environment(),
            confined,
            None,
            on_end,
            writable=(directory,),
        )
    except OSError as error:
        log.write_bytes(f"cannot start the build: {error}\n".encode())
        return BuildResult(False, f"cannot start the build: {error.strerror or error}", "")
    try:
        verdict, passed = await _watch(process, ended, output, limits, directory)
    finally:
        await process.kill()
    # The line first: a build that says nothing has a log that says what ran.
    log.write_bytes(f"$ {command}\n".encode() + output.log())
    problem = settle(directory, DISK_MB * MIB)
    if passed and problem is not None:
        verdict, passed = problem, False
    elif passed:
        verdict = f"built in {now() - started:.1f} s"
    return BuildResult(passed, verdict, output.last_lines())


async def _watch(
    process: ConfinedProcess,
    ended: asyncio.Future[ProcessEnd],
    output: _Output,
    limits: BuildLimits,
    directory: Path,
) -> tuple[str, bool]:
    """Read the build's output until it ends or its time is up: its verdict, and whether it
    passed so far."""
    loop = asyncio.get_running_loop()
    popen = process.popen
    assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
    popen.stdin.close()
    pipes = [_Pipe(output), _Pipe(output)]
    for pipe, stream in zip(pipes, (popen.stdout, popen.stderr), strict=True):
        await loop.connect_read_pipe(lambda pipe=pipe: pipe, stream)  # type: ignore[misc]
    # A file is capped by its size limit, the bot's directory only by this (and the private
    # one by it too where there is no jail to cap it): what it has written is looked at while
    # it runs, and a build past the cap is killed.
    disk = asyncio.create_task(_over_disk((directory, process.private)))
    try:
        done, _ = await asyncio.wait((ended, disk), timeout=limits.seconds, return_when=FIRST)
    finally:
        disk.cancel()
    if not done or disk in done:
        await process.kill()
        await _closed(pipes)
        if not done:
            return f"killed at the time limit of {limits.seconds} s", False
        return f"killed: it wrote more than {DISK_MB} MiB or {DISK_FILES} files", False
    end = ended.result()
    await process.kill()
    await _closed(pipes)
    if end.limit == "memory_mb":
        return f"killed at the memory limit of {limits.memory_mb} MiB", False
    if end.limit == "processes":
        return f"killed at the process limit of {PROCESSES}", False
    if end.limit is not None:
        return f"killed at the {process.limits.describe(end.limit)}", False
    if end.code < 0:
        return f"killed by signal {-end.code}", False
    return f"exit status {end.code}", end.code == 0


async def _over_disk(directories: tuple[Path, ...]) -> None:
    """Return once the directories hold more than DISK_MB or DISK_FILES."""
    while True:
        await asyncio.sleep(DISK_EVERY_S)
        if await asyncio.to_thread(_over, directories):
            return


def _over(directories: tuple[Path, ...]) -> bool:
    """Whether the blocks the directories' files take (a sparse file takes only what it
    wrote) are more than DISK_MB, or their entries more than DISK_FILES; counting stops as
    soon as they are."""
    used = entries = 0
    for directory in directories:
        with contextlib.suppress(OSError):
            for path in walk(directory):
                entries += 1
                with contextlib.suppress(OSError):
                    used += path.lstat().st_blocks * 512
                if used > DISK_MB * MIB or entries > DISK_FILES:
                    return True
    return False


async def _closed(pipes: list[_Pipe]) -> None:
    """Wait for the pipes to close (they do once every process of the jail is gone)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_PIPES_CLOSE_S):
            await asyncio.gather(*(pipe.closed for pipe in pipes))


def settle(directory: Path, max_bytes: int) -> str | None:
    """Make a built bot's directory the referee's, with the one mode rule, so that the bot's
    seat user reads and runs its files and changes none. What no bot may hold is removed,
    and the first such thing is named: a link out of the directory other than into the
    system the jail shows (a virtual environment's interpreter), a fifo, a socket, a device;
    or more than `max_bytes` in all."""
    root = directory.resolve()
    system = system_roots()
    uid, gid = os.getuid(), os.getgid()
    problem: str | None = None
    total = 0
    for path in [directory, *walk(directory)]:
        status = path.lstat()
        shown = show(path.relative_to(directory).as_posix())
        if stat.S_ISLNK(status.st_mode):
            target = Path(os.path.realpath(path))
            if target.is_relative_to(root) or any(target.is_relative_to(s) for s in system):
                os.lchown(path, uid, gid)
                continue
            path.unlink()
            problem = (
                problem or f"{shown}: the build left a link leading out (to {show(str(target))})"
            )
            continue
        kind = special_kind(status.st_mode)
        if kind is not None:
            path.unlink()
            problem = problem or f"{shown}: the build left {kind}"
            continue
        total += status.st_size
        os.lchown(path, uid, gid)
        os.chmod(path, mode_of(stat.S_ISDIR(status.st_mode), bool(status.st_mode & stat.S_IXUSR)))
    if total > max_bytes and problem is None:
        problem = f"the build left more than {max_bytes // MIB} MiB in the bot's directory"
    return problem
