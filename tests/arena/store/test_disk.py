"""The arena's disk by author: a failed version's files are removed and its steps' logs kept;
the organiser sees what each author's versions, archives and logs take, measured in a
thread and kept a while."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from referee.arena.intake.pipeline import Intake
from referee.arena.store import disk_use
from referee.arena.store.db import Step, StepKind, Version, VersionState
from referee.arena.store.disk_use import FRESH_S, DiskMeter, DiskUse, tree_bytes
from referee.arena.store.home import Arena, add_author
from referee.players.starter import STARTERS
from referee.tournaments.results import LOGS
from tests.support.archives import Entry, tar
from tests.support.arena import INTAKE_CONFIG, Site, add_match, make_site, seed, wait_for
from tests.support.arena_databases import ArenaMaker
from tests.support.hostile_submissions import PYTHON, bot_yaml, submit

MIB = 1024 * 1024


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    """An arena with one author, on each database."""
    made = make_arena(config_text=INTAKE_CONFIG)
    add_author(made, "ada")
    return made


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def processed(arena: Arena, version_id: int) -> tuple[Version, dict[str, Step]]:
    asyncio.run(Intake(arena).process(version_id))
    with arena.database.session() as session:
        version = session.get_one(Version, version_id)
        return version, {step.kind: step for step in version.steps}


def test_a_failed_build_leaves_its_log_and_no_file(arena: Arena) -> None:
    # 4 MiB in the bot's directory and 2 MiB in its TMPDIR, then a failure.
    build = (
        "head -c 4194304 /dev/urandom > left.bin; head -c 2097152 /dev/zero > $TMPDIR/t;"
        " echo it went wrong; exit 3"
    )
    archive = tar([Entry("bot.yaml", bot_yaml("heavy", "./bot", build))])
    version_id = submit(arena, "ada", "heavy", archive)
    assert arena.archive(version_id).exists()
    version, steps = processed(arena, version_id)
    assert (version.state, version.reason) == (
        VersionState.FAILED,
        "the build failed: exit status 3",
    )
    assert steps[StepKind.BUILD].log == f"$ {build}\nit went wrong\n"
    assert not arena.bot_directory(version_id).exists()
    assert not arena.archive(version_id).exists()


def test_a_version_failing_validation_leaves_no_file(arena: Arena) -> None:
    archive = tar(
        [
            Entry("bot.yaml", bot_yaml("mute", f"{PYTHON} mute.py")),
            Entry("mute.py", b"import sys\nsys.exit(4)\n"),
        ]
    )
    version_id = submit(arena, "ada", "mute", archive)
    version, steps = processed(arena, version_id)
    assert version.state == VersionState.FAILED and version.reason.startswith("validation: FAIL")
    assert steps[StepKind.VALIDATE].log
    assert not arena.bot_directory(version_id).exists()
    assert not arena.archive(version_id).exists()


def test_the_intake_removes_what_failed_versions_left_and_keeps_the_others(arena: Arena) -> None:
    good = tar(
        [
            Entry("bot.yaml", bot_yaml("good", f"{PYTHON} random_player.py")),
            Entry("random_player.py", (STARTERS / "random_player.py").read_bytes()),
        ]
    )
    placed = submit(arena, "ada", "good", good)
    assert processed(arena, placed)[0].state == VersionState.PLACING
    failed = submit(arena, "ada", "bad", tar([Entry("bot.yaml", b"name: bad\n")]))
    assert processed(arena, failed)[0].state == VersionState.FAILED
    # As an arena stopped between the failure and the removal leaves them.
    arena.bot_directory(failed).mkdir()
    (arena.bot_directory(failed) / "left").write_bytes(b"x" * 1000)
    arena.archive(failed).write_bytes(b"archive")

    async def run_a_moment() -> None:
        task = asyncio.create_task(Intake(arena).run())
        try:
            await asyncio.to_thread(
                wait_for,
                "the failed version's files to go",
                lambda: not arena.bot_directory(failed).exists(),
            )
        finally:
            task.cancel()

    asyncio.run(run_a_moment())
    assert not arena.archive(failed).exists()
    assert (arena.bot_directory(placed) / "random_player.py").is_file()
    assert arena.archive(placed).is_file()


def test_only_the_organiser_sees_the_disk(site: Site) -> None:
    assert site.get("/api/disk").status_code == 401
    refused = site.get("/api/disk", "alice")
    assert refused.status_code == 403 and refused.json() == {
        "error": "only the organiser may do this"
    }
    assert site.get("/api/disk", "organiser").status_code == 200


def test_the_disk_is_shown_by_author(site: Site) -> None:
    arena = site.arena
    ids = seed(site)
    # alice's rated version: 3 MiB built; bob's: an archive of 1 MiB. Their match's logs.
    built = arena.bot_directory(ids["ace"]) / "deep" / "er"
    built.mkdir(parents=True)
    (built / "weights").write_bytes(os.urandom(3 * MIB))
    arena.archive(ids["bee"]).write_bytes(os.urandom(MIB))
    # The same version as packed for the workers: an archive of his too.
    arena.bundle(ids["bee"]).parent.mkdir(parents=True, exist_ok=True)
    arena.bundle(ids["bee"]).write_bytes(os.urandom(MIB))
    logs = arena.results / LOGS
    (logs / "arena-000001.xcplayer.log").write_bytes(b"a" * 100_000)
    shown = site.get("/api/disk", "organiser").json()
    by_author = {row["author"]: row for row in shown["authors"]}
    assert set(by_author) == {"organiser", "alice", "bob"}
    alice, bob = by_author["alice"], by_author["bob"]
    # Blocks on disk: at least what was written, and no more than a block or so per file.
    assert 3 * MIB <= alice["bots_bytes"] <= 3 * MIB + 64 * 1024
    assert 100_000 <= alice["logs_bytes"] <= 100_000 + 64 * 1024
    assert alice["archives_bytes"] == 0 and alice["versions"] == 2
    assert 2 * MIB <= bob["archives_bytes"] <= 2 * MIB + 64 * 1024
    assert bob["bots_bytes"] == 0 and 0 < bob["logs_bytes"] <= 64 * 1024
    assert bob["versions"] == 2
    for row in (alice, bob):
        assert row["total_bytes"] == row["bots_bytes"] + row["archives_bytes"] + row["logs_bytes"]
    assert shown["total_bytes"] == sum(row["total_bytes"] for row in shown["authors"])
    # The most first.
    assert [row["author"] for row in shown["authors"]] == ["alice", "bob", "organiser"]
    assert shown["free_bytes"] > 0 and shown["took_s"] >= 0
    assert json.loads(json.dumps(shown)) == shown


def test_only_the_matches_that_left_logs_are_read_a_batch_at_a_time(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every log counted to its seat's author however many batches they take; a match whose
    bots wrote nothing is not read, nor is any seat but those of the logs' matches."""
    arena = site.arena
    ids = seed(site)  # arena-000001: alice's ace against bob's bee, each with a log
    logs = arena.results / LOGS
    for n in range(2, 7):
        add_match(site, f"arena-00000{n}", [(ids["ace"], 1.0), (ids["bee"], 0.0)])
        (logs / f"arena-00000{n}.obplayer.log").write_bytes(b"b" * 10_000)
    add_match(site, "arena-000007", [(ids["ace"], 1.0), (ids["bee"], 0.0)])  # silent bots
    (logs / "arena-999999.xcplayer.log").write_bytes(b"c" * 10_000)  # no match of the arena's
    monkeypatch.setattr(disk_use, "LOG_BATCH", 2)
    read: list[str] = []

    def keep(*args: object) -> None:
        statement = str(args[2])
        if "seats" in statement:
            read.append(statement)

    event.listen(arena.database.engine, "before_cursor_execute", keep)
    try:
        shown = {author.author: author for author in disk_use.measure(arena).authors}
    finally:
        event.remove(arena.database.engine, "before_cursor_execute", keep)
    # bee's logs: its first match's, and five of 10,000 bytes, on four blocks or so each.
    assert 50_000 <= shown["bob"].logs_bytes <= 50_000 + 6 * 8192
    assert 0 < shown["alice"].logs_bytes <= 8192
    # Seven logs of six matches (one no match's), two a batch: four reads, each of its keys.
    assert len(read) == 4, read
    assert all(re.search(r'matches\."?key"? IN', statement) for statement in read), read


def test_a_measure_is_kept_a_while_then_taken_again(site: Site) -> None:
    arena = site.arena
    ids = seed(site)
    directory = arena.bot_directory(ids["ace"])
    directory.mkdir(parents=True)
    kept = DiskMeter(arena, fresh_s=3600)
    before = kept.current()
    (directory / "more").write_bytes(os.urandom(MIB))
    assert kept.current() is before
    again = DiskMeter(arena, fresh_s=0).current()
    (alice,) = [row for row in again.authors if row.author == "alice"]
    assert alice.bots_bytes >= MIB


def test_a_stale_measure_is_shown_while_the_next_is_taken(site: Site) -> None:
    """Past its freshness the last measure is given at once, and the next one, taken in a
    thread meanwhile, from then on: no request but the first waits for a measure."""
    arena = site.arena
    ids = seed(site)
    directory = arena.bot_directory(ids["ace"])
    directory.mkdir(parents=True)
    meter = DiskMeter(arena, fresh_s=0)
    first = meter.current()
    (directory / "more").write_bytes(os.urandom(MIB))
    assert meter.current() is first
    wait_for("the next measure", lambda: meter.current() is not first)
    (alice,) = [row for row in meter.current().authors if row.author == "alice"]
    assert alice.bots_bytes >= MIB


def test_a_tree_is_measured_by_its_blocks_links_not_followed(tmp_path: Path) -> None:
    assert tree_bytes(tmp_path / "none") == 0
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_bytes(os.urandom(MIB))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(2 * MIB))
    (tmp_path / "a" / "link").symlink_to(outside)
    # A sparse file takes only what it wrote.
    with open(tmp_path / "a" / "sparse", "wb") as file:
        file.truncate(100 * MIB)
    assert MIB <= tree_bytes(tmp_path / "a") < 2 * MIB


def test_a_measure_that_took_long_is_kept_nine_times_as_long() -> None:
    def took(seconds: float) -> DiskUse:
        return DiskUse(dt.datetime.now(dt.UTC), seconds, 0, ())

    assert took(1.0).fresh_s(FRESH_S) == FRESH_S == took(1.0).shown()["fresh_s"]
    assert took(10.0).fresh_s(FRESH_S) == 90.0 == took(10.0).shown()["fresh_s"]
    assert took(10.0).fresh_s(0) == 90.0


def test_each_logs_author_is_looked_up_once_while_it_is_there(site: Site) -> None:
    arena = site.arena
    ids = seed(site)  # arena-000001: alice's ace against bob's bee, each with a log
    logs = arena.results / LOGS
    add_match(site, "arena-000002", [(ids["ace"], 1.0), (ids["bee"], 0.0)])
    (logs / "arena-000002.obplayer.log").write_bytes(b"b" * 10_000)
    whose: dict[str, str] = {}
    read: list[str] = []

    def keep(*args: object) -> None:
        if "seats" in str(args[2]):
            read.append(str(args[2]))

    event.listen(arena.database.engine, "before_cursor_execute", keep)
    try:
        first = {a.author: a.logs_bytes for a in disk_use.measure(arena, whose).authors}
        assert len(read) == 1
        assert whose == {
            "arena-000001.xcplayer.log": "alice",
            "arena-000001.obplayer.log": "bob",
            "arena-000002.obplayer.log": "bob",
        }
        (logs / "arena-000002.obplayer.log").unlink()
        again = {a.author: a.logs_bytes for a in disk_use.measure(arena, whose).authors}
    finally:
        event.remove(arena.database.engine, "before_cursor_execute", keep)
    assert len(read) == 1, "the logs' authors were known"
    assert set(whose) == {"arena-000001.xcplayer.log", "arena-000001.obplayer.log"}
    assert again["alice"] == first["alice"] > 0
    assert 0 < again["bob"] <= first["bob"] - 10_000


def test_a_meter_begun_has_its_first_measure_taken_in_a_thread(site: Site) -> None:
    seed(site)
    meter = DiskMeter(site.arena)
    meter.begin()
    try:
        shown = meter.current()
        assert meter.current() is shown, "fresh: kept"
        assert {row.author for row in shown.authors} == {"organiser", "alice", "bob"}
    finally:
        meter.close()
