"""The intake on workers: a version is built and validated on a worker that is sent it as a
bundle, and comes back built; a worker lost under a build or a validation is the arena's
failure, and the version is taken up again, not failed, until it has lost three."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.arena.intake import pipeline as intake
from referee.arena.intake.pipeline import Intake
from referee.arena.intake.validating import Validated
from referee.arena.intake.venue import HereIntake, WorkerLost, WorkersIntake
from referee.arena.store.db import Step, StepKind, StepState, Version, VersionState
from referee.arena.store.home import Arena, add_author
from referee.players.starter import STARTERS
from referee.tournaments.bundles import Bundle
from referee.tournaments.cluster import local_cluster
from tests.support.archives import Entry, tar
from tests.support.arena import INTAKE_CONFIG
from tests.support.arena_databases import ArenaMaker
from tests.support.hostile_submissions import submit


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    made = make_arena(config_text=INTAKE_CONFIG)
    add_author(made, "ada")
    return made


def ended(arena: Arena, version_id: int) -> tuple[Version, list[Step]]:
    with arena.database.session() as session:
        version = session.get_one(Version, version_id)
        return version, sorted(version.steps, key=lambda step: step.id)


def built_bot(build: str) -> bytes:
    return tar(
        [
            Entry(
                "bot.yaml", f"name: pybot\nrun: python3 random_player.py\nbuild: {build}\n".encode()
            ),
            Entry("random_player.py", (STARTERS / "random_player.py").read_bytes()),
        ]
    )


def on_a_worker(arena: Arena, versions: list[int]) -> None:
    async def go() -> None:
        cluster = await local_cluster(1, arena.config.tournament, lambda _line: None)
        try:
            taking = Intake(arena, WorkersIntake(arena, cluster.scheduler_address))
            for version_id in versions:
                await taking.process(version_id)
            await taking.venue.close()
        finally:
            await cluster.close()  # type: ignore[misc]

    asyncio.run(go())


@pytest.mark.cluster
def test_a_version_is_built_and_validated_on_a_worker_and_comes_back_built(
    arena: Arena,
) -> None:
    good = submit(arena, "ada", "pybot", built_bot("pwd > built-in"))
    bad = submit(arena, "ada", "pybot", built_bot("echo no compiler here >&2; exit 7"))
    on_a_worker(arena, [good, bad])
    version, steps = ended(arena, good)
    assert (version.state, version.reason) == (VersionState.PLACING, ""), steps
    assert [(s.kind, s.state) for s in steps] == [
        (StepKind.UNPACK, StepState.PASSED),
        (StepKind.BUILD, StepState.PASSED),
        (StepKind.VALIDATE, StepState.PASSED),
    ]
    assert steps[2].verdict.startswith("PASS") and "ticblock" in steps[2].log
    # Built in the worker's directory, not in the arena's; the arena keeps what it built.
    directory = arena.bot_directory(good)
    where = (directory / "built-in").read_text().strip()
    assert "referee-build-" in where and not where.startswith(str(arena.directory))
    assert version.bundle_sha256 == hashlib.sha256(arena.bundle(good).read_bytes()).hexdigest()
    # Its author reads no path of the worker's.
    assert "referee-build-" not in steps[2].log and "dask" not in steps[2].log
    failed, steps = ended(arena, bad)
    assert (failed.state, failed.reason) == (VersionState.FAILED, "the build failed: exit status 7")
    assert steps[1].log == "$ echo no compiler here >&2; exit 7\nno compiler here\n"


class Losing(HereIntake):
    """Validation here, its worker lost the first `times` times."""

    def __init__(self, arena: Arena, times: int) -> None:
        super().__init__(arena)
        self.left = times

    async def validate(
        self,
        directory: Path,
        bundle: Bundle,
        run: str,
        player_name: str,
        progress: Callable[[str], None],
    ) -> Validated:
        if self.left:
            self.left -= 1
            raise WorkerLost("its worker was lost")
        return await super().validate(directory, bundle, run, player_name, progress)


@pytest.mark.parametrize(("times", "placed"), [(2, True), (3, False)])
def test_a_version_whose_worker_was_lost_is_taken_up_again_until_it_has_lost_three(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, times: int, placed: bool
) -> None:
    monkeypatch.setattr(intake, "LOST_WAIT_S", 0)
    version_id = submit(arena, "ada", "pybot", built_bot("echo built"))
    taking = Intake(arena, Losing(arena, times))

    async def tries() -> list[str]:
        states = []
        for _ in range(3):
            await taking.process(version_id)
            states.append(ended(arena, version_id)[0].state)
        return states

    states = asyncio.run(tries())
    version, steps = ended(arena, version_id)
    validations = [s for s in steps if s.kind == StepKind.VALIDATE]
    assert [s.verdict for s in validations[:2]] == [
        "cut short: its worker was lost; taken up again"
    ] * 2
    if placed:
        assert states == [VersionState.QUEUED, VersionState.QUEUED, VersionState.PLACING]
        assert validations[2].state == StepState.PASSED
    else:
        assert states == [VersionState.QUEUED, VersionState.QUEUED, VersionState.FAILED]
        assert version.reason == (
            "its build or validation failed on the arena's workers 3 times; tell the organiser"
        )
