"""A room's process from its start to its end: it dies with serve, however serve ends; it
leaves SIGINT to serve (a Ctrl-C reaches the whole terminal's group) and stops on SIGTERM;
and it tells serve how it ended when it can say (`link`): the database lost, or a failure's
line. The rooms themselves are `doors_room` and `ladder_room`."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import socket
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from referee.arena.service.doors_room import run_doors_room
from referee.arena.service.ladder_room import run_ladder_room
from referee.arena.service.link import Caller, encoded
from referee.arena.store.home import Arena, open_arena
from referee.arena.store.outages import DatabaseLost
from referee.errors import RefereeError
from referee.pauses import short_pauses
from referee.sandbox.isolation import remove_left_behind
from referee.tournaments.cluster import Workers

# prctl's option that sends the process a signal when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
# The doors' niceness, the ladder's being serve's: where both want the cores (a crowd at the
# doors, or one author's flood), the ladder's matches get about ten times the doors' share,
# and its pace holds; an idle ladder leaves the doors all of it. The doors' replay workers
# inherit it.
DOORS_NICE = 10
# Exit codes serve reads with the room's last word: a failure, and the database lost.
EXIT_FAILED = 1
EXIT_LOST = 3


def run_room(argv: list[str]) -> int:
    """Run the room `argv` names (its name and serve's JSON spec); its exit code."""
    room, spec = argv[0], json.loads(argv[1])
    _die_with(int(spec["parent"]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    link = socket.socket(fileno=int(spec["link"]))
    arena = open_arena(Path(spec["directory"]))
    try:
        if room == "doors":
            os.nice(DOORS_NICE)
            listener = socket.socket(fileno=int(spec["listener"]))
            caller = Caller(link)
            _until_sigterm(run_doors_room(arena, listener, caller))
            return 0
        # What a ladder room killed before this one left of its jails.
        remove_left_behind()
        workers = None if spec["workers"] is None else Workers(*spec["workers"])
        play(arena, workers, link)
        return 0
    except DatabaseLost as error:
        _last_word(link, "lost", str(error))
        return EXIT_LOST
    except RefereeError as error:
        _last_word(link, "failed", str(error))
        return EXIT_FAILED
    finally:
        arena.close()


def play(arena: Arena, workers: Workers | None, link: socket.socket) -> None:
    """The ladder's room run until SIGTERM."""
    # Matches played in this process (no workers) keep the collector's pauses off their
    # clocks, as `referee tournament` does; the ladder makes the full passes that are due.
    pauses = short_pauses() if workers is None else contextlib.nullcontext()
    with pauses:
        _until_sigterm(run_ladder_room(arena, workers, link))


def _until_sigterm(room: Coroutine[Any, Any, None]) -> None:
    async def main() -> None:
        task = asyncio.create_task(room)
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())


def _die_with(parent: int) -> None:
    """SIGKILL for this process when serve ends, however it ends: a room never outlives it
    (Linux's parent-death signal; serve's pid checked after, in case it ended before)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(EXIT_FAILED)


def _last_word(link: socket.socket, event: str, line: str) -> None:
    with contextlib.suppress(OSError):
        link.sendall(encoded({"event": event, "line": line}))
