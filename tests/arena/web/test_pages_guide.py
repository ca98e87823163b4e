"""The page "Write a bot" in a real browser, Debian's Chromium driven by Playwright, against
a real `referee arena serve`: it fits a phone's width, a starter's link downloads the
archive the arena serves, byte for byte, under its bot's name, and an arena that plays a
game of imperfect information explains the `sees` line its bots are sent."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from referee.games import RULESHEETS
from tests.support.arena_pages import (
    DEADLINE_MS,
    Running,
    arena_served,
)
from tests.support.arena_serving import DEADLINE_S
from tests.support.browsers import Browser
from tests.support.paths import EXAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
# A built-in game and two rulesheets', whose rules the page shows as written, one of them a
# game of imperfect information (GDL-II).
CONFIG = f"""\
name: guide-pages
games: [ticblock, {EXAMPLES / "tictactoe.kif"}, {RULESHEETS / "blind-tictactoe.kif"}]
"""


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, with no author but the organiser."""
    with arena_served(tmp_path_factory.mktemp("guide"), CONFIG, authors=()) as running:
        yield running


def test_the_page_fits_a_phones_width_and_is_reached_from_the_header(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    page.set_viewport_size(PHONE)
    page.goto(f"{arena.url}/")
    page.click("header.top nav >> text=Write a bot")
    page.wait_for_url(f"{arena.url}/write-a-bot", timeout=DEADLINE_MS)
    assert page.locator("h1").inner_text() == "Write a bot"
    # Each game's rules opened, as a reader opens them.
    for summary in page.locator("details summary").all():
        summary.click()
    assert page.locator("details[open]").count() == 3
    # Nothing wider than the screen: the page does not scroll sideways.
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1] == PHONE["width"], widths
    # Every starter's link is on the screen, not cut off at its right edge.
    for box in page.eval_on_selector_all(
        "a.starter", "links => links.map(l => l.getBoundingClientRect().right)"
    ):
        assert box <= PHONE["width"]


def test_a_starters_link_downloads_the_archive_the_arena_serves(
    arena: Running, browser: Browser, tmp_path: Path
) -> None:
    page = browser.page
    page.set_viewport_size(LAPTOP)
    page.goto(f"{arena.url}/write-a-bot")
    link = page.locator("li[data-language=python] a.starter")
    href = link.get_attribute("href")
    assert href is not None
    with page.expect_download(timeout=DEADLINE_MS) as started:
        link.click()
    download = started.value
    assert download.failure() is None
    assert download.suggested_filename == "my-python-bot.tar.gz"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    with urllib.request.urlopen(f"{arena.url}{href}", timeout=DEADLINE_S) as answer:
        assert saved.read_bytes() == answer.read()


def test_an_arena_of_a_gdl_ii_game_explains_sees_at_both_widths(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        page.goto(f"{arena.url}/write-a-bot")
        sees = page.locator("#messages tr#sees")
        expect(sees).to_be_visible()
        expect(sees).to_contain_text("sees STEP MOVE PERCEPT ...")
        expect(sees).to_contain_text("instead of moves: your own move at STEP")
        expect(sees).to_contain_text("(blind-tictactoe)")
        protocol = page.locator("#messages + p")
        expect(protocol).to_contain_text("the sees line tells you your own move")
        expect(protocol).not_to_contain_text("still tell you everything")
        facts = page.locator('section[data-game="blind-tictactoe"] dd.imperfect')
        expect(facts).to_contain_text("told only what the rules let it see")
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1] == size["width"], widths
