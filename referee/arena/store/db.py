"""The arena's database: who submitted what, each version's way through the intake, the
ladder's matches and its queue, and the history of the ratings. SQLite in the arena's
directory by default, or any database SQLAlchemy reaches (PostgreSQL); the schema is
Alembic's (`migrations/`), so a later version upgrades an arena in place.

The database is the queue: a match is a row before it is played, and is marked done in the
same transaction that records its result, so a kill at any moment loses nothing finished.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import (
    Boolean,
    ColumnExpressionArgument,
    Connection,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    event,
    select,
)
from sqlalchemy.engine import Dialect, ExceptionContext
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship
from sqlalchemy.sql.selectable import ScalarSelect

from referee.arena.store.outages import Watch, trouble_of
from referee.arena.store.queries import kept_parameters
from referee.errors import ArenaError

MIGRATIONS = Path(__file__).with_name("migrations")
# What a step keeps of its log: the start of a build's output, and a line saying it was cut.
STEP_LOG_LIMIT = 256 * 1024
# A SQLite writer waits this long for another's transaction before it fails.
SQLITE_BUSY_S = 30
# SQLite's words for a database file it cannot write or read.
_FILE_FAILED = ("readonly database", "disk i/o error", "unable to open database file")
# The execution option of the engine whose transactions write (`Database.session`).
_WRITES = "referee_writes"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def player_name(bot: str, number: int) -> str:
    """A version's name as a player: its bot's name and its number, `ada-bot.3`."""
    return f"{bot}.{number}"


class VersionState(StrEnum):
    """Where a submitted version is: in the intake, on the ladder, or off it (and why)."""

    QUEUED = "queued"
    BUILDING = "building"
    VALIDATING = "validating"
    PLACING = "placing"
    RATED = "rated"
    FAILED = "failed"
    SUSPENDED = "suspended"
    RETIRED = "retired"


# The versions the ladder plays.
ON_LADDER = (VersionState.PLACING, VersionState.RATED)
# The versions the intake works on, taken up again after a restart.
IN_INTAKE = (VersionState.BUILDING, VersionState.VALIDATING)


class _InState(Protocol):
    @property
    def state(self) -> str: ...


_Stated = TypeVar("_Stated", bound=_InState)


def organisers_version(versions: Sequence[_Stated]) -> _Stated | None:
    """The version of a bot (its `versions`, by number: rows or objects) that the organiser
    suspends or reinstates: the one on the ladder, else its newest suspended one; None for
    neither. A bot has at most one version on the ladder: placing one retires the others."""
    playing = [v for v in versions if v.state in ON_LADDER]
    suspended = [v for v in versions if v.state == VersionState.SUSPENDED]
    chosen = playing or suspended
    return chosen[-1] if chosen else None


class StepKind(StrEnum):
    UNPACK = "unpack"
    BUILD = "build"
    VALIDATE = "validate"


class StepState(StrEnum):
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"


class MatchState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class Base(DeclarativeBase):
    pass


class _When(TypeDecorator[dt.datetime]):
    """A moment, kept in UTC and read back aware on every database: SQLite keeps no zone (it
    would drop an offset and give back naive times), PostgreSQL gives the server's zone."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            # Which zone a naive time meant is a guess each database would make differently.
            raise ValueError(f"{value}: a time without a zone; the arena keeps UTC")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        moment: dt.datetime = value
        if moment.tzinfo is None:
            return moment.replace(tzinfo=dt.UTC)
        return moment.astimezone(dt.UTC)


def name_key(name: str) -> str:
    """A name as the database keeps it unique: without regard to case, so that `ADA-GOOD`
    cannot stand beside `ada-good`. Names are ASCII (`home.AUTHOR_PATTERN`,
    `manifest.BOT_NAME`): there are no other look-alikes to fold."""
    return name.lower()


def _name_key_of(context: Any) -> str:
    return name_key(context.get_current_parameters()["name"])


class Author(Base):
    __tablename__ = "authors"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    # `name_key(name)`, made on insert; a name never changes.
    name_key: Mapped[str] = mapped_column(String(64), unique=True, default=_name_key_of)
    # None once the organiser has revoked it: no token is that author's.
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    organiser: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(_When(), default=utcnow)

    bots: Mapped[list[Bot]] = relationship(back_populates="author")


class Bot(Base):
    __tablename__ = "bots"

    id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"), index=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    name_key: Mapped[str] = mapped_column(String(40), unique=True, default=_name_key_of)
    created_at: Mapped[dt.datetime] = mapped_column(_When(), default=utcnow)

    author: Mapped[Author] = relationship(back_populates="bots")
    versions: Mapped[list[Version]] = relationship(back_populates="bot", order_by="Version.number")


class Version(Base):
    __tablename__ = "versions"
    # Two submissions of one bot at once (two processes, two API servers) never share a number.
    __table_args__ = (UniqueConstraint("bot_id", "number", name="uq_versions_bot_number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), index=True, default=VersionState.QUEUED)
    # One line: why it failed, was suspended or retired.
    reason: Mapped[str] = mapped_column(Text, default="")
    # validate's advice for what failed, one line each.
    advice: Mapped[str] = mapped_column(Text, default="")
    run: Mapped[str] = mapped_column(Text, default="")
    build: Mapped[str | None] = mapped_column(Text, nullable=True)
    archive_sha256: Mapped[str] = mapped_column(String(64))
    # Its built directory as a bundle for workers (`bot_bundles`): none until it is built.
    bundle_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    submitted_at: Mapped[dt.datetime] = mapped_column(_When(), default=utcnow, index=True)
    updated_at: Mapped[dt.datetime] = mapped_column(_When(), default=utcnow)
    rating: Mapped[float | None] = mapped_column(Float, nullable=True)
    margin: Mapped[float | None] = mapped_column(Float, nullable=True)
    matches: Mapped[int] = mapped_column(Integer, default=0)
    # Matches in which it faulted.
    faults: Mapped[int] = mapped_column(Integer, default=0)
    # Its results, as `tallies` counts them when each match is recorded, and its newest
    # finished match: the leaderboard's, read as they are, not counted anew from a season.
    wins: Mapped[int] = mapped_column(Integer, default=0)
    draws: Mapped[int] = mapped_column(Integer, default=0)
    losses: Mapped[int] = mapped_column(Integer, default=0)
    last_match_id: Mapped[int | None] = mapped_column(ForeignKey("matches.id"), nullable=True)
    last_match_at: Mapped[dt.datetime | None] = mapped_column(_When(), nullable=True)

    bot: Mapped[Bot] = relationship(back_populates="versions")
    steps: Mapped[list[Step]] = relationship(back_populates="version", order_by="Step.id")

    @property
    def player_name(self) -> str:
        """Its name as a player, in transcripts and standings."""
        return player_name(self.bot.name, self.number)


class Step(Base):
    __tablename__ = "steps"

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16), default=StepState.RUNNING)
    started_at: Mapped[dt.datetime] = mapped_column(_When(), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(_When(), nullable=True)
    verdict: Mapped[str] = mapped_column(Text, default="")
    log: Mapped[str] = mapped_column(Text, default="")

    version: Mapped[Version] = relationship(back_populates="steps")


class Match(Base):
    __tablename__ = "matches"
    # The finished matches newest first, a page at a time: read in this index's order, from
    # where the page before ended, not sorted anew from the whole season at each page.
    __table_args__ = (Index("ix_matches_state_finished_at_id", "state", "finished_at", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    # The transcript's match id.
    key: Mapped[str] = mapped_column(String(64), unique=True)
    # The matches of a pair (the seats swapped) share it: the id of the first.
    pair: Mapped[int] = mapped_column(Integer, index=True, default=0)
    game: Mapped[str] = mapped_column(Text)
    seed: Mapped[int] = mapped_column(Integer)
    opening: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), index=True, default=MatchState.QUEUED)
    placement: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(_When(), default=utcnow)
    # When the ladder claimed it for a place of its venue (marking it running), and when its
    # play began there: a place plays its batch one match at a time, so a match claimed may
    # wait its turn, and is being played only once it has begun (`started_at` set).
    claimed_at: Mapped[dt.datetime | None] = mapped_column(_When(), nullable=True)
    started_at: Mapped[dt.datetime | None] = mapped_column(_When(), nullable=True)
    # Set when it is done, and only then.
    finished_at: Mapped[dt.datetime | None] = mapped_column(_When(), nullable=True)
    # The transcript's path, relative to the arena's directory.
    transcript: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary: Mapped[str] = mapped_column(Text, default="")
    # The plays of it that the arena itself lost (a worker, the venue, a stop), each played
    # again and none rated, and why the last one was lost.
    lost: Mapped[int] = mapped_column(Integer, default=0)
    lost_why: Mapped[str] = mapped_column(Text, default="")

    seats: Mapped[list[Seat]] = relationship(back_populates="match", order_by="Seat.index")


def _versions_bot(context: DefaultExecutionContext) -> int | None:
    version_id = context.get_current_parameters()["version_id"]
    return context.connection.scalar(select(Version.bot_id).where(Version.id == version_id))


def _matchs_moment(context: DefaultExecutionContext) -> dt.datetime | None:
    match_id = context.get_current_parameters()["match_id"]
    return context.connection.scalar(select(Match.finished_at).where(Match.id == match_id))


class Seat(Base):
    __tablename__ = "seats"
    # A bot's finished matches newest first, a page at a time, and of a result or against an
    # opponent: read from its own seats in the first index's order, at the same cost however
    # long the season, not found among its versions' seats and sorted anew. Both hold the
    # points, and the second each seat's bot: the other seat of a match is judged from the
    # two indexes alone, not from the seats' rows.
    __table_args__ = (
        Index("ix_seats_bot_id_finished_at", "bot_id", "finished_at", "match_id", "points"),
        Index("ix_seats_match_id_bot_id", "match_id", "bot_id", "points"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"))
    index: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(Text)
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id"), index=True)
    # The version's bot, and the match's moment once it is done (set as `recording` marks it
    # done): kept with the seat for the index above. Unless given, a seat takes them from
    # its version and its match as it is written.
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), default=_versions_bot)
    finished_at: Mapped[dt.datetime | None] = mapped_column(
        _When(), nullable=True, default=_matchs_moment
    )
    points: Mapped[float | None] = mapped_column(Float, nullable=True)
    faulted: Mapped[bool] = mapped_column(Boolean, default=False)

    match: Mapped[Match] = relationship(back_populates="seats")
    version: Mapped[Version] = relationship()


class Meeting(Base):
    """What a bot made of its finished matches against another bot, every version of each
    counted: `tallies` adds each match as it is recorded, so that a bot's page reads its
    head to head as it is, at the same cost however many matches the two played."""

    __tablename__ = "meetings"
    # A bot's rows side by side, in the order of its primary key: its head to head is one
    # range of the table, not a row looked up for each opponent.
    __table_args__ = ({"sqlite_with_rowid": False},)

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    opponent_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    # Finished matches; those won, drawn and lost (a match without a result is in none).
    matches: Mapped[int] = mapped_column(Integer, default=0)
    wins: Mapped[int] = mapped_column(Integer, default=0)
    draws: Mapped[int] = mapped_column(Integer, default=0)
    losses: Mapped[int] = mapped_column(Integer, default=0)


class RatingPoint(Base):
    """A version's rating as the ladder fitted it at a moment: the history a bot's page draws
    and the leaderboard's change over a day. The ladder writes one only when the rating moved
    (`rating_fits.POINT_MOVE`) and no sooner than `rating_fits.POINT_S` after the last."""

    __tablename__ = "rating_points"
    # A version's points by time: its last, its last before a moment, its first.
    __table_args__ = (Index("ix_rating_points_version_id_at", "version_id", "at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("versions.id"))
    at: Mapped[dt.datetime] = mapped_column(_When())
    rating: Mapped[float] = mapped_column(Float)
    margin: Mapped[float] = mapped_column(Float)


def rating_point(
    column: Mapped[Any],
    version_id: ColumnExpressionArgument[int],
    newest: bool = True,
    at_or_before: dt.datetime | None = None,
) -> ScalarSelect[Any]:
    """`column` of a version's newest rating point (at or before a moment, if given), or of
    its first: a subquery correlated with the query it goes in, one index seek per version
    however long its history."""
    query = select(column).where(RatingPoint.version_id == version_id)
    if at_or_before is not None:
        query = query.where(RatingPoint.at <= at_or_before)
    order = RatingPoint.at.desc() if newest else RatingPoint.at
    return query.order_by(order).limit(1).scalar_subquery()


class SignIn(Base):
    """A browser signed in (`sessions`): its cookie's id kept only as its hash, whose author,
    and until when. Signing out or being signed out by the organiser deletes the row."""

    __tablename__ = "sign_ins"

    id: Mapped[int] = mapped_column(primary_key=True)
    id_hash: Mapped[str] = mapped_column(String(64), unique=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(_When())
    seen_at: Mapped[dt.datetime] = mapped_column(_When())
    expires_at: Mapped[dt.datetime] = mapped_column(_When(), index=True)


class AuditEntry(Base):
    """A row of the audit log (`audit`): when, who (an author's name, or none), what, of
    which object, from which client address, and a line of detail."""

    __tablename__ = "audit"
    # A stranger's failed sign-ins of the moment are counted by address and by kind.
    __table_args__ = (
        Index("ix_audit_address_at", "address", "at"),
        Index("ix_audit_action_at", "action", "at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(_When())
    author: Mapped[str | None] = mapped_column(String(64), nullable=True)
    action: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(Text, default="")
    address: Mapped[str] = mapped_column(String(64), default="")
    detail: Mapped[str] = mapped_column(Text, default="")


class Setting(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Database:
    """An arena's database: its engine, sessions that commit as a whole or not at all, and
    the watch on its outages (`outages`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = _engine(url)
        self._writer = self.engine.execution_options(**{_WRITES: True})
        self.watch = Watch()
        # Set once SQLite found its file read-only (`_file_failed`): what this process
        # opened of it stays so, and only a process of its own opens it afresh.
        self.read_only_seen = False
        if url.startswith("sqlite"):
            event.listen(self.engine, "handle_error", self._file_failed)

    def _file_failed(self, context: ExceptionContext) -> None:
        """A database file that could not be written or read (made read-only, a disk's
        error) is a connection lost: the pool's connections are opened again, not kept.
        A file SQLite found read-only stays so for every connection of the process that
        has it open (they share its memory map), hence `read_only_seen`."""
        said = str(context.original_exception).lower()
        if any(words in said for words in _FILE_FAILED):
            context.is_disconnect = True
        if "readonly database" in said:
            self.read_only_seen = True

    @contextlib.contextmanager
    def session(self, write: bool = False) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back when it raises. One
        that `write`s what it reads holds the database's write lock from its start on
        SQLite, whose transactions otherwise take it only at their first write, after
        their reads (on PostgreSQL such reads lock their rows: `lifecycle.locked`).
        DatabaseUnavailable (503) if the database does not answer or cannot write."""
        try:
            engine = self._writer if write else self.engine
            with Session(engine, expire_on_commit=False) as session, session.begin():
                yield session
        except (SQLAlchemyError, OSError) as error:
            trouble = trouble_of(error)
            if trouble is None:
                raise
            raise self.watch.failed(database_problem(error), trouble, write) from error
        self.watch.answered(wrote=write)

    def setting(self, key: str, default: str = "") -> str:
        with self.session() as session:
            found = session.get(Setting, key)
            return found.value if found is not None else default

    def set_setting(self, key: str, value: str) -> None:
        with self.session(write=True) as session:
            session.merge(Setting(key=key, value=value))

    def close(self) -> None:
        self.engine.dispose()


def _engine(url: str) -> Engine:
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_S})
            event.listen(engine, "connect", _sqlite_pragmas)
            event.listen(engine, "begin", _sqlite_begin)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except (SQLAlchemyError, ImportError, ValueError) as error:
        raise ArenaError(f"database {_shown(url)}: {database_problem(error)}") from None
    event.listen(engine, "before_cursor_execute", _kept, retval=True)
    return engine


def _kept(
    _connection: Connection,
    _cursor: Any,
    statement: str,
    parameters: Any,
    _context: Any,
    _executemany: bool,
) -> tuple[str, Any]:
    """Every statement's text parameters as any database keeps them (`queries.kept`): an
    author's or a bot's NUL, which PostgreSQL refuses, or lone surrogate, which no UTF-8
    holds, never fails a write or a lookup, on either database."""
    return statement, kept_parameters(parameters)


def database_problem(error: Exception) -> str:
    """What went wrong with a database, in one line: the driver's own first line, without
    SQLAlchemy's wrapping, its statement or its link to a page of background."""
    cause = getattr(error, "orig", None) or error
    # A file's error without its path: the database's own words are enough.
    said = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    return f"{type(cause).__name__}: {lines[0] if lines else 'no detail'}"


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    # WAL: the pages read while the ladder writes; foreign keys: SQLite checks none unasked.
    # Temporary tables and sorts in memory: past its cache a large sort (the leaderboard's
    # tallies of a long season) is written to a file in TMPDIR, and a read would fail while
    # that disk is full (often the arena's own), where reads must go on.
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    """A session that writes what it reads takes the write lock before its first read. Any
    other reads outside a transaction, and the driver begins one (IMMEDIATE: it waits its
    turn) at its first write: a transaction begun at its first read could not write once
    another had written since (SQLite refuses it at once, without waiting), and a page's
    small write, a sign-out, would fail whenever the ladder had just recorded a match."""
    driver = connection.connection.dbapi_connection
    if connection.get_execution_options().get(_WRITES, False):
        driver.isolation_level = None  # type: ignore[union-attr]
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        driver.isolation_level = "IMMEDIATE"  # type: ignore[union-attr]


def _shown(url: str) -> str:
    """A URL as it may be printed: without its password."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(an unreadable URL)"


def upgrade(url: str) -> None:
    """Bring the database at `url` to the newest schema (made from nothing if empty)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    try:
        command.upgrade(config, "head")
    except SQLAlchemyError as error:
        raise ArenaError(f"database {_shown(url)}: {database_problem(error)}") from None


def open_database(url: str) -> Database:
    """The database at `url`, upgraded to the newest schema."""
    upgrade(url)
    return Database(url)
