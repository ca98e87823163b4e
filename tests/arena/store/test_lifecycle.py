"""A version's lifecycle: the moves its table allows are made, with the reason and advice
that go with them, and the others are refused, leaving the version as it was."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from referee.arena.intake import submissions
from referee.arena.store import lifecycle
from referee.arena.store.db import IN_INTAKE, ON_LADDER, Author, Bot, Version, VersionState, utcnow
from referee.arena.store.home import Arena, add_author
from referee.arena.store.lifecycle import MOVES, MoveRefused
from referee.errors import ArenaError
from tests.support.arena_databases import ArenaMaker

S = VersionState


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    made = make_arena()
    add_author(made, "ada")
    return made


def submit(arena: Arena, bot_name: str = "ada-bot") -> int:
    """A new version of `bot_name` (the bot made if new), as a submission makes it."""
    with arena.database.session() as session:
        bot = session.scalar(select(Bot).where(Bot.name == bot_name))
        if bot is None:
            author = session.scalar(select(Author).where(Author.name == "ada"))
            assert author is not None
            bot = Bot(author=author, name=bot_name)
        version = lifecycle.submitted(bot, len(bot.versions) + 1, "0" * 64, utcnow())
        session.add(version)
        session.flush()
        return version.id


def change(arena: Arena, version_id: int, how: Callable[[Session, Version], None]) -> None:
    with arena.database.session() as session:
        how(session, session.get_one(Version, version_id))


def moved(arena: Arena, version_id: int, to: VersionState, reason: str = "") -> None:
    change(arena, version_id, lambda _, version: lifecycle.move(version, to, reason))


def placed(arena: Arena, version_id: int) -> None:
    change(arena, version_id, lifecycle.place)


def on_ladder(arena: Arena, bot_name: str = "ada-bot") -> int:
    """A new version of `bot_name` taken through the intake to the ladder."""
    version_id = submit(arena, bot_name)
    moved(arena, version_id, S.BUILDING)
    moved(arena, version_id, S.VALIDATING)
    placed(arena, version_id)
    return version_id


def read(arena: Arena, version_id: int) -> Version:
    with arena.database.session() as session:
        return session.get_one(Version, version_id)


def test_the_table_names_every_state_and_the_ends_have_no_way_out() -> None:
    assert set(MOVES) == set(VersionState)
    assert MOVES[S.FAILED] == MOVES[S.RETIRED] == frozenset()
    # The intake's versions go back to the queue after a restart; the ladder's never do.
    assert all(S.QUEUED in MOVES[state] for state in IN_INTAKE)
    assert all(S.QUEUED not in MOVES[state] for state in ON_LADDER)


def test_a_version_goes_through_the_intake_to_the_ladder(arena: Arena) -> None:
    version_id = submit(arena)
    assert read(arena, version_id).state == S.QUEUED
    moved(arena, version_id, S.BUILDING)
    moved(arena, version_id, S.VALIDATING)
    placed(arena, version_id)
    found = read(arena, version_id)
    assert (found.state, found.reason, found.advice) == (S.PLACING, "", "")
    moved(arena, version_id, S.RATED)
    assert read(arena, version_id).state == S.RATED


def test_a_move_the_table_does_not_allow_is_refused_and_changes_nothing(arena: Arena) -> None:
    version_id = submit(arena)
    before = read(arena, version_id).updated_at
    with pytest.raises(MoveRefused, match="is queued: it cannot become placing"):
        placed(arena, version_id)
    with pytest.raises(MoveRefused):
        moved(arena, version_id, S.SUSPENDED)
    found = read(arena, version_id)
    assert (found.state, found.updated_at) == (S.QUEUED, before)
    # Refused as the organiser's API refuses a state that forbids it: a 409.
    assert issubclass(MoveRefused, ArenaError)


def test_a_failed_version_keeps_its_reason_and_advice_and_goes_nowhere(arena: Arena) -> None:
    version_id = submit(arena)
    moved(arena, version_id, S.BUILDING)
    change(
        arena,
        version_id,
        lambda _, version: lifecycle.move(version, S.FAILED, "the build failed", "build: no"),
    )
    found = read(arena, version_id)
    assert (found.state, found.reason, found.advice) == (S.FAILED, "the build failed", "build: no")
    for state in VersionState:
        with pytest.raises(MoveRefused):
            moved(arena, version_id, state)


def test_placing_a_version_retires_the_bot_s_version_on_the_ladder(arena: Arena) -> None:
    first = on_ladder(arena)
    moved(arena, first, S.RATED)
    other_bot = on_ladder(arena, "bob-bot")
    second = on_ladder(arena)
    retired = read(arena, first)
    assert (retired.state, retired.reason) == (S.RETIRED, "replaced by version 2")
    assert read(arena, second).state == S.PLACING
    assert read(arena, other_bot).state == S.PLACING
    # Retired for good: neither placed, nor reinstated, nor suspended again.
    with pytest.raises(MoveRefused):
        placed(arena, first)
    with pytest.raises(MoveRefused):
        change(arena, first, lambda _, version: lifecycle.reinstate(version))
    with pytest.raises(MoveRefused):
        change(arena, first, lambda _, version: lifecycle.suspend(version, "why"))


def test_a_suspended_version_is_reinstated_where_its_rating_puts_it(arena: Arena) -> None:
    placing = on_ladder(arena)
    rated = on_ladder(arena, "bob-bot")
    moved(arena, rated, S.RATED)
    with arena.database.session() as session:
        session.get_one(Version, rated).rating = 1234.0
    for version_id, back in ((placing, S.PLACING), (rated, S.RATED)):
        change(arena, version_id, lambda _, version: lifecycle.suspend(version, "faulted"))
        found = read(arena, version_id)
        assert (found.state, found.reason) == (S.SUSPENDED, "faulted")
        with pytest.raises(MoveRefused):
            change(arena, version_id, lambda _, version: lifecycle.suspend(version, "again"))
        change(arena, version_id, lambda _, version: lifecycle.reinstate(version))
        found = read(arena, version_id)
        assert (found.state, found.reason) == (back, "")


def test_the_organiser_suspends_and_reinstates_through_the_same_moves(arena: Arena) -> None:
    version_id = on_ladder(arena)
    moved(arena, version_id, S.RATED)
    suspended = submissions.suspend(arena, "ada-bot", "  plays\nforever ")
    assert suspended.id == version_id
    found = read(arena, version_id)
    assert (found.state, found.reason) == (S.SUSPENDED, "suspended by the organiser: plays forever")
    with pytest.raises(ArenaError, match="has no version on the ladder"):
        submissions.suspend(arena, "ada-bot", "again")
    # Rated before, so rated again only if it has a rating: it has none yet.
    assert submissions.reinstate(arena, "ada-bot").state == S.PLACING
    with pytest.raises(ArenaError, match="its version 1 is on the ladder"):
        submissions.reinstate(arena, "ada-bot")


def test_a_restart_queues_again_only_what_the_intake_was_working_on(arena: Arena) -> None:
    building, validating, queued, placing = (submit(arena, f"bot-{i}") for i in range(4))
    moved(arena, building, S.BUILDING)
    for version_id in (validating, placing):
        moved(arena, version_id, S.BUILDING)
        moved(arena, version_id, S.VALIDATING)
    placed(arena, placing)
    with arena.database.session() as session:
        lifecycle.requeue_interrupted(session)
    states = [read(arena, v).state for v in (building, validating, queued, placing)]
    assert states == [S.QUEUED, S.QUEUED, S.QUEUED, S.PLACING]
