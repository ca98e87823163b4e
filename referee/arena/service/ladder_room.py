"""The ladder's room: the intake, the ladder and the final, in a process of their own, on
local workers that it starts for both (or a cluster, or itself). It answers the doors'
calls through serve (`link`): the ladder's status, the final's, a final to play; and wakes
at their tells. Its lines (a venue opened, a suspension, an outage) go to standard error.

A room started again (serve restarts one that died) takes up what the last one left: the
versions it was building are queued again, the matches it was playing recorded from their
transcripts or played again (`Intake.recover`, `Ladder.recover`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import sys
from collections.abc import Callable
from typing import Any

from referee.arena.intake.pipeline import Intake
from referee.arena.intake.venue import WorkersIntake
from referee.arena.ladder.final_play import FinalRunner
from referee.arena.ladder.playing import Ladder, LadderObserver
from referee.arena.ladder.queue import set_paused
from referee.arena.service.link import Message, encoded, messages, opened
from referee.arena.store.home import Arena
from referee.arena.store.outages import DatabaseLost, ReadOnlySeen, Rider, watch_read_only
from referee.errors import ArenaError
from referee.tournaments.cluster import Workers, local_cluster


class Said(LadderObserver):
    """The ladder's notes and suspensions, on standard error: serve's log."""

    def noted(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)  # the ladder's lines say they are the ladder's

    def suspended(self, player: str, reason: str) -> None:
        print(f"ladder: {player} suspended: {reason}", file=sys.stderr, flush=True)


async def run_ladder_room(arena: Arena, workers: Workers | None, sock: socket.socket) -> None:
    """Play until cancelled, answering on `sock`: its events, up once it has recovered."""
    reader, writer = await opened(sock)
    told = Said()

    def send(message: Message) -> None:
        writer.write(encoded(message))

    # One cluster for the intake and the ladder: local workers are started once, here.
    cluster = None
    if workers is not None and workers.count:
        cluster = await local_cluster(workers.count, arena.config.tournament, told.noted)
        # As many as the cores allowed: fewer than asked, when each match takes several.
        workers = Workers(len(cluster.workers), cluster.scheduler_address)
    try:
        await _run(arena, workers, told, reader, send)
    except DatabaseLost as error:
        # Said before the room ends, while its link is open: serve ends in this line.
        send({"event": "lost", "line": str(error)})
        await writer.drain()
        raise
    except ArenaError as error:
        send({"event": "failed", "line": str(error)})
        await writer.drain()
        raise
    finally:
        if cluster is not None:
            await cluster.close()  # type: ignore[misc]


async def _run(
    arena: Arena,
    workers: Workers | None,
    told: LadderObserver,
    reader: asyncio.StreamReader,
    send: Callable[[Message], None],
) -> None:
    # An outage's start and end, in the arena's log (this room's: the doors answer 503).
    arena.database.watch.listen(told.noted)
    venue = None if workers is None else WorkersIntake(arena, str(workers.address))
    intake = Intake(arena, venue)
    ladder = Ladder(arena, workers, told)
    ride = Rider(arena.config.database_wait_s)
    await ride(intake.recover)
    await ride(ladder.recover)
    loop = asyncio.get_running_loop()
    intake.on_placed = lambda _version: ladder.notify()

    def paused(value: bool) -> None:
        set_paused(arena, value)
        ladder.notify()

    finals = FinalRunner(
        arena,
        workers,
        lambda: paused(True),
        lambda play: asyncio.run_coroutine_threadsafe(play, loop),
    )
    calls: dict[str, Callable[..., Any]] = {
        "ladder_status": lambda organiser: dataclasses.asdict(
            ladder.status(address=bool(organiser))
        ),
        "final_status": finals.status,
        "play_final": finals.start,
    }
    tells = {"intake": intake.notify, "ladder": ladder.notify}

    async def answer(message: Message) -> None:
        made = calls.get(str(message.get("name")))
        try:
            if made is None:
                raise ArenaError(f"no such call: {str(message.get('name'))[:40]!r}")
            result = await asyncio.to_thread(made, *message.get("args", []))
            send({"id": message["id"], "result": result})
        except (ArenaError, TypeError) as error:
            send({"id": message["id"], "error": str(error)})

    async def listen() -> None:
        answering: set[asyncio.Task[None]] = set()
        async for message in messages(reader):
            if "tell" in message:
                tells.get(str(message["tell"]), lambda: None)()
            elif "call" in message and isinstance(message.get("id"), int):
                message["name"] = message["call"]
                task = asyncio.create_task(answer(message))
                answering.add(task)
                task.add_done_callback(answering.discard)
        # Serve has gone: this room ends with it.

    tasks = [
        asyncio.create_task(intake.run(), name="intake"),
        asyncio.create_task(ladder.run(), name="ladder"),
        asyncio.create_task(listen(), name="link"),
        asyncio.create_task(watch_read_only(lambda: arena.database.read_only_seen), name="file"),
    ]
    send({"event": "up"})
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for task, result in zip(tasks, results, strict=True):
        lost = lost_in(result)
        if lost is not None:
            raise lost
        if isinstance(result, ReadOnlySeen):
            raise result
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise ArenaError(f"the arena's {task.get_name()} failed: {result}") from result


def lost_in(result: object) -> DatabaseLost | None:
    """The DatabaseLost a task ended with, if it did: itself, or within the group of a
    task's own tasks (the ladder's places)."""
    if isinstance(result, DatabaseLost):
        return result
    if isinstance(result, BaseExceptionGroup):
        found: BaseException | None = result.subgroup(DatabaseLost)
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        return found if isinstance(found, DatabaseLost) else None
    return None
