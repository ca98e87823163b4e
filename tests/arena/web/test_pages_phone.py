"""The arena's pages as an author and the organiser find them, in a real browser (Debian's
Chromium driven by Playwright) against one real `referee arena serve`: every page at a
phone's width (390 px) with no sideways scroll and "Sign out" in view; an author landing on
her home after sign-in, where her failed bot says why with validate's advice; the validate
log of a bot that never flushes its output read as `referee validate` prints it, with no
path of the server; the upload page refusing before sending what the arena would refuse;
a bot named like another but for case refused with one line; the organiser's ladder never
showing more matches playing than it plays at once; a page of nothing a 404 page, an icon, and
no change over a day for a bot minutes old; and the organiser's refused Resume (a page older
than a restart of the arena) staying on the page until the organiser's next action. Everyone
signs in through the sign-in form.

The tests run in order on one arena and one browser, each going on from the last."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.arena import wait_for
from tests.support.arena_pages import (
    DEADLINE_MS,
    VALIDATING_CONFIG,
    Running,
    archive,
    arena_served,
    finished_match,
    random_bot,
    sign_in,
    sign_out_button,
    submitted,
    upload_by_api,
)
from tests.support.arena_serving import DEADLINE_S
from tests.support.browsers import Browser
from tests.support.facilities import missing
from tests.support.paths import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
MISTAKES = ROOT / "tests" / "players" / "mistakes"
# What `referee validate` is told of the arena's games, as VALIDATING_CONFIG has them.
VALIDATE_AS_THE_ARENA = [
    "--games",
    "ticblock",
    "--start-clock",
    "5000",
    "--play-clock",
    "1000",
    "--matches-per-role",
    "1",
]


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, with two authors (ada, grace) and the organiser."""
    with arena_served(tmp_path_factory.mktemp("phone"), VALIDATING_CONFIG) as running:
        yield running


def unflushed_bot(arena: Running) -> Path:
    if shutil.which("cc") is None:
        missing("no cc (a C compiler) on this machine")
    return archive(
        arena.archives / "unflushed.tar.gz",
        "name: unflushed\nbuild: cc -o bot bot.c\nrun: ./bot\n",
        {"bot.c": (MISTAKES / "unflushed.c").read_bytes()},
    )


def version_of(arena: Running, bot: str, state: str) -> dict[str, Any]:
    """The newest version of `bot` once it is in `state`."""
    found: list[dict[str, Any]] = []

    def there() -> bool:
        _, shown = arena.served.get(f"/api/bots/{bot}", arena.tokens["organiser"])
        found[:] = shown.get("versions", [])[:1]
        return bool(found) and found[0]["state"] == state

    wait_for(f"{bot} {state}", there)
    return found[0]


def test_an_author_lands_on_her_home_and_sees_why_her_bot_failed(
    arena: Running, browser: Browser
) -> None:
    unflushed = submitted(arena, "ada", "unflushed", unflushed_bot(arena))
    submitted(arena, "ada", "calm", random_bot(arena, "calm"))
    submitted(arena, "grace", "keen", random_bot(arena, "keen"))
    version_of(arena, "unflushed", "failed")
    page = browser.page
    sign_in(page, arena, "ada")
    expect(page.locator("header nav a", has_text="My bots")).to_have_attribute("href", "/me")
    bot = page.locator('.my-bot[data-bot="unflushed"]')
    expect(bot).to_have_count(1, timeout=DEADLINE_MS)
    expect(bot.locator(f'tr[data-version="{unflushed}"] td.state')).to_have_text("failed")
    why = bot.locator(f'tr.why[data-version="{unflushed}"]')
    expect(why.locator("p.reason")).to_have_text(re.compile(r"^validation: FAIL \(start"))
    expect(why.locator("ul.advice li").first).to_contain_text("fflush(stdout)")
    # Her other bot is there too, and grace's is not.
    expect(page.locator('.my-bot[data-bot="calm"]')).to_have_count(1)
    assert page.locator('.my-bot[data-bot="keen"]').count() == 0
    # A new version of it is one click away, its name filled in.
    bot.locator("a.submit-next").click()
    page.wait_for_url(f"{arena.url}/submit?bot=unflushed")
    expect(page.locator("#bot-name")).to_have_value("unflushed")


def table_rows(text: str) -> list[tuple[str, str]]:
    """The check and result of each row of validate's table, wherever it is wrapped."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["check", "result"])
    rule = lines[head + 1]
    starts = [match.start() for match in re.finditer(r"-+", rule)]
    rows = []
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        if not line.startswith(" "):
            rows.append((line[: starts[1]].strip(), line[starts[1] : starts[2]].strip()))
    return rows


def first_paragraph(text: str) -> str:
    """The lines before the first empty one, whitespace as one space: wrapped alike or not."""
    return " ".join(text.split("\n\n", 1)[0].split())


def test_the_validate_log_reads_as_validate_prints_it(
    arena: Running, browser: Browser, tmp_path: Path
) -> None:
    page = browser.page
    version = version_of(arena, "unflushed", "failed")
    page.goto(f"{arena.url}/me")
    page.locator(f'.my-bot[data-bot="unflushed"] a[href="/versions/{version["id"]}"]').click()
    page.wait_for_url(f"{arena.url}/versions/{version['id']}")
    # The failed step's log opens by itself for its author.
    expect(page.locator("#log-title")).to_have_text("The validate step's log")
    log = page.locator("#log")
    expect(log).to_contain_text("verdict: FAIL (start)", timeout=DEADLINE_MS)
    shown = log.inner_text()
    # The arena kept nothing of the failed version but its steps' logs.
    assert not (arena.directory / "bots" / str(version["id"])).exists()
    # What `referee validate` prints of the same bot, built as the arena built it, in the
    # arena's games.
    shutil.copy(MISTAKES / "unflushed.c", tmp_path / "bot.c")
    subprocess.run(["cc", "-o", "bot", "bot.c"], cwd=tmp_path, check=True, timeout=DEADLINE_S)
    built = tmp_path / "bot"
    # As a command of its own: Playwright's loop runs in this thread, and validate's would not.
    printed = subprocess.run(
        [sys.executable, "-m", "referee", "validate", str(built), *VALIDATE_AS_THE_ARENA],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert printed.returncode == 1, printed.stderr
    said = printed.stdout
    assert shown.startswith("how to fix start (") and said.startswith("how to fix start (")
    assert first_paragraph(shown) == first_paragraph(said)
    assert table_rows(shown) == table_rows(said)
    assert ("legal moves", "not run") in table_rows(shown)
    assert shown.splitlines()[-1].startswith("verdict: FAIL (start); 1 match in ")
    # No path of the server: not the arena's, not its scratch's.
    for path in (arena.directory, arena.directory.resolve(), Path("/tmp")):
        assert str(path) not in shown, path
    assert "referee-intake-" not in shown


def test_the_upload_page_refuses_before_sending_what_the_arena_would_refuse(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    page.goto(f"{arena.url}/submit")
    limit = int(page.get_attribute("body", "data-archive-limit") or "0")
    assert limit > 10 * 2**20
    note = page.locator("main p.note").first
    expect(note).to_contain_text(f"at most {limit / 2**20:.0f} MiB as sent")
    expect(note).to_contain_text("at most 10 MiB in at most")
    # No bar before an upload.
    assert page.locator("#upload").is_hidden() and page.locator("#progress").is_hidden()
    big = arena.archives / "big.tar.gz"
    big.write_bytes(b"\0" * (limit + 1))
    sent: list[str] = []

    def posted(request: Any) -> None:
        if request.method == "POST":
            sent.append(request.url)

    page.on("request", posted)
    page.fill("#bot-name", "bulky")
    page.set_input_files("#archive", str(big))
    page.click("#send")
    problem = page.locator("#problem")
    expect(problem).to_contain_text("the arena takes at most")
    page.fill("#bot-name", "-bad name")
    assert page.eval_on_selector("#bot-name", "input => input.validity.valid") is False
    page.click("#send")
    expect(problem).to_contain_text('Bot name "-bad name"')
    # Nothing was sent, no bar drawn, and the line stays.
    page.remove_listener("request", posted)
    assert sent == []
    assert page.locator("#upload").is_hidden()
    expect(problem).to_be_visible()


def test_a_bot_named_like_another_but_for_case_is_refused_with_one_line(
    arena: Running, browser: Browser
) -> None:
    submitted(arena, "ada", "ada-good", random_bot(arena, "ada-good"))
    page = browser.page
    sign_in(page, arena, "grace")
    page.goto(f"{arena.url}/submit")
    page.fill("#bot-name", "ADA-GOOD")
    page.set_input_files("#archive", str(random_bot(arena, "ADA-GOOD")))
    page.click("#send")
    problem = page.locator("#problem")
    expect(problem).to_have_text(
        "bot name 'ADA-GOOD': bot 'ada-good' is already in this arena"
        " (names must differ by more than case)."
    )
    browser.expected(409, f"{arena.url}/api/bots/ADA-GOOD/versions")
    assert page.url == f"{arena.url}/submit"
    _, mine = arena.served.get("/api/me", arena.tokens["grace"])
    assert mine["bots"] == ["keen"]


def test_the_organiser_sees_no_more_matches_playing_than_the_ladder_plays_at_once(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "organiser")
    facts = page.locator("#ladder")
    expect(facts.locator("dt", has_text="playing")).to_have_count(1, timeout=DEADLINE_MS)
    for _ in range(5):
        shown = facts.locator("dt:text-is('playing') + dd").inner_text()
        playing, capacity = (int(figure) for figure in shown.split(" of "))
        assert 0 <= playing <= capacity, shown
        page.wait_for_timeout(1600)  # the page's next refresh


def test_a_page_of_nothing_is_a_404_page_and_the_arena_has_an_icon(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "ada")
    for path, title in (("/bots/nobody", "No such bot"), ("/nope", "No such page")):
        answer = page.goto(f"{arena.url}{path}")
        assert answer is not None and answer.status == 404, path
        assert answer.headers["content-type"].startswith("text/html"), path
        expect(page.locator("main h1")).to_have_text(title)
        expect(page.locator("header.top")).to_be_visible()
        browser.expected(404, f"{arena.url}{path}")
    icon = page.get_attribute('link[rel="icon"]', "href")
    assert icon is not None
    fetched = page.request.get(f"{arena.url}{icon}")
    assert fetched.status == 200 and fetched.headers["content-type"].startswith("image/svg")
    # A bot minutes old has no change over a day to show.
    page.goto(f"{arena.url}/")
    calm = page.locator('#leaderboard tr[data-bot="calm"]')
    expect(calm).to_have_count(1, timeout=DEADLINE_MS)
    expect(calm.locator("td").last).to_have_text("\N{EN DASH}")


def pages_of(arena: Running) -> dict[str, str]:
    """Every page an author and the organiser open, and what shows it is filled in."""
    version = version_of(arena, "unflushed", "failed")
    key = finished_match(arena)["key"]
    return {
        "/": "#leaderboard tbody tr",
        "/me": ".my-bot, #no-bots:not([hidden])",
        "/submit": "#submit-form",
        "/bots/calm": "#versions tbody tr",
        f"/versions/{version['id']}": '#steps tbody tr[data-kind="validate"]',
        f"/matches/{key}": "#board svg",
        "/matches?bot=calm": "#filter-game option",
        "/organiser": "#bots tbody tr",
        "/bots/nobody": "main h1",
        "/nope": "main h1",
    }


def test_every_page_fits_a_phone_with_sign_out_in_view(arena: Running, browser: Browser) -> None:
    pages = pages_of(arena)
    page = browser.page
    page.set_viewport_size(PHONE)
    try:
        for who in ("ada", "organiser"):
            sign_in(page, arena, who)
            for path, filled in pages.items():
                if path == "/organiser" and who != "organiser":
                    continue
                page.goto(f"{arena.url}{path}")
                expect(page.locator(filled).first).to_be_attached(timeout=DEADLINE_MS)
                wide = page.evaluate("document.documentElement.scrollWidth")
                assert wide <= PHONE["width"], (who, path, wide)
                if path.startswith("/versions/"):
                    # Its validate step's log is offered on the screen, not off its edge.
                    log = page.locator('#steps button[data-kind="validate"]')
                    expect(log).to_be_visible()
                    box = log.bounding_box()
                    assert box is not None and box["x"] + box["width"] <= PHONE["width"], box
                button = sign_out_button(page)
                expect(button).to_be_visible()
                # In view, and on the header's dark ground (not past its edge, on white).
                box, header = button.bounding_box(), page.locator("header.top").bounding_box()
                assert box is not None and header is not None
                assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (path, box)
                assert (
                    header["y"] <= box["y"]
                    and box["y"] + box["height"] <= header["y"] + header["height"]
                ), (path, box, header)
                assert box["x"] + box["width"] <= header["x"] + header["width"], (path, box)
            # The 404 pages were meant.
            for path in ("/bots/nobody", "/nope"):
                browser.expected(404, f"{arena.url}{path}")
        # The viewer's controls stay whole buttons, each on one line.
        page.goto(f"{arena.url}{next(p for p in pages if p.startswith('/matches/'))}")
        heights = page.eval_on_selector_all(
            ".controls button", "buttons => buttons.map(b => b.getBoundingClientRect().height)"
        )
        assert len(heights) == 5 and max(heights) < 2 * min(heights), heights
        # A chart fits its box.
        chart = page.locator("svg.chart").first.bounding_box()
        assert chart is not None and chart["x"] + chart["width"] <= PHONE["width"]
    finally:
        page.set_viewport_size(LAPTOP)


def test_a_failed_unpack_says_why_and_opens_no_empty_log(arena: Running, browser: Browser) -> None:
    status, said = upload_by_api(arena, "ada", "garbled", b"not an archive at all")
    assert status == 202, said
    version_of(arena, "garbled", "failed")
    page = browser.page
    sign_in(page, arena, "ada")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        page.goto(f"{arena.url}/versions/{said['id']}")
        expect(page.locator("#state-line")).to_have_attribute("data-state", "failed")
        expect(page.locator("#reason")).to_have_text(re.compile(r"^not an archive"))
        expect(page.locator('#steps tr[data-kind="unpack"]')).to_have_count(1)
        # Its unpack wrote no log: none is offered, and no empty box opens.
        assert page.locator("#steps button").count() == 0
        assert page.locator("#log-section").is_hidden()
    page.set_viewport_size(LAPTOP)


def test_the_organisers_refused_resume_stays_until_the_next_action(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "organiser")
    status, said = arena.served.post("/api/ladder/pause", arena.tokens["organiser"])
    assert status == 200, said
    resume = page.locator("#resume")
    expect(resume).to_be_enabled(timeout=DEADLINE_MS)
    # The arena restarts: the page's CSRF token is now out of date.
    arena.restart()
    line = page.locator("#action-problem")
    expect(page.locator("#problem")).to_be_hidden(timeout=DEADLINE_MS)  # polled again
    resume.click()
    expect(line).to_contain_text("reload the page")
    refused = line.inner_text()
    browser.expected(403, f"{arena.url}/api/ladder/resume")
    # The page goes on refreshing (its 1.5 s poll), and the line stays.
    page.wait_for_timeout(5000)
    expect(line).to_be_visible()
    assert line.inner_text() == refused
    expect(page.locator("#ladder-line")).to_have_attribute("data-state", "paused")
    # The organiser's next action, from the page reloaded, clears it.
    page.reload()
    page.locator("#resume").click()
    expect(page.locator("#ladder-line")).to_have_attribute(
        "data-state", "running", timeout=DEADLINE_MS
    )
    expect(page.locator("#action-problem")).to_be_hidden()
    # While the arena was down, the page's requests (each of its polls) could not reach it:
    # meant, and said so.
    browser.unreached(f"{arena.url}/")
