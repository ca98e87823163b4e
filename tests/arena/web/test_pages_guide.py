"""The page "Write a bot" in a real browser, Debian's Chromium driven by Playwright, against
a real `referee arena serve`: it fits a phone's width, and a starter's link downloads the
archive the arena serves, byte for byte, under its bot's name."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

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
# A built-in game and a rulesheet's, whose rules the page shows as written.
CONFIG = f"""\
name: guide-pages
games: [ticblock, {EXAMPLES / "tictactoe.kif"}]
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
    assert page.locator("details[open]").count() == 2
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
