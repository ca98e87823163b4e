"""The intake: bot.yaml read and checked; versions unpacked, built, validated, and placed or
failed with one line and validate's advice, each step kept."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from referee.arena.accounts.auth import author_of
from referee.arena.intake.pipeline import Intake
from referee.arena.intake.turns import Waiting, in_turns
from referee.arena.reading import views
from referee.arena.store.config import FieldPlayer
from referee.arena.store.db import IN_INTAKE, Step, StepKind, StepState, Version, VersionState
from referee.arena.store.home import Arena, add_author
from referee.arena.store.manifest import Manifest, lift, read_manifest
from referee.errors import SubmissionError
from referee.players.starter import STARTERS
from referee.sandbox.jail import jail_path
from tests.support.archives import Entry, tar
from tests.support.arena import INTAKE_CONFIG
from tests.support.arena_databases import ArenaMaker
from tests.support.facilities import missing
from tests.support.hostile_submissions import submit
from tests.support.paths import ROOT

MISTAKES = ROOT / "tests" / "players" / "mistakes"
IN_INTAKE_OR_QUEUED = (VersionState.QUEUED, *IN_INTAKE)


# bot.yaml


def manifest_of(tmp_path: Path, text: str) -> Manifest:
    (tmp_path / "bot.yaml").write_text(text)
    return read_manifest(tmp_path)


def test_a_manifest_is_read(tmp_path: Path) -> None:
    text = "name: my-bot_2\nrun: ./bot --fast\nbuild: |\n  cc -o bot bot.c\n  strip bot\n"
    assert manifest_of(tmp_path, text) == Manifest(
        "my-bot_2", "./bot --fast", "cc -o bot bot.c\nstrip bot"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\nrun: x\nbiuld: make\n", "bot.yaml:3: unknown key 'biuld'"),
        ("name: a\n", "bot.yaml: run is missing"),
        ("name: -a\nrun: x\n", "bot.yaml:1: name '-a' must be 1 to 40"),
        ("name: a\nrun: '  '\n", "bot.yaml:2: run is empty"),
        ("name: a\nrun: [x\n", "bot.yaml:3: not valid YAML"),
        ('name: a\nrun: "python3 \'bot.py"\n', "bot.yaml:2: run cannot be parsed"),
        ("name: a\nrun: [python3]\n", "bot.yaml:2: run must be text"),
        ("name: a\nname: b\nrun: x\n", "bot.yaml:2: name given twice"),
        ("- a\n", "bot.yaml:1: must be a mapping"),
        ("name: a\nrun: python3 ../2/bot.py\n", "bot.yaml:2: run: '../2/bot.py' goes up"),
        ("name: a\nrun: cat /work/arena/x\n", "'/work/arena/x' is outside the bot"),
        ("name: a\nrun: http://127.0.0.1:9/\n", "is not a program of the bot"),
        ("name: a\nrun: random\n", "'random' is not a program of the bot"),
    ],
)
def test_a_bad_manifest_is_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SubmissionError) as refused:
        manifest_of(tmp_path, text)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_missing_or_huge_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match=r"bot\.yaml: not found"):
        read_manifest(tmp_path)
    with pytest.raises(SubmissionError, match="larger than 65536 bytes"):
        manifest_of(tmp_path, "name: a\nrun: x\n#" + "x" * 70_000)


def test_a_single_top_directory_is_lifted(tmp_path: Path) -> None:
    (tmp_path / "bot" / "bot").mkdir(parents=True)
    (tmp_path / "bot" / "bot.yaml").write_text("name: a\nrun: x\n")
    (tmp_path / "bot" / "bot" / "inner").write_text("y")
    lift(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot", "bot.yaml"]
    assert (tmp_path / "bot" / "inner").read_text() == "y"


# The pipeline. The system's Python by its path: a pyenv shim on PATH cannot run in the jail.


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    """An arena with one author, on each database."""
    made = make_arena(config_text=INTAKE_CONFIG)
    add_author(made, "ada")
    return made


def process(arena: Arena, version_id: int) -> tuple[Version, dict[str, Step]]:
    asyncio.run(Intake(arena).process(version_id))
    return ended(arena, version_id)


def ended(arena: Arena, version_id: int) -> tuple[Version, dict[str, Step]]:
    with arena.database.session() as session:
        version = session.get_one(Version, version_id)
        steps = {step.kind: step for step in version.steps}
        return version, steps


def yaml_of(name: str, run: str, build: str | None = None) -> bytes:
    return f"name: {name}\nrun: {run}\n".encode() + (f"build: {build}\n".encode() if build else b"")


def python_bot(name: str = "pybot") -> bytes:
    return tar(
        [
            Entry(f"{name}/bot.yaml", yaml_of(name, "/usr/bin/python3 random_player.py")),
            Entry(f"{name}/random_player.py", (STARTERS / "random_player.py").read_bytes()),
        ]
    )


def c_bot(source: Path, build: str) -> bytes:
    return tar(
        [Entry("bot.yaml", yaml_of("cbot", "./bot", build)), Entry("bot.c", source.read_bytes())]
    )


def needs_cc() -> None:
    if shutil.which("cc") is None:
        missing("no cc (a C compiler) on this machine")


def test_a_good_python_bot_reaches_placing(arena: Arena) -> None:
    version, steps = process(arena, submit(arena, "ada", "pybot", python_bot()))
    assert (version.state, version.reason) == (VersionState.PLACING, "")
    assert version.run == "/usr/bin/python3 random_player.py" and version.build is None
    assert set(steps) == {StepKind.UNPACK, StepKind.VALIDATE}
    assert all(step.state == StepState.PASSED for step in steps.values())
    assert steps[StepKind.VALIDATE].verdict.startswith("PASS")
    assert (arena.bot_directory(version.id) / "random_player.py").is_file()


def test_a_program_named_by_name_is_the_systems_whatever_shim_the_arenas_path_finds_first(
    arena: Arena, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arena's PATH finds a version manager's shim first (pyenv's, say), which cannot run
    in the jail, and a bot.yaml may name no program outside the system: `python3` is the
    system's, in the build, in validation and on the ladder."""
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").write_text("#!/bin/sh\necho 'a shim outside the jail' >&2\nexit 127\n")
    (shims / "python3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    system = shutil.which("python3", path=jail_path(os.environ["PATH"]))
    if system is None:
        missing("no python3 in the system's directories on this machine")
    archive = tar(
        [
            Entry(
                "bot.yaml",
                yaml_of(
                    "pybot",
                    "python3 random_player.py",
                    "python3 -c 'import sys; print(sys.executable)' > built-by",
                ),
            ),
            Entry("random_player.py", (STARTERS / "random_player.py").read_bytes()),
        ]
    )
    version, steps = process(arena, submit(arena, "ada", "pybot", archive))
    assert (version.state, version.reason) == (VersionState.PLACING, ""), steps
    directory = arena.bot_directory(version.id)
    assert (directory / "built-by").read_text().strip() == system
    field = arena.config.field_config(
        [FieldPlayer("pybot.1", version.run, directory)], arena.results
    )
    # Found at its start on that PATH, as in the build and validation.
    assert field.players[0].spec.env == {"PATH": jail_path(os.environ["PATH"])}


def test_a_c_bot_is_built_then_placed(arena: Arena) -> None:
    needs_cc()
    archive = c_bot(STARTERS / "random_player.c", "cc -O2 -o bot bot.c")
    version, steps = process(arena, submit(arena, "ada", "cbot", archive))
    assert version.state == VersionState.PLACING, (version.reason, steps)
    assert steps[StepKind.BUILD].state == StepState.PASSED
    assert steps[StepKind.BUILD].verdict.startswith("built in ")


def test_a_bot_that_does_not_build_fails_with_the_exit_status(arena: Arena) -> None:
    archive = c_bot(STARTERS / "random_player.c", "echo no compiler here >&2; exit 7")
    version, steps = process(arena, submit(arena, "ada", "cbot", archive))
    assert (version.state, version.reason) == (
        VersionState.FAILED,
        "the build failed: exit status 7",
    )
    assert steps[StepKind.BUILD].state == StepState.FAILED
    assert steps[StepKind.BUILD].log == "$ echo no compiler here >&2; exit 7\nno compiler here\n"
    assert StepKind.VALIDATE not in steps


@pytest.mark.slow
def test_a_bot_with_unflushed_output_fails_with_validates_advice(arena: Arena) -> None:
    needs_cc()
    archive = c_bot(MISTAKES / "unflushed.c", "cc -o bot bot.c")
    version, steps = process(arena, submit(arena, "ada", "cbot", archive))
    assert version.state == VersionState.FAILED
    assert version.reason.startswith("validation: FAIL (start")
    assert "fflush(stdout)" in version.advice
    assert steps[StepKind.VALIDATE].state == StepState.FAILED
    # The log is validate's report as its command prints it: advice first, then the checks,
    # those never put to the test "not run"; no path of the arena's machine.
    log = steps[StepKind.VALIDATE].log
    assert log.startswith("how to fix start (")
    assert re.search(r"^legal moves +not run ", log, re.MULTILINE)
    assert log.splitlines()[-1].startswith("verdict: FAIL (start)")
    assert str(arena.directory) not in log
    assert "referee-intake-" not in log


def test_an_archive_going_up_fails_at_unpack_naming_the_member(arena: Arena) -> None:
    archive = tar([Entry("bot.yaml", yaml_of("sly", "./bot")), Entry("../../evil", b"x")])
    version, steps = process(arena, submit(arena, "ada", "sly", archive))
    assert version.state == VersionState.FAILED
    assert version.reason == "'../../evil': the path goes up (..)"
    assert steps[StepKind.UNPACK].state == StepState.FAILED
    assert steps[StepKind.UNPACK].verdict == version.reason
    assert not arena.bot_directory(version.id).exists()
    assert not (arena.directory / "evil").exists()


def test_a_manifest_naming_another_bot_fails(arena: Arena) -> None:
    version, _ = process(arena, submit(arena, "ada", "other", python_bot("pybot")))
    assert version.reason == (
        "bot.yaml: name 'pybot' is not this bot's ('other'):"
        " change its name to 'other', or submit it as 'pybot'"
    )


def test_a_new_version_placed_retires_the_one_on_the_ladder(arena: Arena) -> None:
    first = submit(arena, "ada", "pybot", python_bot())
    with arena.database.session() as session:
        session.get_one(Version, first).state = VersionState.RATED
    second = submit(arena, "ada", "pybot", python_bot())
    placed: list[int] = []
    intake = Intake(arena)
    intake.on_placed = placed.append
    asyncio.run(intake.process(second))
    assert placed == [second]
    old, _ = ended(arena, first)
    assert (old.state, old.reason) == (VersionState.RETIRED, "replaced by version 2")


def test_recovery_queues_what_was_cut_short_and_the_loop_takes_it_up(arena: Arena) -> None:
    version_id = submit(arena, "ada", "pybot", python_bot())
    with arena.database.session() as session:
        session.get_one(Version, version_id).state = VersionState.BUILDING
        session.add(Step(version_id=version_id, kind=StepKind.UNPACK))
    intake = Intake(arena)
    intake.recover()
    version, steps = ended(arena, version_id)
    assert version.state == VersionState.QUEUED
    assert steps[StepKind.UNPACK].state == StepState.FAILED

    async def until_placed() -> None:
        loop = asyncio.create_task(intake.run())
        intake.notify()
        # Validation plays matches: minutes on a loaded machine, so the wait is for the state.
        deadline = time.monotonic() + 600
        try:
            while time.monotonic() < deadline:
                if ended(arena, version_id)[0].state not in (
                    VersionState.QUEUED,
                    VersionState.BUILDING,
                    VersionState.VALIDATING,
                ):
                    return
                await asyncio.sleep(0.1)
        finally:
            loop.cancel()
            done, _ = await asyncio.wait([loop], timeout=60)
            assert done, "the intake went on after it was stopped"

    asyncio.run(until_placed())
    version = ended(arena, version_id)[0]
    assert version.state == VersionState.PLACING, (version.reason, version.advice)


def test_a_stopped_intake_stops_whenever_it_is_stopped(arena: Arena) -> None:
    # Python 3.11's asyncio.wait_for could take the stop for its own time-out, and the
    # intake's idle places then polled on forever (a hung `serve` and a hung suite).
    intake = Intake(arena)

    async def stopped_after(delay: float) -> bool:
        loop = asyncio.create_task(intake.run())
        intake.notify()
        await asyncio.sleep(delay)
        loop.cancel()
        done, _ = await asyncio.wait([loop], timeout=30)
        return bool(done)

    for delay in (0.0, 0.001, 0.003, 0.01, 0.02, 0.05) * 4:
        assert asyncio.run(stopped_after(delay)), f"the intake went on after a stop at {delay} s"


# The line: authors in turn, several versions at once.


def test_authors_take_turns_however_many_each_has_sent() -> None:
    at = [dt.datetime(2026, 11, 28, 12, minute, tzinfo=dt.UTC) for minute in range(10)]
    # Ada sent three before Bob and Cy sent one each.
    waiting = [
        Waiting(1, author=1, submitted_at=at[0]),
        Waiting(2, author=1, submitted_at=at[1]),
        Waiting(3, author=1, submitted_at=at[2]),
        Waiting(4, author=2, submitted_at=at[3]),
        Waiting(5, author=3, submitted_at=at[4]),
    ]
    assert in_turns(waiting, {}, frozenset()) == [1, 4, 5, 2, 3]
    # Ada's first is being taken in: Bob's and Cy's go before her second.
    assert in_turns(waiting[1:], {}, frozenset({1})) == [4, 5, 2, 3]
    # Served before, Bob waits for those the intake served longer ago, or never.
    assert in_turns(waiting[1:], {2: at[5], 1: at[4]}, frozenset()) == [5, 2, 4, 3]
    assert in_turns([], {}, frozenset()) == []


def test_the_intake_takes_authors_in_turn_and_several_versions_at_once(
    make_arena: ArenaMaker,
) -> None:
    arena = make_arena(config_text=INTAKE_CONFIG + "  intake: {concurrency: 2}\n")
    token = add_author(arena, "ada")
    add_author(arena, "bob")
    ada = [submit(arena, "ada", f"ada-{n}", python_bot(f"ada-{n}")) for n in (1, 2)]
    bob = submit(arena, "bob", "bob-1", python_bot("bob-1"))
    viewer = author_of(arena, token)
    assert viewer is not None
    places = [views.version(arena, viewer, v)["place_in_line"] for v in (ada[0], bob, ada[1])]
    assert places == [1, 2, 3]
    intake = Intake(arena)

    async def until_placed() -> None:
        loop = asyncio.create_task(intake.run())
        try:
            while any(ended(arena, v)[0].state in IN_INTAKE_OR_QUEUED for v in (*ada, bob)):
                assert not loop.done(), loop
                await asyncio.sleep(0.1)
        finally:
            loop.cancel()

    asyncio.run(asyncio.wait_for(until_placed(), 300))
    for version_id in (*ada, bob):
        version = ended(arena, version_id)[0]
        assert version.state == VersionState.PLACING, (version.reason, version.advice)
    steps = {version: ended(arena, version)[1] for version in (*ada, bob)}
    # Bob's first was taken in before Ada's second, and while Ada's first was validated.
    assert steps[bob][StepKind.UNPACK].started_at < steps[ada[1]][StepKind.UNPACK].started_at
    finished = steps[ada[0]][StepKind.VALIDATE].finished_at
    assert finished is not None and steps[bob][StepKind.UNPACK].started_at < finished
    assert views.version(arena, viewer, bob)["place_in_line"] is None
