"""The intake: each submitted version, unpacked, built, validated, and sent to the ladder or
failed with one line and validate's advice. It takes versions in turn between authors
(`intake_line`), `intake.concurrency` at once; each build is bounded by `build.seconds`
and each validation by what its clocks allow (`validate.time_bound_s`).

queued -> building (unpack, build) -> validating -> placing | failed

Each step is a row, `running` while it runs so that the author sees how far it has gone,
then passed or failed with its verdict and log. Whatever goes wrong with one version ends
that version, never the loop. A failed version's files (what it unpacked and built, and
its archive) are removed: nothing reads them again, and its steps' logs are rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select, update

from referee.arena.intake import turns
from referee.arena.intake.archive import Caps, unpack
from referee.arena.intake.venue import HereIntake, IntakeVenue, WorkerLost
from referee.arena.store import bot_bundles, lifecycle
from referee.arena.store.db import (
    IN_INTAKE,
    STEP_LOG_LIMIT,
    Step,
    StepKind,
    StepState,
    Version,
    VersionState,
    utcnow,
)
from referee.arena.store.home import Arena
from referee.arena.store.manifest import Manifest, lift, read_manifest
from referee.arena.store.outages import LAST_WAIT_S, DatabaseLost, Rider, Trouble, trouble_of
from referee.errors import SubmissionError

logger = logging.getLogger(__name__)
# How often the loop looks for queued versions when it is not told of one.
POLL_S = 1.0
# The last lines of a failed build's output that the author is shown with the reason.
BUILD_ADVICE_LINES = 5
# A version whose build or validation loses its worker this many times is failed.
MAX_LOST = 3
# How long the intake's place waits after a worker was lost before it takes another version,
# and when the workers cannot be reached.
LOST_WAIT_S = 1.0
VENUE_WAIT_S = 10.0


class _Failed(Exception):
    """A step failed: the version's reason, and validate's advice if it has some."""

    def __init__(self, reason: str, advice: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.advice = advice


@dataclass(frozen=True)
class _Submitted:
    """What the intake needs of a version, read once."""

    id: int
    bot_name: str
    player_name: str


class Intake:
    """The submission pipeline of one arena. `on_placed`, if set, is told each version that
    reaches `placing`."""

    def __init__(self, arena: Arena, venue: IntakeVenue | None = None) -> None:
        self.arena = arena
        # Where it builds and validates: here, or on the ladder's workers.
        self.venue = venue or HereIntake(arena)
        # The versions whose build or validation lost its worker, and how many times.
        self._lost: dict[int, int] = {}
        self.on_placed: Callable[[int], None] | None = None
        self._wake = asyncio.Event()
        # One place claims the next version at a time.
        self._claiming = asyncio.Lock()
        # Its database work, tried again while the database is unavailable (`outages`).
        self._ride = Rider(arena.config.database_wait_s)

    def notify(self) -> None:
        """A version was queued: look now, not at the next poll."""
        self._wake.set()

    def recover(self) -> None:
        """After a restart: versions the intake was working on are queued again (their
        steps, cut short, failed), to be taken up from the start; archives of no version
        are removed."""
        with self.arena.database.session(write=True) as session:
            ids = select(Version.id).where(Version.state.in_(list(IN_INTAKE)))
            session.execute(
                update(Step)
                .where(Step.state == StepState.RUNNING, Step.version_id.in_(ids))
                .values(
                    state=StepState.FAILED,
                    finished_at=utcnow(),
                    verdict="cut short: the arena stopped; taken up again",
                )
            )
            lifecycle.requeue_interrupted(session)
            known = set(session.scalars(select(Version.id)))
        # An archive stored by a submission whose row was never committed (the arena
        # stopped between the two): no version's, and never to be one's.
        submissions = self.arena.archive(0).parent
        for path in submissions.glob("*.archive") if submissions.is_dir() else ():
            if not path.stem.isdigit() or int(path.stem) not in known:
                path.unlink(missing_ok=True)

    async def run(self) -> None:
        """Process queued versions in turn, `intake.concurrency` at once, forever (cancel to
        stop)."""
        # Those left by an arena stopped between a failure and its removal, or by one older.
        await self._ride(self._discard_failed)
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.arena.config.intake_concurrency):
                    group.create_task(self._take_in())
        finally:
            await self.venue.close()

    async def _take_in(self) -> None:
        """One of the intake's places: a version at a time, the next in line."""
        while True:
            async with self._claiming:
                version_id = await self._ride(self._claim)
            if version_id is not None:
                await self.process(version_id)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S):
                    await self._wake.wait()
            self._wake.clear()

    def _claim(self) -> int | None:
        """The next version in line, moved to building so that no other place takes it."""
        # No build begun on a disk with no room for it.
        self.arena.database.watch.room(self.arena.directory)
        with self.arena.database.session(write=True) as session:
            for version_id in turns.line(session)[:1]:
                (version,) = lifecycle.locked(session, Version.id == version_id)
                if version.state == VersionState.QUEUED:
                    lifecycle.move(version, VersionState.BUILDING)
                    return version_id
        return None

    async def process(self, version_id: int) -> None:
        """Take one version through the intake, to `placing` or `failed`."""
        submitted = await self._ride(functools.partial(self._submitted, version_id))
        if submitted is None:
            return
        try:
            await self._steps(submitted)
        except _Failed as failure:
            self._lost.pop(version_id, None)
            await self._move(version_id, VersionState.FAILED, failure.reason, failure.advice)
            await asyncio.to_thread(_discard, self.arena, version_id)
            return
        except DatabaseLost:
            raise
        except WorkerLost as error:
            await self._worker_lost(version_id, error)
            return
        except Exception as error:
            if trouble_of(error) is Trouble.FULL:
                # Not the bot's doing: taken up again from the start once there is room
                # (`_claim` waits for it), not failed.
                logger.warning("version %s: the arena's disk is full; queued again", version_id)
                await self._move(version_id, VersionState.QUEUED)
                await asyncio.sleep(LAST_WAIT_S)
                return
            # A fault of the referee, not of the bot: the version ends, the intake goes on.
            logger.exception("the intake failed on version %s", version_id)
            reason = f"the arena failed to take it in ({type(error).__name__}); tell the organiser"
            await self._move(version_id, VersionState.FAILED, reason, "")
            await asyncio.to_thread(_discard, self.arena, version_id)
            return
        self._lost.pop(version_id, None)
        await self._ride(functools.partial(self._place, submitted))
        if self.on_placed is not None:
            self.on_placed(submitted.id)

    async def _worker_lost(self, version_id: int, error: WorkerLost) -> None:
        """Not the bot's doing: taken up again from the start, up to MAX_LOST times when a
        worker was lost under it (without end when the workers cannot be reached); a
        version that loses its worker every time is failed, for the organiser to look at.
        What the venue said is the organiser's, in the log: it names the arena's machines."""
        logger.warning("version %s: %s; queued again", version_id, error)
        lost = self._lost.get(version_id, 0) + error.counts
        if lost < MAX_LOST:
            self._lost[version_id] = lost
            await self._move(version_id, VersionState.QUEUED)
            await asyncio.sleep(LOST_WAIT_S if error.counts else VENUE_WAIT_S)
            return
        self._lost.pop(version_id, None)
        reason = (
            f"its build or validation failed on the arena's workers {lost} times;"
            " tell the organiser"
        )
        await self._move(version_id, VersionState.FAILED, reason, "")
        await asyncio.to_thread(_discard, self.arena, version_id)

    def _submitted(self, version_id: int) -> _Submitted | None:
        with self.arena.database.session() as session:
            version = session.get(Version, version_id)
            if version is None:
                return None
            return _Submitted(version.id, version.bot.name, version.player_name)

    def _discard_failed(self) -> None:
        """Remove the files of every failed version that still has some."""
        # Where every version's directory and archive are.
        bots, archives = self.arena.bot_directory(0).parent, self.arena.archive(0).parent
        kept = {int(entry.name) for entry in bots.iterdir() if entry.name.isdigit()}
        kept |= {int(entry.stem) for entry in archives.glob("*.archive") if entry.stem.isdigit()}
        if not kept:
            return
        with self.arena.database.session() as session:
            failed = set(
                session.scalars(select(Version.id).where(Version.state == VersionState.FAILED))
            )
        for version_id in sorted(kept & failed):
            _discard(self.arena, version_id)

    async def _steps(self, submitted: _Submitted) -> None:
        arena = self.arena
        directory = arena.bot_directory(submitted.id)
        await self._move(submitted.id, VersionState.BUILDING)
        async with self._step(submitted.id, StepKind.UNPACK) as step:
            manifest = await asyncio.to_thread(self._unpack, submitted, directory)
            step.passed(f"unpacked; bot.yaml: run {manifest.run!r}")
        await self._ride(functools.partial(self._keep_manifest, submitted.id, manifest))
        if manifest.build is not None:
            async with self._step(submitted.id, StepKind.BUILD) as step:
                result, step.log = await self.venue.build(
                    directory, manifest.build, arena.config.build
                )
                if not result.passed:
                    # What the compiler said is what the author needs; its last lines here.
                    said = [line for line in result.log_tail.splitlines() if line.strip()]
                    advice = "\n".join(f"build: {line}" for line in said[-BUILD_ADVICE_LINES:])
                    raise _Failed(f"the build failed: {result.verdict}", advice)
                step.passed(result.verdict)
        # As built, for workers that do not share this disk: validated and played as packed.
        bundle = await self._ride(functools.partial(bot_bundles.keep, arena, submitted.id))
        await self._move(submitted.id, VersionState.VALIDATING)
        async with self._step(submitted.id, StepKind.VALIDATE) as step:

            def progress(log: str) -> None:
                step.log = log

            validated = await self.venue.validate(
                directory, bundle, manifest.run, submitted.player_name, progress
            )
            step.log = validated.log
            if validated.failure is not None:
                raise _Failed(validated.failure, validated.advice)
            step.passed(validated.verdict)

    def _keep_manifest(self, version_id: int, manifest: Manifest) -> None:
        with self.arena.database.session(write=True) as session:
            version = session.get_one(Version, version_id)
            version.run, version.build = manifest.run, manifest.build

    def _unpack(self, submitted: _Submitted, directory: Path) -> Manifest:
        """Unpack the archive as kept (again, after a restart) and read its bot.yaml."""
        shutil.rmtree(directory, ignore_errors=True)
        caps = self.arena.config.submission
        unpack(self.arena.archive(submitted.id), directory, Caps(caps.max_bytes, caps.max_files))
        lift(directory)
        manifest = read_manifest(directory)
        if manifest.name != submitted.bot_name:
            raise SubmissionError(
                f"bot.yaml: name {manifest.name!r} is not this bot's ({submitted.bot_name!r}):"
                f" change its name to {submitted.bot_name!r}, or submit it as {manifest.name!r}"
            )
        return manifest

    async def _move(
        self, version_id: int, state: VersionState, reason: str = "", advice: str = ""
    ) -> None:
        def moved() -> None:
            with self.arena.database.session(write=True) as session:
                (version,) = lifecycle.locked(session, Version.id == version_id)
                if version.state != state:  # else moved by a try whose commit went unanswered
                    lifecycle.move(version, state, reason, advice)

        await self._ride(moved)

    def _place(self, submitted: _Submitted) -> None:
        """On the ladder: placing, and the bot's earlier version on it retired; nothing
        when it was placed before (by a try whose commit went unanswered)."""
        with self.arena.database.session(write=True) as session:
            (version,) = lifecycle.locked(session, Version.id == submitted.id)
            if version.state == VersionState.VALIDATING:
                lifecycle.place(session, version)

    @contextlib.asynccontextmanager
    async def _step(self, version_id: int, kind: StepKind) -> AsyncIterator[_Running]:
        """A step's row: running while the block runs; passed with the verdict the block
        gives, else failed, with the one line of the SubmissionError or _Failed it raised."""
        step_id = await self._ride(functools.partial(self._started, version_id, kind))
        running = _Running()
        try:
            yield running
        except (SubmissionError, _Failed) as error:
            failure = error if isinstance(error, _Failed) else _Failed(str(error))
            await self._ride(
                functools.partial(
                    self._finish, step_id, StepState.FAILED, failure.reason, running.log
                )
            )
            raise failure from None
        except WorkerLost as error:
            verdict = (
                "cut short: its worker was lost; taken up again"
                if error.counts
                else "cut short: the arena's workers cannot be reached; taken up again"
            )
            await self._ride(
                functools.partial(self._finish, step_id, StepState.FAILED, verdict, running.log)
            )
            raise
        except BaseException as error:
            # Stopped, or the database lost: said if it can be now, else by `recover`.
            with contextlib.suppress(Exception):
                self._finish(step_id, StepState.FAILED, f"stopped ({type(error).__name__})", "")
            raise
        await self._ride(
            functools.partial(self._finish, step_id, StepState.PASSED, running.verdict, running.log)
        )

    def _started(self, version_id: int, kind: StepKind) -> int:
        with self.arena.database.session(write=True) as session:
            row = Step(version_id=version_id, kind=kind, state=StepState.RUNNING)
            session.add(row)
            session.flush()
            return row.id

    def _finish(self, step_id: int, state: StepState, verdict: str, log: str) -> None:
        with self.arena.database.session(write=True) as session:
            row = session.get_one(Step, step_id)
            row.state, row.verdict, row.log = state, verdict, log[:STEP_LOG_LIMIT]
            row.finished_at = utcnow()


def _discard(arena: Arena, version_id: int) -> None:
    """Remove a failed version's files: its directory under bots/ and its archive. What
    cannot be removed is logged, and left."""
    directory = arena.bot_directory(version_id)
    try:
        if directory.exists():
            shutil.rmtree(directory)
        arena.archive(version_id).unlink(missing_ok=True)
        bot_bundles.discard(arena, version_id)
    except OSError as error:
        logger.warning("cannot remove the files of failed version %s: %s", version_id, error)


class _Running:
    """What a step under way has to say when it ends: its verdict and log."""

    def __init__(self) -> None:
        self.verdict = ""
        self.log = ""

    def passed(self, verdict: str) -> None:
        self.verdict = verdict
