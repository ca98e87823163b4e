"""The leaderboard, a bot's page, the matches page and a match's downloads in a real
browser (Debian's Chromium driven by Playwright) against one real `referee arena serve`,
its database written by hand before it starts and its ladder paused: wins, draws, losses and
the last match on the leaderboard, rating ticks at round numbers, a chart that fits a phone,
every time in the reader's zone with the zone named, matches filtered and paged, the seats
linking to their bots, and a transcript that downloads and verifies.

The browser reads in Asia/Kolkata (UTC+5:30), so that a time shown in UTC would be seen."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from referee.arena.ladder import tallies
from referee.arena.ladder.queue import set_paused
from referee.arena.store.db import (
    Author,
    Bot,
    Match,
    MatchState,
    RatingPoint,
    Seat,
    Version,
    VersionState,
)
from referee.arena.store.home import open_arena
from referee.records.ggp import EXTRA
from referee.records.verify import Outcome, verify_file
from tests.support.arena import SERVICE_CONFIG, signed_match
from tests.support.arena_pages import (
    DEADLINE_MS,
    Running,
    browsing,
    new_arena,
    nothing_goes_wrong,
    served,
    sign_in,
)
from tests.support.browsers import Browser

pytestmark = pytest.mark.browser
ZONE = "Asia/Kolkata"
OFFSET = dt.timedelta(hours=5, minutes=30)
SHOWN_ZONE = "GMT+5:30"
# How the pages write a negative number, and a figure there is none of.
MINUS = "\u2212"
NONE = "\u2013"
# The matches of north against south: north's result in each by its number.
PAIRS = 56
# The matches of north against east, after those: the first drawn, the rest won by north
# (a pair of bots of which one won every match would have no finite ratings).
EASTS = 3


@dataclass
class Ladder:
    """What `write_rows` wrote: north's matches, newest first, when the newest finished,
    north's wins, draws and losses, and the arena's public key."""

    north: list[str]
    last_at: dt.datetime
    results: tuple[int, int, int]
    key: str


def north_points(n: int) -> float:
    """north's points in its n-th match: against south a win, a draw, a loss in turn; then
    against east a draw and wins."""
    if n >= PAIRS:
        return 0.5 if n == PAIRS else 1.0
    return (1.0, 0.5, 0.0)[n % 3]


def write_rows(directory: Path) -> Ladder:
    """Three bots on the ladder (ada's north and south, grace's east), their matches, north's
    rating a day and more ago, and a played match of south and east with its transcript."""
    arena = open_arena(directory)
    set_paused(arena, True)
    start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0) - dt.timedelta(hours=6)
    with arena.database.session() as session:
        authors = {a.name: a for a in session.scalars(select(Author))}
        versions = {}
        for name, author, rating in (
            ("north", "ada", 40.0),
            ("south", "ada", -40.0),
            ("east", "grace", 0.0),
        ):
            version = Version(
                bot=Bot(author=authors[author], name=name),
                number=1,
                state=VersionState.RATED,
                archive_sha256="0" * 64,
                run="false",
                rating=rating,
                margin=60.0,
            )
            session.add(version)
            versions[name] = version
        session.flush()
        north, south, east = (versions[name].id for name in ("north", "south", "east"))
        session.add(
            RatingPoint(
                version_id=north, at=start - dt.timedelta(hours=30), rating=10.0, margin=90.0
            )
        )
        keys = []
        for n in range(PAIRS + EASTS):
            key = f"pair-{n:03}" if n < PAIRS else f"east-{n - PAIRS}"
            points = north_points(n)
            match = Match(
                key=key,
                game="ticblock",
                seed=n,
                state=MatchState.DONE,
                finished_at=start + dt.timedelta(minutes=n),
            )
            other = south if n < PAIRS else east
            match.seats = [
                Seat(index=0, role="xcplayer", version_id=north, points=points),
                Seat(index=1, role="obplayer", version_id=other, points=1.0 - points),
            ]
            session.add(match)
            session.flush()
            tallies.tally(match)
            keys.append(key)
    signed_match(arena, "signed-1", (south, east))
    last_at = start + dt.timedelta(minutes=PAIRS + EASTS - 1)
    played = [north_points(n) for n in range(PAIRS + EASTS)]
    results = (played.count(1.0), played.count(0.5), played.count(0.0))
    return Ladder(keys[::-1], last_at, results, arena.key.public)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Ladder]]:
    """An arena on SQLite, its rows written before it is served."""
    directory, tokens = new_arena(
        tmp_path_factory.mktemp("board"), SERVICE_CONFIG, ("ada", "grace")
    )
    ladder = write_rows(directory)
    with served(directory, tokens) as running:
        yield running, ladder


@pytest.fixture(scope="module")
def arena(board: tuple[Running, Ladder]) -> Running:
    return board[0]


@pytest.fixture(scope="module")
def ladder(board: tuple[Running, Ladder]) -> Ladder:
    return board[1]


@pytest.fixture(scope="module")
def browser(arena: Running, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with browsing(arena, tmp_path_factory, timezone=ZONE) as opened:
        yield opened


@pytest.fixture
def page(browser: Browser, arena: Running) -> Iterator[Any]:
    """The browser's page, signed in as ada, at laptop width; afterwards, nothing went wrong."""
    with nothing_goes_wrong(browser):
        shown = browser.page
        shown.set_viewport_size({"width": 1280, "height": 900})
        if shown.locator("#me").count() == 0:
            sign_in(shown, arena, "ada")
        yield shown


def local(moment: dt.datetime) -> str:
    """A moment's hour and minute in the browser's zone, as the pages write them."""
    return (moment + OFFSET).strftime("%I:%M")


def cells(row: Any) -> list[str]:
    return [str(text).strip() for text in row.locator("td").all_inner_texts()]


def test_the_leaderboard_shows_results_the_last_match_and_zoned_times(
    page: Any, arena: Running, ladder: Ladder
) -> None:
    page.goto(f"{arena.url}/")
    headers = page.locator("#leaderboard th").all_inner_texts()
    north = page.locator('#leaderboard tr[data-bot="north"]')
    expect(north).to_be_visible()
    shown = dict(zip(headers, cells(north), strict=True))
    wins, draws, losses = ladder.results
    assert shown["W/D/L"] == f"{wins}/{draws}/{losses}"
    decided = wins + draws + losses
    assert shown["score"] == f"{round(100 * (wins + draws / 2) / decided)}%"
    link = north.locator("td.last-match a")
    assert link.get_attribute("href") == f"/matches/{ladder.north[0]}"
    assert local(ladder.last_at) in shown["last match"] and SHOWN_ZONE in shown["last match"]
    # north has a rating point 30 hours old: a change; south's are minutes old: none yet.
    assert re.fullmatch(rf"[+{MINUS}]\d+\.\d", shown["24 h change"]), shown
    south = dict(
        zip(headers, cells(page.locator('#leaderboard tr[data-bot="south"]')), strict=True)
    )
    assert south["24 h change"] == NONE
    expect(page.locator("#updated")).to_contain_text(SHOWN_ZONE)


def tick_values(page: Any) -> list[float]:
    texts = page.locator("svg.chart.history text.tick.left").all_text_contents()
    return [float(text.replace(MINUS, "-")) for text in texts]


def test_the_rating_chart_ticks_at_round_numbers_and_fits_a_phone(
    page: Any, arena: Running
) -> None:
    page.goto(f"{arena.url}/bots/north")
    expect(page.locator("svg.chart.history circle.dot").first).to_be_attached(timeout=DEADLINE_MS)
    ticks = tick_values(page)
    steps = {round(b - a, 6) for a, b in itertools.pairwise(ticks)}
    assert len(ticks) >= 3 and len(steps) == 1, ticks
    step = steps.pop()
    # A step of 1, 2 or 5 times a power of ten, and every tick a multiple of it.
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1.0, 2.0, 5.0), ticks
    assert all(abs(tick / step - round(tick / step)) < 1e-6 for tick in ticks), ticks
    # On the Elo scale, centred at 1500: north's fitted rating is above the middle.
    assert max(ticks) > 1500
    for text in page.locator("svg.chart.history text.time").all_text_contents():
        assert SHOWN_ZONE in text
    assert SHOWN_ZONE in page.locator("#versions tbody tr td").nth(4).inner_text()
    first = page.locator("#matches tbody tr").first
    expect(first.locator("td.seats a")).to_have_count(2)
    assert first.locator("td.seats a").evaluate_all("links => links.map(a => a.pathname)") == [
        "/bots/north",
        "/bots/east",
    ]
    assert page.locator("#more-matches").get_attribute("href") == "/matches?bot=north"
    page.set_viewport_size({"width": 390, "height": 800})

    def right_edges() -> tuple[float, float]:
        return tuple(
            page.evaluate(
                "() => [document.querySelector('svg.chart.history').getBoundingClientRect().right,"
                " document.getElementById('history').getBoundingClientRect().right]"
            )
        )

    # Drawn again for the narrowed box. The style scales the wide chart into the box at once,
    # before the page draws it again: what is waited for is the new drawing.
    page.wait_for_function(
        "() => { const svg = document.querySelector('svg.chart.history');"
        " return svg !== null && svg.getAttribute('width')"
        " === String(document.getElementById('history').clientWidth); }",
        timeout=DEADLINE_MS,
    )
    chart, box = right_edges()
    assert chart <= box + 0.5
    width = page.evaluate(
        "() => document.querySelector('svg.chart.history').getBoundingClientRect().width"
    )
    assert 200 <= width <= 390
    # Its text at its own size: the chart was drawn for the box, not shrunk from a wide one.
    assert page.locator("svg.chart.history").get_attribute("width") == str(round(width))
    ticks_on_a_phone = tick_values(page)
    assert ticks_on_a_phone == ticks


def test_the_matches_page_filters_and_pages(page: Any, arena: Running, ladder: Ladder) -> None:
    page.goto(f"{arena.url}/matches?bot=north")
    rows = page.locator("#matches tbody tr")
    expect(rows).to_have_count(50, timeout=DEADLINE_MS)
    expect(page.locator("#more")).to_be_visible()
    page.click("#more")
    expect(rows).to_have_count(len(ladder.north), timeout=DEADLINE_MS)
    expect(page.locator("#more")).to_be_hidden()
    shown = rows.evaluate_all("rows => rows.map(r => r.dataset.match)")
    assert shown == ladder.north
    assert SHOWN_ZONE in rows.first.locator("td.time").inner_text()
    page.fill("#filter-opponent", "east")
    page.click("#match-filters button")
    page.wait_for_url(f"{arena.url}/matches?bot=north&opponent=east")
    expect(rows).to_have_count(EASTS, timeout=DEADLINE_MS)
    assert rows.locator("td.result").all_inner_texts() == ["win"] * (EASTS - 1) + ["draw"]
    page.fill("#filter-opponent", "")
    page.select_option("#filter-result", "loss")
    page.click("#match-filters button")
    page.wait_for_url(f"{arena.url}/matches?bot=north&result=loss")
    expect(rows).to_have_count(ladder.results[2], timeout=DEADLINE_MS)
    assert set(rows.locator("td.result").all_inner_texts()) == {"loss"}


def test_the_game_filter_offers_the_arenas_games(page: Any, arena: Running) -> None:
    page.goto(f"{arena.url}/matches?bot=north")
    games = page.locator("#filter-game option")
    assert games.evaluate_all("options => options.map(o => o.value)") == ["", "ticblock"]
    page.select_option("#filter-game", "ticblock")
    page.click("#match-filters button")
    page.wait_for_url(f"{arena.url}/matches?bot=north&game=ticblock")
    expect(page.locator("#matches tbody tr")).to_have_count(50, timeout=DEADLINE_MS)
    expect(page.locator("#filter-game")).to_have_value("ticblock")


def test_back_after_more_shows_the_same_rows_at_the_same_place(
    page: Any, arena: Running, ladder: Ladder, browser: Browser
) -> None:
    for size in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
        page.set_viewport_size(size)
        page.goto(f"{arena.url}/matches?bot=north")
        rows = page.locator("#matches tbody tr")
        expect(rows).to_have_count(50, timeout=DEADLINE_MS)
        page.click("#more")
        expect(rows).to_have_count(len(ladder.north), timeout=DEADLINE_MS)
        # How many pages are shown is in the address.
        page.wait_for_url(f"{arena.url}/matches?bot=north&pages=2")
        chosen = rows.nth(54)
        chosen.scroll_into_view_if_needed()
        key = chosen.get_attribute("data-match")
        top = chosen.bounding_box()["y"]
        chosen.locator("td a").first.click()
        page.wait_for_url(f"{arena.url}/matches/{key}", timeout=DEADLINE_MS)
        # Its rows were written by hand, with no transcript: its page says it has none.
        browser.expected(404, f"{arena.url}/matches/{key}")
        page.go_back()
        page.wait_for_url(f"{arena.url}/matches?bot=north&pages=2", timeout=DEADLINE_MS)
        expect(rows).to_have_count(len(ladder.north), timeout=DEADLINE_MS)
        back = page.locator(f'#matches tr[data-match="{key}"]')
        expect(back).to_be_in_viewport(timeout=DEADLINE_MS)
        # Where it was, to the pixel (the window put back once its rows came).
        page.wait_for_function(
            """([key, top]) => Math.abs(document.querySelector(`#matches tr[data-match="${key}"]`)
                .getBoundingClientRect().top - top) < 2""",
            arg=[key, top],
            timeout=DEADLINE_MS,
        )


def test_the_match_page_links_its_seats_and_its_transcript_downloads_and_verifies(
    page: Any, arena: Running, ladder: Ladder, tmp_path: Path
) -> None:
    page.goto(f"{arena.url}/matches/signed-1")
    players = page.locator("#moves a.player")
    expect(players).to_have_count(2)
    assert players.evaluate_all("links => links.map(a => a.pathname)") == [
        "/bots/south",
        "/bots/east",
    ]
    with page.expect_download() as started:
        page.click("#download-transcript")
    download = started.value
    assert download.suggested_filename == "signed-1.json"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    assert verify_file(saved, ladder.key).outcome is Outcome.VERIFIED
    # The page names the arena's key, with which the download verifies.
    expect(page.locator("p.downloads")).to_contain_text(f"--key {ladder.key}")
    with page.expect_download() as started:
        page.click("#download-ggp")
    exported = tmp_path / "exported.json"
    started.value.save_as(exported)
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert data["matchId"] == "signed-1"
    assert data[EXTRA] == json.loads(saved.read_text(encoding="utf-8"))
