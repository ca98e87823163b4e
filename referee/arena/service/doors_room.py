"""The doors' room: the API and the pages on uvicorn, in a process of their own, on the
socket serve listens on (so that a room started again answers on the same port). What
they ask of the ladder (its status, the final) goes through serve to the ladder's room
(`link`); its status is kept a second, so that no crowd at the doors reaches the ladder.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import resource
import socket
from collections.abc import Iterator, Mapping
from typing import Any

import uvicorn

from referee.arena.doors.connections import Doors, Limits
from referee.arena.ladder.queue import set_paused
from referee.arena.service.link import Caller, Kept, LinkError
from referee.arena.store.disk_use import DiskMeter
from referee.arena.store.errors import Busy
from referee.arena.store.home import Arena
from referee.arena.store.outages import watch_read_only
from referee.arena.web.api import Hooks, create_app
from referee.errors import ArenaError

# What a stop waits for the requests under way, before it cuts them.
GRACE_S = 5
# The files the doors keep open besides the API's connections: the database's, the replay
# workers', the logs read.
FILES_BESIDE = 512
# How long an answer of the ladder's is shown again before it is asked anew.
KEPT_S = 1.0
# What a client is told to wait while the ladder starts again (Retry-After).
RETRY_AFTER_S = 2


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to the room."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def hooks(arena: Arena, ladder: Caller) -> Hooks:
    """What the API asks of the rest of the service, through `ladder`, serve's link to the
    ladder's room."""
    kept = Kept(KEPT_S)

    def asked(name: str, *args: Any) -> Mapping[str, Any]:
        try:
            answer = ladder.call(name, *args)
        except LinkError as error:
            busy = Busy(f"the ladder cannot answer now ({error}); try again in a moment")
            busy.retry_after_s = RETRY_AFTER_S
            raise busy from None
        return dict(answer)

    def changed() -> None:
        kept.clear()
        ladder.tell("ladder")

    def paused(value: bool) -> None:
        set_paused(arena, value)
        changed()

    def play_final(fmt: str, rounds: int) -> Mapping[str, Any]:
        try:
            return asked("play_final", fmt, rounds)
        finally:
            kept.clear()

    return Hooks(
        submitted=lambda _version: ladder.tell("intake"),
        field_changed=changed,
        ladder_status=lambda organiser: kept.get(
            ("ladder", organiser), lambda: asked("ladder_status", organiser)
        ),
        set_paused=paused,
        play_final=play_final,
        final_status=lambda: kept.get("final", lambda: asked("final_status")),
    )


async def run_doors_room(arena: Arena, listener: socket.socket, ladder: Caller) -> None:
    """Answer on `listener` until cancelled; the requests under way are given GRACE_S."""
    meter = DiskMeter(arena)
    # The disk by author measured from the start, not at the organiser's first look.
    meter.begin()
    config = Doors(doors_limits()).config(
        create_app(arena, hooks(arena, ladder), meter=meter),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACE_S,
        server_header=False,
    )
    server = _Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            if serving.done():
                serving.result()
                raise ArenaError("the doors stopped as they started")
            await asyncio.sleep(0.05)
        ladder.send({"event": "up"})
        file = asyncio.create_task(watch_read_only(lambda: arena.database.read_only_seen))
        try:
            await asyncio.wait([serving, file], return_when=asyncio.FIRST_COMPLETED)
        finally:
            file.cancel()
        if file.done() and not file.cancelled():
            file.result()
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await serving


def doors_limits() -> Limits:
    """The doors' limits, with their connections in all within the open files the system
    allows: the soft limit raised to them if the hard one allows (a soft limit of 1024 is
    common), else the connections fewer."""
    limits = Limits()
    wanted = limits.in_all + FILES_BESIDE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    allowed = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < allowed:
        soft = allowed
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return limits
    return dataclasses.replace(limits, in_all=max(soft - FILES_BESIDE, limits.per_address))
