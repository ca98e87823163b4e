"""The final played by the served arena, at the organiser's word (the organiser's page,
`POST /api/final`): one at a time, on the arena's venue (its workers, each sent the bots as
bundles, or this process), while the API goes on answering. The ladder is paused first: the
season is over, and the final's matches are not to share the cores with its matches.

What `referee arena final` does from the command line, with the served arena's venue; a
final cut short (the arena stopped) is finished by asking again, as the command's is.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from referee.arena.ladder import final
from referee.arena.store import bot_bundles
from referee.arena.store.home import Arena
from referee.errors import ArenaError
from referee.records.signing import SigningKey
from referee.records.transcript import Transcript
from referee.tournaments.cluster import Workers, on_cluster
from referee.tournaments.config import TournamentConfig
from referee.tournaments.played import Played
from referee.tournaments.runner import Observer, run_tournament
from referee.tournaments.schedule import ScheduledMatch

logger = logging.getLogger(__name__)


class FinalState(StrEnum):
    NONE = "none"
    PLAYING = "playing"
    PLAYED = "played"
    FAILED = "failed"


@dataclass
class FinalStatus:
    """The served final, as the organiser's page shows it."""

    state: FinalState = FinalState.NONE
    format: str = ""
    rounds: int = 0
    matches: int = 0
    played: int = 0
    # Why it failed, or the transcripts left out of its standings.
    problem: str = ""


class _Counted(Observer):
    """The final's matches counted into its status, read by the API's threads."""

    def __init__(self, status: FinalStatus, lock: threading.Lock) -> None:
        self._status = status
        self._lock = lock

    def planned(self, total: int, done: Sequence[Played]) -> None:
        with self._lock:
            self._status.matches, self._status.played = total, len(done)

    def resized(self, total: int) -> None:
        with self._lock:
            self._status.matches = total

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        with self._lock:
            self._status.played += 1


class FinalRunner:
    """The served arena's final. `start` is called from the API's threads; the final is
    played on the service's event loop, `loop`, by `run` (`run_coroutine_threadsafe`)."""

    def __init__(
        self,
        arena: Arena,
        workers: Workers | None,
        pause: Callable[[], None],
        run: Callable[[Coroutine[Any, Any, None]], object],
    ) -> None:
        self._arena = arena
        self._workers = workers
        self._pause = pause
        self._run = run
        self._lock = threading.Lock()
        self._status = _published_status(arena)

    def status(self) -> dict[str, Any]:
        with self._lock:
            return asdict(self._status)

    def start(self, fmt: str, rounds: int) -> dict[str, Any]:
        """Close submissions, pause the ladder and play the final; ArenaError, changing
        nothing, while one is being played, or for a final that cannot be (`begin`)."""
        with self._lock:
            if self._status.state is FinalState.PLAYING:
                raise ArenaError("the final is being played: wait for its end")
            settings, key = final.begin(self._arena, fmt, rounds)
            self._status = FinalStatus(FinalState.PLAYING, fmt, rounds)
        self._pause()
        self._run(self._play(settings, key))
        return self.status()

    async def _play(self, settings: TournamentConfig, key: SigningKey) -> None:
        try:
            venue = None
            if self._workers is not None:
                named = final.final_bundles(self._arena, settings)
                bundles = await asyncio.to_thread(bot_bundles.bundles_of, self._arena, named)
                venue = on_cluster(self._workers, bundles)
            await run_tournament(settings, key, _Counted(self._status, self._lock), venue=venue)
            published = await asyncio.to_thread(final.publish, self._arena, settings.output, key)
        except Exception as error:  # the organiser is shown it; the arena goes on
            logger.exception("the final failed")
            with self._lock:
                self._status.state = FinalState.FAILED
                self._status.problem = f"{type(error).__name__}: {error}"
            return
        with self._lock:
            self._status.state = FinalState.PLAYED
            self._status.problem = "; ".join(published.problems)


def _published_status(arena: Arena) -> FinalStatus:
    """The final played before this process started (by `referee arena final`, or an earlier
    `serve`): played, as its published standings say; else none."""
    standings = final.published(arena)["standings"]
    if not isinstance(standings, dict):
        return FinalStatus()
    count = int(standings.get("matches", 0))
    fmt, rounds = final.asked_for(arena)
    return FinalStatus(FinalState.PLAYED, fmt, rounds, matches=count, played=count)
