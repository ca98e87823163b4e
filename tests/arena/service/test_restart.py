"""`referee arena serve` killed with SIGKILL while its matches run, twice, and started again:
nothing of it is left running, every finished match is recorded once with its verifying
transcript, the matches that were running are played again, and the ladder goes on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select

from referee.arena.store.db import Match, MatchState, Seat, Version
from referee.arena.store.home import Arena
from referee.records.transcript import read_transcript
from tests.support.arena import LADDER_CONFIG, add_version, wait_for
from tests.support.arena_databases import ArenaMaker
from tests.support.arena_serving import REFEREE, Served, serving
from tests.support.paths import ROOT

# What a state may take to come on a loaded machine: a start, twenty matches, an exit.
DEADLINE_S = 120
# Matches each start of the arena plays before it is stopped.
MATCHES_PER_START = 10
# A process's state in /proc when a v1 freezer cgroup holds it (stopped in the kernel's
# refrigerator, uninterruptibly), or stopped.
FROZEN = ("D", "T")
CONFIG = LADDER_CONFIG.format(game="double-tictactoe", arena="")


def hold(served: Served, arena: Arena) -> None:
    """Stopped (SIGSTOP), serve and its two rooms, at a moment the database shows a match
    running."""
    while True:
        arena_processes = [served.process.pid, *rooms_of(served.process.pid)]
        for pid in arena_processes:
            os.kill(pid, signal.SIGSTOP)
        # The signal is sent, not yet taken: each thread stops when it is next scheduled.
        wait_for("the arena to stop", all_stopped(arena_processes), DEADLINE_S)
        if keys(arena, MatchState.RUNNING):
            return
        for pid in arena_processes:
            os.kill(pid, signal.SIGCONT)
        wait_for("a match running", lambda: bool(keys(arena, MatchState.RUNNING)), DEADLINE_S)


def all_stopped(pids: list[int]) -> Callable[[], bool]:
    return lambda: all(stopped(pid) for pid in pids)


def rooms_of(pid: int) -> list[int]:
    """Serve's rooms: its children that run `referee.arena.service`."""
    return [
        p.pid for p in processes().values() if p.parent == pid and "referee.arena.service" in p.args
    ]


def kill(served: Served, arena: Arena, script: str) -> tuple[set[str], set[Proc]]:
    """SIGKILL while matches run. The keys of the matches it left running, and its
    processes then: its players die with it, but for a seat frozen while not asked,
    which on cgroup v1 dies only once thawed, by the next start (docs/sandbox.md)."""
    hold(served, arena)
    before = descendants(served.process.pid)
    players = [p for p in before if p.args[1:2] and p.args[1].endswith(f"/{script}")]
    assert len(players) >= 2, before
    served.process.kill()
    assert served.process.wait(DEADLINE_S) == -signal.SIGKILL
    wait_for(
        "what the killed arena left to end, or to be a frozen seat",
        lambda: all(p.state in FROZEN for p in alive(before, script)),
        DEADLINE_S,
    )
    return keys(arena, MatchState.RUNNING), before


def terminate(served: Served, arena: Arena, script: str, in_flight: bool) -> set[str]:
    """A clean stop by SIGTERM (sent while matches run if `in_flight`): exit 0, nothing
    said but its stop, none of its players left. The keys of the matches it left running,
    as the service says it does."""
    if in_flight:
        hold(served, arena)
    held = [served.process.pid, *rooms_of(served.process.pid)]
    served.process.send_signal(signal.SIGTERM)
    for pid in held:
        os.kill(pid, signal.SIGCONT)
    assert served.process.wait(DEADLINE_S) == 0
    said = served.stderr()
    assert "Traceback" not in said and said.strip().endswith("stopped"), said
    assert "ladder: ladder:" not in said, said
    wait_for(
        "the players of the stopped arena to end", lambda: not alive(set(), script), DEADLINE_S
    )
    return keys(arena, MatchState.RUNNING)


def stopped(pid: int) -> bool:
    """Whether every thread of `pid` is stopped by a signal."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            states.append((task / "stat").read_bytes().rsplit(b")", 1)[1].split()[0])
    return bool(states) and all(state == b"T" for state in states)


def keys(arena: Arena, state: MatchState) -> set[str]:
    with arena.database.session() as session:
        return set(session.scalars(select(Match.key).where(Match.state == state)))


@dataclass(frozen=True)
class Proc:
    """A process, known by its pid and start time (a pid may be taken again)."""

    pid: int
    started: int
    parent: int
    state: str
    args: tuple[str, ...]


def processes() -> dict[int, Proc]:
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
            cmdline = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = tuple(arg.decode(errors="replace") for arg in cmdline if arg)
        pid = int(entry.name)
        found[pid] = Proc(pid, int(stat[19]), int(stat[1]), stat[0].decode(), args)
    return found


def descendants(pid: int) -> set[Proc]:
    """Every process under `pid`: the jails (each in a session of its own) and players."""
    table = processes()
    found: set[Proc] = set()
    parents = {pid}
    while True:
        more = {p for p in table.values() if p.parent in parents and p not in found}
        if not more:
            return found
        found |= more
        parents = {p.pid for p in more}


def alive(before: set[Proc], script: str) -> list[Proc]:
    """Those of `before` still alive (zombies are gone enough), and any process running a
    bot's `script`."""
    return [
        p
        for p in processes().values()
        if p.state != "Z" and (p in before or any(a.endswith(f"/{script}") for a in p.args))
    ]


def ended_by_the_start(left: set[Proc]) -> None:
    """The processes a killed arena left (those of `left` alive still: the same pid, started
    at the same time, not a zombie) are ended by the next start: nothing of it runs on."""
    known = {(p.pid, p.started) for p in left}

    def gone() -> bool:
        return not any(p.state != "Z" and (p.pid, p.started) in known for p in processes().values())

    wait_for("what the killed arena left, at the next start", gone, DEADLINE_S)


def done_now(arena: Arena) -> dict[str, tuple[object, bytes]]:
    """Each done match's key: when it was recorded, and its transcript's bytes."""
    with arena.database.session() as session:
        rows = session.execute(
            select(Match.key, Match.finished_at).where(Match.state == MatchState.DONE)
        ).all()
    return {key: (at, (arena.results / f"{key}.json").read_bytes()) for key, at in rows}


def play_on(arena: Arena, owed: set[str], after: int) -> None:
    """Wait until the matches `owed` are done, and MATCHES_PER_START more than `after`."""

    def played() -> bool:
        done = keys(arena, MatchState.DONE)
        return done >= owed and len(done) >= after + MATCHES_PER_START

    wait_for(f"{sorted(owed)} and {MATCHES_PER_START} more matches done", played, DEADLINE_S)


@pytest.fixture
def serve() -> Iterator[Callable[[Path], Served]]:
    """Starts `referee arena serve` by its installed script, as a person does; whatever of
    it a failed test left is killed after."""
    with contextlib.ExitStack() as stack:
        yield lambda directory: stack.enter_context(serving(directory, installed=True))


@pytest.mark.slow
def test_killed_twice_while_playing_the_arena_loses_nothing_and_plays_on(
    make_arena: ArenaMaker, serve: Callable[[Path], Served]
) -> None:
    arena = make_arena(config_text=CONFIG)
    organiser = make_arena.organiser_token(arena)
    script = f"restart_{uuid.uuid4().hex[:12]}.py"
    # Each bot's player under `script`, a name no other process has.
    versions = [add_version(arena, name, script=script) for name in ("ann", "bob", "cat", "dan")]
    # The matches a stop left running, to be played at the next start.
    owed: set[str] = set()
    interrupted: set[str] = set()
    # The matches done at each stop: never recorded or played again after.
    seen: dict[str, tuple[object, bytes]] = {}
    left: set[Proc] = set()
    for _ in range(2):
        served = serve(arena.directory)
        ended_by_the_start(left)
        play_on(arena, owed, len(keys(arena, MatchState.DONE)))
        owed, left = kill(served, arena, script)
        assert owed and not owed & interrupted
        interrupted |= owed
        seen.update(done_now(arena))

    # SIGTERM while matches run: a clean exit, those in flight left running for the next start.
    served = serve(arena.directory)
    ended_by_the_start(left)
    play_on(arena, owed, len(keys(arena, MatchState.DONE)))
    owed = terminate(served, arena, script, in_flight=True)
    interrupted |= owed
    seen.update(done_now(arena))

    # The organiser's end: paused, so that those in flight end, then SIGTERM.
    served = serve(arena.directory)
    play_on(arena, owed, len(keys(arena, MatchState.DONE)))
    assert served.post("/api/ladder/pause", organiser)[0] == 200
    wait_for(
        "the matches in flight to end", lambda: not keys(arena, MatchState.RUNNING), DEADLINE_S
    )
    assert not terminate(served, arena, script, in_flight=False)

    final = done_now(arena)
    assert {key: final.get(key) for key in seen} == seen
    finished = set(final)
    assert interrupted <= finished and not keys(arena, MatchState.RUNNING)
    with arena.database.session() as session:
        recorded = dict(session.execute(select(Match.key, Match.transcript)).all())
        seats = dict(
            session.execute(
                select(Seat.version_id, func.count())
                .join(Match, Match.id == Seat.match_id)
                .where(Match.state == MatchState.DONE)
                .group_by(Seat.version_id)
            ).all()
        )
        counted = dict(session.execute(select(Version.id, Version.matches)).all())
    assert {key: recorded[key] for key in finished} == {
        key: f"results/{key}.json" for key in finished
    }
    # Each transcript on disk is a done match's, and each done match has one.
    on_disk = {path.stem for path in arena.results.glob("*.json")}
    assert on_disk == finished
    # Played to their end, those a stop cut too: none recorded from an unfinished transcript.
    assert all(read_transcript(arena.results / f"{key}.json").complete for key in finished)
    assert counted == seats and set(seats) == set(versions)

    verified = subprocess.run(
        [str(REFEREE), "replay", str(arena.results), "--verify", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert verified.returncode == 0, verified.stderr
    report = json.loads(verified.stdout)
    assert (report["verified"], report["failed"]) == (len(finished), 0)
    assert {Path(row["file"]).stem for row in report["files"]} == finished
    assert {row["outcome"] for row in report["files"]} == {"verified"}
