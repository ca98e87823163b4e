"""Running a tournament: its schedule played with the players of a pool, and resumed.

The results directory is the tournament's only state (`results.py`). Transcripts are written
atomically, so a referee killed at any moment loses at most the matches in flight, and
running the same config again plays only what is missing or stale. An SPRT stops as soon as
its test reaches a bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from referee.match import MatchSetup, play_match
from referee.players.base import Fingerprint, fingerprint
from referee.players.trace import Trace
from referee.records.signing import SigningKey
from referee.records.transcript import Transcript
from referee.tournaments.config import TournamentConfig
from referee.tournaments.pool import PlayerPool
from referee.tournaments.results import (
    clear_results,
    log_path,
    survey,
    transcript_path,
    write_info,
)
from referee.tournaments.schedule import ScheduledMatch, schedule
from referee.tournaments.sprt import SprtStatus, Verdict
from referee.tournaments.standings import sprt_status


class Observer:
    """Told what a tournament is doing, to show progress; by default it shows nothing."""

    def planned(self, total: int, done: Sequence[Transcript]) -> None:
        """The schedule has `total` matches; `done` were played before, complete."""

    def changed(self, line: str) -> None:
        """The field has changed since the last run: one line per change."""

    def started(self, match: ScheduledMatch) -> None:
        """A match begins."""

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        """A match has ended and its transcript is written."""

    def replaced(self, problem: str) -> None:
        """A transcript that could not be read will be played again."""

    def tested(self, status: SprtStatus) -> None:
        """Where the SPRT stands: before the first match, and after each one."""

    def stopped(self, verdict: Verdict) -> None:
        """The SPRT has reached a bound: no further match starts."""


async def run_tournament(
    config: TournamentConfig,
    key: SigningKey,
    observer: Observer | None = None,
    restart: bool = False,
    trace: Trace | None = None,
) -> list[ScheduledMatch]:
    """Play every scheduled match that has no complete, current transcript yet (for an SPRT,
    until the test decides); the whole schedule.

    Every transcript is signed with `key`, the results directory's key. `trace`, when given,
    is told every line exchanged with every player.
    """
    observer = observer or Observer()
    matches = schedule(config)
    if restart:
        clear_results(config)
    prints = {entrant.name: fingerprint(entrant.spec) for entrant in config.players}
    found = survey(config, matches, {name: p.digest for name, p in prints.items()}, key)
    write_info(config, len(matches))
    for line in found.changes:
        observer.changed(line)
    for problem in found.unreadable:
        observer.replaced(problem)
    finished = list(found.done)

    def decided() -> Verdict | None:
        """Where the SPRT stands, told to the observer; its verdict once it has one."""
        if config.sprt is None:
            return None
        status = sprt_status(config.sprt, config.players[0].name, finished)
        observer.tested(status)
        return None if status.verdict is Verdict.RUNNING else status.verdict

    verdict = decided()
    observer.planned(len(matches), found.done)
    if verdict:
        return matches
    pool = PlayerPool(config.players, trace)
    queue = iter(found.todo)
    stop: list[Verdict] = []

    async def worker() -> None:
        while not stop and (match := next(queue, None)) is not None:
            finished.append(await _play(config, match, pool, observer, key, prints))
            verdict = decided()
            if verdict is not None and not stop:
                stop.append(verdict)
                observer.stopped(verdict)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(config.concurrency, len(found.todo))):
                group.create_task(worker())
    finally:
        await pool.close()
    return matches


async def _play(
    config: TournamentConfig,
    match: ScheduledMatch,
    pool: PlayerPool,
    observer: Observer,
    key: SigningKey,
    prints: dict[str, Fingerprint],
) -> Transcript:
    seats = list(zip(match.players, match.game.roles, strict=True))
    players = await asyncio.gather(
        *(pool.acquire(name, log_path(config, match, role)) for name, role in seats)
    )
    setup = MatchSetup(
        match.match_id,
        match.game,
        players,
        match.clocks,
        config.policy,
        match.seed,
        match.opening,
        [prints.get(name) for name in match.players],
    )
    observer.started(match)
    transcript = await play_match(setup, transcript_path(config, match), key)
    await asyncio.gather(
        *(pool.release(name, player) for (name, _), player in zip(seats, players, strict=True))
    )
    observer.finished(match, transcript)
    return transcript
