"""A running match of a game of imperfect information watched in a real browser, Debian's
Chromium driven by Playwright, against one real `referee arena serve`: ada and bob each
watch the blind tic-tac-toe match of their bots as it is played, each in a browser context
of their own, and each page holds and shows only what that author's seat was told (no
board, no move of the other seat, in the page or in any answer it fetched), step by step
without reloading; cy, an author with no bot in it, reads that it is being played and no
count of steps she cannot see. Once the match ends, the pages show it whole.

The bots answer each request after 0.8 s on a play clock of 3 s, so that a match lasts
long enough to be watched on a loaded machine."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect, sync_playwright
from sqlalchemy import select, update

from referee.arena.store.db import Author, Bot, Version
from referee.arena.store.home import open_arena
from referee.games import RULESHEETS
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
CONFIG = f"""\
name: blind
games: [{RULESHEETS / "blind-tictactoe.kif"}]
start_clock: 5000
play_clock: 3000
arena:
  placement_matches: 2
"""
DELAY_MS = 800
# Each author's bot; and an author with none.
BOTS = {"ada": "ada-bot", "bob": "bob-bot"}
NO_BOT = "cy"
# Whether a page's viewer has more steps than `n`, in the page as it was first loaded.
FOLLOWS = """n => {
  const found = /^step (\\d+) of (\\d+)$/.exec(document.getElementById("step-label").textContent);
  return found !== null && Number(found[2]) > n && window.notReloaded === true;
}"""
ROLES = ("xplayer", "oplayer")


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, whose ladder plays ada's bot against bob's, both slow."""
    authors = (*BOTS, NO_BOT)
    directory, tokens = new_arena(tmp_path_factory.mktemp("blind"), CONFIG, authors)
    opened = open_arena(directory)
    try:
        ids = {
            author: add_version(opened, bot, script="slow_bot.py") for author, bot in BOTS.items()
        }
        slow = f"{sys.executable} slow_bot.py late --at 0 --delay-ms {DELAY_MS}"
        with opened.database.session() as session:
            for author, bot in BOTS.items():
                owner = session.scalar(select(Author.id).where(Author.name == author))
                session.execute(update(Bot).where(Bot.name == bot).values(author_id=owner))
            session.execute(update(Version).where(Version.id.in_(ids.values())).values(run=slow))
    finally:
        opened.close()
    with served(directory, tokens) as running:
        yield running


@pytest.fixture(scope="module")
def browsers(arena: Running) -> Iterator[dict[str, Browser]]:
    """A context of one Chromium for each author, each with cookies of its own."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=EXECUTABLE, args=FLAGS, headless=True)
        try:
            home = f"{arena.url}/"
            yield {author: Browser(chromium.new_context(), home) for author in (*BOTS, NO_BOT)}
        finally:
            chromium.close()


@pytest.fixture(autouse=True)
def nothing_went_wrong(browsers: dict[str, Browser]) -> Iterator[None]:
    with nothing_goes_wrong(*browsers.values()):
        yield


def frames_held(page: Any) -> list[dict[str, Any]]:
    """The frames the page was made with."""
    return list(json.loads(page.locator("#frames").text_content() or "[]"))


def test_each_author_watching_the_running_match_sees_only_their_seat_s_view(
    arena: Running, browsers: dict[str, Browser]
) -> None:
    fetched: dict[str, list[dict[str, Any]]] = {author: [] for author in BOTS}
    for author, browser in browsers.items():
        sign_in(browser.page, arena, author)
        if author == NO_BOT:
            continue

        def keep(response: Any, into: list[dict[str, Any]] = fetched[author]) -> None:
            if re.search(r"/api/matches/[^/]+/live", response.url) and response.ok:
                into.extend(response.json()["frames"])

        browser.page.on("response", keep)
    key = a_fresh_match(arena, "ada")
    seats: dict[str, str] = {}
    # cy, with no bot in it, is told that it is being played, and no count of its steps (on
    # a phone; the others watch on a laptop's width).
    page = browsers[NO_BOT].page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{arena.url}/matches/{key}")
    expect(page.locator("body")).to_have_attribute("data-page", "live")
    expect(page.locator("#live-line")).to_have_text(
        "Being played: its moves are shown once it ends, when this page shows the match whole.",
        timeout=DEADLINE_MS,
    )
    expect(page.locator("#view")).to_have_count(0)
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    for author in BOTS:
        page = browsers[author].page
        page.goto(f"{arena.url}/matches/{key}")
        expect(page.locator("body")).to_have_attribute("data-page", "live")
        # The menu offers this author's seat alone: not the whole truth, not the other's.
        options = page.locator("#view option")
        expect(options).to_have_count(1)
        seats[author] = options.first.get_attribute("value") or ""
        assert seats[author] in ROLES
        expect(options.first).to_have_text(f"what {seats[author]} was told")
        expect(page.locator("#board")).to_be_hidden()
        page.evaluate("window.notReloaded = true")
    assert set(seats.values()) == set(ROLES)
    for author in BOTS:
        page = browsers[author].page
        opened = len(frames_held(page)) - 1
        # Steps come without a reload, each a line of what the seat was told.
        page.wait_for_function(FOLLOWS, arg=opened, timeout=DEADLINE_MS)
        expect(page.locator("#told li").first).to_contain_text(re.compile(r"step 1: played "))
        other = next(role for role in ROLES if role != seats[author])
        row = page.locator(f"#moves tbody tr[data-role='{other}']")
        expect(row).to_be_hidden()
        assert row.locator(".move").text_content() == ""
        held = frames_held(page) + fetched[author]
        assert len(held) > 1
        for frame in held:
            assert set(frame["moves"]) <= {seats[author]}, frame
            assert set(frame.get("told", {})) <= {seats[author]}, frame
            assert (frame["board"], frame["boards"], frame["facts"]) == ("", [], []), frame
    # Done: each page shows the finished match whole, with every seat's view on offer.
    for browser in browsers.values():
        page = browser.page
        expect(page.locator("body")).to_have_attribute("data-page", "match", timeout=DEADLINE_MS)
        expect(page.locator("#view option")).to_have_text(
            ["the whole truth", "what xplayer was told", "what oplayer was told"]
        )
        expect(page.locator("#board")).to_be_visible()
    _, done = arena.served.get(f"/api/matches/{key}", arena.tokens["ada"])
    assert done["state"] == "done" and done["transcript"] is not None
