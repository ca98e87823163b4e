"""A served arena rides out its database (issue 51): PostgreSQL stopped under a ladder in play,
for a moment or for a while, and SQLite's disk filled and freed. Meanwhile the API answers 503
with Retry-After, `serve` runs on, and afterwards the ladder goes on with every match recorded
once; a database gone for longer than the config's wait ends `serve` with one line, exit 1."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import http.client
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text, update
from sqlalchemy.exc import OperationalError

from referee.arena.intake import submissions
from referee.arena.intake.pipeline import Intake
from referee.arena.ladder.queue import claim, ladder_members, open_field
from referee.arena.store import lifecycle
from referee.arena.store.config import FieldPlayer
from referee.arena.store.db import Author, Database, Match, MatchState, Version, VersionState
from referee.arena.store.home import Arena, init_arena, open_arena
from referee.arena.store.outages import DatabaseLost, Rider, Trouble, Watch
from referee.records.transcript import read_transcript
from tests.support.archives import Entry, tar
from tests.support.arena import LADDER_CONFIG, add_version, wait_for
from tests.support.arena_databases import PACKAGE, ArenaMaker, PostgresServer, postgresql_bin
from tests.support.arena_serving import Answer, Served, serve_command, serving
from tests.support.facilities import missing
from tests.support.paths import ROOT

# What a state may take to come on a loaded machine: a start, a few matches, an exit.
DEADLINE_S = 120
# A SQLite arena's disk of its own: room for the arena and what the ladder writes, and the
# room the arena keeps (`outages.MIN_FREE_BYTES`).
DISK = "96m"
# A bot's file that a disk filled but for half of it cannot take.
BIG = bytes(2 << 20)


def config(wait_s: int = 300) -> str:
    return LADDER_CONFIG.format(game="double-tictactoe", arena=f"  database_wait_s: {wait_s}\n")


def done(arena: Arena) -> int:
    with arena.database.session() as session:
        return (
            session.scalar(
                select(func.count()).select_from(Match).where(Match.state == MatchState.DONE)
            )
            or 0
        )


def recorded_once(arena: Arena) -> None:
    """Every match done has its transcript, and was counted once in each of its versions."""
    with arena.database.session() as session:
        keys = list(session.scalars(select(Match.key).where(Match.state == MatchState.DONE)))
        counted = session.scalar(select(func.sum(Version.matches))) or 0
    assert keys
    for key in keys:
        assert read_transcript(arena.results / f"{key}.json").match_id == key
    assert counted == 2 * len(keys)


# -- PostgreSQL


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own, which its tests stop and start."""
    bin = postgresql_bin()
    if bin is None:
        missing(f"these tests need Debian's {PACKAGE}: apt-get install {PACKAGE}")
    started = PostgresServer.start(bin)
    try:
        yield started
    finally:
        started.stop()


@contextlib.contextmanager
def arena_on(server: PostgresServer, tmp_path: Path, wait_s: int) -> Iterator[tuple[Arena, str]]:
    """An arena on a new database of `server`, two bots on its ladder; and the organiser's
    token."""
    with server.database() as url:
        path = tmp_path / "arena.yaml"
        path.write_text(config(wait_s), encoding="utf-8")
        token = init_arena(tmp_path / "arena", path, database=url)
        arena = open_arena(tmp_path / "arena")
        try:
            for name in ("ann", "bob"):
                add_version(arena, name)
            yield arena, token
        finally:
            arena.close()


@pytest.mark.postgres
@pytest.mark.parametrize("held", [False, True], ids=["restarted", "stopped-a-while"])
def test_a_postgresql_restart_under_the_ladder_is_ridden_out(
    server: PostgresServer, tmp_path: Path, held: bool
) -> None:
    with (
        arena_on(server, tmp_path, wait_s=300) as (arena, token),
        serving(arena.directory, logs=tmp_path) as served,
    ):
        wait_for("four matches done", lambda: done(arena) >= 4, DEADLINE_S)
        server.halt()
        try:
            if held:
                # Down: every answer is 503, with when to ask again.
                down = served.ask("GET", "/api/status", token)
                assert down.status == 503, down
                assert int(down.headers["retry-after"]) > 0
                assert "database is unavailable" in down.body["error"], down.body
                page = served.page("/bots/ann", token)
                assert page.status == 503, page
                assert int(page.headers["retry-after"]) > 0
        finally:
            server.resume()
        wait_for(
            "200 again", lambda: served.ask("GET", "/api/status", token).status == 200, DEADLINE_S
        )
        after = done(arena)
        wait_for("the ladder to play on", lambda: done(arena) >= after + 4, DEADLINE_S)
        # Its lock, gone with the server's connections, is its own again: a second `serve`
        # is refused.
        wait_for(
            "the lock again",
            lambda: "lock, lost with its database connection, is held again" in served.stderr(),
            DEADLINE_S,
        )
        second = subprocess.run(
            serve_command(arena.directory),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert second.returncode == 2, second
        assert (
            "another `referee arena serve` is serving this arena, or `referee arena final`"
            in second.stderr
        ), second
        assert served.process.poll() is None
        said = served.stop()
        if held:
            assert "the arena's database is unavailable (OperationalError:" in said, said
            assert "the arena's database answers again, after" in said, said
        recorded_once(arena)


@pytest.mark.postgres
def test_postgresql_gone_for_longer_than_the_wait_ends_serve_in_one_line(
    server: PostgresServer, tmp_path: Path
) -> None:
    with (
        arena_on(server, tmp_path, wait_s=3) as (arena, _),
        serving(arena.directory, logs=tmp_path) as served,
    ):
        wait_for("two matches done", lambda: done(arena) >= 2, DEADLINE_S)
        server.halt()
        try:
            code = served.process.wait(DEADLINE_S)
        finally:
            server.resume()
    said = served.stderr()
    assert code == 1, said
    errors = [line for line in said.splitlines() if line.startswith("referee: error:")]
    assert errors == [said.strip().splitlines()[-1]], said
    assert errors[0].startswith(
        "referee: error: the arena's database did not answer for 3 s: OperationalError:"
    ), said
    assert "Traceback" not in said, said


# -- SQLite, on a disk of its own


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of DISK mounted for the test, unmounted after."""
    if os.geteuid() != 0:
        missing("filling a disk of the arena's own needs root, to mount a tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def fill(disk: Path) -> Path:
    """`disk` filled, to its last byte, by a file: the file."""
    filler = disk / "filler"
    chunk = b"\0" * (1 << 20)
    with filler.open("wb", buffering=0) as file:
        while True:
            try:
                file.write(chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
                break
    return filler


def ladder(served: Served, token: str) -> dict[str, Any]:
    """The ladder's part of the organiser's status; empty while the status is refused."""
    status = served.ask("GET", "/api/status", token)
    return dict(status.body["ladder"]) if status.status == 200 else {}


def archives_have_rows(arena: Arena) -> None:
    """No archive without its version's row: a submission refused left none."""
    with arena.database.session() as session:
        ids = set(session.scalars(select(Version.id)))
    stored = {int(path.stem) for path in (arena.directory / "submissions").glob("*.archive")}
    assert stored <= ids, (stored, ids)


def test_a_full_disk_stops_submissions_and_the_ladder_until_there_is_room(
    small_disk: Path,
) -> None:
    path = small_disk.parent / "arena.yaml"
    path.write_text(config(), encoding="utf-8")
    token = init_arena(small_disk / "arena", path)
    arena = open_arena(small_disk / "arena")
    try:
        for name in ("ann", "bob"):
            add_version(arena, name)
        with serving(arena.directory, logs=small_disk.parent) as served:
            wait_for("two matches done", lambda: done(arena) >= 2, DEADLINE_S)
            filler = fill(small_disk)

            def said_full() -> bool:
                outage = ladder(served, token).get("outage")
                return outage is not None and "disk is full" in outage

            wait_for("the organiser's status to say the disk is full", said_full, DEADLINE_S)
            full_since = dt.datetime.now(dt.UTC)
            refused = served.ask("POST", "/api/bots/cat/versions", token, b"an archive")
            assert refused.status == 503, refused
            assert int(refused.headers["retry-after"]) > 0
            assert "disk is full" in refused.body["error"], refused.body
            archives_have_rows(arena)
            # The matches in play end; no other starts.
            wait_for(
                "the ladder to stop playing",
                lambda: ladder(served, token).get("playing") == 0,
                DEADLINE_S,
            )
            freed_at = dt.datetime.now(dt.UTC)
            filler.unlink()
            wait_for(
                "the arena to find room",
                lambda: ladder(served, token).get("outage", "") is None,
                DEADLINE_S,
            )
            after = done(arena)
            wait_for("the ladder to play on", lambda: done(arena) >= after + 4, DEADLINE_S)
            taken = served.ask("POST", "/api/bots/cat/versions", token, b"an archive")
            assert taken.status == 202, taken
            said = served.stop()
            assert "the arena's disk is full" in said, said
            assert "the arena's disk has room again, after" in said, said
        with arena.database.session() as session:
            started = list(session.scalars(select(Match.started_at)))
        assert not [at for at in started if at is not None and full_since < at < freed_at]
        archives_have_rows(arena)
        recorded_once(arena)
    finally:
        arena.close()


@contextlib.contextmanager
def immutable(paths: list[Path]) -> Iterator[None]:
    """`paths` made immutable (`chattr +i`: not even root may write them) while the block
    runs: a disk remounted read-only after an error, as the arena meets it."""
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        missing("making the arena's files immutable needs root and chattr (e2fsprogs)")
    made = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
    if made.returncode != 0:
        missing(f"chattr +i: {made.stderr.strip()} (the file system has no such flag)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def status_now(served: Served, token: str) -> Answer | None:
    """The organiser's status; None when the doors were killed as they answered (SIGBUS)."""
    try:
        return served.ask("GET", "/api/status", token)
    except (AssertionError, OSError, http.client.HTTPException):
        return None


def test_a_database_made_read_only_under_serve_is_ridden_out(tmp_path: Path) -> None:
    """SQLite's files made immutable under a running arena: serve stays up and says why
    (503, never a 500; a room the platform kills for it, SIGBUS, or that found the file
    read-only, is started again), and once they are writable again it plays on, nothing
    lost or recorded twice. Counted from the API: a process that had the file open while
    it was read-only (this test's too) reads it as it was."""
    path = tmp_path / "arena.yaml"
    path.write_text(config(), encoding="utf-8")
    token = init_arena(tmp_path / "arena", path)
    arena = open_arena(tmp_path / "arena")
    directory = arena.directory
    try:
        for name in ("ann", "bob"):
            add_version(arena, name)
    finally:
        arena.close()
    with serving(directory, logs=tmp_path) as served:

        def played() -> int:
            answer = status_now(served, token)
            return -1 if answer is None or answer.status != 200 else answer.body["ladder"]["played"]

        wait_for("two matches done", lambda: played() >= 2, DEADLINE_S)
        files = [directory / f"arena.db{end}" for end in ("", "-wal", "-shm")]
        with immutable([file for file in files if file.exists()]):
            for _ in range(20):
                answer = status_now(served, token)
                if answer is not None:
                    assert answer.status in (200, 503), answer
                    assert answer.status == 200 or answer.body["error"], answer
                assert served.process.poll() is None, served.said()
                time.sleep(0.25)
        writable = time.monotonic()

        def back(what: str, done: Callable[[], bool]) -> None:
            # A room found the file read-only and is started again, after up to 10 s, each
            # time; on a machine loaded by a whole suite a start takes its time too: what is
            # tested is that serve comes back, and how long it took is printed.
            try:
                wait_for(what, done, 3 * DEADLINE_S)
            except AssertionError as error:
                raise AssertionError(f"{error}; serve: {served.said()}") from None

        back("the arena's status once its files are writable", lambda: played() >= 0)
        after = played()
        back("the arena to play on", lambda: played() >= after + 2)
        back_s = time.monotonic() - writable
        said = served.stop()
    assert "Traceback" not in said, said
    arena = open_arena(directory)
    try:
        recorded_once(arena)
    finally:
        arena.close()
    print(f"played on {back_s:.1f} s after the files were writable again")


# -- the rules, without a served arena


def test_work_is_tried_again_while_the_database_is_unavailable() -> None:
    watch = Watch()
    tries: list[int] = []

    def work() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise watch.failed("OperationalError: the server is starting", Trouble.DOWN)
        return "done"

    assert asyncio.run(Rider(wait_s=DEADLINE_S)(work)) == "done"
    assert len(tries) == 3


def test_a_database_unavailable_past_the_wait_is_lost_in_its_own_words() -> None:
    watch = Watch()

    def work() -> None:
        raise watch.failed("OperationalError: connection refused", Trouble.DOWN)

    with pytest.raises(DatabaseLost) as lost:
        asyncio.run(Rider(wait_s=0)(work))
    assert str(lost.value) == (
        "the arena's database did not answer for 0 s: OperationalError: connection refused"
    )


def test_a_full_disk_is_waited_out_past_the_wait() -> None:
    watch = Watch()
    told: list[str] = []
    watch.listen(told.append)
    tries: list[int] = []

    def work() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise watch.failed("OperationalError: database or disk is full", Trouble.FULL)
        watch.answered(wrote=True)
        return "done"

    assert asyncio.run(Rider(wait_s=0)(work)) == "done"
    assert watch.outage is None
    assert len(told) == 2
    assert told[0].startswith("the arena's disk is full (OperationalError: database or disk")
    assert told[1].startswith("the arena's disk has room again, after")


def test_a_session_that_writes_holds_what_it_read(make_arena: ArenaMaker) -> None:
    """What a writing session read (a version's state) no other writer changes before it
    commits: SQLite's write lock from the session's start, PostgreSQL's row lock."""
    arena = make_arena(config_text=config())
    version = add_version(arena, "ann")
    other = create_engine(arena.database.url, connect_args=impatient(arena.database.url))
    try:
        with arena.database.session(write=True) as session:
            (read,) = lifecycle.locked(session, Version.id == version)
            assert read.state == VersionState.PLACING
            with pytest.raises(OperationalError), other.begin() as connection:
                if other.dialect.name == "postgresql":
                    connection.exec_driver_sql("SET lock_timeout = '200ms'")
                connection.execute(
                    update(Version).where(Version.id == version).values(reason="meanwhile")
                )
        with other.begin() as connection:
            connection.execute(update(Version).where(Version.id == version).values(reason="after"))
    finally:
        other.dispose()


def impatient(url: str) -> dict[str, Any]:
    """A connection's arguments that make a writer give up waiting for a lock at once."""
    return {"timeout": 0.2} if url.startswith("sqlite") else {}


def test_an_archive_of_no_version_is_removed_at_the_start(make_arena: ArenaMaker) -> None:
    """A submission's archive stored before its row, the row never committed (the arena
    stopped between the two): removed when the arena starts again; the others kept."""
    arena = make_arena(config_text=config())
    version = add_version(arena, "ann")
    kept, orphan = arena.archive(version), arena.archive(version + 1)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(b"an archive")
    orphan.write_bytes(b"an archive")
    Intake(arena).recover()
    assert kept.exists()
    assert not orphan.exists()


def test_a_claim_tried_again_claims_what_its_first_try_did(make_arena: ArenaMaker) -> None:
    """A claim whose commit went unanswered, though it was made, is tried again at the
    same moment: it hands out the matches the first try marked running, and no others."""
    arena = make_arena(config_text=config())
    for name in ("ann", "bob"):
        add_version(arena, name)
    members = ladder_members(arena)
    players = [FieldPlayer(m.name, m.run, arena.bot_directory(m.version)) for m in members.values()]
    the_field = open_field(arena, members, arena.config.field_config(players, arena.results))
    now = dt.datetime.now(dt.UTC)
    with arena.database.session(write=True) as session:
        first = claim(session, arena.config, the_field, 2, 8, now)
    with arena.database.session(write=True) as session:
        again = claim(session, arena.config, the_field, 2, 8, now)
    assert len(first) == 2
    assert again == first
    with arena.database.session() as session:
        running = session.scalar(
            select(func.count()).select_from(Match).where(Match.state == MatchState.RUNNING)
        )
    assert running == 2


def test_a_large_sort_is_read_while_the_temporary_directory_is_full(
    small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite writes a sort past its cache to a file in its temporary directory: the arena's
    # disk, often. On a full one, a read (the leaderboard's tallies) must not fail.
    monkeypatch.setenv("SQLITE_TMPDIR", str(small_disk))
    database = Database(f"sqlite:///{tmp_path / 'sort.db'}")
    try:
        with database.session(write=True) as session:
            session.execute(text("CREATE TABLE big (n INTEGER, pad TEXT)"))
            rows = [{"n": n, "pad": "x" * 200} for n in range(50_000)]
            session.execute(text("INSERT INTO big VALUES (:n, :pad)"), rows)
        fill(small_disk)
        with database.session() as session:
            query = text("SELECT n, pad FROM big ORDER BY pad, n DESC")
            assert session.execute(query).first() == (49_999, "x" * 200)
    finally:
        database.close()


def test_a_version_the_full_disk_cut_short_is_queued_again_not_failed(small_disk: Path) -> None:
    path = small_disk.parent / "arena.yaml"
    path.write_text(config(), encoding="utf-8")
    init_arena(small_disk / "arena", path)
    arena = open_arena(small_disk / "arena")
    try:
        with arena.database.session() as session:
            author = session.scalars(select(Author)).one()
        archive = tar([Entry("bot.yaml", b"name: cat\nrun: ./bot\n"), Entry("big", BIG)])
        version = submissions.accept(arena, author, "cat", archive)
        filler = fill(small_disk)
        # Room for the database's few pages, not for the bot's file.
        with filler.open("r+b") as file:
            file.truncate(filler.stat().st_size - len(BIG) // 2)
        asyncio.run(Intake(arena).process(version.id))
        with arena.database.session() as session:
            row = session.get_one(Version, version.id)
            assert (row.state, row.reason) == (VersionState.QUEUED, "")
    finally:
        arena.close()
