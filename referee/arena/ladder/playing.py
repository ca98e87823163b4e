"""The continuous ladder: the versions on it play pair after pair, on a venue of the
tournaments (this process, or Dask workers), rated by the one ratings module
(`rating_fits.py`).

The database is the queue (`queue.py`). A pair is planned as two `queued` matches
(`pairing.py`), a match is marked `running` when a place claims it and begun (`started_at`)
when its venue says its play begins (a place on workers holds a batch, played a match at a
time), and `done` in the one
transaction that records its result (`recording.py`): its seats' points and faults,
its versions' counts, a placement ended, a suspension. A kill at any moment loses nothing
finished: on restart `recover` records a running match whose transcript is on disk,
complete and verifying, and queues the others again.

The venue is opened for the field of the moment (the versions placing or rated, each a
player of a tournament config, its processes kept between matches). When the field changes
(`notify`, or seen in the database within a second), no new match starts, those in flight
end, and a venue is opened for the new field; queued matches of versions that left it are
deleted, never played. The database work runs in threads: the web API shares the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select

from referee.arena.ladder.queue import (
    Claimed,
    Field,
    Member,
    begun,
    claim,
    field_players,
    is_paused,
    keep_pause_row,
    ladder_members,
    open_field,
    requeue,
    running,
    running_key,
)
from referee.arena.ladder.rating_fits import RatingFits
from referee.arena.ladder.recording import Recorded, record, verified
from referee.arena.store import bot_bundles, lifecycle
from referee.arena.store.db import ON_LADDER, Match, MatchState, Version, utcnow
from referee.arena.store.home import Arena
from referee.arena.store.outages import DatabaseLost, Rider, Trouble, trouble_of
from referee.errors import PlayerRefused, RefereeError
from referee.pauses import between_matches
from referee.plaintext import counted
from referee.players.base import Fingerprint, fingerprint
from referee.records.transcript import Transcript
from referee.tournaments.cluster import Workers, on_cluster
from referee.tournaments.config import TournamentConfig
from referee.tournaments.pool import PlayerPool
from referee.tournaments.runner import LocalVenue, Observer, Venue
from referee.tournaments.schedule import ScheduledMatch

# How often the ladder looks at the database for a pause or a changed field when not told.
POLL_S = 1.0
# Why a version the workers will not play leaves the ladder: not its author's doing.
REFUSED_REASON = (
    "suspended: the arena's workers refuse to play it (its files there differ from the"
    " arena's); not your bot's fault: the organiser can reinstate it"
)
# The idle player processes kept for their versions' next matches: all of a class's field;
# of a season's thousand versions, each meeting another seldom, those played last.
IDLE_PLAYERS = 128
# Matches queued: this many times what the venue plays at once.
QUEUE_FACTOR = 2
# What `status` counts matches per second over.
RATE_WINDOW_S = 60
# How long a field whose venue cannot be opened waits before it is tried again, unless the
# field changes first.
RETRY_S = 30


class LadderObserver:
    """Told what the ladder does, to show or log it; by default nothing is shown."""

    def noted(self, line: str) -> None:
        """A line on how the ladder runs: a venue opened, a venue's failure."""

    def played(self, key: str, summary: str) -> None:
        """A match was recorded."""

    def suspended(self, player: str, reason: str) -> None:
        """A version was suspended: it left the ladder."""


@dataclass(frozen=True)
class LadderStatus:
    queued: int
    # Matches being played now: one at each of the venue's places that has a batch in play,
    # so never more than `capacity`.
    playing: int
    # Matches marked running: being played, or waiting their turn in a batch a place has
    # claimed (a place on a cluster claims many at once); after a restart, also those left
    # running until they are settled.
    claimed: int
    played: int
    # Matches recorded per second over the last RATE_WINDOW_S.
    per_second: float
    paused: bool
    # What the venue plays at once (0: none open): its `at_once`.
    capacity: int
    # Where it plays: "this process", "N local workers" or "cluster ADDRESS".
    venue: str
    # Why it waits, if it does: its database is unavailable or its disk full (`outages`);
    # with the database's own words for the organiser.
    outage: str | None = None


def venue_name(workers: Workers | None, address: bool = True) -> str:
    """Where a ladder on `workers` plays, in a few words: its cluster's address if `address`."""
    if workers is None:
        return "this process"
    # Local workers may have an address too: those `serve` started for its ladder and intake.
    if workers.count:
        return f"{workers.count} local worker{'' if workers.count == 1 else 's'}"
    return f"cluster {workers.address}" if address else "cluster"


class Ladder:
    """The ladder of an arena, on `workers` (None: this process)."""

    def __init__(
        self,
        arena: Arena,
        workers: Workers | None = None,
        observer: LadderObserver | None = None,
    ) -> None:
        self._arena = arena
        self._workers = workers
        self._observer = observer or LadderObserver()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._claiming = asyncio.Lock()
        # Claims and recordings, in their threads, one at a time: a claim then sees every
        # suspension recorded before it, and claims no match of a version just suspended.
        self._writing = threading.Lock()
        self._capacity = 0
        # The places playing a batch now (each plays its batch one match at a time).
        self._playing = 0
        # Its database work, tried again while the database is unavailable (`outages`).
        self._ride = Rider(arena.config.database_wait_s)
        self._ratings = RatingFits(arena, self._ride)
        # Kept from one field to the next (a version placed, suspended): the player
        # processes, so that a new field's matches do not all start theirs afresh, and each
        # version's fingerprint, since its files do not change once built.
        self._pool: PlayerPool | None = None
        self._prints: dict[str, Fingerprint] = {}
        # The matches whose play began, by key, with when, not yet marked so in the
        # database; and what tells the task that marks them (`_mark_begun`).
        self._began: dict[str, dt.datetime] = {}
        self._beginning: asyncio.Event | None = None

    # -- what the service calls

    def notify(self) -> None:
        """The field may have changed (a version placed, retired, suspended) or the ladder
        was paused or resumed: look now, not at the next poll. Callable from any thread."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wake.set)

    def recover(self) -> None:
        """After a stop: each running match is recorded from its transcript when that is on
        disk, complete and verifying, and queued again otherwise."""
        for row in running(self._arena):
            self._settle(row, "the arena stopped while it was played")

    def status(self, address: bool = True) -> LadderStatus:
        """How the ladder is doing; without its cluster's address unless `address`: a Dask
        scheduler runs what it is sent, and only the organiser needs to know where it is."""
        since = utcnow() - dt.timedelta(seconds=RATE_WINDOW_S)
        outage = self._arena.database.watch.outage
        with self._arena.database.session() as session:
            # The matches not done, by their state's index: the queue's few.
            waiting = (MatchState.QUEUED, MatchState.RUNNING)
            counts = dict(
                session.execute(
                    select(Match.state, func.count())
                    .where(Match.state.in_(waiting))
                    .group_by(Match.state)
                ).all()
            )
            # The finished ones are not counted from the season's matches at every status:
            # each version counts its own as they are recorded, and a ladder match is two
            # versions' seats.
            seats = session.scalar(select(func.coalesce(func.sum(Version.matches), 0)))
            recent = session.scalar(
                select(func.count())
                .select_from(Match)
                .where(Match.state == MatchState.DONE, Match.finished_at >= since)
            )
        claimed = counts.get(MatchState.RUNNING, 0)
        return LadderStatus(
            queued=counts.get(MatchState.QUEUED, 0),
            # On a cluster, the places past what its workers play at once each hold a batch
            # the scheduler starts as soon as one ends: waiting, not playing. And a batch just
            # recorded is no longer claimed, though its place has not yet said it is done.
            playing=min(self._playing, self._capacity, claimed),
            claimed=claimed,
            played=(seats or 0) // 2,
            per_second=(recent or 0) / RATE_WINDOW_S,
            paused=is_paused(self._arena),
            capacity=self._capacity,
            venue=venue_name(self._workers, address),
            outage=None if outage is None else outage.logged() if address else outage.line(),
        )

    async def run(self) -> None:
        """Play on, forever; cancel to stop (matches in flight stay `running`)."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._beginning = asyncio.Event()
        await self._ride(functools.partial(keep_pause_row, self._arena))
        await self._ratings.load()
        rating = asyncio.create_task(self._ratings.run())
        marking = asyncio.create_task(self._mark_begun())
        try:
            while True:
                paused, members = await self._ride(self._look)
                if paused or len({m.bot for m in members.values()}) < 2:
                    # No ladder match is under way: a full pass of the collector, if due,
                    # falls here (under short pauses only `between_matches` makes one).
                    between_matches()
                    await self._doze()
                    continue
                await self._play_field(members)
        finally:
            rating.cancel()
            marking.cancel()
            # Their ends taken, whatever they were: a database lost ends the ladder by its
            # own tries.
            for task in (rating, marking):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self._capacity = 0
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.close()

    # -- the field and its venue

    async def _play_field(self, members: dict[int, Member]) -> None:
        arena = self._arena
        players = field_players(arena, members.values())
        try:
            config = await asyncio.to_thread(arena.config.field_config, players, arena.results)
            the_field = await self._ride(functools.partial(self._open_field, members, config))
            venue = await self._venue(config, members)
        except DatabaseLost:
            raise
        except RefereeError as error:
            # A field that cannot be played waits for a change, or for the cluster to return.
            self._observer.noted(f"ladder: {error}; tried again in {RETRY_S} s")
            assert self._wake is not None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RETRY_S):
                    await self._wake.wait()
            return
        self._capacity = venue.at_once
        self._observer.noted(
            f"ladder: {counted(len(members), 'version')} on the ladder,"
            f" {counted(venue.at_once, 'match', 'matches')} at a time"
        )
        stop = asyncio.Event()
        try:
            async with asyncio.TaskGroup() as group:
                watch = group.create_task(self._watch(the_field, stop))
                places = [
                    group.create_task(self._place(venue, the_field, stop))
                    for _ in range(venue.capacity)
                ]
                await asyncio.gather(*places)
                watch.cancel()
        finally:
            self._capacity = 0
            await venue.close()

    def _open_field(self, members: dict[int, Member], config: TournamentConfig) -> Field:
        the_field = open_field(self._arena, members, config)
        for settings in config.games:
            if settings.game.id not in the_field.games:
                self._observer.noted(
                    f"ladder: {settings.game.id} is not a game of two players; it is not played"
                )
        return the_field

    async def _venue(self, config: TournamentConfig, members: dict[int, Member]) -> Venue:
        new = [entrant for entrant in config.players if entrant.name not in self._prints]
        # The interpreter the versions run (python3, node) hashed once for all of them.
        hashed: dict[str, str] = {}
        self._prints.update(
            await asyncio.to_thread(
                lambda: {entrant.name: fingerprint(entrant.spec, hashed) for entrant in new}
            )
        )
        prints = {entrant.name: self._prints[entrant.name] for entrant in config.players}
        notes = _Notes(self._observer, self._began_now)
        if self._workers is None:
            if self._pool is None:
                self._pool = PlayerPool(config.players, idle_most=IDLE_PLAYERS)
            else:
                self._pool.admit(config.players)
            # Each transcript on the disk before its row names it as the match's record.
            return LocalVenue(
                config, self._arena.key, prints, notes, sync_delay_s=0, pool=self._pool
            )
        # The workers are sent each version as built, not a path on this machine's disk.
        named = [(member.version, member.name) for member in members.values()]
        bundles = await asyncio.to_thread(bot_bundles.bundles_of, self._arena, named)
        return await on_cluster(self._workers, bundles)(config, self._arena.key, prints, notes, {})

    async def _watch(self, the_field: Field, stop: asyncio.Event) -> None:
        """Stop the field's places when the ladder is paused or its field has changed."""
        while True:
            await self._doze()
            paused, members = await self._ride(self._look)
            if paused or members.keys() != the_field.members.keys():
                stop.set()
                return

    async def _doze(self) -> None:
        """Wait for `notify`, or POLL_S."""
        assert self._wake is not None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(POLL_S):
                await self._wake.wait()
        self._wake.clear()

    async def _place(self, venue: Venue, the_field: Field, stop: asyncio.Event) -> None:
        """One of the venue's places: batch after batch, until the field is stopped."""
        while not stop.is_set():
            async with self._claiming:
                wanted = venue.batch(1 << 30)
                target = QUEUE_FACTOR * venue.capacity * wanted
                # One moment for every try: a claim tried again finds its own (`claim`).
                claim = functools.partial(self._claim, the_field, wanted, target, utcnow())
                claimed = await self._ride(claim)
            if not claimed:
                await asyncio.sleep(POLL_S)  # no two versions that may meet: wait for more
                continue
            try:
                with self._in_play():
                    transcripts = await venue.play([c.match for c in claimed])
            except PlayerRefused as refused:
                # Sent again, its matches would be refused again, and stall every place.
                self._observer.noted(f"ladder: {refused}; its matches are played again")
                for c in claimed:
                    await self._ride(functools.partial(self._settle, c.row, str(refused)))
                await self._ride(functools.partial(self._refused, the_field, refused.player))
                continue
            except (RefereeError, OSError) as error:
                # A full disk, too, ends the batch: its transcripts cannot be written.
                if isinstance(error, OSError) and trouble_of(error) is not Trouble.FULL:
                    raise
                self._observer.noted(f"ladder: {error}; its matches are played again")
                for c in claimed:
                    await self._ride(functools.partial(self._settle, c.row, str(error)))
                await asyncio.sleep(POLL_S)
                continue
            played = [(c.row, t) for c, t in zip(claimed, transcripts, strict=True)]
            for recorded in await self._ride(functools.partial(self._record, played)):
                self._took(recorded)

    @contextlib.contextmanager
    def _in_play(self) -> Iterator[None]:
        """A place's batch being played: counted in `playing` while it is."""
        self._playing += 1
        try:
            yield
        finally:
            self._playing -= 1

    def _began_now(self, match: ScheduledMatch) -> None:
        """The venue says `match` begins (on the event loop): it is marked begun in the
        database by `_mark_begun`, soon, not in the venue's way."""
        self._began[match.match_id] = utcnow()
        if self._beginning is not None:
            self._beginning.set()

    async def _mark_begun(self) -> None:
        """Mark each match whose play began so, in the database, as the venue says they
        begin: those said meanwhile in one transaction."""
        assert self._beginning is not None
        while True:
            await self._beginning.wait()
            self._beginning.clear()
            taken, self._began = self._began, {}
            await self._ride(functools.partial(self._mark, taken))

    def _took(self, recorded: Recorded) -> None:
        self._ratings.took(recorded.results)
        self._observer.played(recorded.key, recorded.summary)
        for player, reason in recorded.suspended:
            self._observer.suspended(player, reason)
        if recorded.suspended:
            self.notify()

    # -- the database's side, each in a thread

    def _look(self) -> tuple[bool, dict[int, Member]]:
        """Whether the ladder is paused, and the versions on it."""
        members = ladder_members(self._arena)
        return is_paused(self._arena), members

    def _claim(self, the_field: Field, wanted: int, target: int, now: dt.datetime) -> list[Claimed]:
        database = self._arena.database
        with self._writing, database.session(write=True) as session:
            # No match started on a disk with no room for its transcript: looked at in the
            # claim's transaction, which on SQLite holds the database from its start.
            database.watch.room(self._arena.directory)
            return claim(session, self._arena.config, the_field, wanted, target, now)

    def _mark(self, began: dict[str, dt.datetime]) -> None:
        with self._arena.database.session(write=True) as session:
            begun(session, began)

    def _record(self, played: Sequence[tuple[int, Transcript]]) -> list[Recorded]:
        """The batch recorded, with its matches marked done, in one transaction: tried again
        after an outage, it records none of them twice (`record` skips a match done)."""
        with self._writing, self._arena.database.session(write=True) as session:
            return record(session, self._arena, played)

    def _refused(self, the_field: Field, player: str) -> None:
        """Take off the ladder a version the workers will not play, saying why; the
        organiser may reinstate it once they do."""
        member = next((m for m in the_field.members.values() if m.name == player), None)
        if member is None:
            return
        with self._arena.database.session(write=True) as session:
            (version,) = lifecycle.locked(session, Version.id == member.version)
            if version.state in ON_LADDER:
                lifecycle.suspend(version, REFUSED_REASON)
        self._observer.suspended(player, REFUSED_REASON)
        self.notify()

    def _settle(self, row: int, why: str) -> None:
        """A running match whose end is unknown (`why`): recorded from its transcript when
        that is on disk, complete and verifying; else its play was lost, and it is queued
        again."""
        key = running_key(self._arena, row)
        if key is None:
            return
        transcript = verified(self._arena, key)
        if transcript is None:
            requeue(self._arena, row, why)
            return
        for recorded in self._record([(row, transcript)]):
            # Recorded outside the loop (at recovery): only its suspensions are told; its
            # results are read with the others when the ladder runs.
            for player, reason in recorded.suspended:
                self._observer.suspended(player, reason)


class _Notes(Observer):
    """A venue's notes, passed on to the ladder's observer; and each match's start, to
    `began`."""

    def __init__(self, observer: LadderObserver, began: Callable[[ScheduledMatch], None]) -> None:
        self._observer = observer
        self._began = began

    def noted(self, line: str) -> None:
        self._observer.noted(f"ladder: {line}")

    def started(self, match: ScheduledMatch) -> None:
        self._began(match)
