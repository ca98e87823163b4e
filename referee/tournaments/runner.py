"""Running a tournament: its schedule played with the players of a pool, and resumed.

The results directory is the tournament's only state: a match is done when its transcript
is complete. Transcripts are written atomically, so a referee killed at any moment loses at
most the matches in flight, and running the same config again plays only what is missing.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from referee.errors import ConfigError, SchemaVersionError, TranscriptError
from referee.match import MatchSetup, play_match
from referee.players.trace import Trace
from referee.records.files import check_writable_dir
from referee.records.signing import SigningKey
from referee.records.transcript import (
    Transcript,
    read_signed,
    read_transcript,
    transcript_files,
)
from referee.tournaments.config import TournamentConfig
from referee.tournaments.pool import PlayerPool
from referee.tournaments.schedule import ScheduledMatch, round_robin

LOGS = "logs"


class Observer:
    """Told what a tournament is doing, to show progress; by default it shows nothing."""

    def planned(self, total: int, done: int) -> None:
        """The schedule has `total` matches, of which `done` were played before."""

    def started(self, match: ScheduledMatch) -> None:
        """A match begins."""

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        """A match has ended and its transcript is written."""

    def replaced(self, path: Path, problem: str) -> None:
        """A transcript that could not be read will be played again."""


def transcript_path(config: TournamentConfig, match: ScheduledMatch) -> Path:
    return config.output / f"{match.match_id}.json"


def log_path(config: TournamentConfig, match: ScheduledMatch, role: str) -> Path:
    return config.output / LOGS / f"{match.match_id}.{role}.log"


def clear_results(config: TournamentConfig) -> None:
    """Remove a tournament's transcripts and logs from its results directory, to start over."""
    output = config.output
    if not output.is_dir():
        return
    for path in transcript_files(output):
        if _is_transcript(path):
            path.unlink()
    for path in output.glob(".*.tmp"):
        path.unlink()
    shutil.rmtree(output / LOGS, ignore_errors=True)


def _is_transcript(path: Path) -> bool:
    try:
        read_transcript(path)
    except SchemaVersionError:
        return True
    except TranscriptError:
        return False
    return True


def still_to_play(
    config: TournamentConfig,
    schedule: Sequence[ScheduledMatch],
    observer: Observer,
    key: SigningKey,
) -> list[ScheduledMatch]:
    """The scheduled matches without a complete transcript, in schedule order.

    ConfigError when the results directory holds matches the config would not play, or
    played differently, or transcripts not signed with `key`: mixing them would make the
    standings meaningless.
    """
    output = config.output
    check_writable_dir(output, str(config.path), "output ")
    scheduled = {match.match_id: match for match in schedule}
    restart = f"run with --restart to start over, or set another output in {config.path}"
    # A temporary file is what a kill during a write leaves; its match is played again.
    for path in output.glob(".*.tmp"):
        path.unlink(missing_ok=True)
    for path in transcript_files(output):
        if path.stem not in scheduled and _is_transcript(path):
            raise ConfigError(f"{path}: not a match of this config's schedule; {restart}")
    todo = []
    for match in schedule:
        path = transcript_path(config, match)
        if not path.exists():
            todo.append(match)
            continue
        try:
            transcript, signature = read_signed(path, key.public)
        except TranscriptError as error:
            observer.replaced(path, str(error))
            todo.append(match)
            continue
        if signature.fails:
            raise ConfigError(f"{path}: {signature}; {restart}")
        difference = _difference(config, match, transcript)
        if difference:
            raise ConfigError(f"{path}: played with {difference}; {restart}")
        if not transcript.complete:
            todo.append(match)
    return todo


def _difference(config: TournamentConfig, match: ScheduledMatch, transcript: Transcript) -> str:
    """What differs between a scheduled match and the one a transcript records, if anything."""
    if transcript.game != match.game.id:
        return "a different game"
    if tuple(seat.player for seat in transcript.seats) != match.players:
        return "different players"
    if transcript.clocks != asdict(match.clocks):
        return "different clocks"
    if transcript.policy != config.policy:
        return "a different policy"
    if transcript.seed != match.seed:
        return "a different seed"
    return ""


async def run_tournament(
    config: TournamentConfig,
    key: SigningKey,
    observer: Observer | None = None,
    restart: bool = False,
    trace: Trace | None = None,
) -> list[ScheduledMatch]:
    """Play every scheduled match that has no complete transcript yet; the whole schedule.

    Every transcript is signed with `key`, the results directory's key. `trace`, when given,
    is told every line exchanged with every player.
    """
    observer = observer or Observer()
    schedule = round_robin(config)
    if restart:
        clear_results(config)
    todo = still_to_play(config, schedule, observer, key)
    observer.planned(len(schedule), len(schedule) - len(todo))
    pool = PlayerPool(config.players, trace)
    queue = iter(todo)

    async def worker() -> None:
        for match in queue:
            await _play(config, match, pool, observer, key)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(config.concurrency, len(todo))):
                group.create_task(worker())
    finally:
        await pool.close()
    return schedule


async def _play(
    config: TournamentConfig,
    match: ScheduledMatch,
    pool: PlayerPool,
    observer: Observer,
    key: SigningKey,
) -> None:
    seats = list(zip(match.players, match.game.roles, strict=True))
    players = await asyncio.gather(
        *(pool.acquire(name, log_path(config, match, role)) for name, role in seats)
    )
    setup = MatchSetup(match.match_id, match.game, players, match.clocks, config.policy, match.seed)
    observer.started(match)
    transcript = await play_match(setup, transcript_path(config, match), key)
    await asyncio.gather(
        *(pool.release(name, player) for (name, _), player in zip(seats, players, strict=True))
    )
    observer.finished(match, transcript)
