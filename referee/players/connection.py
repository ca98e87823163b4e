"""The protocol with one player over one transport, in the manner of python-chess's engine.

The transport carries the lines; this class frames what comes back (standard output into
lines, standard error into the log) and keeps one request outstanding. A player's output is
read only while an answer is awaited, within a budget of bytes and lines per request; the
rest of the time it stays in the pipe, and the player blocks on its own writes. Before each
request, what the player left in the pipe since the last one is read (a late answer, stray
lines), and a line it began and never ended is dropped with its step. Each request that
timed out with nothing written owes one line, its late answer: the lines owed are counted,
and each that comes is dropped and pays one, so a late answer can never be taken for the
answer to a later request, however many were late in a row. So one late, partial or
over-long answer costs its own step and no other. Between matches of a reused process,
`drained` gives the late answers still owed a bounded time to come, and after `quit`,
`owed_answers` reads them as they come, timed, while the player has its grace to exit; the
lines written after `quit` are also kept as such (`strays["quit"]`). What the transport
runs on (a confined process, or a scripted fake in the tests) is the owner's business: it
calls `pipe_data_received`, `pipe_connection_lost` and `fail`, and is asked, through
`check`, whether the player is still there when a pipe closes or an answer is overdue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from referee.clock import now
from referee.errors import PlayerCrashed, ProtocolViolation
from referee.players.base import Player, PlayerSpec, Reply
from referee.players.log import PlayerLog
from referee.players.trace import TraceChannel
from referee.protocol import (
    LINE_LIMIT,
    OUTPUT_BUDGET_BYTES,
    OUTPUT_BUDGET_LINES,
    SKIP_LIMIT,
    Line,
    LineReader,
    is_comment,
)

STDIN, STDOUT, STDERR = 0, 1, 2
# What is kept of a player's standard error besides its log: its last lines, for a report.
STDERR_TAIL = 4096
# ... and of what it wrote to standard output, every line: a program that dies at its start
# may say why there (the JVM does), and its `#` lines may be a crash report, not comments.
STDOUT_TAIL_LINES = 16
STDOUT_TAIL_WIDTH = 300
# The most a player's held lines (`hold`) may come to; beyond, they are written at once.
HELD_LIMIT_BYTES = 64 * 1024


class OutputPipe(Protocol):
    """A player's standard output, read by the connection only while an answer is awaited."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def read_now(self, limit: int) -> bytes:
        """What is in the pipe at this moment, at most `limit` bytes, without waiting."""
        ...


@dataclass
class Strays:
    """Lines nobody asked for that followed one kind of referee line: counted, the last kept
    (so that a flood costs no memory)."""

    count: int = 0
    last: str = ""


@dataclass(frozen=True)
class _Arrival:
    line: Line
    at: float


@dataclass(frozen=True)
class _Owed:
    """A request that got no answer in time: when it was written, its time limit, and its
    first two words (`go 7`)."""

    since: float
    limit_s: float
    request: str = ""


@dataclass(frozen=True)
class LateAnswer:
    """A late answer that came after its request had timed out, and was dropped (or was
    read as the answer after its time, before the request's timer ran): the
    request's first two words (`go 7`), the seconds from its write to the answer's read
    (`took_s`), and from the later of that write and the answer before it (`own_s`): a
    player still busy with a late answer starts on the next request only when it is done,
    and its own time for it counts from then."""

    request: str
    took_s: float
    own_s: float


class PlayerConnection:
    """One player's side of the protocol: requests out, framed answers in, faults named."""

    def __init__(
        self,
        log: PlayerLog,
        check: Callable[[str], None] | None = None,
        trace: TraceChannel | None = None,
    ) -> None:
        """`check(what)` is called when a pipe closes (`input`, `output`) or an answer is
        overdue (`answer`): the owner fails the connection if the player is gone. `trace`,
        when given, is told every line both ways."""
        self.log = log
        self._trace = trace
        self._check = check or self._gone_at_once
        self._transport: asyncio.WriteTransport | None = None
        self._output: OutputPipe | None = None
        self._reader = LineReader()
        self._pending: asyncio.Future[_Arrival | None] | None = None
        # The request `_pending` answers: when it was written, its limit, its first words.
        self._asked: _Owed | None = None
        # The requests that timed out with nothing written, oldest first: their late answers
        # may still come, and the next lines are taken for them and dropped.
        self._owed: deque[_Owed] = deque()
        self._bytes = self._lines = 0
        self._skipped = 0
        self._spoke = False
        # What a player wrote unasked while its output was still read (`_rest`), kept for
        # the next request as its pipe would have kept it; and whether it ever did so.
        self._unasked = bytearray()
        self._wrote_unasked = False
        # Lines that need no answer, held to go with the next line written (`hold`), and
        # the bytes they come to.
        self._held: list[str] = []
        self._held_bytes = 0
        self._writable = asyncio.Event()
        self._writable.set()
        self.gone: PlayerCrashed | None = None
        self._gone_event = asyncio.Event()
        self.output_closed = False
        # What a validation looks at: lines nobody asked for, by the first word of the
        # referee's line they followed ("" before any; after `quit`, every line), and what
        # went to standard error.
        self._last_sent = ""
        self.strays: dict[str, Strays] = {}
        self.stderr_bytes = 0
        self.stderr_tail = b""
        self.stdout_tail: deque[str] = deque(maxlen=STDOUT_TAIL_LINES)
        # A late answer awaited after its request timed out: once it came, how long it took.
        self._late: asyncio.Future[float | None] | None = None
        # Every late answer that came, in order (dropped, or read as its request's answer
        # after its time), for a validation to time; and when the last answer of any kind
        # was read, from which the next late one's own time counts.
        self.late_answers: list[LateAnswer] = []
        self._answered_at = 0.0

    def connection_made(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport
        # Paused as soon as anything waits in the buffer: a write is taken when the pipe took it.
        transport.set_write_buffer_limits(high=0)

    def output_made(self, output: OutputPipe) -> None:
        """The player's standard output, left in its pipe until an answer is awaited."""
        self._output = output
        output.pause_reading()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == STDERR:
            self.stderr_bytes += len(data)
            self.stderr_tail = (self.stderr_tail + data[-STDERR_TAIL:])[-STDERR_TAIL:]
            self.log.write(data)
            return
        arrived = now()
        waiting = self._waiting()
        if waiting is None and not self._reader.skipping:
            # Unasked, read only because its output is still read after its answer (`_rest`):
            # left for the next request, and its output waits in the pipe from now on.
            self._wrote_unasked = True
            self._unasked += data
            self._listen(False)
            return
        try:
            data = self._skip_rest_of_long_line(data)
        except ProtocolViolation as flood:
            self._listen(False)
            if waiting is not None:
                waiting.set_exception(flood)
            return
        if self._pending is None and self._late is None and not self._reader.skipping:
            self._listen(False)  # the over-long line has ended: the rest waits for a request
        if waiting is not None:
            self._bytes += len(data)
            self._lines += data.count(b"\n")
            if self._bytes > OUTPUT_BUDGET_BYTES or self._lines > OUTPUT_BUDGET_LINES:
                # Counted before it is split: a flood of lines costs the referee no more.
                waiting.set_exception(
                    ProtocolViolation(_over_budget("while its answer was awaited"))
                )
                self._listen(False)
                return
        for line in self._reader.feed(data):
            self._arrived(_Arrival(line, arrived))

    def pipe_connection_lost(self, fd: int) -> None:
        if fd == STDOUT:
            self.output_closed = True
            self._check("output")
        elif fd == STDIN:
            self._check("input")

    def fail(self, fault: PlayerCrashed) -> None:
        """The player can no longer be spoken to; a waiting request learns why."""
        if self.gone is None:
            self.gone = fault
            self._gone_event.set()
        if self._unasked:
            # No request will come to take in what it wrote unasked before it went.
            left, self._unasked = bytes(self._unasked), bytearray()
            for line in self._reader.feed(left):
                self._arrived(_Arrival(line, now()))
        if self._late is not None and not self._late.done():
            self._late.set_result(None)
        if self._pending is not None and not self._pending.done():
            self._pending.set_exception(self.gone)

    async def request(self, line: str, limit_s: float) -> Reply | None:
        """Send `line`; the answer, or None when none came within `limit_s` of the write."""
        if self._pending is not None:
            raise RuntimeError("one request at a time")
        if self.gone is None and self._transport is not None and self._transport.is_closing():
            # A program that exits closes its pipes a moment before its exit can be seen: its
            # owner's word comes soon (how it exited, or that it only closed its input), and
            # the fault says that, however busy the machine is.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(limit_s):
                    await self._gone_event.wait()
        self._raise_if_gone()
        self._read_what_was_left()
        pending: asyncio.Future[_Arrival | None] = asyncio.get_running_loop().create_future()
        self._pending = pending
        self._bytes = self._lines = 0
        self._spoke = False
        try:
            sent = await self._write(line, limit_s)
            self._listen(True)
            # The clock's time is the event loop's (both monotonic): one timer, no task.
            owed = self._asked = _Owed(sent, limit_s, " ".join(line.split(maxsplit=2)[:2]))
            overdue = asyncio.get_running_loop().call_at(
                sent + limit_s, self._overdue, pending, owed
            )
            try:
                arrival = await pending
            finally:
                overdue.cancel()
        finally:
            self._rest()
            self._pending = self._asked = None
            if pending.done() and not pending.cancelled():
                pending.exception()  # raised above if there is one; never left unretrieved
        if arrival is None:
            return None
        if arrival.line.text is None:
            raise ProtocolViolation(arrival.line.problem)
        return Reply(arrival.line.text, (arrival.at - sent) * 1000)

    def _overdue(self, pending: asyncio.Future[_Arrival | None], owed: _Owed) -> None:
        """The request's time is up: it ends with no answer, unless the player has gone."""
        if pending.done():
            return
        # A program that has ended meanwhile has crashed, not timed out.
        self._check("answer")
        if not pending.done():
            # A line begun and not ended was the answer, broken: nothing is owed.
            if not (self._reader.partial or self._spoke):
                self._owed.append(owed)
            pending.set_result(None)

    @property
    def owed(self) -> int:
        """How many late answers are owed: requests that timed out with nothing written, whose
        answers have not come since."""
        return len(self._owed)

    @property
    def owed_requests(self) -> list[str]:
        """The requests whose late answers are owed, oldest first: their first two words."""
        return [owed.request for owed in self._owed]

    async def gone_within(self, limit_s: float) -> PlayerCrashed | None:
        """Why the player is gone, if it goes within `limit_s`; None if it is still there."""
        if self.gone is None:
            try:
                async with asyncio.timeout(limit_s):
                    await self._gone_event.wait()
            except TimeoutError:
                return None
        return self.gone

    async def late_answer(self, limit_s: float) -> float | None:
        """After a request that got no answer in time: wait up to `limit_s` more for the
        oldest late answer owed, which is dropped as ever; the seconds it took from its
        request's write, or None when it did not come (or nothing is owed, or the player is
        gone, or it wrote more than an answer's budget meanwhile)."""
        self._bytes = self._lines = 0
        return await self._next_late(limit_s)

    async def drained(self, limit_s: float) -> bool:
        """Between matches: take in and drop what the player left in its pipe, and give the
        late answers it still owes one more of their clocks to come, `limit_s` at most; whether
        it is still there and owes nothing now, so that its next request starts clean. What
        it writes meanwhile counts against one answer's budget: a flood is not clean."""
        if self.gone is not None:
            return False
        try:
            self._read_what_was_left()
        except ProtocolViolation:
            return False
        if self._owed:
            await self.owed_answers(min(limit_s, max(owed.limit_s for owed in self._owed)))
        return not self._owed and self.gone is None

    async def owed_answers(self, limit_s: float) -> None:
        """Read the late answers owed as they come, for `limit_s` at most, until none is owed
        or the player is gone: each is dropped and timed as ever (`late_answers`). What it
        writes meanwhile counts against one answer's budget."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        self._bytes = self._lines = 0
        while self._owed and await self._next_late(deadline - loop.time()) is not None:
            pass

    async def _next_late(self, limit_s: float) -> float | None:
        """`late_answer`, with what was written before counted in its budget."""
        if not self._owed or self.gone is not None:
            return None
        late: asyncio.Future[float | None] = asyncio.get_running_loop().create_future()
        self._late = late
        self._listen(True)
        try:
            async with asyncio.timeout(max(limit_s, 0.0)):
                return await late
        except (TimeoutError, ProtocolViolation):
            return None
        finally:
            self._late = None
            self._rest()

    async def send(self, line: str, limit_s: float) -> None:
        """Send a line that needs no answer; a player that will not take it has crashed."""
        taken = self.post(line, limit_s)
        if taken is not None:
            await taken

    def post(self, line: str, limit_s: float) -> Awaitable[None] | None:
        """Write a line that needs no answer, now; if the pipe did not take all of it, what to
        await for the rest to be taken within `limit_s` (a player that will not has crashed)."""
        self._raise_if_gone()
        self._put(line)
        return None if self._writable.is_set() else self._taken(limit_s)

    def hold(self, line: str) -> bool:
        """Keep a line that needs no answer, to be written with the next line that is (a
        request, `quit`, or a line `post`ed), or by `flush`: for a player that would read it
        only then, which is spared a wake-up for it, and the referee the switch to it and
        back. False, and nothing kept, when the lines held are at HELD_LIMIT_BYTES: `post` it."""
        self._raise_if_gone()
        size = len(line.encode()) + 1
        if self._held_bytes + size > HELD_LIMIT_BYTES:
            return False
        self._held.append(line)
        self._held_bytes += size
        return True

    def flush(self) -> None:
        """Write the lines held (`hold`) now, if the player can still take them."""
        transport = self._transport
        if not self._held or transport is None or transport.is_closing() or self.gone is not None:
            return
        transport.write(self._take_held())

    def _take_held(self) -> bytes:
        """The lines held, as they are written now: traced, and the last of them the last
        line sent."""
        lines, self._held, self._held_bytes = self._held, [], 0
        for line in lines:
            self._last_sent = line.partition(" ")[0]
            if self._trace is not None:
                self._trace.sent(line)
        return "".join(f"{line}\n" for line in lines).encode()

    def stderr_lines(self) -> list[str]:
        """The last lines the player wrote to standard error (of the tail kept), blank ones
        left out."""
        return [
            line for line in self.stderr_tail.decode(errors="replace").splitlines() if line.strip()
        ]

    def _waiting(self) -> asyncio.Future[_Arrival | None] | asyncio.Future[float | None] | None:
        """What awaits the player's output now: an answer, a late one, or nothing."""
        for future in (self._pending, self._late):
            if future is not None and not future.done():
                return future
        return None

    def _raise_if_gone(self) -> None:
        if self.gone is not None:
            raise self.gone

    def _listen(self, on: bool) -> None:
        """Read the player's output, or leave it in the pipe; the rest of an over-long line
        is still read, to be skipped as it is written (up to SKIP_LIMIT)."""
        if self._output is not None:
            if on:
                self._output.resume_reading()
            elif not self._reader.skipping:
                self._output.pause_reading()

    def _rest(self) -> None:
        """After an answer: the player's output is left in its pipe until the next request,
        unless it has only ever written when asked. Then it is still read, which spares the
        loop two changes of what it watches per request; what it writes unasked is kept for
        the next request, and its output is read only when asked from then on."""
        if self._wrote_unasked:
            self._listen(False)

    def _read_what_was_left(self) -> None:
        """Before a request: take in what the player wrote since the last one, unasked.

        A late answer is dropped, other lines are stray; a line begun and never ended is
        dropped too. More than the budget is a protocol fault of the request to come.
        """
        if self._output is None:
            return
        data = bytearray()
        kept, self._unasked = bytes(self._unasked), bytearray()
        while chunk := kept or self._output.read_now(LINE_LIMIT):
            kept = b""
            data += self._skip_rest_of_long_line(chunk)
            if len(data) > OUTPUT_BUDGET_BYTES or data.count(b"\n") > OUTPUT_BUDGET_LINES:
                self._reader.reset()
                raise ProtocolViolation(_over_budget("that nobody asked for"))
        arrived = now()
        for line in self._reader.feed(bytes(data)):
            self._arrived(_Arrival(line, arrived))
        if not self._reader.skipping:
            # A line begun and not ended was its step's answer: it is dropped. The rest of an
            # over-long one is still skipped: a slow writer may not have written it all yet.
            self._reader.reset()

    def _skip_rest_of_long_line(self, data: bytes) -> bytes:
        """What follows the end of a line already found over-long, whose fault was its own
        step's: the rest of it is not counted, up to SKIP_LIMIT, and more is a flood."""
        if not self._reader.skipping:
            return data
        end = data.find(b"\n")
        self._skipped += len(data) if end < 0 else end
        if self._skipped > SKIP_LIMIT:
            self._reader.reset()
            self._skipped = 0
            raise ProtocolViolation(f"wrote a line of over {SKIP_LIMIT // 1024} KiB")
        if end < 0:
            return b""
        self._reader.reset()
        self._skipped = 0
        # Written in answer to the request now awaited, if there is one: it was not silent.
        self._spoke = True
        return data[end + 1 :]

    async def _write(self, line: str, limit_s: float) -> float:
        """Write a line and wait until the pipe has taken it; the time its write began."""
        written = self._put(line)
        if not self._writable.is_set():
            await self._taken(limit_s)
        return written

    def _put(self, line: str) -> float:
        """Write a line, or what the pipe takes of it (the rest is buffered); the time its
        write began."""
        transport = self._transport
        assert transport is not None
        if transport.is_closing():
            self._check("input")
            self._raise_if_gone()
            raise PlayerCrashed("closed its input")
        data = self._take_held() + line.encode() + b"\n"
        self._last_sent = line.partition(" ")[0]
        if self._trace is not None:
            self._trace.sent(line)
        # Before the write: the player may read the line and start its clock at once.
        written = now()
        transport.write(data)
        return written

    async def _taken(self, limit_s: float) -> None:
        """Wait for the pipe to take what is buffered; a player that will not has crashed."""
        try:
            async with asyncio.timeout(limit_s):
                await self._writable.wait()
        except TimeoutError:
            self.fail(PlayerCrashed("stopped reading its input"))
            raise PlayerCrashed("stopped reading its input") from None

    def _arrived(self, arrival: _Arrival) -> None:
        text = arrival.line.text
        shown = text if text is not None else f"({arrival.line.problem})"
        self.stdout_tail.append(shown[:STDOUT_TAIL_WIDTH])
        if text is not None and is_comment(text):
            self.log.write(text.encode() + b"\n")
            self._traced(shown, "a comment: to the log")
            return
        if text is not None and not text.strip():
            self._traced(shown, "blank: ignored")
            return
        pending = self._pending
        if self._owed:
            owed = self._owed.popleft()
            took = arrival.at - owed.since
            own = arrival.at - max(owed.since, self._answered_at)
            self._answered_at = arrival.at
            self.late_answers.append(LateAnswer(owed.request, took, own))
            if self._late is not None and not self._late.done():
                self._late.set_result(took)
            self.log.note("dropped a late answer")
            after_quit = self._last_sent == "quit"
            if after_quit:
                # Among what it wrote after quit, too: a program that held back every line
                # until it exited shows it so, late answers or not (`referee validate`).
                self._stray("quit", shown)
            when = ", after quit" if after_quit else ""
            self._traced(shown, f"the late answer to an earlier request{when}: dropped")
        elif pending is not None and not pending.done():
            asked = self._asked
            if asked is not None and arrival.at - asked.since > asked.limit_s:
                # Read as the answer after its time, before its timer ran (a busy loop):
                # late, and timed for a validation as a late answer dropped is.
                took = arrival.at - asked.since
                own = arrival.at - max(asked.since, self._answered_at)
                self.late_answers.append(LateAnswer(asked.request, took, own))
                self._traced(shown, "came after its time: a timeout")
            else:
                self._traced(shown)
            self._answered_at = arrival.at
            pending.set_result(arrival)
        else:
            self._stray(self._last_sent, text if text is not None else arrival.line.problem)
            self.log.note("ignored a line nobody asked for")
            self._traced(shown, "nobody asked for it: ignored")

    def _stray(self, after: str, text: str) -> None:
        """Count a line among those that followed a referee line whose first word is `after`."""
        strays = self.strays.setdefault(after, Strays())
        strays.count += 1
        strays.last = text

    def _traced(self, text: str, note: str = "") -> None:
        if self._trace is not None:
            self._trace.received(text, note)

    def _gone_at_once(self, what: str) -> None:
        """Without an owner to ask, a closed pipe is the end of the player."""
        if what != "answer":
            self.fail(PlayerCrashed(f"closed its {what}"))


def _over_budget(when: str) -> str:
    return (
        f"wrote more than {OUTPUT_BUDGET_BYTES // 1024} KiB or {OUTPUT_BUDGET_LINES} lines {when}"
    )


class ConnectedPlayer(Player):
    """A player reached through a PlayerConnection, whatever carries its lines."""

    def __init__(self, spec: PlayerSpec, connection: PlayerConnection) -> None:
        self.spec = spec
        self.connection = connection

    @property
    def log_path(self) -> Path | None:  # type: ignore[override]
        return self.connection.log.written

    @property
    def alive(self) -> bool:
        return self.connection.gone is None

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        return None

    async def request(self, line: str, limit_s: float) -> Reply | None:
        return await self.connection.request(line, limit_s)

    async def gone_within(self, limit_s: float) -> PlayerCrashed | None:
        return await self.connection.gone_within(limit_s)

    async def send(self, line: str, limit_s: float) -> None:
        await self.connection.send(line, limit_s)

    def post(self, line: str, limit_s: float) -> Awaitable[None] | None:
        return self.connection.post(line, limit_s)

    async def close(self) -> None:
        self.connection.fail(PlayerCrashed("ended by the referee"))
