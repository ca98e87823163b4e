"""What a bot writes that no database keeps as it is, on SQLite and PostgreSQL alike (issue
71): a bot that prints a NUL in its build, in its validation and in its matches is placed and
plays, its NUL kept as ␀ in what the arena keeps of it; one whose validation fails with a NUL
in its last words fails with its reason, and its log shows them; a bot.yaml holding a lone
surrogate is refused in one line."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import select

from referee.arena.intake.pipeline import Intake
from referee.arena.ladder.playing import Ladder
from referee.arena.store.db import Match, MatchState, Step, StepKind, Version, VersionState
from referee.arena.store.home import Arena, add_author
from referee.arena.store.queries import NUL_SIGN
from tests.support.archives import Entry, tar
from tests.support.arena import INTAKE_CONFIG
from tests.support.arena_databases import ArenaMaker
from tests.support.hostile_submissions import PYTHON, RANDOM_PLAYER, bot_yaml, fair_bot, submit

PATIENCE_S = 120
# A random player that writes a NUL to its standard error and in a comment on its standard
# output, at its start and at each request it answers.
NUL_PLAYER = b"""\
import runpy
import sys


def lines():
    for line in sys.__stdin__:
        if line.startswith(("start", "go")):
            sys.__stdout__.write("# a\\0b\\n")
            sys.__stdout__.flush()
            print("said a\\0b", file=sys.stderr, flush=True)
        yield line


sys.stdin = lines()
runpy.run_path("random_player.py", run_name="__main__")
"""
# What the build prints, on both streams: a NUL, as the shell's printf writes one.
NUL_BUILD = "printf 'built a\\000b\\n'; printf 'warned c\\000d\\n' >&2"


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    made = make_arena(config_text=INTAKE_CONFIG)
    add_author(made, "ada")
    return made


def taken_in(arena: Arena, name: str, archive: bytes) -> tuple[Version, dict[str, Step]]:
    version_id = submit(arena, "ada", name, archive)
    asyncio.run(Intake(arena).process(version_id))
    with arena.database.session() as session:
        version = session.get_one(Version, version_id)
        return version, {step.kind: step for step in version.steps}


def test_a_bot_that_prints_nul_in_its_build_validation_and_matches_is_placed_and_plays(
    arena: Arena,
) -> None:
    archive = tar(
        [
            Entry("bot.yaml", bot_yaml("nul", f"{PYTHON} nul.py", NUL_BUILD)),
            Entry("nul.py", NUL_PLAYER),
            Entry("random_player.py", RANDOM_PLAYER.read_bytes()),
        ]
    )
    version, steps = taken_in(arena, "nul", archive)
    assert version.state == VersionState.PLACING, (version.reason, steps)
    assert f"built a{NUL_SIGN}b" in steps[StepKind.BUILD].log
    assert f"warned c{NUL_SIGN}d" in steps[StepKind.BUILD].log
    fair, _ = taken_in(arena, "fair", fair_bot("fair"))
    assert fair.state == VersionState.PLACING

    async def play() -> None:
        running = asyncio.create_task(Ladder(arena).run())
        deadline = time.monotonic() + PATIENCE_S
        try:
            while await asyncio.to_thread(done, arena) < 2:
                assert not running.done(), running.exception()
                assert time.monotonic() < deadline, "no two matches recorded"
                await asyncio.sleep(0.2)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    asyncio.run(play())
    # Its matches are recorded, and its log on disk is what it wrote.
    logs = list((arena.results / "logs").glob("*.log"))
    assert any(b"said a\x00b" in log.read_bytes() for log in logs)


def done(arena: Arena) -> int:
    with arena.database.session() as session:
        return len(session.scalars(select(Match.id).where(Match.state == MatchState.DONE)).all())


def test_a_validation_that_fails_with_nul_in_the_bots_last_words_shows_them(
    arena: Arena,
) -> None:
    quitter = b"import sys\nprint('gone a\\0b', file=sys.stderr, flush=True)\nsys.exit(3)\n"
    archive = tar(
        [Entry("bot.yaml", bot_yaml("quit", f"{PYTHON} quit.py")), Entry("quit.py", quitter)]
    )
    version, steps = taken_in(arena, "quit", archive)
    assert version.state == VersionState.FAILED
    assert version.reason.startswith("validation: FAIL (start")
    # Validate's report shows a control character as its escape, as it shows it on a terminal.
    assert "gone a\\x00b" in steps[StepKind.VALIDATE].log


@pytest.mark.parametrize(("key", "line"), [("run", 2), ("build", 3)])
def test_a_manifest_holding_a_lone_surrogate_is_refused_in_one_line(
    arena: Arena, key: str, line: int
) -> None:
    # As YAML escapes it: bot.yaml's bytes are UTF-8, the text they say is not.
    said = {"run": f"{PYTHON} random_player.py", "build": "true"}
    said[key] += " \\ud800"
    text = f'name: sur\nrun: "{said["run"]}"\nbuild: "{said["build"]}"\n'
    archive = tar(
        [Entry("bot.yaml", text.encode()), Entry("random_player.py", RANDOM_PLAYER.read_bytes())]
    )
    version, _ = taken_in(arena, "sur", archive)
    assert version.state == VersionState.FAILED
    problem = f"{key} holds text that is not UTF-8 (a lone surrogate)"
    assert version.reason == f"bot.yaml:{line}: {problem}"
