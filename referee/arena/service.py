"""The arena as a service: the API on uvicorn, the intake and the ladder, three tasks of one
event loop in one process, stopped together by SIGINT or SIGTERM. On workers, the intake's
builds and validations and the ladder's matches go to the same ones: local workers are
started once, for both.

uvicorn's own signal handling is left out: it would stop the server alone, then raise the
signal again once it has. Here a signal stops all three; the matches in flight are left
`running`, to be played again at the next start (`Ladder.recover`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import resource
import signal
import socket
from collections.abc import Callable, Iterator

import uvicorn

from referee.arena.doors.connections import Doors, Limits
from referee.arena.intake.pipeline import Intake
from referee.arena.intake.venue import WorkersIntake
from referee.arena.ladder.final_play import FinalRunner
from referee.arena.ladder.playing import Ladder, LadderObserver
from referee.arena.ladder.queue import set_paused
from referee.arena.store.disk_use import DiskMeter
from referee.arena.store.home import Arena
from referee.arena.store.outages import DatabaseLost, Rider
from referee.arena.web.api import Hooks, create_app
from referee.errors import ArenaError
from referee.tournaments.cluster import Workers, local_cluster

# What a stop waits for the requests under way, before it cuts them.
GRACE_S = 5
# The files `serve` keeps open besides the API's connections: the database's, the players'
# pipes and logs, the replay workers'.
FILES_BESIDE = 512
# How often the arena makes sure it still holds its lock (`serving_lock.Held.keep`).
LOCK_S = 2.0


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to the service."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(
    arena: Arena,
    host: str,
    port: int,
    workers: Workers | None = None,
    ready: Callable[[str], None] | None = None,
    observer: LadderObserver | None = None,
    keep_lock: Callable[[], bool] | None = None,
) -> None:
    """Run the arena until SIGINT or SIGTERM; `ready` is told the API's URL once it listens.
    ArenaError if it cannot listen; a task that fails stops the others, and its error is
    raised; DatabaseLost, in one line, if the database does not answer for the config's
    `database_wait_s`."""
    told = observer or LadderObserver()
    # One cluster for the intake and the ladder: local workers are started once, here.
    cluster = None
    if workers is not None and workers.count:
        cluster = await local_cluster(workers.count, arena.config.tournament, told.noted)
        # As many as the cores allowed: fewer than asked, when each match takes several.
        workers = Workers(len(cluster.workers), cluster.scheduler_address)
    try:
        await _serve(arena, host, port, workers, ready, told, keep_lock)
    finally:
        if cluster is not None:
            await cluster.close()  # type: ignore[misc]


async def _serve(
    arena: Arena,
    host: str,
    port: int,
    workers: Workers | None,
    ready: Callable[[str], None] | None,
    told: LadderObserver,
    keep_lock: Callable[[], bool] | None,
) -> None:
    # An outage's start and end, in the arena's log; meanwhile the API answers 503.
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

    def submitted(_version: int) -> None:
        # The intake's wake-up is the loop's, and the API may call from its threads.
        loop.call_soon_threadsafe(intake.notify)

    hooks = Hooks(
        submitted=submitted,
        field_changed=ladder.notify,
        ladder_status=lambda organiser: dataclasses.asdict(ladder.status(address=organiser)),
        set_paused=paused,
        play_final=finals.start,
        final_status=finals.status,
    )
    listener = _listen(host, port)
    # The disk by author measured from the start, not at the organiser's first look.
    meter = DiskMeter(arena)
    meter.begin()
    # The connections' deadlines and caps (per address and in all) are the doors'.
    config = Doors(_doors_limits()).config(
        create_app(arena, hooks, meter=meter),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACE_S,
        server_header=False,
    )
    server = _Server(config)
    stop = asyncio.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    tasks = [
        asyncio.create_task(server.serve(sockets=[listener]), name="api"),
        asyncio.create_task(intake.run(), name="intake"),
        asyncio.create_task(ladder.run(), name="ladder"),
    ]
    if keep_lock is not None:
        tasks.append(asyncio.create_task(_keep(keep_lock, ride, told), name="lock"))
    stopping = asyncio.create_task(stop.wait())
    try:
        while not server.started and not stopping.done():
            if any(task.done() for task in tasks):
                break
            await asyncio.sleep(0.05)
        if server.started and ready is not None:
            bound = listener.getsockname()
            ready(f"http://{_shown_host(host)}:{bound[1]}")
        await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
        stopping.cancel()
        server.should_exit = True
        for task in tasks[1:]:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        listener.close()
    for result in results:
        lost = _lost(result)
        if lost is not None:
            raise lost
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise ArenaError(f"the arena's {task.get_name()} failed: {result}") from result


async def _keep(keep_lock: Callable[[], bool], ride: Rider, told: LadderObserver) -> None:
    """The arena's lock kept for as long as it is served: taken again after an outage."""
    while True:
        if await ride(keep_lock):
            told.noted("the arena's lock, lost with its database connection, is held again")
        await asyncio.sleep(LOCK_S)


def _lost(result: object) -> DatabaseLost | None:
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


def _doors_limits() -> Limits:
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


def _listen(host: str, port: int) -> socket.socket:
    """The API's socket, bound here so that a port in use is one line, not uvicorn's exit."""
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
