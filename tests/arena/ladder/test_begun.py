"""A match claimed is not a match being played: the ladder marks a match running when a
place claims it (`claimed_at`) and begun (`started_at`) only when its venue says its play
begins, so that whoever reads the database (the pages, another process) lists as running
only the matches being played, not those waiting their turn in a place's batch."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable

from sqlalchemy import select, update

from referee.arena.ladder.playing import Ladder
from referee.arena.ladder.queue import (
    begun,
    claim,
    field_players,
    ladder_members,
    open_field,
    requeue,
)
from referee.arena.reading import views
from referee.arena.store.db import Match, MatchState
from referee.arena.store.home import Arena
from tests.support.arena import LADDER_CONFIG, add_version
from tests.support.arena_databases import ArenaMaker

PATIENCE_S = 120
CONFIG = LADDER_CONFIG.format(game="ticblock", arena="")


def rows(arena: Arena) -> dict[str, Match]:
    with arena.database.session() as session:
        return {match.key: match for match in session.scalars(select(Match))}


def test_a_claimed_match_is_running_and_begun_only_once_its_venue_says_it_begins(
    make_arena: ArenaMaker,
) -> None:
    arena = make_arena(config_text=CONFIG)
    for name in ("ann", "bob"):
        add_version(arena, name)
    members = ladder_members(arena)
    config = arena.config.field_config(field_players(arena, members.values()), arena.results)
    the_field = open_field(arena, members, config)
    now = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
    with arena.database.session(write=True) as session:
        claimed = claim(session, arena.config, the_field, 3, 8, now)
    assert len(claimed) == 3
    first, second, third = (c.match.match_id for c in claimed)
    found = rows(arena)
    for key in (first, second, third):
        assert (found[key].state, found[key].claimed_at, found[key].started_at) == (
            MatchState.RUNNING,
            now,
            None,
        )
    # Claimed, not begun: none is listed as running.
    assert views.running(arena) == []
    began = now + dt.timedelta(seconds=2)
    with arena.database.session(write=True) as session:
        begun(session, {first: began})
    assert [match["key"] for match in views.running(arena)] == [first]
    assert views.running(arena)[0]["started_at"] == began.isoformat(timespec="seconds")
    # Said again (a mark tried again, or a late word), its start stays the first.
    with arena.database.session(write=True) as session:
        begun(session, {first: began + dt.timedelta(seconds=5)})
    assert rows(arena)[first].started_at == began
    # A play lost is queued again, neither claimed nor begun; a late word of it marks nothing.
    row = next(c.row for c in claimed if c.match.match_id == second)
    requeue(arena, row, "the test lost it")
    with arena.database.session(write=True) as session:
        begun(session, {second: began})
    found = rows(arena)
    assert (found[second].state, found[second].claimed_at, found[second].started_at) == (
        MatchState.QUEUED,
        None,
        None,
    )
    # A word that comes after its match was recorded still gives it its start.
    with arena.database.session(write=True) as session:
        session.execute(update(Match).where(Match.key == third).values(state=MatchState.DONE))
        begun(session, {third: began})
    assert rows(arena)[third].started_at == began
    assert [match["key"] for match in views.running(arena)] == [first]


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, f"not within {PATIENCE_S} s: {what}"
        await asyncio.sleep(0.2)


def test_the_ladder_marks_each_match_begun_between_its_claim_and_its_end(
    make_arena: ArenaMaker,
) -> None:
    arena = make_arena(config_text=CONFIG)
    for name in ("ann", "bob", "cat"):
        add_version(arena, name)
    ladder = Ladder(arena)

    seen: list[Match] = []

    def marked() -> bool:
        """Whether 4 matches are done, each marked begun: a mark is written beside the
        ladder's work, soon after its match began, and may come after its end."""
        seen[:] = [match for match in rows(arena).values() if match.state == MatchState.DONE]
        return len(seen) >= 4 and all(match.started_at is not None for match in seen)

    async def main() -> None:
        running = asyncio.create_task(ladder.run())
        try:
            await until(marked, "4 matches, each marked begun")
            assert not running.done(), "the ladder stopped on its own"
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    asyncio.run(main())
    for match in seen:
        assert match.claimed_at is not None and match.started_at is not None
        assert match.finished_at is not None
        assert match.claimed_at <= match.started_at <= match.finished_at, match.key
