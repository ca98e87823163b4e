"""A player program: a confined process whose pipes carry the protocol of a PlayerConnection.

The process is the sandbox's (`referee.sandbox.process`); the lines are the connection's.
This class joins them: it starts the program and connects its pipes, turns the program's
end into the fault it is (a crash, or the limit it went over), and ends it with `quit`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

from referee.clock import (
    EXIT_GRACE_S,
    IDLE_CPU_ALLOWANCE_S,
    IDLE_GRACE_S,
    QUIT_GRACE_S,
    SETTLE_S,
)
from referee.errors import PlayerCrashed, PlayerStartError, ResourceExceeded
from referee.players.base import PlayerSpec, Reply
from referee.players.connection import STDERR, STDIN, STDOUT, ConnectedPlayer, PlayerConnection
from referee.players.log import LOG_LIMIT, PlayerLog
from referee.players.trace import TraceChannel
from referee.protocol import Quit
from referee.sandbox.limits import own_limit
from referee.sandbox.proc import ProcessTable
from referee.sandbox.process import ConfinedProcess, ProcessEnd, can_wake_idle

# What is read of a program's output after it has exited: all it can have written before
# (a pipe holds at most 1 MiB), but not a child's endless flood.
_DRAIN_LIMIT = 1024 * 1024
_READ_CHUNK = 64 * 1024
# Past the log's cap, standard error is drained slowly: a flood costs the referee little.
_FLOOD_PAUSE_S = 0.001


@dataclass(frozen=True)
class Ending:
    """How a player process ended: by itself after `quit`, or killed; what it left running."""

    told_to_quit: bool
    exited_after_quit: bool
    left_behind: int


class _Pipe(asyncio.Protocol):
    """One of the program's standard streams, handed on to the connection; standard output
    is also the connection's OutputPipe."""

    def __init__(self, connection: PlayerConnection, fd: int) -> None:
        self.connection = connection
        self.fd = fd
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if self.fd == STDIN:
            assert isinstance(transport, asyncio.WriteTransport)
            self.connection.connection_made(transport)
        elif self.fd == STDOUT:
            self.connection.output_made(self)

    def pause_reading(self) -> None:
        if isinstance(self.transport, asyncio.ReadTransport) and not self.transport.is_closing():
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if isinstance(self.transport, asyncio.ReadTransport) and not self.transport.is_closing():
            self.transport.resume_reading()

    def read_now(self, limit: int) -> bytes:
        """What the pipe holds now, at most `limit` bytes, read around the paused transport."""
        if self.transport is None or self.transport.is_closing():
            return b""
        fd = self.transport.get_extra_info("pipe").fileno()
        data = bytearray()
        while len(data) < limit:
            try:
                chunk = os.read(fd, min(_READ_CHUNK, limit - len(data)))
            except OSError:  # nothing more now (EAGAIN), or already closed
                break
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def data_received(self, data: bytes) -> None:
        self.connection.pipe_data_received(self.fd, data)
        if self.fd == STDERR and self.connection.log.full:
            assert isinstance(self.transport, asyncio.ReadTransport)
            self.transport.pause_reading()
            asyncio.get_running_loop().call_later(_FLOOD_PAUSE_S, self._resume)

    def _resume(self) -> None:
        assert isinstance(self.transport, asyncio.ReadTransport)
        if not self.transport.is_closing():
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.connection.pipe_connection_lost(self.fd)

    def pause_writing(self) -> None:
        self.connection.pause_writing()

    def resume_writing(self) -> None:
        self.connection.resume_writing()


class ProgramPlayer(ConnectedPlayer):
    """A player program in the sandbox, with standard error captured to its log."""

    def __init__(
        self,
        spec: PlayerSpec,
        log_path: Path | None,
        log_limit: int = LOG_LIMIT,
        table: ProcessTable | None = None,
        trace: TraceChannel | None = None,
        cores: frozenset[int] | None = None,
        logs: Path | None = None,
    ) -> None:
        """`table`, when given, is shared with the other players: one scan of /proc serves all.
        `trace`, when given, is told every line exchanged with the program. `cores`, when
        given, are the only cores its processes run on.

        A spare, started before its match is known, has no `log_path`: what it writes is held
        until `switch_log`, and it starts in the idle class where the referee can bring it back
        (`set_idle`).
        `logs` is the directory its logs go to, which it never sees; by default the log's."""
        self.log = PlayerLog(None, log_limit)
        super().__init__(spec, PlayerConnection(self.log, self._check, trace))
        self._first_log = log_path
        self._logs = logs or (log_path.parent if log_path is not None else None)
        self._table = table
        self._cores = cores
        self._process: ConfinedProcess | None = None
        self._pipes: list[_Pipe] = []
        self.ending: Ending | None = None
        # Paused by the match (`pause`); and how many lines it is let run to take meanwhile.
        self._paused = False
        self._taking = 0
        # A paused player is frozen once it has been paused IDLE_GRACE_S (the timer), or at
        # once when it has been seen using CPU time while paused (`_watched`, for the life of
        # the process): the CPU time it used while paused in this match, and its CPU count
        # when its last answer was read.
        self._freezing: asyncio.TimerHandle | None = None
        self._idle_since = 0.0
        self._watched = False
        self._woken = False
        self._paused_cpu_s = 0.0
        self._answered_cpu_s: float | None = None

    @property
    def pid(self) -> int | None:
        """The process id of the player program (also its process group id)."""
        return self._process.pid if self._process else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self.connection.gone is None

    async def start(self) -> None:
        if self._first_log is None:
            self.log.hold()
        else:
            self.log.switch(self._first_log)
        spec = self.spec
        try:
            # The directory of its log holds the match's results: never the player's to read.
            process = ConfinedProcess.start(
                spec.argv,
                spec.cwd,
                spec.env,
                spec.limits,
                self._table,
                self._ended,
                files=spec.files,
                hidden=(self._logs,) if self._logs is not None else (),
                cores=self._cores,
                idle=self._first_log is None and can_wake_idle(),
            )
        except (OSError, subprocess.SubprocessError) as error:
            self.log.close()
            if own_limit(error) is not None:
                raise  # the referee's own failure, not the program's: said as such
            reason = getattr(error, "strerror", None) or str(error)
            raise PlayerStartError(
                f"player {spec.name}: cannot start {spec.recorded[0]!r}: {reason}"
            ) from None
        self._process = process
        loop = asyncio.get_running_loop()
        popen = process.popen
        assert popen.stdin and popen.stdout and popen.stderr
        self._pipes = [_Pipe(self.connection, fd) for fd in (STDIN, STDOUT, STDERR)]
        await loop.connect_write_pipe(lambda: self._pipes[STDIN], popen.stdin)
        await loop.connect_read_pipe(lambda: self._pipes[STDOUT], popen.stdout)
        await loop.connect_read_pipe(lambda: self._pipes[STDERR], popen.stderr)

    def new_match(self) -> None:
        self._paused_cpu_s = 0.0
        if self._process is not None:
            self._process.new_match()

    def left_files(self) -> bool:
        """Whether its private directory (HOME, TMPDIR) holds anything."""
        return self._process is not None and self._process.private_holds_files()

    def set_idle(self, idle: bool) -> None:
        """Run only when nothing else wants its cores (a spare before its match, a player
        leaving after one), or as every player runs."""
        if self._process is not None:
            self._process.set_idle(idle)
            # Woken as its jail is being built, it may have a process that was still being
            # forked from one not yet moved: its next request moves them again, before its
            # write and once answered (its program runs then, and the jail is built).
            self._woken = not idle

    @property
    def cores(self) -> frozenset[int] | None:
        """The only cores its processes run on; None: wherever the system puts them."""
        return self._cores

    def pin(self, cores: frozenset[int]) -> None:
        """Run on `cores` alone from now on: a reused process, for its next match."""
        self._cores = cores
        if self._process is not None:
            self._process.pin(cores)

    @property
    def frozen(self) -> bool:
        """Whether its processes are stopped now (paused, and no line to take)."""
        return self._process is not None and self._process.frozen

    @property
    def watched(self) -> bool:
        """Whether it has been seen using CPU time while paused: frozen as soon as it is."""
        return self._watched

    def pause(self) -> None:
        """Not asked from now on: frozen once it has been paused IDLE_GRACE_S, or at once if
        it has been seen using CPU time while paused. A player that waits for its input
        uses none, and is asked again before the grace is over in a fast match: it costs no
        freeze and no thaw."""
        self._paused = True
        self._keep_state()

    def resume(self) -> None:
        """Let it run again: the lines held for it while it was paused are written now."""
        self._run()
        self.connection.flush()

    def _run(self) -> None:
        self._paused = False
        self._keep_state()

    def _keep_state(self) -> None:
        """Its processes frozen, or to be frozen after the grace, while it is paused and has
        no line to take, else running; no system call when they are already so."""
        process = self._process
        if process is None:
            return
        if not self._paused or self._taking:
            process.thaw()
        elif self._watched:
            process.freeze()
        elif not process.frozen:
            loop = asyncio.get_running_loop()
            self._idle_since = loop.time()
            # One timer at a time, left to run when the player is asked meanwhile: a fast
            # match pauses a player at every step, and a timer each time would be its cost.
            if self._freezing is None:
                self._freezing = loop.call_at(self._idle_since + IDLE_GRACE_S, self._grace_over)

    def _grace_over(self) -> None:
        """The grace of the last pause may be over: frozen if so, else looked at again when
        it will be."""
        self._freezing = None
        if self._process is None or not self._paused or self._taking:
            return
        loop = asyncio.get_running_loop()
        due = self._idle_since + IDLE_GRACE_S
        if loop.time() >= due:
            self._process.freeze()
        else:
            self._freezing = loop.call_at(due, self._grace_over)

    def _count_paused(self, now_cpu_s: float | None) -> None:
        """Add the CPU time it used since its last answer, if it was paused meanwhile: past
        the allowance of a match, it is frozen as soon as it is paused from now on."""
        since, self._answered_cpu_s = self._answered_cpu_s, None
        if since is None or now_cpu_s is None or not self._paused:
            return
        self._paused_cpu_s += max(0.0, now_cpu_s - since)
        if self._paused_cpu_s > IDLE_CPU_ALLOWANCE_S:
            self._watched = True

    async def request(self, line: str, limit_s: float) -> Reply | None:
        """The answer, with the CPU time its processes used from just before the request's
        write to the answer's read; a paused player is resumed first."""
        process = self._process
        # Read before the thaw and after the answer, never while its clock runs: frozen, its
        # processes use nothing until the thaw.
        before = process.cpu_s() if process is not None else None
        self._count_paused(before)
        woken = self._woken and process is not None
        if woken:
            self.set_idle(False)
        self._run()  # the lines held go with the request's own write
        reply = await super().request(line, limit_s)
        if woken:
            self.set_idle(False)
            self._woken = False
        if process is None or before is None:
            return reply
        after = process.cpu_s()
        self._answered_cpu_s = after
        if reply is None:
            return reply
        return Reply(reply.text, reply.elapsed_ms, (after - before) * 1000)

    def post(self, line: str, limit_s: float) -> Awaitable[None] | None:
        """A paused player reads the line when it runs again, as a frozen one would: it is
        written with the next line that is (`PlayerConnection.hold`), not now, which would
        wake a player still in its grace for nothing. Past the lines held at most, a paused
        player whose input pipe is full cannot take the line: it runs until it has, then is
        paused again (it is not to be judged for lines it could not read)."""
        if self._paused and not self._taking and self.connection.hold(line):
            return None
        taken = super().post(line, limit_s)
        if taken is None or not self._paused:
            return taken
        self._taking += 1
        self._keep_state()
        return self._paused_after(taken)

    async def _paused_after(self, taken: Awaitable[None]) -> None:
        try:
            await taken
        finally:
            self._taking -= 1
            self._keep_state()

    async def gone_within(self, limit_s: float) -> PlayerCrashed | None:
        """Why it is gone, if it goes within `limit_s`: it runs meanwhile, to go if it would."""
        self.resume()
        return await super().gone_within(limit_s)

    async def settled(self) -> bool:
        """Between two matches of this process: whether it may play the next. What it left in
        its pipe is read and dropped, and the late answers it still owes (it was late at the
        match's last steps) are given one more of their clock, SETTLE_S at most, to come, the
        process running meanwhile. One that does not write them all, floods, or has gone,
        may not: a fresh process plays the next match instead (docs/protocol.md). A
        tournament's pool and a validation both ask this, and nothing else decides it."""
        if self.connection.owed:
            self.resume()
        return await self.connection.drained(SETTLE_S)

    def switch_log(self, path: Path) -> None:
        """What the player writes to standard error goes to `path` from now on."""
        self.log.switch(path)

    async def close(self) -> None:
        process = self._process
        if process is None:
            return
        told = exited = False
        left_behind = 0
        try:
            if self.alive:
                # It must read `quit` and exit by itself.
                self.resume()
                told = True
                with contextlib.suppress(PlayerCrashed):
                    await self.connection.send(str(Quit()), QUIT_GRACE_S)
                # The late answers it still owes are read as they come within its grace:
                # each is timed, not left in the pipe until it exits.
                loop = asyncio.get_running_loop()
                grace_over = loop.time() + QUIT_GRACE_S
                await self.connection.owed_answers(QUIT_GRACE_S)
                exited = await process.exited(max(0.0, grace_over - loop.time()))
                if exited:
                    left_behind = await process.left_running()
        finally:
            self.ending = Ending(told, exited, left_behind)
            self.connection.fail(PlayerCrashed("ended by the referee"))
            await process.kill()
            for pipe in self._pipes:
                if pipe.transport is not None:
                    pipe.transport.close()
            self.log.close()

    def _ended(self, end: ProcessEnd) -> None:
        """The program has exited: the fault it is, once what it wrote before is read."""
        self._drain_output()
        if end.limit is not None:
            fault: PlayerCrashed = ResourceExceeded(
                f"exceeded its {self.spec.limits.describe(end.limit)}"
            )
        else:
            fault = PlayerCrashed(end.reason)
        self.connection.fail(fault)

    def _drain_output(self) -> None:
        """Read what the program wrote before it exited, without waiting for the pipe's end:
        a child it left behind may hold the pipe open."""
        if self._pipes:
            data = self._pipes[STDOUT].read_now(_DRAIN_LIMIT)
            if data:
                self.connection.pipe_data_received(STDOUT, data)

    def _check(self, what: str) -> None:
        """Asked by the connection when a pipe closed or an answer is overdue."""
        process = self._process
        if process is None or process.poll() is not None:
            return  # not started, or its end has been reported
        if what == "answer":
            if self.connection.output_closed:
                self.connection.fail(PlayerCrashed("closed its output"))
            return
        # A program that exits closes its pipes a moment before its exit can be seen.
        asyncio.get_running_loop().call_later(EXIT_GRACE_S, self._pipe_closed, what)

    def _pipe_closed(self, what: str) -> None:
        if self._process is not None and self._process.poll() is None:
            self.connection.fail(PlayerCrashed(f"closed its {what}"))
