"""`referee arena serve` as three processes: serve, the doors and the ladder. A room that
dies is started again while the other goes on (the doors on the same port, the ladder
playing on from where the dead one stopped); both die with serve, however serve ends; the
doors' calls reach the ladder through serve (its status, a pause)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from referee.arena.service import doors_room
from referee.arena.service.link import Caller
from referee.arena.store.db import Match, MatchState
from referee.arena.store.errors import Busy
from referee.arena.store.home import Arena
from tests.support.arena import LADDER_CONFIG, add_version, wait_for
from tests.support.arena_databases import ArenaMaker
from tests.support.arena_serving import DEADLINE_S, Served, serving

CONFIG = LADDER_CONFIG.format(game="ticblock", arena="")


def rooms(served: Served) -> dict[str, int]:
    """The pid of each room of `served` running now, by its name."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == served.process.pid and b"referee.arena.service" in args:
            found[args[args.index(b"referee.arena.service") + 1].decode()] = int(entry.name)
    return found


def count(arena: Arena, state: MatchState) -> int:
    with arena.database.session() as session:
        query = select(func.count()).select_from(Match).where(Match.state == state)
        return session.scalar(query) or 0


def done(arena: Arena) -> int:
    return count(arena, MatchState.DONE)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    made = make_arena(config_text=CONFIG)
    for name in ("ann", "bob"):
        add_version(made, name)
    return made


def test_a_room_killed_is_started_again_and_the_other_goes_on(
    arena: Arena, make_arena: ArenaMaker
) -> None:
    organiser = make_arena.organiser_token(arena)
    with serving(arena.directory) as served:
        wait_for("two matches done", lambda: done(arena) >= 2, DEADLINE_S)
        first = rooms(served)
        assert set(first) == {"doors", "ladder"}, first

        # The ladder killed: the doors answer meanwhile, and a new ladder plays on.
        os.kill(first["ladder"], signal.SIGKILL)
        status, _ = served.get("/api/me", organiser)
        assert status == 200
        wait_for(
            "a new ladder room",
            lambda: rooms(served).get("ladder", first["ladder"]) != first["ladder"],
            DEADLINE_S,
        )
        before = done(arena)
        wait_for("the new ladder's matches", lambda: done(arena) >= before + 2, DEADLINE_S)

        # The doors killed: new ones answer on the same port, and the ladder plays on.
        os.kill(first["doors"], signal.SIGKILL)
        wait_for(
            "new doors answering",
            lambda: (
                rooms(served).get("doors", first["doors"]) != first["doors"]
                and served.ask("GET", "/api/me", organiser).status == 200
            ),
            DEADLINE_S,
        )
        status, body = served.get("/api/status", organiser)
        assert status == 200 and body["ladder"]["venue"] == "this process", body
        said = served.stop()
    assert "serve: the ladder ended (killed by SIGKILL); starting it again" in said, said
    assert "serve: the doors ended (killed by SIGKILL); starting it again" in said, said
    assert said.strip().endswith("stopped"), said


def test_the_rooms_die_with_serve_however_it_ends(arena: Arena) -> None:
    with serving(arena.directory) as served:
        wait_for("both rooms", lambda: len(rooms(served)) == 2, DEADLINE_S)
        pids = rooms(served)
        served.process.kill()
        served.process.wait(DEADLINE_S)
        wait_for(
            "the rooms to end with serve",
            lambda: not any(alive(pid) for pid in pids.values()),
            DEADLINE_S,
        )


def test_a_pause_asked_at_the_doors_reaches_the_ladder(
    arena: Arena, make_arena: ArenaMaker
) -> None:
    organiser = make_arena.organiser_token(arena)
    with serving(arena.directory) as served:
        wait_for("a match done", lambda: done(arena) >= 1, DEADLINE_S)
        status, body = served.post("/api/ladder/pause", organiser)
        assert status == 200 and body["ladder"]["paused"] is True, body

        wait_for(
            "the matches in flight to end",
            lambda: count(arena, MatchState.RUNNING) == 0,
            DEADLINE_S,
        )
        paused_at = done(arena)
        status, body = served.post("/api/ladder/resume", organiser)
        assert status == 200 and body["ladder"]["paused"] is False, body
        wait_for("matches again", lambda: done(arena) > paused_at, DEADLINE_S)
        served.stop()


def test_the_doors_answer_busy_while_the_ladder_starts_again(make_arena: ArenaMaker) -> None:
    """What the doors ask of a ladder that cannot answer (serve says it is starting again)
    is a 503 with its reason and Retry-After; a tell is sent and not waited for."""
    arena = make_arena(config_text=CONFIG)
    doors_end, serve_end = socket.socketpair()
    said: list[dict[str, Any]] = []

    def serve() -> None:
        for line in serve_end.makefile("rb"):
            message = json.loads(line)
            said.append(message)
            if "call" in message:
                answer = {"id": message["id"], "error": "the ladder is starting again"}
                serve_end.sendall(json.dumps(answer).encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        asked = doors_room.hooks(arena, Caller(doors_end))
        with pytest.raises(Busy) as busy:
            asked.ladder_status(True)
        assert busy.value.retry_after_s == doors_room.RETRY_AFTER_S == 2
        assert "the ladder is starting again" in str(busy.value)
        asked.submitted(7)
        wait_for("the tell", lambda: {"tell": "intake"} in said, DEADLINE_S)
        assert said[0] == {"call": "ladder_status", "id": 1, "args": [True]}
    finally:
        doors_end.close()
        serve_end.close()
