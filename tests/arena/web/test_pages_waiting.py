"""Matches claimed but waiting their turn are not listed as running, in a real browser
(Debian's Chromium driven by Playwright) against one real `referee arena serve --workers 1`:
a place of the workers holds a batch, and the scheduler another, ready for the worker, while
one match is played. The organiser's table of running matches, the leaderboard's watch
links and a bot's "Playing now" list only the match being played, and the page of a match
that waits says so, not "Being played: 0 steps so far". At a laptop's width and a phone's.

Each look is checked against the database as it was before and after it: a match still
waiting after the page was made waited while it was made. The bots answer each request
after a while, so that a match lasts long enough to be seen on a loaded machine."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import expect
from sqlalchemy import select, update

from referee.arena.store.db import Author, Bot, Match, MatchState, Version
from referee.arena.store.home import open_arena
from tests.support.arena import add_version
from tests.support.arena_pages import DEADLINE_MS, Running, new_arena, served, sign_in
from tests.support.arena_serving import DEADLINE_S
from tests.support.browsers import Browser

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
CONFIG = """\
name: waiting
games: [ticblock]
start_clock: 5000
play_clock: 3000
arena:
  placement_matches: 2
"""
DELAY_MS = 300
BOTS = ("ada-one", "ada-two")
Seen = TypeVar("Seen")


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served on one local worker, whose ladder plays ada's slow bots."""
    directory, tokens = new_arena(tmp_path_factory.mktemp("waiting"), CONFIG, ("ada",))
    opened = open_arena(directory)
    try:
        ids = [add_version(opened, name, script="slow_bot.py") for name in BOTS]
        with opened.database.session() as session:
            owner = session.scalar(select(Author.id).where(Author.name == "ada"))
            session.execute(update(Bot).where(Bot.name.in_(BOTS)).values(author_id=owner))
            slow = f"{sys.executable} slow_bot.py late --at 0 --delay-ms {DELAY_MS}"
            session.execute(update(Version).where(Version.id.in_(ids)).values(run=slow))
    finally:
        opened.close()
    with served(directory, tokens, "--workers", "1") as running:
        yield running


def claimed_not_begun(directory: Path) -> set[str]:
    """The keys of the matches claimed but not begun, as the database has them now."""
    arena = open_arena(directory)
    try:
        with arena.database.session() as session:
            return set(
                session.scalars(
                    select(Match.key).where(
                        Match.state == MatchState.RUNNING, Match.started_at.is_(None)
                    )
                )
            )
    finally:
        arena.close()


def while_one_waits(arena: Running, look: Callable[[str], Seen]) -> tuple[str, Seen]:
    """`look(key)` at a match claimed but waiting its turn, made while it waited: a match
    that had not begun before the look nor after it. Looked again until one did not begin
    meanwhile."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        waiting = claimed_not_begun(arena.directory)
        for key in sorted(waiting):
            seen = look(key)
            if key in claimed_not_begun(arena.directory):
                return key, seen
        assert time.monotonic() < deadline, "no match was seen waiting its turn"
        time.sleep(0.2)


def keys_of(page: Any, selector: str) -> list[str]:
    """The match keys of the links `selector` finds."""
    hrefs = page.eval_on_selector_all(selector, "links => links.map(link => link.pathname)")
    return [href.rsplit("/", 1)[1] for href in hrefs]


def test_the_organiser_s_running_table_lists_only_the_matches_being_played(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "organiser")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)

        def listed(_key: str) -> list[str]:
            page.goto(f"{arena.url}/organiser")
            # The ladder's line and the table are filled by the same answer.
            expect(page.locator("#ladder-line")).not_to_be_empty(timeout=DEADLINE_MS)
            return keys_of(page, "#running tbody tr td:first-child a.watch")

        waiting, rows = while_one_waits(arena, listed)
        assert waiting not in rows, (waiting, rows)
        # The one being played is listed, with its start.
        expect(page.locator("#running tbody tr")).to_have_count(1, timeout=DEADLINE_MS)
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1] == size["width"], widths


def test_the_leaderboard_and_a_bot_s_page_link_only_the_matches_being_played(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "ada")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)

        def on_the_leaderboard(_key: str) -> list[str]:
            page.goto(f"{arena.url}/")
            expect(page.locator("#updated")).not_to_be_empty(timeout=DEADLINE_MS)
            return keys_of(page, "#leaderboard a.watch")

        waiting, linked = while_one_waits(arena, on_the_leaderboard)
        assert waiting not in linked, (waiting, linked)
        # The match being played is one match of two bots: a watch link beside each, once.
        expect(page.locator("#leaderboard a.watch")).to_have_count(2, timeout=DEADLINE_MS)

        def on_the_bot_s_page(_key: str) -> list[str]:
            page.goto(f"{arena.url}/bots/{BOTS[0]}")
            expect(page.locator("#bot-line")).not_to_be_empty(timeout=DEADLINE_MS)
            return keys_of(page, "#playing a.watch")

        waiting, linked = while_one_waits(arena, on_the_bot_s_page)
        assert waiting not in linked, (waiting, linked)
        expect(page.locator("#playing a.watch")).to_have_count(1, timeout=DEADLINE_MS)


def test_a_waiting_match_s_page_says_it_waits_its_turn(arena: Running, browser: Browser) -> None:
    page = browser.page
    sign_in(page, arena, "ada")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)

        def line(key: str) -> str:
            page.goto(f"{arena.url}/matches/{key}")
            said = page.locator("#live-line")
            expect(said).to_have_text(re.compile(r"^(Waiting|Being)"), timeout=DEADLINE_MS)
            return said.inner_text()

        _, said = while_one_waits(arena, line)
        assert said == "Waiting to be played: this page follows its moves once it starts."
        note = page.locator("main .note").first
        expect(note).to_contain_text("The match is waiting to be played")
