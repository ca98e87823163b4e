"""What authors and the organiser change through the API: a submission taken in (its bot's
name checked as the author's, the caps kept, the archive stored as received), and a bot taken
off the ladder or put back by the organiser."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from enum import Enum
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from referee.arena.accounts import audit
from referee.arena.store import lifecycle
from referee.arena.store.config import SubmissionCaps
from referee.arena.store.db import (
    ON_LADDER,
    Author,
    Bot,
    Setting,
    Version,
    name_key,
    organisers_version,
    utcnow,
)
from referee.arena.store.home import Arena
from referee.arena.store.manifest import BOT_NAME, MAX_BOT_NAME
from referee.arena.store.rows import bot_named
from referee.errors import ArenaError, SubmissionError
from referee.records.files import write_atomic

# The cap is on the files an archive unpacks to; as sent, an archive may also hold a tar
# header (512 bytes) per member and its end, uncompressed, or a zip's headers.
_PER_MEMBER = 1024
_SLACK = 64 * 1024
WINDOW = dt.timedelta(hours=1)
# What an author waits after an upload of theirs stalled, before the next: a stalled upload
# held a slot for its grace, and a few authors sending slowly in turn would keep the slots
# between them.
STALL_PAUSE = dt.timedelta(seconds=60)
REASON_CHARS = 200


class Refusal(Enum):
    """Why a submission is refused before it is stored."""

    BAD_NAME = "bad name"
    NOT_YOURS = "not yours"
    TOO_OFTEN = "too often"
    TOO_LARGE = "too large"
    TAKEN = "taken meanwhile"
    LOOK_ALIKE = "differs only by case"
    CLOSED = "closed"


# The setting that closes submissions (`Database.setting`): "1" once the final is called.
CLOSED_SETTING = "submissions_closed"


def close(arena: Arena) -> None:
    """Take no submission from now on: the season's final is called (`ladder/final.py`)."""
    arena.database.set_setting(CLOSED_SETTING, "1")


def closed(session: Session) -> bool:
    """Whether submissions are closed."""
    found = session.get(Setting, CLOSED_SETTING)
    return found is not None and found.value == "1"


class SubmissionRefused(SubmissionError):
    """A submission refused: why, in one line, and for one too many, when the author may
    submit again."""

    def __init__(self, why: Refusal, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.why = why
        self.retry_after_s = retry_after_s


def archive_limit(caps: SubmissionCaps) -> int:
    """The most bytes an archive may have as sent."""
    return caps.max_bytes + caps.max_files * _PER_MEMBER + _SLACK


def check(arena: Arena, author: Author, bot_name: str) -> None:
    """Refuse now what `accept` would refuse whatever the archive holds: before its bytes are
    read at all."""
    with arena.database.session() as session:
        _check(session, arena.config.submission, author, bot_name, utcnow())


def accept(arena: Arena, author: Author, bot_name: str, archive: bytes) -> Version:
    """Take in a submission: a new version of `bot_name` (made if new, and then the author's),
    queued for the intake, its archive stored at `arena.archive(id)`. The archive is written
    before the row is committed, so that the intake never sees a row without it, and removed
    if the row is not: a failed submission leaves neither. DatabaseUnavailable (503) while
    the database does not answer or the disk is full."""
    caps = arena.config.submission
    if len(archive) > archive_limit(caps):
        raise SubmissionRefused(
            Refusal.TOO_LARGE, f"the archive is larger than {archive_limit(caps)} bytes"
        )
    arena.database.watch.room(arena.directory)
    stored: Path | None = None
    try:
        with arena.database.session(write=True) as session:
            now = utcnow()
            bot = _check(session, caps, author, bot_name, now)
            if bot is None:
                bot = Bot(author_id=author.id, name=bot_name, created_at=now)
                session.add(bot)
                session.flush()
            last = session.scalar(select(func.max(Version.number)).where(Version.bot_id == bot.id))
            version = lifecycle.submitted(
                bot, (last or 0) + 1, hashlib.sha256(archive).hexdigest(), now
            )
            session.add(version)
            session.flush()
            stored = arena.archive(version.id)
            write_atomic(stored, archive)
    except BaseException as error:
        if stored is not None:
            stored.unlink(missing_ok=True)
        if isinstance(error, IntegrityError):
            raise SubmissionRefused(
                Refusal.TAKEN, f"bot {bot_name!r} was just submitted by someone else; try again"
            ) from None
        if isinstance(error, OSError):
            raise ArenaError(f"cannot store the archive: {error.strerror}") from None
        raise
    return version


def _check(
    session: Session, caps: SubmissionCaps, author: Author, bot_name: str, now: dt.datetime
) -> Bot | None:
    """The bot of that name if it is the author's, None if there is none yet; refused if it is
    another's, or the author has submitted their hour's worth (an upload that stalled
    counts as a submission), or submissions are closed."""
    if closed(session):
        raise SubmissionRefused(
            Refusal.CLOSED,
            "submissions are closed: the season's final is played among the bots as they are",
        )
    if not BOT_NAME.fullmatch(bot_name):
        raise SubmissionRefused(
            Refusal.BAD_NAME,
            f"bot name {bot_name[:60]!r}: use 1 to {MAX_BOT_NAME} letters, digits, _ or -,"
            " starting with a letter or digit",
        )
    bot = session.scalar(select(Bot).where(Bot.name_key == name_key(bot_name)))
    if bot is not None and bot.name != bot_name:
        raise SubmissionRefused(
            Refusal.LOOK_ALIKE,
            f"bot name {bot_name!r}: bot {bot.name!r} is already in this arena"
            " (names must differ by more than case)",
        )
    if bot is not None and bot.author_id != author.id:
        raise SubmissionRefused(Refusal.NOT_YOURS, f"bot {bot_name!r} is another author's")
    recent = (
        select(Version.submitted_at)
        .join(Bot)
        .where(Bot.author_id == author.id, Version.submitted_at > now - WINDOW)
        .order_by(Version.submitted_at)
    )
    stalled = audit.stalled_uploads(session, author.name, now - WINDOW, caps.per_hour)
    times = sorted([*session.scalars(recent.limit(caps.per_hour)).all(), *stalled])
    if len(times) >= caps.per_hour:
        frees = times[0] + WINDOW
        wait = max(1, math.ceil((frees - now).total_seconds()))
        raise SubmissionRefused(
            Refusal.TOO_OFTEN,
            f"{caps.per_hour} submissions in the last hour (an upload that stalled counts as"
            f" one); the next one may come at"
            f" {frees.isoformat(timespec='seconds')} (in {wait} s)",
            retry_after_s=wait,
        )
    stall = audit.last_stall(session, author.name, now - STALL_PAUSE)
    if stall is not None:
        wait = max(1, math.ceil((stall + STALL_PAUSE - now).total_seconds()))
        raise SubmissionRefused(
            Refusal.TOO_OFTEN,
            f"your last upload stalled at {stall.isoformat(timespec='seconds')}; the next one"
            f" may come {STALL_PAUSE.seconds} s after it (in {wait} s)",
            retry_after_s=wait,
        )
    return bot


def suspend(arena: Arena, bot_name: str, reason: str) -> Version:
    """Take a bot's version off the ladder, with the organiser's reason shown to its author.
    The version the ladder plays, whatever newer one the intake is working on."""
    with arena.database.session(write=True) as session:
        version = organisers_version(_locked_versions(session, bot_name))
        if version is None or version.state not in ON_LADDER:
            raise ArenaError(f"bot {bot_name!r} has no version on the ladder")
        # One line, and short: it is shown in tables.
        said = " ".join(reason.split())[:REASON_CHARS]
        lifecycle.suspend(version, f"suspended by the organiser{': ' if said else ''}{said}")
        return version


def reinstate(arena: Arena, bot_name: str) -> Version:
    """Put a bot's suspended version back on the ladder: rated if it has a rating, else
    placing; refused while another of its versions is on the ladder."""
    with arena.database.session(write=True) as session:
        version = organisers_version(_locked_versions(session, bot_name))
        if version is not None and version.state in ON_LADDER:
            raise ArenaError(f"bot {bot_name!r}: its version {version.number} is on the ladder")
        if version is None:
            raise ArenaError(f"bot {bot_name!r} has no suspended version to reinstate")
        lifecycle.reinstate(version)
        return version


def _locked_versions(session: Session, bot_name: str) -> list[Version]:
    """A bot's versions by number, locked (`lifecycle.locked`): the organiser's move is
    made on the state the ladder left, not on one read before its last recording."""
    bot = bot_named(session, bot_name)
    versions = lifecycle.locked(session, Version.bot_id == bot.id)
    return sorted(versions, key=lambda version: version.number)
