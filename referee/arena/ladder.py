"""The continuous ladder: the versions on it play pair after pair, on a venue of the
tournaments (this process, or Dask workers), rated by the one ratings module.

The database is the queue. A pair is planned as two `queued` matches (`pairing.py`), a
match is marked `running` before it starts, and `done` in the one transaction that records
its result: its seats' points and faults, its versions' counts, a placement ended, a
suspension. A kill at any moment loses nothing finished: on restart `recover` records a
running match whose transcript is on disk, complete and verifying, and queues the others
again.

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
import random
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased, selectinload

from referee.arena import lifecycle
from referee.arena.config import FieldPlayer
from referee.arena.db import (
    ON_LADDER,
    Bot,
    Match,
    MatchState,
    RatingPoint,
    Seat,
    Setting,
    Version,
    VersionState,
    player_name,
    rating_point,
    utcnow,
)
from referee.arena.home import Arena
from referee.arena.pairing import Entry, Pair, plan, waits, window
from referee.errors import ArenaError, RefereeError, TranscriptError
from referee.pauses import between_matches
from referee.players.base import fingerprint
from referee.players.chance import CHANCE_NAME, competing, is_chance, with_chance
from referee.records.replay import replay
from referee.records.transcript import Fault, Transcript, read_signed, read_transcript
from referee.records.transcript import Seat as TranscriptSeat
from referee.tournaments.cluster import Workers, on_cluster
from referee.tournaments.config import TournamentConfig
from referee.tournaments.ratings import Pairing, Rating, fit, points
from referee.tournaments.runner import LocalVenue, Observer, Venue
from referee.tournaments.schedule import ScheduledMatch

PAUSED_SETTING = "ladder_paused"
# How often the ladder looks at the database for a pause or a changed field when not told.
POLL_S = 1.0
# Ratings are fitted at most this often: a fit of a large field takes a good part of it.
RATE_S = 1.0
# Matches queued: this many times what the venue plays at once.
QUEUE_FACTOR = 2
# What `status` counts matches per second over.
RATE_WINDOW_S = 60
# How long a field whose venue cannot be opened waits before it is tried again, unless the
# field changes first.
RETRY_S = 30
# A fault's detail as a suspension's reason quotes it.
DETAIL_CHARS = 200
# A version's rating history gains a point when its rating moved by POINT_MOVE (Elo) since
# its last point and that point is POINT_S old: the history grows with what changes, at
# most a point per version per POINT_S, not with how often the ratings are fitted.
POINT_MOVE = 0.5
POINT_S = 10


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
    running: int
    played: int
    # Matches recorded per second over the last RATE_WINDOW_S.
    per_second: float
    paused: bool
    # What the venue plays at once (0: none open).
    capacity: int
    # Where it plays: "this process", "N local workers" or "cluster ADDRESS".
    venue: str


def set_paused(arena: Arena, paused: bool) -> None:
    """Pause the ladder (no new match starts; those in flight end) or resume it."""
    arena.database.set_setting(PAUSED_SETTING, "1" if paused else "0")


def is_paused(arena: Arena) -> bool:
    return arena.database.setting(PAUSED_SETTING, "0") == "1"


def venue_name(workers: Workers | None, address: bool = True) -> str:
    """Where a ladder on `workers` plays, in a few words: its cluster's address if `address`."""
    if workers is None:
        return "this process"
    if workers.address is not None:
        return f"cluster {workers.address}" if address else "cluster"
    return f"{workers.count} local worker{'' if workers.count == 1 else 's'}"


def match_key(match_id: int) -> str:
    """A ladder match's key: its transcript's match id and file name."""
    return f"arena-{match_id:08d}"


@dataclass(frozen=True)
class _Member:
    """A version on the ladder: its bot and its name as a player."""

    version: int
    bot: int
    name: str
    run: str


@dataclass
class _Field:
    """The field a venue is open for, and what planning its pairs keeps between top-ups."""

    members: dict[int, _Member]
    config: TournamentConfig
    games: dict[str, int]
    waited: dict[int, int]
    rng: random.Random
    stop: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class _Claimed:
    row: int
    match: ScheduledMatch


@dataclass(frozen=True)
class _Recorded:
    """What recording a match did: its summary, the points of each pair of its versions
    (the lower id first), and the versions suspended, each with its reason."""

    key: str
    summary: str
    results: list[tuple[int, int, float]]
    suspended: list[tuple[str, str]]


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
        # Each pair of versions (lower id first): games and the first's points, for the fits.
        self._results: dict[tuple[int, int], tuple[float, float]] = {}
        self._unrated = False

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
        with self._arena.database.session() as session:
            running = session.scalars(
                select(Match.id).where(Match.state == MatchState.RUNNING).order_by(Match.id)
            ).all()
        for row in running:
            self._settle(row)

    def status(self, address: bool = True) -> LadderStatus:
        """How the ladder is doing; without its cluster's address unless `address`: a Dask
        scheduler runs what it is sent, and only the organiser needs to know where it is."""
        since = utcnow() - dt.timedelta(seconds=RATE_WINDOW_S)
        with self._arena.database.session() as session:
            counts = dict(
                session.execute(select(Match.state, func.count()).group_by(Match.state)).all()
            )
            recent = session.scalar(
                select(func.count()).select_from(Match).where(Match.finished_at >= since)
            )
        return LadderStatus(
            queued=counts.get(MatchState.QUEUED, 0),
            running=counts.get(MatchState.RUNNING, 0),
            played=counts.get(MatchState.DONE, 0),
            per_second=(recent or 0) / RATE_WINDOW_S,
            paused=is_paused(self._arena),
            capacity=self._capacity,
            venue=venue_name(self._workers, address),
        )

    async def run(self) -> None:
        """Play on, forever; cancel to stop (matches in flight stay `running`)."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        await asyncio.to_thread(self._keep_pause_row)
        self._results = await asyncio.to_thread(self._load_results)
        self._unrated = True
        rating = asyncio.create_task(self._rate())
        try:
            while True:
                paused, members = await asyncio.to_thread(self._look)
                if paused or len({m.bot for m in members.values()}) < 2:
                    # No ladder match is under way: a full pass of the collector, if due,
                    # falls here (under short pauses only `between_matches` makes one).
                    between_matches()
                    await self._doze()
                    continue
                await self._play_field(members)
        finally:
            rating.cancel()
            self._capacity = 0

    def _keep_pause_row(self) -> None:
        """The pause's row, made if missing: a claim locks it (see `_claim`)."""
        with contextlib.suppress(IntegrityError), self._arena.database.session() as session:
            if session.get(Setting, PAUSED_SETTING) is None:
                session.add(Setting(key=PAUSED_SETTING, value="0"))

    # -- the field and its venue

    async def _play_field(self, members: dict[int, _Member]) -> None:
        arena = self._arena
        players = [
            FieldPlayer(m.name, m.run, arena.bot_directory(m.version)) for m in members.values()
        ]
        try:
            config = await asyncio.to_thread(arena.config.field_config, players, arena.results)
            the_field = await asyncio.to_thread(self._open_field, members, config)
            venue = await self._venue(config)
        except RefereeError as error:
            # A field that cannot be played waits for a change, or for the cluster to return.
            self._observer.noted(f"ladder: {error}; tried again in {RETRY_S} s")
            assert self._wake is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RETRY_S)
            return
        self._capacity = venue.capacity
        self._observer.noted(
            f"ladder: {len(members)} versions on the ladder, {venue.capacity} matches at a time"
        )
        try:
            async with asyncio.TaskGroup() as group:
                watch = group.create_task(self._watch(the_field))
                places = [
                    group.create_task(self._place(venue, the_field)) for _ in range(venue.capacity)
                ]
                await asyncio.gather(*places)
                watch.cancel()
        finally:
            self._capacity = 0
            await venue.close()

    async def _venue(self, config: TournamentConfig) -> Venue:
        prints = await asyncio.to_thread(
            lambda: {entrant.name: fingerprint(entrant.spec) for entrant in config.players}
        )
        notes = _Notes(self._observer)
        if self._workers is None:
            # Each transcript on the disk before its row names it as the match's record.
            return LocalVenue(config, self._arena.key, prints, notes, sync_delay_s=0)
        return await on_cluster(self._workers)(config, self._arena.key, prints, notes, {})

    async def _watch(self, the_field: _Field) -> None:
        """Stop the field's places when the ladder is paused or its field has changed."""
        while True:
            await self._doze()
            paused, members = await asyncio.to_thread(self._look)
            if paused or members.keys() != the_field.members.keys():
                the_field.stop.set()
                return

    async def _doze(self) -> None:
        """Wait for `notify`, or POLL_S."""
        assert self._wake is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), POLL_S)
        self._wake.clear()

    async def _place(self, venue: Venue, the_field: _Field) -> None:
        """One of the venue's places: batch after batch, until the field is stopped."""
        while not the_field.stop.is_set():
            async with self._claiming:
                wanted = venue.batch(1 << 30)
                target = QUEUE_FACTOR * venue.capacity * wanted
                claimed = await asyncio.to_thread(self._claim, the_field, wanted, target)
            if not claimed:
                await asyncio.sleep(POLL_S)  # no two versions that may meet: wait for more
                continue
            try:
                transcripts = await venue.play([c.match for c in claimed])
            except RefereeError as error:
                self._observer.noted(f"ladder: {error}; its matches are played again")
                for c in claimed:
                    await asyncio.to_thread(self._settle, c.row)
                await asyncio.sleep(POLL_S)
                continue
            played = [(c.row, t) for c, t in zip(claimed, transcripts, strict=True)]
            for recorded in await asyncio.to_thread(self._record, played):
                self._took(recorded)

    def _took(self, recorded: _Recorded | None) -> None:
        if recorded is None:
            return
        for a, b, scored in recorded.results:
            games, got = self._results.get((a, b), (0.0, 0.0))
            self._results[(a, b)] = (games + 1, got + scored)
        self._unrated = True
        self._observer.played(recorded.key, recorded.summary)
        for player, reason in recorded.suspended:
            self._observer.suspended(player, reason)
        if recorded.suspended:
            self.notify()

    # -- ratings

    async def _rate(self) -> None:
        while True:
            if self._unrated:
                self._unrated = False
                await asyncio.to_thread(self._fit, dict(self._results))
            await asyncio.sleep(RATE_S)

    def _load_results(self) -> dict[tuple[int, int], tuple[float, float]]:
        """Each pair of versions' results so far, summed by the database."""
        mine, theirs = aliased(Seat), aliased(Seat)
        query = (
            select(mine.version_id, theirs.version_id, func.count(), func.sum(mine.points))
            .join(
                theirs, (mine.match_id == theirs.match_id) & (mine.version_id < theirs.version_id)
            )
            .join(Match, Match.id == mine.match_id)
            .where(Match.state == MatchState.DONE, mine.points.is_not(None))
            .group_by(mine.version_id, theirs.version_id)
        )
        with self._arena.database.session() as session:
            return {(a, b): (float(n), float(got or 0)) for a, b, n, got in session.execute(query)}

    def _fit(self, results: Mapping[tuple[int, int], tuple[float, float]]) -> None:
        ratings = fit(Pairing(str(a), str(b), n, got) for (a, b), (n, got) in results.items())
        if not ratings:
            return
        with self._arena.database.session() as session:
            save_ratings(session, ratings, utcnow())

    # -- the database's side, each in a thread

    def _look(self) -> tuple[bool, dict[int, _Member]]:
        """Whether the ladder is paused, and the versions on it."""
        arena = self._arena
        with arena.database.session() as session:
            rows = session.execute(
                select(Version.id, Version.bot_id, Bot.name, Version.number, Version.run)
                .join(Bot, Bot.id == Version.bot_id)
                .where(Version.state.in_(ON_LADDER))
                .order_by(Version.id)
            ).all()
        members = {
            v: _Member(v, bot, player_name(name, number), run) for v, bot, name, number, run in rows
        }
        return is_paused(arena), members

    def _open_field(self, members: dict[int, _Member], config: TournamentConfig) -> _Field:
        """The field's planning state, its queue rid of the matches it can no longer play."""
        games = [s.game.id for s in config.games if competing(s.game.roles) == 2]
        for settings in config.games:
            if settings.game.id not in games:
                self._observer.noted(
                    f"ladder: {settings.game.id} is not a game of two players; it is not played"
                )
        with self._arena.database.session() as session:
            stale = set(
                session.scalars(
                    select(Match.id)
                    .join(Seat, Seat.match_id == Match.id)
                    .where(Match.state == MatchState.QUEUED, Seat.version_id.not_in(members))
                )
            )
            stale |= set(
                session.scalars(
                    select(Match.id).where(
                        Match.state == MatchState.QUEUED, Match.game.not_in(games)
                    )
                )
            )
            if stale:
                session.execute(delete(Seat).where(Seat.match_id.in_(stale)))
                session.execute(delete(Match).where(Match.id.in_(stale)))
            counted = dict(
                session.execute(
                    select(Match.game, func.count())
                    .where(Match.game.in_(games))
                    .group_by(Match.game)
                ).all()
            )
            recent = session.execute(
                select(Match.pair, Seat.version_id)
                .join(Seat, Seat.match_id == Match.id)
                .order_by(Match.pair.desc(), Match.id.desc())
                .limit(4 * window(len(members)))
            ).all()
        pairs: dict[int, set[int]] = {}
        for pair, version in recent:
            pairs.setdefault(pair, set()).add(version)
        newest = [tuple(sorted(versions)) for versions in pairs.values()]
        return _Field(
            members,
            config,
            {game: counted.get(game, 0) // 2 for game in games},
            waits([(p[0], p[-1]) for p in newest], list(members)),
            random.Random(),
        )

    def _claim(self, the_field: _Field, wanted: int, target: int) -> list[_Claimed]:
        """Up to `wanted` queued matches of the field, marked running; the queue topped up
        to `target` first."""
        members = the_field.members
        with self._writing, self._arena.database.session() as session:
            # A write first, then the read: the claim holds SQLite's write lock, or the
            # setting's row on PostgreSQL, from before it reads the pause until it commits. A
            # pause committed before is seen; one committed meanwhile waits for the claim,
            # whose matches are then running. No place the watch has not yet stopped starts a
            # match after a pause.
            session.execute(
                update(Setting).where(Setting.key == PAUSED_SETTING).values(value=Setting.value)
            )
            paused = session.scalar(select(Setting.value).where(Setting.key == PAUSED_SETTING))
            if paused == "1":
                return []
            queued = session.scalar(
                select(func.count()).select_from(Match).where(Match.state == MatchState.QUEUED)
            )
            if (queued or 0) < target:
                self._top_up(session, the_field, -(-(target - (queued or 0)) // 2))
            rows = session.scalars(
                select(Match)
                .where(Match.state == MatchState.QUEUED)
                .options(selectinload(Match.seats))
                .order_by(Match.id)
                .limit(wanted)
            ).all()
            # The field as the database has it now: a version suspended, retired or taken off
            # by the organiser since the field opened plays no more.
            on_ladder = set(
                session.scalars(
                    select(Version.id).where(
                        Version.id.in_({seat.version_id for row in rows for seat in row.seats}),
                        Version.state.in_(list(ON_LADDER)),
                    )
                )
            )
            claimed = []
            now = utcnow()
            for row in rows:
                versions = [seat.version_id for seat in row.seats]
                settings = the_field.config.settings(row.game)
                if settings is None or any(
                    v not in members or v not in on_ladder for v in versions
                ):
                    continue  # left the field since: deleted when the next one opens
                row.state, row.started_at = MatchState.RUNNING, now
                game = settings.game
                names = tuple(members[v].name for v in versions)
                claimed.append(
                    _Claimed(
                        row.id,
                        ScheduledMatch(
                            match_id=row.key,
                            game=game,
                            players=with_chance(game.roles, names),
                            round=0,
                            clocks=settings.clocks,
                            seed=row.seed,
                            opening=row.opening,
                        ),
                    )
                )
            return claimed

    def _top_up(self, session: Session, the_field: _Field, count: int) -> None:
        """Plan `count` pairs of the field into the queue."""
        members = the_field.members
        versions = session.execute(
            select(
                Version.id, Version.state, Version.matches, Version.rating, Version.margin
            ).where(Version.id.in_(members))
        ).all()
        planned = dict(
            session.execute(
                select(Seat.version_id, func.count())
                .join(Match, Match.id == Seat.match_id)
                .where(Match.state != MatchState.DONE, Seat.version_id.in_(members))
                .group_by(Seat.version_id)
            ).all()
        )
        entries = [
            Entry(
                version=v,
                bot=members[v].bot,
                placing=state == VersionState.PLACING,
                matches=played + planned.get(v, 0),
                rating=rating,
                margin=margin,
                waited=the_field.waited.get(v, 0),
            )
            for v, state, played, rating, margin in versions
        ]
        placing = {entry.version for entry in entries if entry.placing}
        config = self._arena.config
        made = plan(
            entries,
            count,
            the_field.games,
            config.pairing,
            config.placement_matches,
            the_field.rng,
        )
        the_field.games = made.games
        the_field.waited = {entry.version: entry.waited for entry in made.entries}
        for pair in made.pairs:
            self._queue(session, the_field, pair, bool(placing & {pair.first, pair.second}))

    def _queue(self, session: Session, the_field: _Field, pair: Pair, placement: bool) -> None:
        settings = the_field.config.settings(pair.game)
        assert settings is not None  # pairs are planned at the field's games
        roles = [role for role in settings.game.roles if not is_chance(role)]
        first: Match | None = None
        for seating in pair.seatings:
            row = Match(
                key=f"new-{uuid.uuid4().hex}",
                game=pair.game,
                seed=pair.seed,
                opening=the_field.config.openings,
                placement=placement,
            )
            session.add(row)
            session.flush()
            first = first or row
            row.key, row.pair = match_key(row.id), first.id
            index = {role: i for i, role in enumerate(settings.game.roles)}
            session.add_all(
                Seat(match_id=row.id, index=index[role], role=role, version_id=version)
                for role, version in zip(roles, seating, strict=True)
            )

    def _settle(self, row: int) -> None:
        """A running match whose end is unknown: recorded from its transcript when that is
        on disk, complete and verifying; queued again otherwise."""
        with self._arena.database.session() as session:
            match = session.get(Match, row)
            if match is None or match.state != MatchState.RUNNING:
                return
            key = match.key
        transcript = self._verified(key)
        if transcript is not None:
            for recorded in self._record([(row, transcript)]):
                self._took_later(recorded)
            return
        with self._arena.database.session() as session:
            session.execute(
                update(Match)
                .where(Match.id == row, Match.state == MatchState.RUNNING)
                .values(state=MatchState.QUEUED, started_at=None)
            )

    def _took_later(self, recorded: _Recorded) -> None:
        """A match recorded outside the loop (at recovery): only its suspensions are told;
        its results are read with the others when the ladder runs."""
        for player, reason in recorded.suspended:
            self._observer.suspended(player, reason)

    def _verified(self, key: str) -> Transcript | None:
        path = self._arena.results / f"{key}.json"
        if not path.is_file():
            return None
        try:
            transcript, signature = read_signed(path, self._arena.key.public)
        except TranscriptError:
            return None
        if signature.fails or transcript.match_id != key or not transcript.settled:
            return None
        return transcript if replay(transcript).problem is None else None

    def _record(self, played: Sequence[tuple[int, Transcript]]) -> list[_Recorded]:
        """Record the results of a batch of matches (their rows and transcripts) in one
        transaction: a commit and a thread's turn per batch, not per match, which the ladder's
        rate is bound by. What each recording did; none for a match recorded before."""
        with self._writing, self._arena.database.session() as session:
            # Loaded at once, with what recording reads of them; found by `get` below.
            session.scalars(
                select(Match)
                .where(Match.id.in_([row for row, _ in played]))
                .options(
                    selectinload(Match.seats).selectinload(Seat.version).selectinload(Version.bot)
                )
            ).all()
            found = (self._record_one(session, row, t) for row, t in played)
            return [recorded for recorded in found if recorded is not None]

    def _record_one(self, session: Session, row: int, transcript: Transcript) -> _Recorded | None:
        """Record a match's result in `session`; None when it was recorded before."""
        arena = self._arena
        match = session.get(Match, row)
        if match is None or match.state == MatchState.DONE:
            return None
        names = {seat.role: seat.version.player_name for seat in match.seats}
        played = {s.role: s.player for s in transcript.seats if s.player != CHANCE_NAME}
        if played != names:
            raise ArenaError(f"{match.key}: its transcript names other players than its seats")
        match.state = MatchState.DONE
        match.finished_at = utcnow()
        match.transcript = str((arena.results / f"{match.key}.json").relative_to(arena.directory))
        match.summary = summary(transcript)
        faulted = {fault.role for fault in transcript.faults}
        goals = transcript.goals if transcript.complete else None
        for seat in match.seats:
            if goals is not None:
                other = next(s for s in match.seats if s is not seat)
                seat.points = points(goals[seat.role], goals[other.role])
            seat.faulted = seat.role in faulted
            version = seat.version
            version.matches += 1
            version.faults += seat.faulted
            version.updated_at = match.finished_at
            if (
                version.state == VersionState.PLACING
                and version.matches >= arena.config.placement_matches
            ):
                lifecycle.move(version, VersionState.RATED, now=match.finished_at)
        suspended = [
            (seat.version.player_name, reason)
            for seat in match.seats
            if (reason := self._suspension(session, seat.version, match, transcript))
        ]
        first, second = sorted(match.seats, key=lambda s: s.version_id)
        results = (
            [(first.version_id, second.version_id, first.points)]
            if first.points is not None
            else []
        )
        return _Recorded(match.key, match.summary, results, suspended)

    def _suspension(
        self, session: Session, version: Version, match: Match, transcript: Transcript
    ) -> str | None:
        """Suspend `version` if it faulted in too many of its matches; the reason, if so."""
        config = self._arena.config
        if version.state not in ON_LADDER or version.matches < config.suspend_after:
            return None
        if version.faults <= config.suspend_faults * version.matches:
            return None
        first = session.execute(
            select(Match.key, Seat.role)
            .join(Seat, Seat.match_id == Match.id)
            .where(Seat.version_id == version.id, Seat.faulted, Match.state == MatchState.DONE)
            .order_by(Match.finished_at, Match.id)
            .limit(1)
        ).first()
        shown = "its transcript cannot be read"
        if first is not None:
            key, role = first
            found = transcript if key == match.key else self._read(key)
            fault = next((f for f in found.faults if f.role == role), None) if found else None
            if fault is not None:
                shown = describe_fault(key, fault)
        reason = (
            f"suspended: it faulted in {version.faults} of its {version.matches} matches"
            f" (more than {config.suspend_faults:g} of them); the first: {shown}"
        )
        lifecycle.suspend(version, reason)
        return reason

    def _read(self, key: str) -> Transcript | None:
        try:
            return read_transcript(self._arena.results / f"{key}.json")
        except TranscriptError:
            return None


def save_ratings(session: Session, ratings: Sequence[Rating], now: dt.datetime) -> None:
    """The versions' fitted ratings (each rating's player is a version's id), and a point of
    history at `now` for each version that has none or whose rating moved (POINT_MOVE,
    POINT_S): in `session`, so that the history never says what the versions do not."""
    fitted = {int(r.player): r for r in ratings}
    if not fitted:
        return
    session.execute(
        update(Version),
        [{"id": v, "rating": r.elo, "margin": r.margin} for v, r in fitted.items()],
    )
    last = session.execute(
        select(
            Version.id,
            rating_point(RatingPoint.at, Version.id),
            rating_point(RatingPoint.rating, Version.id),
        ).where(Version.id.in_(fitted))
    ).all()
    due = [
        RatingPoint(version_id=v, at=now, rating=fitted[v].elo, margin=fitted[v].margin)
        for v, at, rating in last
        if at is None
        or (now - at >= dt.timedelta(seconds=POINT_S) and abs(fitted[v].elo - rating) >= POINT_MOVE)
    ]
    session.add_all(due)


class _Notes(Observer):
    """A venue's notes, passed on to the ladder's observer."""

    def __init__(self, observer: LadderObserver) -> None:
        self._observer = observer

    def noted(self, line: str) -> None:
        self._observer.noted(f"ladder: {line}")


def describe_fault(key: str, fault: Fault) -> str:
    """A fault in one line: its kind, match, step and detail."""
    detail = " ".join(fault.detail.split())
    if len(detail) > DETAIL_CHARS:
        detail = detail[: DETAIL_CHARS - 3] + "..."
    return f"{fault.kind} in {key} at step {fault.step}: {detail}"


def summary(transcript: Transcript) -> str:
    """A match in one line: who won, and who faulted how."""
    seats = [seat for seat in transcript.seats if seat.player != CHANCE_NAME]
    goals = transcript.goals if transcript.complete else None
    if goals is None:
        why = transcript.rules_fault or transcript.end_reason
        head = f"no result ({why})"
    else:
        first, second = seats
        scored = points(goals[first.role], goals[second.role])
        head = (
            f"{first.player} drew with {second.player}"
            if scored == 0.5
            else f"{first.player} beat {second.player}"
            if scored == 1
            else f"{second.player} beat {first.player}"
        )
    return "; ".join([head, *_fault_lines(seats, transcript.faults)])


def _fault_lines(seats: Iterable[TranscriptSeat], faults: Sequence[Fault]) -> list[str]:
    """Each seat's first fault, if it has one."""
    lines = []
    for seat in seats:
        fault = next((f for f in faults if f.role == seat.role), None)
        if fault is not None:
            lines.append(f"{seat.player} faulted: {fault.kind} at step {fault.step}")
    return lines
