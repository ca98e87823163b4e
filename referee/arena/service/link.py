"""The line between serve's processes: JSON, a message a line, on a Unix socket pair that
serve makes for each room it starts (`supervisor`), so that no other process can reach it.

A room sends serve an `event` ("up", "lost", "failed", with a `line`); the doors send the
ladder a `tell` (a wake-up, no answer) or a `call` (an `id`, a `name`, its `args`), which
serve passes to the ladder room of the moment; the answer comes back with the call's `id`,
its `result` or an `error` line. A call that finds no ladder room (it is starting again)
is answered at once with `error`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

# What one message may hold: a status, a final's; the reader refuses more.
LINE_LIMIT = 1 << 20
# What the doors wait for the ladder's answer: longer is a ladder too busy to answer.
CALL_S = 10.0

Message = dict[str, Any]


class LinkError(Exception):
    """The other end could not answer: it is starting again, or it answered with an error."""


def encoded(message: Message) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


async def messages(reader: asyncio.StreamReader) -> AsyncIterator[Message]:
    """The messages read from `reader` until it ends; a line that is not one is skipped."""
    while True:
        try:
            line = await reader.readline()
        except (ValueError, ConnectionError):  # a line past the limit, a room killed
            return
        if not line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            yield message


async def opened(sock: socket.socket) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(sock=sock, limit=LINE_LIMIT)


@dataclass
class Caller:
    """The doors' end: tells and calls sent to the ladder, from any thread, each call
    waiting for its own answer. Blocking: the doors call it from their threads."""

    sock: socket.socket
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _answers: dict[int, Message] = field(default_factory=dict)
    # The calls waiting for their answer: one that came after its call gave up is dropped.
    _waiting: set[int] = field(default_factory=set)
    _arrived: threading.Condition = field(default_factory=threading.Condition)
    _next: int = 0

    def __post_init__(self) -> None:
        self._file = self.sock.makefile("rb")
        threading.Thread(target=self._read, name="link", daemon=True).start()

    def send(self, message: Message) -> None:
        with self._lock:
            self.sock.sendall(encoded(message))

    def tell(self, name: str) -> None:
        """Wake the ladder room (`name`: "intake" or "ladder"); lost if it is starting again,
        which looks at everything as it starts."""
        self.send({"tell": name})

    def call(self, name: str, *args: Any) -> Any:
        """The ladder's answer to `name`(`args`); LinkError with its line if it failed or
        did not answer within CALL_S."""
        with self._arrived:
            self._next += 1
            number = self._next
            self._waiting.add(number)
        try:
            self.send({"call": name, "id": number, "args": list(args)})
            deadline = time.monotonic() + CALL_S
            with self._arrived:
                while number not in self._answers:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise LinkError(f"the ladder did not answer within {CALL_S:g} s")
                    self._arrived.wait(left)
                answer = self._answers.pop(number)
        finally:
            with self._arrived:
                self._waiting.discard(number)
        if "error" in answer:
            raise LinkError(str(answer["error"]))
        return answer.get("result")

    def _read(self) -> None:
        for line in self._file:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if isinstance(answer, dict) and isinstance(answer.get("id"), int):
                with self._arrived:
                    if answer["id"] not in self._waiting:
                        continue
                    self._answers[answer["id"]] = answer
                    self._arrived.notify_all()


@dataclass
class Kept:
    """A call's answer kept for `seconds`: a crowd asking for the ladder's status costs the
    ladder one answer a moment, not one each. `clear` after a change it must show."""

    seconds: float
    _kept: dict[Any, tuple[float, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, asked: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            kept = self._kept.get(asked)
        if kept is not None and time.monotonic() - kept[0] < self.seconds:
            return kept[1]
        made = make()
        with self._lock:
            self._kept[asked] = (time.monotonic(), made)
        return made

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
