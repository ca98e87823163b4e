"""The continuous ladder on a SQLite arena: it plays, records every match once with its
verifying transcript, places and rates, suspends a bot that faults, pauses and resumes,
recovers what a stop left running, follows the field as it changes, and plays on Dask
workers too."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import itertools
import pickle
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from sqlalchemy import select

from referee.arena.ladder import rating_fits
from referee.arena.ladder.playing import (
    REFUSED_REASON,
    Ladder,
    LadderObserver,
    LadderStatus,
    venue_name,
)
from referee.arena.ladder.queue import match_key, set_paused
from referee.arena.ladder.rating_fits import POINT_MOVE, POINT_S, save_ratings
from referee.arena.store import bot_bundles
from referee.arena.store.config import FieldPlayer
from referee.arena.store.db import (
    Match,
    MatchState,
    Meeting,
    RatingPoint,
    Seat,
    Version,
    VersionState,
)
from referee.arena.store.home import Arena
from referee.errors import PlayerRefused, RefereeError
from referee.players.base import fingerprint
from referee.records.transcript import read_transcript
from referee.records.verify import Outcome, verify_file
from referee.sandbox.cores import available_cores
from referee.tournaments.cluster import Workers
from referee.tournaments.host import BUNDLE_CACHE
from referee.tournaments.ratings import Rating
from referee.tournaments.runner import LocalVenue, Observer
from referee.tournaments.schedule import ScheduledMatch
from tests.support.arena import LADDER_CONFIG, NEVER, add_version
from tests.support.arena_databases import ArenaMaker
from tests.support.referees import MISBEHAVING

# The random player of the tests' zoo (NEVER: a player that plays on).
PLAYS_ON = f"{MISBEHAVING.name} {NEVER}"
PATIENCE_S = 120
CONFIG = LADDER_CONFIG.format(game="ticblock", arena="  suspend: {after: 3, faults: 0.5}\n")


class Told(LadderObserver):
    def __init__(self) -> None:
        self.suspensions: list[tuple[str, str]] = []

    def suspended(self, player: str, reason: str) -> None:
        self.suspensions.append((player, reason))


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    """An arena of the test's database, SQLite or PostgreSQL."""
    return make_arena(config_text=CONFIG)


def done_matches(arena: Arena) -> list[Match]:
    with arena.database.session() as session:
        return list(
            session.scalars(
                select(Match).where(Match.state == MatchState.DONE).order_by(Match.id)
            ).unique()
        )


def count(arena: Arena, state: MatchState, version: int | None = None) -> int:
    query = select(Match.id).where(Match.state == state)
    if version is not None:
        query = query.join(Seat, Seat.match_id == Match.id).where(Seat.version_id == version)
    with arena.database.session() as session:
        return len(set(session.scalars(query)))


def version(arena: Arena, version_id: int) -> Version:
    with arena.database.session() as session:
        found = session.get(Version, version_id)
        assert found is not None
        return found


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, f"not within {PATIENCE_S} s: {what}"
        await asyncio.sleep(0.2)


def with_ladder(ladder: Ladder, steps: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run the ladder while `steps` runs; then stop it. A ladder that fails fails the test."""

    async def main() -> None:
        running = asyncio.create_task(ladder.run())
        testing = asyncio.create_task(steps())
        try:
            await asyncio.wait({running, testing}, return_when=asyncio.FIRST_COMPLETED)
            if running.done():
                running.result()
                raise AssertionError("the ladder stopped on its own")
            testing.result()
        finally:
            for task in (testing, running):
                task.cancel()
            await asyncio.gather(testing, running, return_exceptions=True)

    asyncio.run(main())


def check_recorded(arena: Arena) -> list[Match]:
    """Every done match: its transcript verifies with the arena's key, names its seats'
    versions, and its seats' points are a win and a loss or two draws."""
    matches = done_matches(arena)
    with arena.database.session() as session:
        for match in matches:
            assert match.transcript == f"results/{match.key}.json"
            verdict = verify_file(arena.directory / match.transcript, arena.key.public)
            assert verdict.outcome is Outcome.VERIFIED, verdict.problem
            seats = session.scalars(select(Seat).where(Seat.match_id == match.id)).all()
            assert len(seats) == 2 and match.summary
            if all(seat.points is not None for seat in seats):
                assert sorted(seat.points for seat in seats) in ([0.0, 1.0], [0.5, 0.5])
    return matches


def test_a_ladder_of_four_bots_plays_places_and_rates(arena: Arena) -> None:
    ids = [add_version(arena, name) for name in ("ann", "bob", "cat", "dan")]
    ladder = Ladder(arena)

    async def steps() -> None:
        await until(lambda: len(done_matches(arena)) >= 12, "12 matches")
        await until(lambda: all(version(arena, v).rating is not None for v in ids), "ratings")

    with_ladder(ladder, steps)
    matches = check_recorded(arena)
    # Pairs: both seatings of one seed.
    by_pair: dict[int, list[Match]] = {}
    for match in matches:
        by_pair.setdefault(match.pair, []).append(match)
    for pair in by_pair.values():
        assert len({m.seed for m in pair}) == 1 and all(m.opening == 2 for m in pair)
    with arena.database.session() as session:
        for v in ids:
            found = session.get(Version, v)
            assert found is not None
            seats = session.scalars(
                select(Seat)
                .join(Match, Match.id == Seat.match_id)
                .where(Seat.version_id == v, Match.state == MatchState.DONE)
            ).all()
            assert found.matches == len(seats) >= 2
            # Its results, as counted when each match was recorded: each decided match against
            # the other seat's points, and the newest as its last.
            signs = [
                (seat.points > other.points) - (seat.points < other.points)
                for seat in seats
                for other in seat.match.seats
                if other is not seat and seat.points is not None and other.points is not None
            ]
            kept = (found.wins, found.draws, found.losses)
            assert kept == (signs.count(1), signs.count(0), signs.count(-1))
            newest = max(seats, key=lambda seat: (seat.match.finished_at, seat.match.id))
            assert found.last_match_id == newest.match.id
            assert found.state == VersionState.RATED
            assert found.margin is not None and found.margin > 0
    # Each bot's meetings, as counted when each match was recorded: from the matches' seats.
    met: Counter[tuple[int, int, str]] = Counter()
    with arena.database.session() as session:
        for match in session.scalars(select(Match).where(Match.state == MatchState.DONE)):
            for seat, other in itertools.permutations(match.seats):
                met[seat.bot_id, other.bot_id, "matches"] += 1
                if seat.points is not None and other.points is not None:
                    sign = (seat.points > other.points) - (seat.points < other.points)
                    met[seat.bot_id, other.bot_id, ("losses", "draws", "wins")[sign + 1]] += 1
        counted = {
            (row.bot_id, row.opponent_id, name): getattr(row, name)
            for row in session.scalars(select(Meeting))
            for name in ("matches", "wins", "draws", "losses")
        }
    assert {key: n for key, n in counted.items() if n} == dict(met)
    # Each version's history began with its first fit.
    assert all(points_of(arena, v) for v in ids)
    # Nothing left claimed by a ladder that is stopped but `running` ones, which recover
    # settles.
    ladder.recover()
    assert count(arena, MatchState.RUNNING) == 0
    check_recorded(arena)


def test_a_bot_that_always_crashes_is_suspended_with_its_first_fault(arena: Arena) -> None:
    good = [add_version(arena, name) for name in ("ann", "bob")]
    crash = add_version(arena, "crash", program="exit")
    told = Told()
    ladder = Ladder(arena, observer=told)

    async def steps() -> None:
        await until(lambda: version(arena, crash).state == VersionState.SUSPENDED, "suspended")
        await until(lambda: count(arena, MatchState.RUNNING, crash) == 0, "its last match")
        played = version(arena, crash).matches
        more = len(done_matches(arena)) + 4
        await until(lambda: len(done_matches(arena)) >= more, "4 more matches")
        assert version(arena, crash).matches == played

    with_ladder(ladder, steps)
    suspended = version(arena, crash)
    assert suspended.faults > 0.5 * suspended.matches and suspended.matches >= 3
    # As it was when suspended: a match in flight then may have ended after.
    reason = re.fullmatch(
        r"suspended: it faulted in (\d+) of its (\d+) matches \(more than 0.5 of them\);"
        r" the first: crash in (arena-\d+) at step 0: exited with code 3",
        suspended.reason,
    )
    assert reason is not None, suspended.reason
    assert int(reason[1]) == int(reason[2]) == 3
    assert [name for name, _ in told.suspensions] == ["crash.1"]
    assert count(arena, MatchState.QUEUED, crash) == 0
    assert all(version(arena, v).state != VersionState.SUSPENDED for v in good)
    check_recorded(arena)


@pytest.mark.slow
def test_pause_starts_nothing_and_resume_goes_on(arena: Arena) -> None:
    for name in ("ann", "bob", "cat"):
        add_version(arena, name)
    set_paused(arena, True)
    ladder = Ladder(arena)

    async def steps() -> None:
        await asyncio.sleep(3)
        assert count(arena, MatchState.RUNNING) + count(arena, MatchState.DONE) == 0
        assert ladder.status().paused
        set_paused(arena, False)
        ladder.notify()
        await until(lambda: len(done_matches(arena)) >= 2, "2 matches")
        set_paused(arena, True)
        ladder.notify()
        await until(lambda: count(arena, MatchState.RUNNING) == 0, "those in flight to end")
        played = len(done_matches(arena))
        await asyncio.sleep(3)
        assert count(arena, MatchState.RUNNING) == 0 and len(done_matches(arena)) == played
        set_paused(arena, False)
        ladder.notify()
        await until(lambda: len(done_matches(arena)) >= played + 2, "2 more matches")
        status = ladder.status()
        assert status.played >= played + 2 and not status.paused and status.capacity >= 1

    with_ladder(ladder, steps)
    check_recorded(arena)


def running_match(arena: Arena, versions: tuple[int, int], seed: int) -> tuple[int, str]:
    """A match as a ladder stopped mid-match leaves it: running, its seats unscored."""
    with arena.database.session() as session:
        match = Match(key=f"new-{seed}", game="ticblock", seed=seed, opening=2)
        match.state, match.started_at = MatchState.RUNNING, None
        session.add(match)
        session.flush()
        match.key, match.pair = match_key(match.id), match.id
        for index, (role, v) in enumerate(zip(("xcplayer", "obplayer"), versions, strict=True)):
            session.add(Seat(match_id=match.id, index=index, role=role, version_id=v))
        return match.id, match.key


def test_recover_records_a_finished_match_once_and_queues_the_others(arena: Arena) -> None:
    ann, bob = add_version(arena, "ann"), add_version(arena, "bob")
    finished, key = running_match(arena, (ann, bob), 11)
    unfinished, _ = running_match(arena, (bob, ann), 11)
    # The first one's transcript written, as a venue writes it, before the ladder stopped.
    players = [
        FieldPlayer(f"{name}.1", f"{sys.executable} {PLAYS_ON}", arena.bot_directory(v))
        for name, v in (("ann", ann), ("bob", bob))
    ]
    config = arena.config.field_config(players, arena.results)
    settings = config.games[0]
    match = ScheduledMatch(key, settings.game, ("ann.1", "bob.1"), 0, settings.clocks, 11, 2)

    async def play() -> None:
        prints = {entrant.name: fingerprint(entrant.spec) for entrant in config.players}
        venue = LocalVenue(config, arena.key, prints, Observer())
        try:
            await venue.play([match])
        finally:
            await venue.close()

    asyncio.run(play())
    for _ in range(2):  # a second recovery finds nothing to do
        Ladder(arena).recover()
        with arena.database.session() as session:
            done, again = session.get(Match, finished), session.get(Match, unfinished)
            assert done is not None and again is not None
            assert (done.state, again.state) == (MatchState.DONE, MatchState.QUEUED)
            assert again.started_at is None
            points = session.scalars(select(Seat.points).where(Seat.match_id == finished)).all()
            assert sorted(points) in ([0.0, 1.0], [0.5, 0.5])
        assert (version(arena, ann).matches, version(arena, bob).matches) == (1, 1)
    check_recorded(arena)


def test_recover_queues_a_match_whose_transcript_does_not_verify(arena: Arena) -> None:
    ann, bob = add_version(arena, "ann"), add_version(arena, "bob")
    _, key = running_match(arena, (ann, bob), 5)
    (arena.results / f"{key}.json").write_text('{"schema": "referee-transcript"')
    Ladder(arena).recover()
    assert count(arena, MatchState.QUEUED) == 1 and count(arena, MatchState.DONE) == 0
    assert version(arena, ann).matches == 0
    # The play lost is counted, with why, and what it left is kept aside, not rated.
    with arena.database.session() as session:
        lost = session.scalars(select(Match).where(Match.key == key)).one()
        assert (lost.lost, lost.lost_why) == (1, "the arena stopped while it was played")
    assert not (arena.results / f"{key}.json").exists()
    kept = arena.results / "lost" / f"{key}.1.json"
    assert kept.read_text() == '{"schema": "referee-transcript"'


def test_a_version_retired_mid_run_leaves_the_field(arena: Arena) -> None:
    ids = [add_version(arena, name) for name in ("ann", "bob", "cat")]
    leaving = ids[2]
    ladder = Ladder(arena)

    async def steps() -> None:
        await until(lambda: count(arena, MatchState.DONE, leaving) >= 2, "2 of its matches")
        with arena.database.session() as session:
            found = session.get(Version, leaving)
            assert found is not None
            found.state = VersionState.RETIRED
        ladder.notify()
        await until(lambda: count(arena, MatchState.RUNNING, leaving) == 0, "its last match")
        await until(lambda: count(arena, MatchState.QUEUED, leaving) == 0, "its queue deleted")
        played = count(arena, MatchState.DONE, leaving)
        more = len(done_matches(arena)) + 4
        await until(lambda: len(done_matches(arena)) >= more, "4 more matches")
        assert count(arena, MatchState.DONE, leaving) == played
        assert count(arena, MatchState.QUEUED, leaving) == 0

    with_ladder(ladder, steps)
    check_recorded(arena)


@pytest.mark.cluster
def test_the_ladder_plays_on_local_dask_workers_each_version_sent_as_a_bundle(
    arena: Arena,
) -> None:
    versions = [add_version(arena, name) for name in ("ann", "bob", "cat")]
    ladder = Ladder(arena, Workers(count=2))
    seen: list[LadderStatus] = []

    async def steps() -> None:
        def sampled() -> bool:
            seen.append(ladder.status())
            return len(done_matches(arena)) >= 6

        await until(sampled, "6 matches")

    with_ladder(ladder, steps)
    # Each transcript names each seat's files from its bot's directory, not from where the
    # worker keeps its copy (its Dask local directory's `referee-bundles/SHA`).
    for match in check_recorded(arena):
        assert match.transcript is not None
        text = (arena.directory / match.transcript).read_text()
        assert BUNDLE_CACHE not in text and str(arena.directory) not in text
        seats = read_transcript(arena.directory / match.transcript).seats
        assert all(seat.command[1] == MISBEHAVING.name for seat in seats)
    # What the workers play at once, each match on a core of its own: not the batches the
    # scheduler holds besides, ready for a worker.
    assert 1 <= max(status.capacity for status in seen) <= len(available_cores())
    assert all(status.playing <= status.capacity for status in seen)
    # Each version was packed for the workers, and its row names the bundle by its hash.
    with arena.database.session() as session:
        for version_id in versions:
            sha = session.get_one(Version, version_id).bundle_sha256
            assert sha == hashlib.sha256(arena.bundle(version_id).read_bytes()).hexdigest()


def test_a_version_the_workers_refuse_leaves_the_ladder_saying_why_and_the_rest_play_on(
    arena: Arena,
) -> None:
    versions = {name: add_version(arena, name) for name in ("ann", "bob", "cat")}
    bot_bundles.bundles_of(arena, [(v, f"{name}.1") for name, v in versions.items()])
    # cat's files here are no longer those its bundle sends the workers.
    script = next(arena.bot_directory(versions["cat"]).glob("*.py"))
    script.write_text(script.read_text() + "# changed\n")
    told = Noted()
    ladder = Ladder(arena, Workers(count=1), told)

    async def steps() -> None:
        await until(lambda: version(arena, versions["cat"]).state == VersionState.SUSPENDED, "")
        done = len(done_matches(arena))
        await until(lambda: len(done_matches(arena)) >= done + 2, "2 more matches")

    with_ladder(ladder, steps)
    assert version(arena, versions["cat"]).reason == REFUSED_REASON
    assert any("player cat.1: its command or program files" in line for line in told.lines)
    check_recorded(arena)


def test_a_workers_refusal_of_a_player_is_sent_back_with_its_player() -> None:
    refused = PlayerRefused("worker w: player cat.1: its files differ", "cat.1")
    again = pickle.loads(pickle.dumps(refused))
    assert isinstance(again, PlayerRefused)
    assert (str(again), again.player) == ("worker w: player cat.1: its files differ", "cat.1")


def test_a_field_that_cannot_be_played_is_noted_and_waits_for_a_change(arena: Arena) -> None:
    for name in ("ann", "bob"):
        add_version(arena, name)
    broken = add_version(arena, "gone", program="exit")
    with arena.database.session() as session:
        found = session.get(Version, broken)
        assert found is not None
        found.run = "no-such-program-here"
    told = Noted()
    ladder = Ladder(arena, observer=told)

    async def steps() -> None:
        await until(lambda: any("no-such-program-here" in line for line in told.lines), "the note")
        assert count(arena, MatchState.DONE) + count(arena, MatchState.RUNNING) == 0
        with arena.database.session() as session:
            retired = session.get(Version, broken)
            assert retired is not None
            retired.state = VersionState.RETIRED
        ladder.notify()
        await until(lambda: len(done_matches(arena)) >= 2, "2 matches")

    with_ladder(ladder, steps)
    [line] = [line for line in told.lines if "no-such-program-here" in line]
    assert line.startswith("ladder: ") and line.endswith("; tried again in 30 s")
    assert "command 'no-such-program-here' not found" in line
    check_recorded(arena)


class Noted(LadderObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def noted(self, line: str) -> None:
        self.lines.append(line)


def points_of(arena: Arena, version_id: int) -> list[tuple[dt.datetime, float]]:
    with arena.database.session() as session:
        return [
            (point.at, point.rating)
            for point in session.scalars(
                select(RatingPoint)
                .where(RatingPoint.version_id == version_id)
                .order_by(RatingPoint.at)
            )
        ]


def rated(version_id: int, elo: float) -> Rating:
    return Rating(str(version_id), elo, elo - 20, elo + 20)


def test_the_rating_history_gains_a_point_when_a_rating_moves_no_sooner_than_point_s(
    arena: Arena,
) -> None:
    ann, bob = add_version(arena, "ann"), add_version(arena, "bob")
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def fitted(after_s: float, ratings: dict[int, float]) -> None:
        with arena.database.session() as session:
            save_ratings(
                session,
                [rated(v, elo) for v, elo in ratings.items()],
                start + dt.timedelta(seconds=after_s),
            )

    fitted(0, {ann: 0.0, bob: 0.0})  # the first of each
    fitted(POINT_S / 2, {ann: 10.0, bob: 0.0})  # moved, but too soon
    fitted(POINT_S + 1, {ann: 10.0, bob: POINT_MOVE / 2})  # ann's move is kept; bob's is small
    fitted(3 * POINT_S, {ann: 10.0 + POINT_MOVE / 2, bob: POINT_MOVE})  # bob's has added up
    assert points_of(arena, ann) == [(start, 0.0), (start + dt.timedelta(seconds=11), 10.0)]
    assert points_of(arena, bob) == [(start, 0.0), (start + dt.timedelta(seconds=30), 0.5)]
    assert (version(arena, ann).rating, version(arena, ann).margin) == (10.25, 20.0)
    # Fitted every second for ten minutes, its rating swinging: a point per POINT_S at most
    # (or the second after, when the rating is back where its last point was).
    before = len(points_of(arena, ann))
    with arena.database.session() as session:
        for second in range(600):
            now = start + dt.timedelta(seconds=100 + second)
            save_ratings(session, [rated(ann, 50.0 * (second % 2))], now)
    assert 600 // (POINT_S + 1) <= len(points_of(arena, ann)) - before <= 600 // POINT_S


def test_the_venue_is_named_and_its_address_given_only_when_asked() -> None:
    assert venue_name(None) == "this process"
    assert venue_name(Workers(count=1)) == "1 local worker"
    assert venue_name(Workers(count=3)) == "3 local workers"
    cluster = Workers(address="tcp://10.1.2.3:8786")
    assert venue_name(cluster) == "cluster tcp://10.1.2.3:8786"
    assert venue_name(cluster, address=False) == "cluster"


def test_a_new_version_starts_from_its_predecessor_s_rating_with_a_wide_interval(
    arena: Arena,
) -> None:
    strong, weak = add_version(arena, "strong"), add_version(arena, "weak")
    fresh = add_version(arena, "fresh")  # a bot's first version: nothing to start from
    with arena.database.session() as session:
        first = session.get_one(Version, strong)
        first.state = VersionState.RETIRED
        session.add(
            Version(
                bot_id=first.bot_id, number=2, state=VersionState.PLACING, archive_sha256="1" * 64
            )
        )
    with arena.database.session() as session:
        second = session.scalars(select(Version.id).where(Version.number == 2)).one()
    # strong v1 won 18 of 20 against weak; strong v2 has played nothing yet.
    rating_fits._fit(arena, {(strong, weak): (20.0, 18.0)})
    old, new, beaten = version(arena, strong), version(arena, second), version(arena, weak)
    assert old.rating is not None and new.rating is not None and beaten.rating is not None
    assert old.margin is not None and new.margin is not None
    assert old.rating > beaten.rating + 200
    assert abs(new.rating - old.rating) < 1
    assert new.margin > 1.5 * old.margin
    assert version(arena, fresh).rating is None


def test_a_batch_the_venue_lost_is_played_again_and_rated_once(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [add_version(arena, name) for name in ("ann", "bob")]
    play = LocalVenue.play
    lost: list[list[str]] = []

    async def loses_the_first(venue: LocalVenue, matches: Any) -> Any:
        if not lost:
            lost.append([match.match_id for match in matches])
            raise RefereeError("the venue lost its worker")
        return await play(venue, matches)

    monkeypatch.setattr(LocalVenue, "play", loses_the_first)

    async def steps() -> None:
        await until(lambda: len(done_matches(arena)) >= 4, "4 matches")

    with_ladder(Ladder(arena), steps)
    matches = check_recorded(arena)
    again = [match for match in matches if match.key in lost[0]]
    assert again and all(
        (match.lost, match.lost_why) == (1, "the venue lost its worker") for match in again
    )
    assert all(match.lost == 0 for match in matches if match.key not in lost[0])
    # Each match counted once in its versions' results, the lost play in none.
    with arena.database.session() as session:
        for v in ids:
            seats = session.scalars(
                select(Seat)
                .join(Match, Match.id == Seat.match_id)
                .where(Seat.version_id == v, Match.state == MatchState.DONE)
            ).all()
            assert version(arena, v).matches == len(seats)
