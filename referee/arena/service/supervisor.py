"""Serve: the arena's two rooms started, watched and stopped together. Serve itself holds
the arena's lock and the socket the doors answer on, passes the doors' calls to the ladder
and their answers back (`link`), and starts again a room that dies, after a wait that grows
while it keeps dying. It plays nothing and answers no request, so that nothing a room does
can take it down.

A room that ends at its first start ends serve with its reason (a port, a config, a
database that was never there); a database lost past the arena's wait ends it as before,
in one line (`DatabaseLost`); SIGINT or SIGTERM stops both rooms and then serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from referee.arena.service.doors_room import GRACE_S
from referee.arena.service.link import Message, encoded, messages, opened
from referee.arena.store.home import Arena
from referee.arena.store.outages import DatabaseLost, Rider
from referee.errors import ArenaError
from referee.tournaments.cluster import Workers

# How often the arena makes sure it still holds its lock (`serving_lock.Held.keep`).
LOCK_S = 2.0
# The wait before a room that died is started again: doubled at each death, up to the last;
# back to the first once the room has stayed up for STEADY_S.
FIRST_RESTART_S = 0.5
LAST_RESTART_S = 10.0
STEADY_S = 60.0
# What a stopping room is given after its own grace, before it is killed.
STOP_S = GRACE_S + 10.0


class Room(StrEnum):
    DOORS = "doors"
    LADDER = "ladder"


@dataclass
class _Running:
    """A room's process of the moment and serve's end of its link."""

    process: asyncio.subprocess.Process
    writer: asyncio.StreamWriter
    started: float
    up: bool = False
    # The last line it said before it ended, if it said one ("lost", "failed").
    last: str = ""
    lost: bool = False


@dataclass
class _Serve:
    arena: Arena
    listener: socket.socket
    workers: Workers | None
    noted: Callable[[str], None]
    running: dict[Room, _Running] = field(default_factory=dict)
    # Calls of the doors under way at the ladder: serve's number, and the doors' own.
    calls: dict[int, int] = field(default_factory=dict)
    numbered: int = 0
    # Set once each room has been up: a room that dies after is started again.
    been_up: set[Room] = field(default_factory=set)
    both_up: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: bool = False

    async def start(self, room: Room) -> _Running:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        spec = {
            "directory": str(self.arena.directory),
            "parent": os.getpid(),
            "link": theirs.fileno(),
            "listener": self.listener.fileno() if room is Room.DOORS else None,
            "workers": None if self.workers is None else [self.workers.count, self.workers.address],
        }
        passed = [theirs.fileno()] + ([self.listener.fileno()] if room is Room.DOORS else [])
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "referee.arena.service",
                room.value,
                json.dumps(spec),
                stdin=asyncio.subprocess.DEVNULL,
                pass_fds=passed,
            )
        finally:
            theirs.close()
        reader, writer = await opened(mine)
        running = _Running(process, writer, time.monotonic())
        self.running[room] = running
        asyncio.get_running_loop().create_task(self._listen(room, running, reader))
        return running

    async def _listen(self, room: Room, running: _Running, reader: asyncio.StreamReader) -> None:
        async for message in messages(reader):
            event = message.get("event")
            if event == "up":
                running.up = True
                self.been_up.add(room)
                if len(self.been_up) == len(Room):
                    self.both_up.set()
            elif event in ("lost", "failed"):
                running.last = str(message.get("line", ""))
                running.lost = event == "lost"
            elif room is Room.DOORS:
                self._from_doors(message)
            else:
                self._from_ladder(message)

    def _from_doors(self, message: Message) -> None:
        ladder = self.running.get(Room.LADDER)
        up = ladder is not None and ladder.up and ladder.process.returncode is None
        if "tell" in message:
            if up:
                assert ladder is not None
                ladder.writer.write(encoded({"tell": message["tell"]}))
            return
        asked = message.get("id")
        if not isinstance(asked, int):
            return
        if not up:
            self._to_doors({"id": asked, "error": "the ladder is starting again"})
            return
        assert ladder is not None
        self.numbered += 1
        self.calls[self.numbered] = asked
        forwarded = {"call": message.get("call"), "id": self.numbered, "args": message.get("args")}
        ladder.writer.write(encoded(forwarded))

    def _from_ladder(self, message: Message) -> None:
        number = message.get("id")
        if isinstance(number, int) and number in self.calls:
            self._to_doors(dict(message, id=self.calls.pop(number)))

    def _to_doors(self, message: Message) -> None:
        doors = self.running.get(Room.DOORS)
        if doors is not None and doors.process.returncode is None:
            doors.writer.write(encoded(message))

    def ladder_ended(self) -> None:
        """The calls it was answering answered: it cannot."""
        for asked in self.calls.values():
            self._to_doors({"id": asked, "error": "the ladder ended; it is starting again"})
        self.calls.clear()

    async def keep(self, room: Room) -> None:
        """`room` run, and started again each time it dies, until serve stops: ArenaError
        if it dies before it was ever up, DatabaseLost if it lost the database."""
        wait = FIRST_RESTART_S
        while True:
            running = await self.start(room)
            code = await running.process.wait()
            running.writer.close()
            if room is Room.LADDER:
                self.ladder_ended()
            if self.stopping:
                return
            if running.lost:
                raise DatabaseLost(running.last)
            why = running.last or _ended(code)
            if room not in self.been_up:
                raise ArenaError(f"the arena's {room} could not start: {why}")
            if time.monotonic() - running.started >= STEADY_S:
                wait = FIRST_RESTART_S
            self.noted(f"serve: the {room} ended ({why}); starting it again in {wait:g} s")
            await asyncio.sleep(wait)
            wait = min(2 * wait, LAST_RESTART_S)

    async def stop(self) -> None:
        """Both rooms told to stop (SIGTERM), and killed if they have not within STOP_S."""
        self.stopping = True
        processes = [r.process for r in self.running.values() if r.process.returncode is None]
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_S):
                await asyncio.gather(*(process.wait() for process in processes))
        except TimeoutError:
            for process in processes:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await asyncio.gather(*(process.wait() for process in processes))


def _ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit {code}"


async def serve(
    arena: Arena,
    host: str,
    port: int,
    workers: Workers | None = None,
    ready: Callable[[str], None] | None = None,
    noted: Callable[[str], None] | None = None,
    keep_lock: Callable[[], bool] | None = None,
) -> None:
    """Run the arena until SIGINT or SIGTERM; `ready` is told the API's URL once both rooms
    are up, `noted` each line of serve's own (a room started again). ArenaError if it cannot
    listen or a room cannot start; DatabaseLost, in one line, if the database does not
    answer for the config's `database_wait_s`."""
    say = noted or (lambda _line: None)
    listener = listen(host, port)
    serving = _Serve(arena, listener, workers, say)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    tasks = [asyncio.create_task(serving.keep(room), name=room.value) for room in Room]
    if keep_lock is not None:
        ride = Rider(arena.config.database_wait_s)
        tasks.append(asyncio.create_task(_keep(keep_lock, ride, say), name="lock"))
    stopping = asyncio.create_task(stop.wait())
    up = asyncio.create_task(serving.both_up.wait())
    try:
        await asyncio.wait([stopping, up, *tasks], return_when=asyncio.FIRST_COMPLETED)
        if up.done() and ready is not None:
            bound = listener.getsockname()
            ready(f"http://{_shown_host(host)}:{bound[1]}")
        await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
        stopping.cancel()
        up.cancel()
        await serving.stop()
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        listener.close()
    for result in results:
        if isinstance(result, DatabaseLost):
            raise result
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


async def _keep(keep_lock: Callable[[], bool], ride: Rider, noted: Callable[[str], None]) -> None:
    """The arena's lock kept for as long as it is served: taken again after an outage."""
    while True:
        if await ride(keep_lock):
            noted("the arena's lock, lost with its database connection, is held again")
        await asyncio.sleep(LOCK_S)


def listen(host: str, port: int) -> socket.socket:
    """The API's socket, bound here so that a port in use is one line, not uvicorn's exit,
    and kept while the doors' room is started again."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family, reuse_port=False, backlog=128)
        # asyncio sets TCP_NODELAY only on sockets made with IPPROTO_TCP, which
        # create_server's are not; Linux gives it to the accepted ones from their listener.
        # Without it a kept-alive client waits 40 ms for each answer: the body, written
        # after the headers, is held until the client acknowledges them, which it delays.
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return listener
    except OSError as error:
        # A name that does not resolve has a negative errno, which os.strerror does not know.
        reason = error.strerror or str(error)
        raise ArenaError(f"cannot listen on {host}:{port}: {reason}") from None


def _shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
