"""A running match watched in a real browser, Debian's Chromium driven by Playwright, against
one real `referee arena serve`: an author signed in in two browser contexts opens one of
her matches as it is played, and both pages follow its steps without reloading (one at the
latest step, one stepped back to the start and left there), then show the finished match.
The leaderboard, the bot's page and the organiser's page link to the running matches. No
request leaves the arena's origin and nothing goes wrong in the console.

The bots answer each request after 0.8 s on a play clock of 3 s, so that a match of ticblock
lasts long enough to be watched on a loaded machine."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect, sync_playwright
from sqlalchemy import select, update

from referee.arena.store.db import Author, Bot, Version
from referee.arena.store.home import open_arena
from tests.support.arena import add_version
from tests.support.arena_pages import (
    DEADLINE_MS,
    Running,
    a_fresh_match,
    new_arena,
    nothing_goes_wrong,
    served,
    sign_in,
)
from tests.support.browsers import EXECUTABLE, FLAGS, Browser

pytestmark = pytest.mark.browser
CONFIG = """\
name: watched
games: [ticblock]
start_clock: 5000
play_clock: 3000
arena:
  placement_matches: 2
"""
# Each bot plays random moves, each after this long.
DELAY_MS = 800
BOTS = ("ada-one", "ada-two")
# Whether a page's viewer has more steps than `n`, in the page as it was first loaded
# (`notReloaded`, set by the test, is gone once the page is loaded again).
FOLLOWS = """n => {
  const found = /^step (\\d+) of (\\d+)$/.exec(document.getElementById("step-label").textContent);
  return found !== null && Number(found[2]) > n && window.notReloaded === true;
}"""
# A match chosen to be watched has got no further than this when it is opened.
FRESH_STEPS = 2


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, whose ladder plays ada's two slow bots."""
    directory, tokens = new_arena(tmp_path_factory.mktemp("watched"), CONFIG, ("ada",))
    put_on_the_ladder(directory, "ada")
    with served(directory, tokens) as running:
        yield running


def put_on_the_ladder(directory: Path, author: str) -> None:
    """The bots of BOTS, `author`'s, placing: each plays random moves DELAY_MS after each
    request (the tests' misbehaving player, late at every step). Test data, written as rows."""
    arena = open_arena(directory)
    try:
        ids = [add_version(arena, name, script="slow_bot.py") for name in BOTS]
        with arena.database.session() as session:
            owner = session.scalar(select(Author.id).where(Author.name == author))
            session.execute(update(Bot).where(Bot.name.in_(BOTS)).values(author_id=owner))
            slow = f"{sys.executable} slow_bot.py late --at 0 --delay-ms {DELAY_MS}"
            session.execute(update(Version).where(Version.id.in_(ids)).values(run=slow))
    finally:
        arena.close()


@pytest.fixture(scope="module")
def browsers(arena: Running) -> Iterator[tuple[Browser, Browser]]:
    """Two contexts of one Chromium, each with cookies of its own."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=EXECUTABLE, args=FLAGS, headless=True)
        try:
            home = f"{arena.url}/"
            yield Browser(chromium.new_context(), home), Browser(chromium.new_context(), home)
        finally:
            chromium.close()


@pytest.fixture(autouse=True)
def nothing_went_wrong(browsers: tuple[Browser, Browser]) -> Iterator[None]:
    with nothing_goes_wrong(*browsers):
        yield


def steps_shown(page: Any) -> tuple[int, int]:
    """The step the viewer shows, and the last it has."""
    label = page.locator("#step-label").text_content()
    found = re.fullmatch(r"step (\d+) of (\d+)", label or "")
    assert found is not None, label
    return int(found.group(1)), int(found.group(2))


def a_watch_link(page: Any, url: str, links: str) -> Any:
    """The first of `links` on the page at `url`, once shown: a link to a running match."""
    page.goto(url)
    link = page.locator(links).first
    expect(link).to_be_visible(timeout=DEADLINE_MS)
    assert re.fullmatch(r"/matches/arena-\d+", link.get_attribute("href") or "")
    return link


def test_the_leaderboard_the_bot_s_page_and_the_organiser_s_link_to_its_running_match(
    arena: Running, browsers: tuple[Browser, Browser]
) -> None:
    organiser = browsers[1].page
    sign_in(organiser, arena, "organiser")
    a_watch_link(organiser, f"{arena.url}/organiser", "#running tbody a.watch")
    page = browsers[0].page
    sign_in(page, arena, "ada")
    a_watch_link(page, f"{arena.url}/", "#leaderboard tbody tr[data-bot='ada-one'] a.watch")
    a_watch_link(page, f"{arena.url}/bots/ada-two", "#playing a.watch").click()
    page.wait_for_url(re.compile(r"/matches/arena-\d+$"))
    expect(page.locator("body")).to_have_attribute("data-page", re.compile("live|match"))


def test_an_author_watches_her_running_match_in_two_contexts_until_it_ends(
    arena: Running, browsers: tuple[Browser, Browser]
) -> None:
    first, second = browsers
    sign_in(first.page, arena, "ada")
    sign_in(second.page, arena, "ada")
    key = a_fresh_match(arena, "ada", FRESH_STEPS)
    pages = [first.page, second.page]
    for page in pages:
        page.goto(f"{arena.url}/matches/{key}")
        expect(page.locator("body")).to_have_attribute("data-page", "live")
        expect(page.locator("#step-label")).to_have_text(re.compile(r"step \d+ of \d+"))
        # Gone if the page is loaded again: the steps must come without a reload.
        page.evaluate("window.notReloaded = true")
    # The second reader, once there is a step, steps back to the start, and stays there.
    second.page.wait_for_function(FOLLOWS, arg=0, timeout=DEADLINE_MS)
    second.page.click("#first")
    opened = [steps_shown(page)[1] for page in pages]
    for page, last in zip(pages, opened, strict=True):
        page.wait_for_function(FOLLOWS, arg=last, timeout=DEADLINE_MS)
    shown, last = steps_shown(first.page)
    assert shown == last > opened[0]
    shown, last = steps_shown(second.page)
    assert shown == 0 and last > opened[1]
    # Done: each page shows the finished match, where its reader was: the one who followed at
    # its end, the one who stepped back at the start. Its bots' logs are hers to read, and
    # said to be empty (they write nothing to standard error): no button that finds none.
    for page in pages:
        expect(page.locator("body")).to_have_attribute("data-page", "match", timeout=DEADLINE_MS)
        expect(page.locator("#quiet-seats")).to_contain_text("wrote nothing to its standard")
        expect(page.locator(".log-button")).to_have_count(0)
        # The viewer fills its label once the page has loaded.
        expect(page.locator("#step-label")).to_have_text(re.compile(r"step \d+ of \d+"))
        assert steps_shown(page)[1] >= last
    shown, last = steps_shown(first.page)
    assert shown == last
    assert steps_shown(second.page)[0] == 0
    _, done = arena.served.get(f"/api/matches/{key}", arena.tokens["ada"])
    assert done["state"] == "done" and done["transcript"] is not None
