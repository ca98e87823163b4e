"""The ladder's queue of matches, in the database: the field's pairs planned into it as
`queued` matches (`pairing.py`), claimed as `running` a batch at a time (`claimed_at`),
marked begun as each one's play begins (`started_at`: a place plays its batch a match at a
time, and the others wait their turn), queued again when their end is unknown. A pause is a
row the claim reads in its own transaction: paused, the queue hands out no match.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from referee.arena.ladder.pairing import Entry, Pair, plan, waits, window
from referee.arena.store import lifecycle
from referee.arena.store.config import ArenaConfig, FieldPlayer
from referee.arena.store.db import (
    ON_LADDER,
    Bot,
    Match,
    MatchState,
    Seat,
    Setting,
    Version,
    VersionState,
    player_name,
)
from referee.arena.store.home import Arena
from referee.players.chance import competing, is_chance, with_chance
from referee.tournaments.config import TournamentConfig
from referee.tournaments.schedule import ScheduledMatch

PAUSED_SETTING = "ladder_paused"


# Where the transcripts a lost play left are kept, under the results directory.
LOST = "lost"
# Why a play was lost, as a match keeps it.
LOST_WHY_CHARS = 300


def set_paused(arena: Arena, paused: bool) -> None:
    """Pause the ladder (no new match starts; those in flight end) or resume it."""
    arena.database.set_setting(PAUSED_SETTING, "1" if paused else "0")


def is_paused(arena: Arena) -> bool:
    return arena.database.setting(PAUSED_SETTING, "0") == "1"


def keep_pause_row(arena: Arena) -> None:
    """The pause's row, made if missing: a claim locks it (see `claim`)."""
    with contextlib.suppress(IntegrityError), arena.database.session(write=True) as session:
        if session.get(Setting, PAUSED_SETTING) is None:
            session.add(Setting(key=PAUSED_SETTING, value="0"))


def match_key(match_id: int) -> str:
    """A ladder match's key: its transcript's match id and file name."""
    return f"arena-{match_id:08d}"


@dataclass(frozen=True)
class Member:
    """A version on the ladder: its bot and its name as a player."""

    version: int
    bot: int
    name: str
    run: str


@dataclass
class Field:
    """The field a venue is open for, and what planning its pairs keeps between top-ups."""

    members: dict[int, Member]
    config: TournamentConfig
    games: dict[str, int]
    waited: dict[int, int]
    rng: random.Random


@dataclass(frozen=True)
class Claimed:
    row: int
    match: ScheduledMatch


def ladder_members(arena: Arena) -> dict[int, Member]:
    """The versions on the ladder, by id."""
    with arena.database.session() as session:
        rows = session.execute(
            select(Version.id, Version.bot_id, Bot.name, Version.number, Version.run)
            .join(Bot, Bot.id == Version.bot_id)
            .where(Version.state.in_(ON_LADDER))
            .order_by(Version.id)
        ).all()
    return {v: Member(v, bot, player_name(name, number), run) for v, bot, name, number, run in rows}


def field_players(arena: Arena, members: Iterable[Member]) -> list[FieldPlayer]:
    """The versions `members` as a tournament's players, each run in its bot's directory."""
    return [FieldPlayer(m.name, m.run, arena.bot_directory(m.version)) for m in members]


def open_field(arena: Arena, members: dict[int, Member], config: TournamentConfig) -> Field:
    """The field's planning state, its queue rid of the matches it can no longer play. Its
    games are those of `config` of two players: the ladder plays no others."""
    games = [s.game.id for s in config.games if competing(s.game.roles) == 2]
    with arena.database.session(write=True) as session:
        stale = set(
            session.scalars(
                select(Match.id)
                .join(Seat, Seat.match_id == Match.id)
                .where(Match.state == MatchState.QUEUED, Seat.version_id.not_in(members))
            )
        )
        stale |= set(
            session.scalars(
                select(Match.id).where(Match.state == MatchState.QUEUED, Match.game.not_in(games))
            )
        )
        if stale:
            session.execute(delete(Seat).where(Seat.match_id.in_(stale)))
            session.execute(delete(Match).where(Match.id.in_(stale)))
        # The newest pairs: who waited how long, and each game's share of them. Not the
        # season's matches, which every change of the field would read through.
        recent = session.execute(
            select(Match.pair, Match.game, Seat.version_id)
            .join(Seat, Seat.match_id == Match.id)
            .order_by(Match.pair.desc(), Match.id.desc())
            .limit(4 * window(len(members)))
        ).all()
    pairs: dict[int, set[int]] = {}
    played: dict[str, set[int]] = {game: set() for game in games}
    for pair, game, version in recent:
        pairs.setdefault(pair, set()).add(version)
        played.get(game, set()).add(pair)
    newest = [tuple(sorted(versions)) for versions in pairs.values()]
    return Field(
        members,
        config,
        {game: len(played[game]) for game in games},
        waits([(p[0], p[-1]) for p in newest], list(members)),
        random.Random(),
    )


def claim(
    session: Session,
    config: ArenaConfig,
    the_field: Field,
    wanted: int,
    target: int,
    now: dt.datetime,
) -> list[Claimed]:
    """Up to `wanted` queued matches of the field, marked running in `session` as claimed
    `now` (not yet begun: `begun` says when each one is); the queue topped up to `target`
    first. None while the ladder is paused. Tried
    again with the same `now` after a commit that went unanswered, it claims the matches of
    the try that did commit, not others besides."""
    # A write first, then the read: the claim holds SQLite's write lock, or the setting's row
    # on PostgreSQL, from before it reads the pause until it commits. A pause committed
    # before is seen; one committed meanwhile waits for the claim, whose matches are then
    # running. No place the watch has not yet stopped starts a match after a pause.
    session.execute(
        update(Setting).where(Setting.key == PAUSED_SETTING).values(value=Setting.value)
    )
    paused = session.scalar(select(Setting.value).where(Setting.key == PAUSED_SETTING))
    if paused == "1":
        return []
    # A try whose commit went unanswered may have claimed them: those, and no more.
    again = session.scalars(
        select(Match)
        .where(Match.state == MatchState.RUNNING, Match.claimed_at == now)
        .options(selectinload(Match.seats))
        .order_by(Match.id)
    ).all()
    if again:
        return [
            Claimed(row.id, scheduled) for row in again if (scheduled := _scheduled(the_field, row))
        ]
    queued = session.scalar(
        select(func.count()).select_from(Match).where(Match.state == MatchState.QUEUED)
    )
    if (queued or 0) < target:
        _top_up(session, config, the_field, -(-(target - (queued or 0)) // 2))
    rows = session.scalars(
        select(Match)
        .where(Match.state == MatchState.QUEUED)
        .options(selectinload(Match.seats))
        .order_by(Match.id)
        .limit(wanted)
    ).all()
    # The field as the database has it now: a version suspended, retired or taken off by
    # the organiser since the field opened plays no more. Locked, so that a suspension
    # waits for the claim, whose matches are then running, stopped by its field change.
    seated = {seat.version_id for row in rows for seat in row.seats}
    on_ladder = {
        version.id
        for version in lifecycle.locked(session, Version.id.in_(seated))
        if version.state in ON_LADDER
    }
    claimed = []
    for row in rows:
        scheduled = _scheduled(the_field, row)
        if scheduled is None or any(seat.version_id not in on_ladder for seat in row.seats):
            continue  # left the field since: deleted when the next one opens
        row.state, row.claimed_at = MatchState.RUNNING, now
        claimed.append(Claimed(row.id, scheduled))
    return claimed


def _scheduled(the_field: Field, row: Match) -> ScheduledMatch | None:
    """Match `row` as the field's venue plays it; None if it is no longer the field's."""
    settings = the_field.config.settings(row.game)
    versions = [seat.version_id for seat in row.seats]
    if settings is None or any(v not in the_field.members for v in versions):
        return None
    game = settings.game
    names = tuple(the_field.members[v].name for v in versions)
    # A ladder has no rounds: a pair's line of a book is its seed's.
    _, book = settings.opening(row.seed)
    return ScheduledMatch(
        match_id=row.key,
        game=game,
        players=with_chance(game.roles, names),
        round=0,
        clocks=settings.clocks,
        seed=row.seed,
        opening=len(book.steps) if book is not None else row.opening,
        book=book,
        max_steps=settings.max_steps,
    )


def _top_up(session: Session, config: ArenaConfig, the_field: Field, count: int) -> None:
    """Plan `count` pairs of the field into the queue."""
    members = the_field.members
    versions = session.execute(
        select(Version.id, Version.state, Version.matches, Version.rating, Version.margin).where(
            Version.id.in_(members)
        )
    ).all()
    # Every version's matches not done, those of versions out of the field too: found from
    # the few matches not done by their state's index, where asking for the field's versions
    # had SQLite read each one's seats of the whole season.
    planned = dict(
        session.execute(
            select(Seat.version_id, func.count())
            .join(Match, Match.id == Seat.match_id)
            .where(Match.state.in_([MatchState.QUEUED, MatchState.RUNNING]))
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
        _queue(session, the_field, pair, bool(placing & {pair.first, pair.second}))


def _queue(session: Session, the_field: Field, pair: Pair, placement: bool) -> None:
    settings = the_field.config.settings(pair.game)
    assert settings is not None  # pairs are planned at the field's games
    roles = [role for role in settings.game.roles if not is_chance(role)]
    first: Match | None = None
    for seating in pair.seatings:
        row = Match(
            key=f"new-{uuid.uuid4().hex}",
            game=pair.game,
            seed=pair.seed,
            opening=settings.opening(pair.seed)[0],
            placement=placement,
        )
        session.add(row)
        session.flush()
        first = first or row
        row.key, row.pair = match_key(row.id), first.id
        index = {role: i for i, role in enumerate(settings.game.roles)}
        session.add_all(
            Seat(
                match_id=row.id,
                index=index[role],
                role=role,
                version_id=version,
                bot_id=the_field.members[version].bot,
            )
            for role, version in zip(roles, seating, strict=True)
        )


def begun(session: Session, began: Mapping[str, dt.datetime]) -> None:
    """Each match of `began` (by key) marked begun at its moment, as its venue said its play
    began: unless its start is marked already, or it is queued again (a play lost). A mark
    that comes after its match was recorded still gives it its start."""
    for key, moment in began.items():
        session.execute(
            update(Match)
            .where(
                Match.key == key,
                Match.started_at.is_(None),
                Match.state != MatchState.QUEUED,
            )
            .values(started_at=moment)
        )


def running(arena: Arena) -> list[int]:
    """The matches marked running, oldest first: after a stop, those whose end is unknown."""
    with arena.database.session() as session:
        return list(
            session.scalars(
                select(Match.id).where(Match.state == MatchState.RUNNING).order_by(Match.id)
            )
        )


def running_key(arena: Arena, row: int) -> str | None:
    """The key of match `row` if it is running; None otherwise."""
    with arena.database.session() as session:
        match = session.get(Match, row)
        if match is None or match.state != MatchState.RUNNING:
            return None
        return match.key


def requeue(arena: Arena, row: int, why: str) -> None:
    """Match `row`, if still running, queued again to be played anew: its play was lost to
    the arena's own failure (`why`), which the match keeps, counted. What that play left of
    a transcript is kept aside (`results/lost/KEY.N.json`), never rated: the next play
    writes its own."""
    with arena.database.session(write=True) as session:
        match = session.scalar(
            select(Match)
            .where(Match.id == row, Match.state == MatchState.RUNNING)
            .with_for_update()
        )
        if match is None:
            return
        match.state, match.claimed_at, match.started_at = MatchState.QUEUED, None, None
        match.lost += 1
        match.lost_why = why[:LOST_WHY_CHARS]
        left = arena.results / f"{match.key}.json"
        if left.is_file():
            kept = arena.results / LOST / f"{match.key}.{match.lost}.json"
            kept.parent.mkdir(exist_ok=True)
            left.replace(kept)
