"""The season's final as the served arena shows it, in a real browser (Debian's Chromium
driven by Playwright) against one real `referee arena serve`: before any final, `/final/`
says there is none yet; once `referee arena final` has played it, its standings and each of
its matches are pages in the arena's layout (its header, a way back, the sign-out), at a
laptop's width and at a phone's with no sideways scroll."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from referee.arena.store.home import open_arena
from tests.support.arena import SERVICE_CONFIG, add_version
from tests.support.arena_pages import (
    DEADLINE_MS,
    Running,
    new_arena,
    served,
    sign_in,
    sign_out_button,
)
from tests.support.arena_serving import DEADLINE_S
from tests.support.browsers import Browser
from tests.support.paths import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
# Long names, as authors give them (40 characters at most): the standings' widest cells.
BOTS = (
    "a-rather-long-bot-name-for-the-standings",
    "another-long-name-that-widens-the-tables",
    "short",
)


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, whose ladder holds BOTS; no final played yet."""
    directory, tokens = new_arena(tmp_path_factory.mktemp("final"), SERVICE_CONFIG, ("ada",))
    opened = open_arena(directory)
    try:
        for name in BOTS:
            add_version(opened, name)
    finally:
        opened.close()
    with served(directory, tokens) as running:
        yield running


def no_sideways_scroll(page: Any, size: dict[str, int]) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1] == size["width"], (page.url, widths)


def in_the_arenas_layout(page: Any) -> None:
    """The arena's header, with its way back to the leaderboard and its sign-out."""
    header = page.locator("header.top")
    expect(header.locator("a.brand")).to_have_attribute("href", "/")
    expect(header.locator("nav a", has_text="Leaderboard")).to_be_visible()
    expect(sign_out_button(page)).to_be_visible()


def test_before_any_final_its_page_says_there_is_none_yet(arena: Running, browser: Browser) -> None:
    page = browser.page
    sign_in(page, arena, "ada")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        answer = page.goto(f"{arena.url}/final/")
        assert answer is not None and answer.status == 404
        browser.expected(404, f"{arena.url}/final/")
        in_the_arenas_layout(page)
        expect(page.locator("main p.problem")).to_have_text(
            re.compile(r"^no final has been played yet: once the organiser has played it")
        )
        no_sideways_scroll(page, size)


def test_the_final_s_standings_and_matches_are_pages_of_the_arena_at_both_widths(
    arena: Running, browser: Browser
) -> None:
    with arena.stopped():
        # As a command of its own: Playwright's loop runs in this thread, and the final's would not.
        played = subprocess.run(
            [sys.executable, "-m", "referee", "arena", "final", str(arena.directory)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            check=False,
        )
        assert played.returncode == 0, played.stderr
    page = browser.page
    sign_in(page, arena, "ada")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        page.goto(f"{arena.url}/")
        page.locator("#final a", has_text="its standings and every match").click()
        page.wait_for_url(f"{arena.url}/final/", timeout=DEADLINE_MS)
        in_the_arenas_layout(page)
        expect(page.locator("main h2", has_text="Standings")).to_be_visible()
        for bot in BOTS:
            expect(page.locator("main").get_by_text(f"{bot}.1").first).to_be_attached()
        no_sideways_scroll(page, size)
        # A match of the final: its viewer works, in the same layout, and leads back.
        page.locator("main a[href^='matches/']").first.click()
        page.wait_for_url(re.compile(r"/final/matches/[^/]+\.html$"), timeout=DEADLINE_MS)
        in_the_arenas_layout(page)
        expect(page.locator("#step-label")).to_have_text(re.compile(r"^step \d+ of \d+$"))
        no_sideways_scroll(page, size)
        page.locator("main a", has_text="all matches").click()
        page.wait_for_url(f"{arena.url}/final/index.html", timeout=DEADLINE_MS)
        page.locator("header.top nav a", has_text="Leaderboard").click()
        page.wait_for_url(f"{arena.url}/", timeout=DEADLINE_MS)
