"""A scripted player over a fake transport, in the manner of python-chess's MockTransport.

The referee's lines go to a script instead of a pipe; its answers come back through the
same `PlayerConnection` a real program's output goes through, with no process at all, so
the match loop and the fault policy are tested in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from referee.errors import PlayerCrashed
from referee.players.base import PlayerSpec
from referee.players.connection import STDOUT, ConnectedPlayer, PlayerConnection
from referee.players.log import PlayerLog
from referee.protocol import Go, Start, parse


@dataclass(frozen=True)
class Answer:
    """What the scripted player writes `delay_s` after the request (a line, or part of one
    without its end), or `crash`: it ends instead."""

    text: str = ""
    delay_s: float = 0.0
    crash: str | None = None
    newline: bool = True


Script = Callable[[str], Iterable[Answer | str]]


class MockTransport(asyncio.WriteTransport):
    """Takes the referee's lines for a script, and feeds the script's answers back.

    Like a real program it answers one request after the other: an answer is written no
    sooner than the one before it. What it writes while the referee is not reading waits,
    as in a pipe, until the referee reads again.
    """

    def __init__(self, connection: PlayerConnection, script: Script) -> None:
        super().__init__()
        self.connection = connection
        self.script = script
        self.written: list[str] = []
        self._closing = False
        self._reading = True
        self._unread = bytearray()
        self._busy_until = 0.0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        loop = asyncio.get_running_loop()
        for line in bytes(data).decode().splitlines():
            self.written.append(line)
            for answer in self.script(line):
                answer = Answer(answer) if isinstance(answer, str) else answer
                self._busy_until = max(self._busy_until, loop.time() + answer.delay_s)
                loop.call_at(self._busy_until, self._answer, answer)

    def _answer(self, answer: Answer) -> None:
        if answer.crash is not None:
            self._closing = True
            self.connection.fail(PlayerCrashed(answer.crash))
            return
        self._unread += answer.text.encode() + (b"\n" if answer.newline else b"")
        if self._reading:
            self._deliver()

    def _deliver(self) -> None:
        if self._unread:
            data, self._unread = bytes(self._unread), bytearray()
            self.connection.pipe_data_received(STDOUT, data)

    # The OutputPipe side: what the player wrote, read only when the referee reads.
    def pause_reading(self) -> None:
        self._reading = False

    def resume_reading(self) -> None:
        self._reading = True
        asyncio.get_running_loop().call_soon(self._deliver)

    def read_now(self, limit: int) -> bytes:
        data, self._unread = bytes(self._unread[:limit]), self._unread[limit:]
        return data

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return None

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True


def scripted(name: str, script: Script) -> tuple[ConnectedPlayer, MockTransport]:
    """A player that answers with `script`, and its transport (to see what it was sent)."""
    connection = PlayerConnection(PlayerLog(None))
    transport = MockTransport(connection, script)
    connection.connection_made(transport)
    connection.output_made(transport)
    return ConnectedPlayer(PlayerSpec(name, ("scripted", name)), connection), transport


def first_legal(
    at: dict[int, Answer | str] | None = None,
) -> Script:
    """Ready at once, then the first legal move at every step, except the answers in `at`."""
    special = at or {}

    def answer(line: str) -> list[Answer | str]:
        message = parse(line)
        if isinstance(message, Start):
            return ["ready"]
        if isinstance(message, Go):
            return [special.get(message.step, message.legal[0])]
        return []

    return answer
