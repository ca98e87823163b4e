"""Running a tournament: its schedule played with the players of a pool, and resumed.

The results directory is the tournament's only state (`results.py`). Transcripts are written
atomically, so a referee killed at any moment loses at most the matches in flight, and
running the same config again plays only what is missing or stale. An SPRT stops as soon as
its test reaches a bound. A Swiss pairs each round from the results before it, and keeps
the pairing with them (`swiss.py`); a knockout keeps its bracket's seeding, from which and
the results the next ties follow (`knockout.py`).

Where the matches are played is a venue: this process (`LocalVenue`), or the workers of a
Dask cluster (`cluster.py`). Either way each match has cores of its own, and this process
keeps the schedule and writes every result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from referee.errors import ConfigError
from referee.pauses import between_matches
from referee.players.base import Fingerprint, fingerprint
from referee.players.chance import CHANCE_NAME
from referee.players.log import NOTE_PREFIX
from referee.players.startup import unready_line
from referee.players.trace import Trace
from referee.records.signing import SigningKey
from referee.records.store import SYNC_DELAY_S, TranscriptStore
from referee.records.transcript import Fault, Transcript
from referee.sandbox.cores import CorePool, available_cores
from referee.tournaments.config import TournamentConfig
from referee.tournaments.config_models import TournamentFormat
from referee.tournaments.knockout import (
    SEEDING_FILE,
    Bracket,
    Rules,
    Tie,
    bracket_size,
    read_bracket,
    ties,
    write_bracket,
)
from referee.tournaments.played import MatchResult, Played
from referee.tournaments.playing import plan_cores, play_scheduled, programs_of
from referee.tournaments.pool import PlayerPool
from referee.tournaments.results import (
    as_written,
    clear_results,
    log_path,
    survey,
    transcript_path,
    write_info,
)
from referee.tournaments.schedule import (
    Dispatcher,
    ScheduledMatch,
    capacities,
    knockout_matches,
    schedule,
    swiss_matches,
)
from referee.tournaments.sprt import SprtStatus, Verdict, judged
from referee.tournaments.standings import GamePairs, compute, read_results
from referee.tournaments.swiss import Paired, Round, pair, past_of, read_rounds, write_rounds
from referee.tournaments.withdrawal import withdrawal, withdrawn_players

# What is read of the end of a player's log for its last words.
LAST_WORDS_BYTES = 4096


class Observer:
    """Told what a tournament is doing, to show progress; by default it shows nothing."""

    def planned(self, total: int, done: Sequence[Played]) -> None:
        """The schedule has `total` matches; `done` were played before, complete."""

    def changed(self, line: str) -> None:
        """The field has changed since the last run: one line per change."""

    def noted(self, line: str) -> None:
        """A line on how the matches are run: fewer at once than asked, a lost worker."""

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

    def paired(self, round_: Round, rounds: int, seconds: float) -> None:
        """A Swiss's next round (of `rounds`) is paired, in `seconds`, and about to be
        played."""

    def resized(self, total: int) -> None:
        """The schedule now has `total` matches: a knockout's tie-break games, a Swiss's byes
        and players who left."""

    def bracketed(self, ties: Sequence[Tie], rounds: int) -> None:
        """A knockout's next round (of `rounds`) has its players, and is about to be played."""

    def won(self, winner: str) -> None:
        """A knockout's final is decided: `winner` won it."""


class Venue(Protocol):
    """Where a tournament's matches are played: `capacity` places at a time, each taking
    `batch` matches to play one after the other, each result whole in its file in the
    results directory before `play` returns it, and on the disk before `close` returns."""

    capacity: int

    @property
    def at_once(self) -> int:
        """The matches it plays at the same moment: `capacity`, or fewer where some places
        hold a batch ready for a worker to start as soon as another ends (a cluster)."""
        ...

    def batch(self, remaining: int) -> int:
        """How many of the `remaining` matches a place takes at once."""
        ...

    async def play(self, matches: Sequence[ScheduledMatch]) -> list[Transcript]: ...

    async def close(self) -> None: ...


# Opens the venue of a tournament, given its config, key, the players' fingerprints, the
# observer and the players withdrawn (kept up to date by the run: each name and why); the
# referee process itself when none is given.
OpenVenue = Callable[
    [TournamentConfig, SigningKey, Mapping[str, Fingerprint], Observer, Mapping[str, str]],
    Awaitable[Venue],
]


class LocalVenue:
    """The matches played in this process, each on cores of its own: `concurrency` at a time,
    or as many as the cores allow."""

    def __init__(
        self,
        config: TournamentConfig,
        key: SigningKey,
        prints: Mapping[str, Fingerprint],
        observer: Observer,
        trace: Trace | None = None,
        withdrawn: Mapping[str, str] | None = None,
        sync_delay_s: float = SYNC_DELAY_S,
        pool: PlayerPool | None = None,
    ) -> None:
        """`withdrawn`, kept up to date by the run, names the players no longer started, and
        why. A transcript is whole in its file when its match's `play` returns, and on the
        disk at most `sync_delay_s` later (`TranscriptStore`). The players' processes are
        `pool`'s if given (its owner admits the entrants and closes it), else its own."""
        self._withdrawn = withdrawn if withdrawn is not None else {}
        self._config = config
        self._store = TranscriptStore(key, sync_delay_s)
        self._prints = prints
        self._observer = observer
        self._own_pool = pool is None
        self._pool = pool if pool is not None else PlayerPool(config.players, trace)
        self._cores: CorePool | None = None
        self.capacity = config.concurrency
        cores = available_cores()
        self._plan = plan_cores(config, cores)
        for note in self._plan.notes:
            observer.noted(note)
        if self._plan.most:
            self._cores = CorePool(cores)
            allowed = self._plan.matches_at_once(len(cores))
            if config.concurrency > allowed:
                self.capacity = allowed
                observer.noted(
                    f"concurrency {config.concurrency} is more than the {len(cores)} cores"
                    f" allow at {self._plan.fewest} per match: {allowed} at a time"
                )

    @property
    def at_once(self) -> int:
        return self.capacity

    def batch(self, remaining: int) -> int:
        return 1

    async def play(self, matches: Sequence[ScheduledMatch]) -> list[Transcript]:
        return [await self._play(match) for match in matches]

    async def _play(self, match: ScheduledMatch) -> Transcript:
        config = self._config
        needed = self._plan.needed(match, len(programs_of(config, match)))
        cores = await self._cores.acquire(needed) if self._cores and needed else None
        self._observer.started(match)
        try:
            return await play_scheduled(
                config,
                match,
                self._pool,
                self._prints,
                lambda role: log_path(config, match, role),
                lambda done: self._store.store(
                    transcript_path(config, match), as_written(config, done)
                ),
                cores,
                self._withdrawn,
            )
        finally:
            if self._cores is not None and cores is not None:
                self._cores.give(cores)
            between_matches()

    async def close(self) -> None:
        try:
            await self._store.close()
        finally:
            if self._own_pool:
                await self._pool.close()


async def run_tournament(
    config: TournamentConfig,
    key: SigningKey,
    observer: Observer | None = None,
    restart: bool = False,
    trace: Trace | None = None,
    venue: OpenVenue | None = None,
) -> list[ScheduledMatch]:
    """Play every scheduled match that has no complete, current transcript yet (for an SPRT,
    until the test decides; for a Swiss, round after round, each paired as the one before
    ends; for a knockout, tie by tie as the bracket goes); the whole schedule.

    Every transcript is signed with `key`, the results directory's key. `trace`, when given,
    is told every line exchanged with every player. `venue` opens where the matches are
    played; this process by default.
    """
    observer = observer or Observer()
    if restart:
        clear_results(config)
    prints = {entrant.name: fingerprint(entrant.spec) for entrant in config.players}
    place = _Place(config, key, prints, observer, trace, venue)
    try:
        if config.format is TournamentFormat.SWISS:
            return await _run_swiss(config, key, observer, place)
        if config.format is TournamentFormat.KNOCKOUT:
            return await _run_knockout(config, key, observer, place)
        matches = schedule(config)
        await _play(config, key, observer, matches, len(matches), place)
        return matches
    finally:
        await place.close()


class _Place:
    """Where a tournament's matches are played: opened when a match is first to be played,
    and kept for the rest of the run (a Swiss's later rounds), with the players withdrawn
    so far, which the run keeps up to date (each name and why)."""

    def __init__(
        self,
        config: TournamentConfig,
        key: SigningKey,
        prints: Mapping[str, Fingerprint],
        observer: Observer,
        trace: Trace | None,
        venue: OpenVenue | None,
    ) -> None:
        self.config, self.key, self.prints, self.observer = config, key, prints, observer
        self.trace, self.venue = trace, venue
        self.withdrawn: dict[str, str] = {}
        self._open: Venue | None = None

    async def open(self) -> Venue:
        if self._open is None:
            if self.venue is None:
                self._open = LocalVenue(
                    self.config, self.key, self.prints, self.observer, self.trace, self.withdrawn
                )
            else:
                self._open = await self.venue(
                    self.config, self.key, self.prints, self.observer, self.withdrawn
                )
        return self._open

    async def close(self) -> None:
        if self._open is not None:
            await self._open.close()


class _Size:
    """The size of a schedule that is made as the run goes (a Swiss's rounds, a knockout's
    ties): told to the observer when the run's first matches are about to be played, and
    each time it changes after that."""

    def __init__(self, observer: Observer, total: int) -> None:
        self._observer = observer
        self.total = total
        self._told = False

    def planned(self, done: Sequence[Played]) -> None:
        """What `_play` tells of the schedule: once, as later matches are told as they end."""
        if not self._told:
            self._observer.planned(self.total, done)
            self._told = True

    def resize(self, total: int) -> None:
        if total != self.total:
            self.total = total
            if self._told:
                self._observer.resized(total)


async def _run_swiss(
    config: TournamentConfig, key: SigningKey, observer: Observer, place: _Place
) -> list[ScheduledMatch]:
    """Play a Swiss round after round: the rounds already paired as they were paired (a
    resumed run finishes the last of them), then each next round paired from the results
    of the ones before."""
    per_pairing = config.games_per_pairing
    rounds_to_play = config.games[0].rounds
    entrants = [player.name for player in config.players]
    stored = read_rounds(config.output)
    if stored is not None and stored.games_per_pairing != per_pairing:
        raise ConfigError(
            f"{config.output}: its rounds were paired for {stored.games_per_pairing} games per"
            f" pairing, not {per_pairing}; run with --restart to start over, or set another"
            f" output in {config.path}"
        )
    rounds = list(stored.rounds) if stored is not None else []
    if len(rounds) > rounds_to_play:
        # Their matches are no longer scheduled: the survey sets them aside, and says so.
        observer.changed(
            f"rounds: {rounds_to_play} now; the pairings of rounds {rounds_to_play + 1} to"
            f" {len(rounds)} are dropped"
        )
        del rounds[rounds_to_play:]
    paired = {name for r in rounds for p in r.pairs for name in (*p, r.bye) if name}
    if rounds:
        for name in (name for name in entrants if name not in paired):
            observer.changed(
                f"player {name}: new in the field; paired from round {len(rounds) + 1},"
                " with no score"
            )
    absent = tuple(sorted(paired - set(entrants)))
    # The matches of a full field, until the last round is paired: byes and players who
    # left make fewer.
    size = _Size(observer, rounds_to_play * (len(entrants) // 2) * per_pairing)
    while True:
        matches = swiss_matches(config, rounds)
        last = len(rounds) >= rounds_to_play
        if last:
            size.resize(len(matches))
        done = await _play(
            config, key, observer, matches, size.total, place, size.planned, keep=True
        )
        if last:
            write_rounds(config.output, Paired(per_pairing, tuple(rounds), absent))
            return matches
        out = withdrawn_players(done) | set(place.withdrawn)
        past = past_of(rounds, done, per_pairing, entrants)
        field = [n for n in entrants if n not in out]
        started = time.perf_counter()
        # In a thread: a large field's pairing takes seconds, which the event loop (the
        # progress shown, a cluster's heartbeats) does not wait for.
        rounds.append(await asyncio.to_thread(pair, len(rounds) + 1, field, past, per_pairing))
        seconds = time.perf_counter() - started
        # Kept before its first match is played.
        write_rounds(config.output, Paired(per_pairing, tuple(rounds), absent))
        observer.paired(rounds[-1], rounds_to_play, seconds)


async def _run_knockout(
    config: TournamentConfig, key: SigningKey, observer: Observer, place: _Place
) -> list[ScheduledMatch]:
    """Play a knockout tie by tie, each round once the one before it has its winners, a
    drawn tie's tie-break games once its games are played; from the bracket kept with the
    results, or the one the field makes now."""
    rules = Rules(config.games_per_pairing, config.tiebreak_games, config.tiebreak, config.seed)
    kept = read_bracket(config.output)
    entrants = [player.name for player in config.players]
    if kept is None:
        kept = Bracket(tuple(seeding(config, observer)), rules)
    elif kept.rules != rules:
        raise ConfigError(
            f"{config.output}: its bracket was set with other tie rules (games_per_pairing,"
            " tiebreak_games, tiebreak, seed); run with --restart to start over, or set"
            f" another output in {config.path}"
        )
    for name in entrants:
        if name not in kept.seeds:
            observer.changed(
                f"player {name}: new in the field, but the bracket was set when the knockout"
                " began; it does not play"
            )
    game_id = config.games[0].game.id
    # The games of the ties without their tie-breaks, until these come.
    size = _Size(observer, (len(kept.seeds) - 1) * rules.games)

    found = read_results(config.output, key.public) if config.output.is_dir() else iter(())
    # A player no longer in the config has its matches set aside, as in every format.
    present = {*entrants, CHANCE_NAME}
    done = [
        MatchResult.of(t)
        for t in found
        if isinstance(t, Transcript) and all(seat.player in present for seat in t.seats)
    ]
    shown = 0  # the rounds told
    while True:
        withdrawn = withdrawn_players(done)
        absent = tuple(sorted((set(kept.seeds) - set(entrants)) | withdrawn))
        if absent != kept.absent or not (config.output / SEEDING_FILE).exists():
            kept = Bracket(kept.seeds, rules, absent)
            config.output.mkdir(parents=True, exist_ok=True)
            write_bracket(config.output, kept)
        rounds = ties(kept.seeds, rules, done, game_id, absent)
        if len(rounds) > shown:
            shown = len(rounds)
            observer.bracketed(rounds[-1], bracket_size(len(kept.seeds)).bit_length() - 1)
        matches = knockout_matches(config, rounds)
        size.resize(max(size.total, len(matches)))
        decided = all(tie.winner is not None for tie in rounds[-1]) if rounds else True
        done = await _play(
            config, key, observer, matches, size.total, place, size.planned, keep=True
        )
        if decided:
            final = rounds[-1] if rounds else []
            if len(final) == 1 and final[0].winner is not None:
                observer.won(final[0].winner)
            return matches


def seeding(config: TournamentConfig, observer: Observer) -> list[str]:
    """A knockout's players, the first seed first: by their ratings in the results directory
    of `seeding`, those it has not rated after them, each in the config's order."""
    names = [player.name for player in config.players]
    if config.seeding is None:
        return names
    read = read_results(config.seeding, None)
    standings = compute(found for found in read if isinstance(found, Transcript))
    rated = [r.player for r in standings.overall if r.player in names and r.rating]
    if len(rated) < len(names):
        observer.noted(
            f"seeding: {config.seeding} rates {len(rated)} of the {len(names)} players; the"
            " others are seeded after them, in the config's order"
        )
    return rated + [name for name in names if name not in rated]


async def _play(
    config: TournamentConfig,
    key: SigningKey,
    observer: Observer,
    matches: Sequence[ScheduledMatch],
    total: int,
    place: _Place,
    planned: Callable[[Sequence[Played]], None] | None = None,
    keep: bool = False,
) -> list[MatchResult]:
    """Play those of `matches` that have no complete, current transcript yet (for an SPRT,
    until the test decides), of a schedule of `total`; with `keep`, what is kept of those
    complete (none otherwise: a round robin's standings are read from the disk at its end).
    `planned` tells the observer of the schedule, by default its whole size."""
    told = planned or (lambda done: observer.planned(total, done))
    digests = {name: p.digest for name, p in place.prints.items()}
    found = survey(config, matches, digests, key)
    write_info(config, total)
    for line in found.changes:
        observer.changed(line)
    for problem in found.unreadable:
        observer.replaced(problem)
    finished = list(found.done) if keep else []
    tested = GamePairs() if config.sprt is not None else None
    if tested is not None:
        for done in found.done:
            tested.add(done)

    def decided() -> Verdict | None:
        """Where the SPRT stands, told to the observer; its verdict once it has one."""
        if config.sprt is None or tested is None:
            return None
        status = judged(config.sprt, tested.of(config.players[0].name))
        observer.tested(status)
        return None if status.verdict is Verdict.RUNNING else status.verdict

    starts = _Starts(config, observer, place.withdrawn)
    for transcript in sorted(found.done, key=lambda done: done.started_at):
        starts.count(transcript, quiet=True)
    verdict = decided()
    if verdict or not found.todo:
        told(found.done)
        return finished
    # Before the progress starts: a cluster that cannot be reached is all there is to say.
    venue = await place.open()
    told(found.done)
    queue = Dispatcher(found.todo, capacities(config))
    note = queue.note(venue.capacity)
    if note:
        observer.noted(note)
    stop: list[Verdict] = []

    async def worker() -> None:
        while not stop and queue:
            batch = await queue.take(venue.batch(len(queue)))
            try:
                # Decided, or the last matches taken, while it waited for a URL player.
                if stop or not batch:
                    return
                transcripts = await venue.play(batch)
            finally:
                await queue.done(batch)
            for match, transcript in zip(batch, transcripts, strict=True):
                observer.finished(match, transcript)
                starts.count(transcript)
                if keep:
                    finished.append(MatchResult.of(transcript))
                if tested is not None:
                    tested.add(transcript)
                verdict = decided()
                if verdict is not None and not stop:
                    stop.append(verdict)
                    observer.stopped(verdict)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(venue.capacity, len(found.todo))):
            group.create_task(worker())
    return finished


class _Starts:
    """Which players' programs fail to start, match after match: each is named with the
    reason its last words give at its first failure, and withdrawn after
    `withdraw_after` in a row (its seat then fails at once, its program no longer tried)."""

    def __init__(
        self, config: TournamentConfig, observer: Observer, withdrawn: dict[str, str]
    ) -> None:
        """`withdrawn` is the run's, which it adds to."""
        self._config = config
        self._observer = observer
        self._in_a_row: dict[str, int] = {}
        self._specs = {entrant.name: entrant.spec for entrant in config.players}
        self.withdrawn = withdrawn

    def count(self, transcript: Played, quiet: bool = False) -> None:
        """Take in a match's starts; `quiet` for a match of an earlier run, told then."""
        at_start = {fault.role: fault for fault in transcript.faults if fault.step == 0}
        for seat in transcript.seats:
            name = seat.player
            if name not in self._specs or name in self.withdrawn:
                continue
            fault = at_start.get(seat.role)
            if fault is None:
                self._in_a_row[name] = 0
                continue
            failures = self._in_a_row[name] = self._in_a_row.get(name, 0) + 1
            if failures == 1 and not quiet:
                self._observer.noted(self._failed(transcript.match_id, seat.log, name, fault))
            if failures >= self._config.withdraw_after:
                self.withdrawn[name] = withdrawal(failures)
                if not quiet:
                    self._observer.noted(
                        f"{name} withdrawn after {failures} matches in a row in which its"
                        " program did not start (withdraw_after): its remaining matches are"
                        " forfeits, not tried"
                    )

    def _failed(self, match_id: str, log: str | None, name: str, fault: Fault) -> str:
        """One line naming a player whose program did not start, and why."""
        words = _last_words(Path(log)) if log else []
        return unready_line(
            name, self._specs[name], (fault.kind, fault.detail), words, log, match_id
        )


def _last_words(log: Path) -> list[str]:
    """The last lines of a player's log that the player wrote, not the referee's notes."""
    try:
        with open(log, "rb") as file:
            file.seek(max(0, file.seek(0, 2) - LAST_WORDS_BYTES))
            text = file.read().decode(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if not line.startswith(NOTE_PREFIX)]
