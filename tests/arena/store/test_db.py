"""The arena's database on SQLite and on PostgreSQL alike: the migrations make the schema the
models describe, running them again changes nothing, and what is written reads back the same.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, String, event, inspect, select, text, update
from sqlalchemy.exc import IntegrityError, StatementError

from referee.arena.ladder.playing import Ladder
from referee.arena.ladder.queue import claim, ladder_members, open_field
from referee.arena.reading import views
from referee.arena.reading.match_lists import Cursor, MatchQuery, Result
from referee.arena.store.config import FieldPlayer
from referee.arena.store.db import (
    AuditEntry,
    Author,
    Base,
    Bot,
    Database,
    Match,
    MatchState,
    Meeting,
    RatingPoint,
    Seat,
    Setting,
    SignIn,
    Step,
    StepKind,
    StepState,
    Version,
    VersionState,
    open_database,
    upgrade,
)
from referee.arena.store.home import add_author, init_arena, open_arena
from referee.arena.store.queries import NUL_SIGN, REPLACEMENT
from referee.errors import ArenaError
from tests.support.arena import LADDER_CONFIG, add_version
from tests.support.arena_databases import ArenaMaker, PostgresServer
from tests.support.migrations import alembic_config, engine_on, head, revision

# The tables of the design (docs: the arena's database), and Alembic's own.
TABLES = {
    "authors", "bots", "versions", "steps", "matches", "seats", "settings", "rating_points",
    "sign_ins", "audit", "meetings",
}  # fmt: skip
# The moments a sign-in keeps.
_WHENS = ("created_at", "seen_at", "expires_at")
# The largest seed a tournament makes (31 bits): it must fit on both databases.
LARGEST_SEED = 2**31 - 1


def test_the_migrations_make_the_schema_from_nothing(
    tmp_path: Path, database_url: str | None, request: pytest.FixtureRequest
) -> None:
    init_arena(tmp_path / "arena", database=database_url)
    arena = open_arena(tmp_path / "arena")
    try:
        engine = arena.database.engine
        assert engine.dialect.name == request.node.callspec.params["arena_databases"]
        assert set(inspect(engine).get_table_names()) == TABLES | {"alembic_version"}
        assert revision(arena.database.url) == head()
        with arena.database.session() as session:
            organisers = session.scalars(select(Author)).all()
        assert [(a.name, a.organiser) for a in organisers] == [("organiser", True)]
    finally:
        arena.close()


def test_the_models_and_the_migrations_agree(make_arena: ArenaMaker) -> None:
    """What `alembic check` asks: autogenerate, comparing the migrated schema with the
    models, finds nothing to add, drop or change (columns, types, nullability, indexes,
    unique constraints, foreign keys)."""
    arena = make_arena()
    with arena.database.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_running_the_migrations_again_changes_nothing(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    add_author(arena, "ada")
    arena.database.set_setting("ladder_paused", "1")
    arena.close()
    for _ in range(2):
        again = open_arena(arena.directory)
        try:
            assert revision(again.database.url) == head()
            with again.database.session() as session:
                names = sorted(session.scalars(select(Author.name)).all())
            assert names == ["ada", "organiser"]
            assert again.database.setting("ladder_paused") == "1"
        finally:
            again.close()


def test_an_arena_made_at_the_first_schema_is_upgraded_in_place(old_database_url: str) -> None:
    url = old_database_url
    command.upgrade(alembic_config(url), "0001")
    with engine_on(url) as engine:
        assert "rating_points" not in inspect(engine).get_table_names()
        with engine.begin() as connection:
            # As an arena of the first schema holds them: written without today's models.
            connection.execute(
                text(
                    "INSERT INTO authors (id, name, token_hash, organiser, created_at)"
                    " VALUES (1, 'ada', :hash, false, :now)"
                ),
                {"hash": "a" * 64, "now": _moment(0)},
            )
            connection.execute(
                text(
                    "INSERT INTO bots (id, author_id, name, created_at) VALUES (1, 1, 'ace', :now)"
                ),
                {"now": _moment(0)},
            )
            connection.execute(
                text(
                    "INSERT INTO versions (id, bot_id, number, state, reason, advice, run,"
                    " archive_sha256, submitted_at, updated_at, rating, margin, matches, faults)"
                    " VALUES (1, 1, 1, 'rated', '', '', 'run', :sha, :now, :now, 12.5, 30.0, 4, 0)"
                ),
                {"sha": "0" * 64, "now": _moment(0)},
            )
    upgrade(url)
    assert revision(url) == head()
    database = Database(url)
    try:
        with database.session() as session:
            version = session.get(Version, 1)
            assert version is not None
            assert (version.bot.name, version.rating, version.matches) == ("ace", 12.5, 4)
            session.add(RatingPoint(version_id=1, at=_moment(5), rating=12.5, margin=30.0))
        with database.session() as session:
            points = session.scalars(select(RatingPoint)).all()
            assert [(p.version_id, p.at, p.rating) for p in points] == [(1, _moment(5), 12.5)]
    finally:
        database.close()


def test_an_arena_upgraded_to_kept_results_has_its_matches_counted(old_database_url: str) -> None:
    """Its versions' wins, draws, losses and last match, counted once by the upgrade from
    the matches it holds: against the best of the other bots' seats, a match without a
    result in none, a match of a bot's two versions in none, a running match not at all."""
    url = old_database_url
    command.upgrade(alembic_config(url), "0004")
    with engine_on(url) as engine, engine.begin() as connection:
        # ace 1 and 2, bee 1 (version 3), and bee 2 (version 4), which never played.
        _old_bots(connection, ((1, 1, 1), (2, 1, 2), (3, 2, 1), (4, 2, 2)))
        matches = [
            # (id, state, finished, (version, points) of each seat)
            (1, "done", 3, ((2, 0.0), (3, 1.0))),  # bee beat ace 2
            (2, "done", 1, ((3, 0.5), (2, 0.5))),  # a draw
            (3, "done", 4, ((1, 1.0), (3, 0.0))),  # ace 1 beat bee, bee's newest
            (4, "done", 5, ((2, None), (3, None))),  # no result, ace 2's newest all the same
            (5, "done", 6, ((1, 1.0), (2, 0.0))),  # ace against itself, its versions' newest
            (6, "running", None, ((2, None), (3, None))),
        ]
        for match, state, finished, seats in matches:
            connection.execute(
                text(
                    "INSERT INTO matches (id, key, pair, game, seed, opening, state, placement,"
                    " created_at, finished_at, summary)"
                    " VALUES (:id, :key, :id, 'ticblock', 1, 0, :state, false, :now, :at, '')"
                ),
                {
                    "id": match,
                    "key": f"m-{match}",
                    "state": state,
                    "now": _moment(0),
                    "at": None if finished is None else _moment(finished),
                },
            )
            for index, (version, points) in enumerate(seats):
                connection.execute(
                    text(
                        'INSERT INTO seats (match_id, "index", role, version_id, points, faulted)'
                        " VALUES (:match, :index, :role, :version, :points, false)"
                    ),
                    {
                        "match": match,
                        "index": index,
                        "role": ("xcplayer", "obplayer")[index],
                        "version": version,
                        "points": points,
                    },
                )
    upgrade(url)
    database = Database(url)
    try:
        with database.session() as session:
            kept = {
                v.id: (v.wins, v.draws, v.losses, v.last_match_id, v.last_match_at)
                for v in session.scalars(select(Version))
            }
    finally:
        database.close()
    assert kept == {
        1: (1, 0, 0, 5, _moment(6)),
        2: (0, 1, 1, 5, _moment(6)),
        3: (1, 1, 1, 4, _moment(5)),
        4: (0, 0, 0, None, None),
    }


def test_an_arena_upgraded_to_the_season_indexes_keeps_its_matches_in_order(
    old_database_url: str,
) -> None:
    """An arena of 0007 upgraded in place: its finished matches indexed with their ids, the
    index of their moment alone gone, and every match there, read newest first."""
    url = old_database_url
    command.upgrade(alembic_config(url), "0007")
    with engine_on(url) as engine, engine.begin() as connection:
        assert "ix_matches_finished_at" in {
            i["name"] for i in inspect(engine).get_indexes("matches")
        }
        for statement in (
            "INSERT INTO authors (id, name, name_key, organiser, created_at)"
            " VALUES (1, 'ada', 'ada', false, :now)",
            "INSERT INTO bots (id, author_id, name, name_key, created_at)"
            " VALUES (1, 1, 'ace', 'ace', :now)",
        ):
            connection.execute(text(statement), {"now": _moment(0)})
        # Two matches finished at one moment, one later, one still running.
        for match, state, finished in (
            (1, "done", 2),
            (2, "done", 2),
            (3, "done", 3),
            (4, "running", None),
        ):
            _old_match(connection, match, state, finished)
    upgrade(url)
    assert revision(url) == head()
    with engine_on(url) as engine:
        indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("matches")}
        assert indexes["ix_matches_state_finished_at_id"] == ["state", "finished_at", "id"]
        assert "ix_matches_finished_at" not in indexes
        assert "ix_matches_state_finished_at" not in indexes
    database = Database(url)
    try:
        with database.session() as session:
            newest = session.scalars(
                select(Match.key)
                .where(Match.state == MatchState.DONE)
                .order_by(Match.finished_at.desc(), Match.id.desc())
            ).all()
    finally:
        database.close()
    assert newest == ["m-3", "m-2", "m-1"]


def test_an_arena_upgraded_to_seats_by_bot_keeps_each_seats_bot_and_moment(
    old_database_url: str,
) -> None:
    """An arena of 0008 upgraded in place: each seat given its version's bot and, once its
    match is done, the match's moment, and indexed by them; a running match's seats have no
    moment yet."""
    url = old_database_url
    command.upgrade(alembic_config(url), "0008")
    with engine_on(url) as engine, engine.begin() as connection:
        _old_bots(connection, ((1, 1, 1), (2, 1, 2), (3, 2, 1)))
        # (id, state, finished, the versions seated)
        for match, state, finished, seated in (
            (1, "done", 3, (2, 3)),
            (2, "done", 4, (1, 2)),
            (3, "running", None, (3, 1)),
        ):
            _old_match(connection, match, state, finished)
            for index, version in enumerate(seated):
                connection.execute(
                    text(
                        'INSERT INTO seats (match_id, "index", role, version_id, faulted)'
                        " VALUES (:match, :index, :role, :version, false)"
                    ),
                    {
                        "match": match,
                        "index": index,
                        "role": ("xcplayer", "obplayer")[index],
                        "version": version,
                    },
                )
    upgrade(url)
    assert revision(url) == head()
    with engine_on(url) as engine:
        indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("seats")}
        assert indexes["ix_seats_bot_id_finished_at"] == [
            "bot_id",
            "finished_at",
            "match_id",
            "points",
        ]
        assert indexes["ix_seats_match_id_bot_id"] == ["match_id", "bot_id", "points"]
        assert "ix_seats_match_id" not in indexes
    database = Database(url)
    try:
        with database.session() as session:
            seats = session.execute(
                select(Seat.match_id, Seat.version_id, Seat.bot_id, Seat.finished_at).order_by(
                    Seat.match_id, Seat.index
                )
            ).all()
    finally:
        database.close()
    assert [tuple(seat) for seat in seats] == [
        (1, 2, 1, _moment(3)),
        (1, 3, 2, _moment(3)),
        (2, 1, 1, _moment(4)),
        (2, 2, 1, _moment(4)),
        (3, 3, 2, None),
        (3, 1, 1, None),
    ]


def test_an_arena_upgraded_to_meetings_has_its_finished_matches_counted(
    old_database_url: str,
) -> None:
    """An arena of 0009 upgraded in place: each bot's meetings with each other bot made from
    its finished matches, as recording counts them (a match of two versions of one bot is
    no meeting, one without a result is a match of neither result, one running is none)."""
    url = old_database_url
    command.upgrade(alembic_config(url), "0009")
    with engine_on(url) as engine, engine.begin() as connection:
        # ace: versions 1 and 2; bee: version 3.
        _old_bots(connection, ((1, 1, 1), (2, 1, 2), (3, 2, 1)))
        # (id, state, finished, the versions seated with their points)
        for match, state, finished, seated in (
            (1, "done", 3, ((2, 1.0), (3, 0.0))),
            (2, "done", 4, ((3, 0.5), (1, 0.5))),
            (3, "done", 5, ((1, 1.0), (2, 0.0))),
            (4, "done", 6, ((3, None), (2, None))),
            (5, "running", None, ((1, None), (3, None))),
        ):
            _old_match(connection, match, state, finished)
            for index, (version, points) in enumerate(seated):
                connection.execute(
                    text(
                        'INSERT INTO seats (match_id, "index", role, version_id, bot_id,'
                        " finished_at, points, faulted) VALUES (:match, :index, :role,"
                        " :version, :bot, :at, :points, false)"
                    ),
                    {
                        "match": match,
                        "index": index,
                        "role": ("xcplayer", "obplayer")[index],
                        "version": version,
                        "bot": 1 if version < 3 else 2,
                        "at": None if finished is None else _moment(finished),
                        "points": points,
                    },
                )
    upgrade(url)
    assert revision(url) == head()
    database = Database(url)
    try:
        with database.session() as session:
            met = session.execute(
                select(
                    Meeting.bot_id,
                    Meeting.opponent_id,
                    Meeting.matches,
                    Meeting.wins,
                    Meeting.draws,
                    Meeting.losses,
                ).order_by(Meeting.bot_id)
            ).all()
    finally:
        database.close()
    assert [tuple(row) for row in met] == [(1, 2, 3, 1, 1, 0), (2, 1, 3, 0, 1, 1)]


def _old_bots(connection: Connection, versions: Iterable[tuple[int, int, int]]) -> None:
    """In an arena's database of an old revision: author ada, her bots ace (1) and bee (2),
    and `versions` (id, bot, number) of them, rated."""
    connection.execute(
        text(
            "INSERT INTO authors (id, name, name_key, organiser, created_at)"
            " VALUES (1, 'ada', 'ada', false, :now)"
        ),
        {"now": _moment(0)},
    )
    for bot, name in ((1, "ace"), (2, "bee")):
        connection.execute(
            text(
                "INSERT INTO bots (id, author_id, name, name_key, created_at)"
                " VALUES (:id, 1, :name, :name, :now)"
            ),
            {"id": bot, "name": name, "now": _moment(0)},
        )
    for version, bot, number in versions:
        connection.execute(
            text(
                "INSERT INTO versions (id, bot_id, number, state, reason, advice, run,"
                " archive_sha256, submitted_at, updated_at, matches, faults)"
                " VALUES (:id, :bot, :number, 'rated', '', '', 'run', :sha, :now, :now, 0, 0)"
            ),
            {"id": version, "bot": bot, "number": number, "sha": "0" * 64, "now": _moment(0)},
        )


def _old_match(connection: Connection, match: int, state: str, finished: int | None) -> None:
    """In an arena's database of 0006 or later: match `match` (key m-MATCH) of ticblock, in
    `state`, finished at `_moment(finished)` if given."""
    connection.execute(
        text(
            "INSERT INTO matches (id, key, pair, game, seed, opening, state, placement,"
            " created_at, finished_at, summary, lost, lost_why) VALUES"
            " (:id, :key, :id, 'ticblock', 1, 0, :state, false, :now, :at, '', 0, '')"
        ),
        {
            "id": match,
            "key": f"m-{match}",
            "state": state,
            "now": _moment(0),
            "at": None if finished is None else _moment(finished),
        },
    )


def _moment(seconds: int) -> dt.datetime:
    return dt.datetime(2025, 3, 1, 12, 0, seconds, 250000, tzinfo=dt.UTC)


def test_the_models_round_trip(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    database = arena.database
    log = "é\u00e9 ünïcode ✓\n" + "x" * (256 * 1024)
    with database.session() as session:
        author = Author(name="ada", token_hash="a" * 64, organiser=False)
        bot = Bot(author=author, name="Blocker_2-b")
        first = Version(
            bot=bot,
            number=1,
            state=VersionState.RETIRED,
            reason="replaced by version 2",
            run="python3 bot.py",
            build=None,
            archive_sha256="1" * 64,
            submitted_at=_moment(1),
        )
        second = Version(
            bot=bot,
            number=2,
            state=VersionState.RATED,
            advice="flush after every line\nanswer within the clock",
            run="./bot",
            build="cc -O2 -o bot bot.c",
            archive_sha256="2" * 64,
            submitted_at=_moment(2),
            rating=-12.5,
            margin=30.25,
            matches=7,
            faults=1,
        )
        other = Version(
            bot=Bot(author=author, name="other"),
            number=1,
            state=VersionState.PLACING,
            archive_sha256="3" * 64,
        )
        session.add_all([first, second, other])
        session.add(
            Step(
                version=second,
                kind=StepKind.BUILD,
                state=StepState.PASSED,
                finished_at=_moment(3),
                verdict="built",
                log=log,
            )
        )
        session.add(Step(version=second, kind=StepKind.VALIDATE))
        match = Match(
            key="arena-000001",
            pair=1,
            game="ticblock",
            seed=LARGEST_SEED,
            opening=3,
            state=MatchState.DONE,
            placement=True,
            started_at=_moment(4),
            finished_at=_moment(5),
            transcript="results/arena-000001.json",
            summary="other.1 won; Blocker_2-b.2 faulted",
        )
        # Added out of order: the seats come back in role order.
        match.seats = [
            Seat(index=1, role="o", version=other, points=1.0, faulted=False),
            Seat(index=0, role="x", version=second, points=0.0, faulted=True),
        ]
        session.add(match)
        session.add(Setting(key="ladder_paused", value="0"))

    with database.session() as session:
        bot = session.scalars(select(Bot).where(Bot.name == "Blocker_2-b")).one()
        assert bot.author.name == "ada" and not bot.author.organiser
        assert [v.number for v in bot.versions] == [1, 2]
        first, second = bot.versions
        assert (first.state, first.reason, first.build) == (
            "retired",
            "replaced by version 2",
            None,
        )
        assert second.player_name == "Blocker_2-b.2"
        assert (second.state, second.run, second.build) == ("rated", "./bot", "cc -O2 -o bot bot.c")
        assert second.advice.splitlines() == ["flush after every line", "answer within the clock"]
        assert (second.rating, second.margin, second.matches, second.faults) == (-12.5, 30.25, 7, 1)
        assert second.submitted_at == _moment(2)
        build, validate = second.steps
        assert (build.kind, build.state, build.verdict) == ("build", "passed", "built")
        assert build.log == log and build.finished_at == _moment(3)
        assert (validate.kind, validate.state, validate.finished_at) == (
            "validate",
            "running",
            None,
        )
        # The defaults the models set: a new version is queued with nothing counted.
        other = session.scalars(select(Version).where(Version.archive_sha256 == "3" * 64)).one()
        assert (other.reason, other.advice, other.rating, other.matches) == ("", "", None, 0)

        match = session.scalars(select(Match).where(Match.key == "arena-000001")).one()
        assert (match.seed, match.opening, match.pair, match.placement) == (
            LARGEST_SEED,
            3,
            1,
            True,
        )
        assert (match.state, match.game) == ("done", "ticblock")
        assert (match.started_at, match.finished_at) == (_moment(4), _moment(5))
        assert [
            (s.index, s.role, s.version.player_name, s.points, s.faulted) for s in match.seats
        ] == [(0, "x", "Blocker_2-b.2", 0.0, True), (1, "o", "other.1", 1.0, False)]
        # The ladder's queries: a version's matches through its seats, counts by state.
        played = session.scalars(
            select(Match).join(Seat).where(Seat.version_id == other.id, Match.state == "done")
        ).all()
        assert [m.key for m in played] == ["arena-000001"]
    assert database.setting("ladder_paused") == "0"
    assert database.setting("absent", "default") == "default"
    database.set_setting("ladder_paused", "1")
    assert database.setting("ladder_paused") == "1"


def test_every_text_column_keeps_a_nul_and_a_lone_surrogate_as_signs(
    make_arena: ArenaMaker,
) -> None:
    """PostgreSQL refuses a NUL in text, and no database's UTF-8 holds a lone surrogate: an
    author or a bot may write either into any text column (a build's output, a fault's
    detail, a name in a request), and every statement keeps them as signs (`queries.kept`),
    on both databases alike. A lookup by such text finds what was kept of it."""
    arena = make_arena()
    version = add_version(arena, "ada-bot")
    with arena.database.session() as session:
        session.add(Step(version_id=version, kind=StepKind.BUILD))
        match = Match(key="arena-000001", game="ticblock", seed=1)
        match.seats = [Seat(index=0, role="x", version_id=version)]
        session.add(match)
        session.add(Setting(key="a-setting", value=""))
        session.add(SignIn(id_hash="h" * 64, author_id=1, **dict.fromkeys(_WHENS, _moment(1))))
        session.add(AuditEntry(at=_moment(1), action="signin"))
    texts = [
        (table, column)
        for table in Base.metadata.sorted_tables
        for column in table.columns
        if isinstance(column.type, String)  # Text is a String
    ]
    # Every table with text in it: the rating points and the meetings hold only numbers.
    assert {table.name for table, _ in texts} >= TABLES - {"rating_points", "meetings"}
    for table, column in texts:
        written = f"{column.name[:8]}\x00\ud800b"
        shown = f"{column.name[:8]}{NUL_SIGN}{REPLACEMENT}b"
        (key,) = table.primary_key.columns
        with arena.database.session() as session:
            first = session.scalar(select(key).order_by(key).limit(1))
            session.execute(update(table).where(key == first).values({column.name: written}))
        with arena.database.session() as session:
            if column is key:
                first = shown
            assert session.scalar(select(column).where(key == first)) == shown, column
            assert session.scalar(select(key).where(column == written)) == first, column


def test_timestamps_come_back_aware_and_in_utc(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    # An instant written in another zone is the same instant read back.
    elsewhere = dt.datetime(2025, 3, 1, 14, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    before = dt.datetime.now(dt.UTC)
    with arena.database.session() as session:
        session.add(Author(name="ada", token_hash="a" * 64, created_at=elsewhere))
        session.add(Author(name="bob", token_hash="b" * 64))
    with arena.database.session() as session:
        ada, bob = (
            session.scalars(select(Author).where(Author.name == name)).one()
            for name in ("ada", "bob")
        )
    for when in (ada.created_at, bob.created_at):
        assert when.utcoffset() == dt.timedelta(0), when
    assert ada.created_at == dt.datetime(2025, 3, 1, 12, 30, tzinfo=dt.UTC)
    assert before <= bob.created_at <= dt.datetime.now(dt.UTC)
    # Compared in SQL as instants, whatever zone the bound time is in.
    with arena.database.session() as session:
        later = select(Author.name).where(Author.created_at > elsewhere - dt.timedelta(seconds=1))
        assert sorted(session.scalars(later).all()) == ["ada", "bob", "organiser"]
        earlier = select(Author.name).where(Author.created_at < before)
        assert sorted(session.scalars(earlier).all()) == ["ada", "organiser"]
    # A time without a zone would mean a different instant on each database: refused.
    with pytest.raises(StatementError, match="without a zone"), arena.database.session() as session:
        session.add(Author(name="carol", token_hash="c" * 64, created_at=dt.datetime(2025, 3, 1)))


def test_a_second_author_of_one_name_is_refused(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    add_author(arena, "ada")
    with pytest.raises(ArenaError, match="'ada' is already in this arena"):
        add_author(arena, "ada")
    with pytest.raises(IntegrityError), arena.database.session() as session:
        session.add(Author(name="ada", token_hash="f" * 64))
    with arena.database.session() as session:
        assert session.scalars(select(Author.name).where(Author.name == "ada")).all() == ["ada"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(
            lambda: Author(name="bob", token_hash="a" * 64),
            lambda: Author(name="carol", token_hash="a" * 64),
            id="token-hash",
        ),
        pytest.param(
            lambda: Match(key="arena-1", game="ticblock", seed=1),
            lambda: Match(key="arena-1", game="quad", seed=2),
            id="match-key",
        ),
        pytest.param(
            lambda: Setting(key="ladder_paused", value="0"),
            lambda: Setting(key="ladder_paused", value="1"),
            id="setting",
        ),
    ],
)
def test_the_unique_columns_refuse_a_second_row(
    make_arena: ArenaMaker, first: Callable[[], Base], second: Callable[[], Base]
) -> None:
    arena = make_arena()
    with arena.database.session() as session:
        session.add(first())
    table = type(first())
    with arena.database.session() as session:
        rows = len(session.scalars(select(table)).all())
    with pytest.raises(IntegrityError), arena.database.session() as session:
        session.add(second())
    # The failed transaction left nothing behind, and the database goes on.
    with arena.database.session() as session:
        assert len(session.scalars(select(table)).all()) == rows


def test_a_bot_name_is_one_authors(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    with arena.database.session() as session:
        ada = Author(name="ada", token_hash="a" * 64)
        bob = Author(name="bob", token_hash="b" * 64)
        session.add_all([ada, bob, Bot(author=ada, name="blocker")])
    with pytest.raises(IntegrityError), arena.database.session() as session:
        bob = session.scalars(select(Author).where(Author.name == "bob")).one()
        session.add(Bot(author=bob, name="blocker"))


def test_a_seat_of_no_version_is_refused(make_arena: ArenaMaker) -> None:
    """Foreign keys hold on both (SQLite checks them only when asked to)."""
    arena = make_arena()
    with pytest.raises(IntegrityError), arena.database.session() as session:
        match = Match(key="arena-1", game="ticblock", seed=1)
        session.add(match)
        session.flush()
        session.add(Seat(match_id=match.id, index=0, role="x", version_id=12345))
    with arena.database.session() as session:
        assert session.scalars(select(Match)).all() == []


def test_a_transaction_that_raises_leaves_nothing(make_arena: ArenaMaker) -> None:
    arena = make_arena()
    with pytest.raises(RuntimeError), arena.database.session() as session:
        session.add(Author(name="ada", token_hash="a" * 64))
        session.flush()
        raise RuntimeError("the ladder stopped half-way")
    with arena.database.session() as session:
        assert session.scalars(select(Author.name)).all() == ["organiser"]


@pytest.mark.postgres
def test_the_postgresql_server_is_the_suites_own(postgres_server: PostgresServer) -> None:
    """Reached through its unix socket only, with no TCP port, running as no superuser of
    the machine, and fast because it is thrown away."""
    with (
        postgres_server.database() as url,
        engine_on(url) as engine,
        engine.connect() as connection,
    ):
        shown = {
            name: connection.execute(text(f"SHOW {name}")).scalar_one()
            for name in ("listen_addresses", "unix_socket_directories", "fsync")
        }
        directory = connection.execute(text("SHOW data_directory")).scalar_one()
    assert shown == {
        "listen_addresses": "",
        "unix_socket_directories": str(postgres_server.socket),
        "fsync": "off",
    }
    assert Path(directory).stat().st_uid != 0
    assert Path(directory).is_relative_to(postgres_server.directory)


def test_a_session_that_read_before_another_wrote_can_still_write_on_sqlite(
    tmp_path: Path,
) -> None:
    database = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    database.set_setting("visits", "0")
    with database.session() as reading:
        assert reading.get(Setting, "visits") is not None
        # Another connection writes meanwhile, as the ladder records a match while a page
        # is answered: a transaction begun at that read could no longer write at all.
        database.set_setting("ladder", "recorded")
        reading.merge(Setting(key="visits", value="1"))
    assert database.setting("visits") == "1" and database.setting("ladder") == "recorded"
    database.close()


def test_the_queue_the_pages_and_the_status_read_no_whole_season(tmp_path: Path) -> None:
    """On SQLite, the arena's default: what the ladder reads at every claim (the matches each
    version has planned), the newest finished matches and a page deep in the season, a bot's
    matches, its head to head and the ladder's status are found by an index, as SQLite's own
    plan says: no table of matches or seats read through, no sort of the finished matches,
    a bot's matches read from its own seats by their index (not the season's finished
    matches walked to find the bot's, nor the bot's sorted), and its head to head from its
    own meetings. Each costs the same on the first day of a season as on its last."""
    config = tmp_path / "arena.yaml"
    config.write_text(LADDER_CONFIG.format(game="ticblock", arena=""), encoding="utf-8")
    init_arena(tmp_path / "arena", config)
    arena = open_arena(tmp_path / "arena")
    try:
        for name in ("ann", "bob"):
            add_version(arena, name)
        members = ladder_members(arena)
        players = [
            FieldPlayer(m.name, m.run, arena.bot_directory(m.version)) for m in members.values()
        ]
        the_field = open_field(arena, members, arena.config.field_config(players, arena.results))
        with arena.database.session() as session:
            viewer = session.scalars(select(Author)).one()
        deep = Cursor(dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 1000)
        asked: list[tuple[str, tuple[Any, ...]]] = []

        def keep(*args: Any) -> None:
            statement, parameters = args[2], args[3]
            read = statement.lstrip().startswith("SELECT")
            if read and ("matches" in statement or "FROM seats" in statement):
                asked.append((statement, tuple(parameters)))

        event.listen(arena.database.engine, "before_cursor_execute", keep)
        try:
            with arena.database.session(write=True) as session:
                claim(session, arena.config, the_field, 2, 8, dt.datetime.now(dt.UTC))
            views.matches(arena, viewer, MatchQuery())
            views.matches(arena, viewer, MatchQuery(after=deep))
            views.matches(arena, viewer, MatchQuery(bot="ann", opponent="bob", after=deep))
            views.matches(arena, viewer, MatchQuery(bot="ann", result=Result.WIN))
            views.bot(arena, viewer, "ann")
            Ladder(arena).status()
        finally:
            event.remove(arena.database.engine, "before_cursor_execute", keep)
        with arena.database.engine.connect() as connection:
            plans = {
                statement: [
                    row[3]
                    for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", bound)
                ]
                for statement, bound in asked
            }
    finally:
        arena.close()
    # The matches planned: from those not done, by their state, not from every seat of
    # each version ever played.
    (planning,) = [plan for statement, plan in plans.items() if "GROUP BY seats" in statement]
    assert planning[0].startswith("SEARCH matches") and "(state=?)" in planning[0], planning
    bots = [s for s in plans if "bot_id = ?" in s and "FROM seats" in s]
    newest = [s for s in plans if "ORDER BY matches.finished_at DESC" in s]
    assert len(newest) == 2  # the first page, and the deep one
    assert any("finished_at<?" in line for line in plans[newest[1]]), plans[newest[1]]
    assert len(bots) == 2, list(plans)  # the two lists of a bot's matches
    # Its head to head: its own meetings, one range of their table's key.
    (met,) = [plan for statement, plan in plans.items() if "FROM meetings" in statement]
    assert met[0].startswith("SEARCH meetings USING PRIMARY KEY (bot_id=?)"), met
    for statement, plan in plans.items():
        whole = [line for line in plan if line.startswith(("SCAN matches", "SCAN seats"))]
        assert whole == [], (statement, plan)
        if "finished_at DESC" in statement:
            assert not any("TEMP B-TREE FOR ORDER BY" in line for line in plan), (statement, plan)
        if statement in bots:
            # From the bot's own seats, by their index: its newest first, from the cursor.
            assert "INDEX ix_seats_bot_id_finished_at " in plan[0], plan
