"""The organiser's disk by author in a real browser (Debian's Chromium, driven by Playwright)
against one real `referee arena serve` on SQLite: a row for each author, with what their
versions take. No request leaves the arena's origin and nothing goes wrong in the console."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from referee.arena.store.home import open_arena
from tests.support.arena import SERVICE_CONFIG, add_version
from tests.support.arena_pages import DEADLINE_MS, ORGANISER, Running, new_arena, served, sign_in
from tests.support.browsers import Browser

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, with two authors (ada, grace) and the organiser, whose bot
    has 2 MiB in its directory."""
    directory, tokens = new_arena(tmp_path_factory.mktemp("disk"), SERVICE_CONFIG, ("ada", "grace"))
    opened = open_arena(directory)
    try:
        version = add_version(opened, "heavy")
        (opened.bot_directory(version) / "weights").write_bytes(os.urandom(2 * 1024 * 1024))
    finally:
        opened.close()
    with served(directory, tokens) as running:
        yield running


def test_the_organiser_sees_the_disk_by_author(arena: Running, browser: Browser) -> None:
    page = browser.page
    sign_in(page, arena, ORGANISER)
    page.goto(f"{arena.url}/organiser")
    mine = page.locator(f'#disk tr[data-author="{ORGANISER}"] td')
    expect(mine.nth(1)).to_have_text("1", timeout=DEADLINE_MS)
    expect(mine.nth(2)).to_have_text(re.compile(r"^2\.\d MiB$"))
    expect(mine.nth(5)).to_have_text(re.compile(r"^2\.\d MiB$"))
    for author in ("ada", "grace"):
        cells = page.locator(f'#disk tr[data-author="{author}"] td')
        expect(cells.nth(1)).to_have_text("0")
        expect(cells.nth(5)).to_have_text("0.0 MiB")
    # The most first.
    expect(page.locator("#disk tbody tr").first).to_have_attribute("data-author", ORGANISER)
    expect(page.locator("#disk-line")).to_contain_text("free on the arena's disk")
