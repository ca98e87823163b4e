"""The arena's pages in a real browser, Debian's Chromium driven by Playwright, against one
real `referee arena serve` on SQLite, through the whole way of an author and the organiser:
sign in, upload a bot through the page and follow it to the leaderboard, step through one
of its matches, read a broken bot's advice, be refused another author's logs, suspend a bot
and see it leave the leaderboard that is open. Hostile text (a bot's name in its bot.yaml,
a build's output, a bot's log, the organiser's reason) is shown as text; a form posted from
another origin is refused; no request leaves the arena's origin and nothing goes wrong in
the console.

The tests run in order on one arena and one browser, each going on from the last."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from playwright.sync_api import expect

from referee.players.starter import STARTERS
from tests.support.arena_pages import (
    DEADLINE_MS,
    VALIDATING_CONFIG,
    Running,
    archive,
    arena_served,
    finished_match,
    random_bot,
    sign_in,
    submitted,
    upload_by_api,
)
from tests.support.browsers import Browser
from tests.support.local_http import local_http
from tests.support.paths import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]
HOSTILE = "<img src=x onerror=alert(1)>"
MISTAKES = ROOT / "tests" / "players" / "mistakes"
# grace's bot writes this to its log, standard error, at the start of each match.
SEA_LOG = f"</script>{HOSTILE} sea is ready"
SEA_BOT = f"""\
import runpy
import sys


def lines():
    for line in sys.__stdin__:
        if line.startswith("start"):
            print({SEA_LOG!r}, file=sys.stderr, flush=True)
        yield line


sys.stdin = lines()
runpy.run_path("random_player.py", run_name="__main__")
"""


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, with two authors (ada, grace) and the organiser."""
    with arena_served(tmp_path_factory.mktemp("pages"), VALIDATING_CONFIG) as running:
        yield running


def upload(page: Any, arena: Running, name: str, path: Path) -> str:
    """Submit an archive through the page, as an author does; the version page's URL."""
    page.goto(f"{arena.url}/submit")
    page.fill("#bot-name", name)
    page.set_input_files("#archive", str(path))
    page.click("#send")
    page.wait_for_url(re.compile(r"/versions/\d+$"), timeout=DEADLINE_MS)
    return str(page.url)


def rows(page: Any, selector: str) -> list[list[str]]:
    """Each row's data-kind (or bot) and data-state."""
    return list(
        page.eval_on_selector_all(
            selector, "rows => rows.map(r => [r.dataset.kind ?? r.dataset.bot, r.dataset.state])"
        )
    )


@contextlib.contextmanager
def ladder_paused(arena: Running) -> Iterator[None]:
    """The ladder paused by the organiser until the block ends: the matches a page lists stay
    those it lists (playing on, a fast ladder pushes a match out of a bot's recent 12 in a
    second or so)."""
    organiser = arena.tokens["organiser"]
    status, said = arena.served.post("/api/ladder/pause", organiser)
    assert status == 200, said
    try:
        yield
    finally:
        status, said = arena.served.post("/api/ladder/resume", organiser)
        assert status == 200, said


def test_an_author_uploads_a_bot_through_the_page_and_it_reaches_the_leaderboard(
    arena: Running, browser: Browser
) -> None:
    sea = archive(
        arena.archives / "sea.tar.gz",
        "name: sea\nrun: /usr/bin/python3 bot.py\n",
        {
            "bot.py": SEA_BOT.encode(),
            "random_player.py": (STARTERS / "random_player.py").read_bytes(),
        },
    )
    submitted(arena, "grace", "sea", sea)
    snake = random_bot(arena, "snake")
    page = browser.page
    sign_in(page, arena, "ada")
    upload(page, arena, "snake", snake)
    state = page.locator("#state-line")
    expect(state).to_have_attribute("data-state", re.compile("placing|rated"), timeout=DEADLINE_MS)
    steps = rows(page, "#steps tbody tr")
    assert steps[:2] == [["unpack", "passed"], ["validate", "passed"]]
    assert steps[2][0] == "placement" and steps[2][1] in ("running", "passed")
    expect(page.locator("#title")).to_have_text("snake v1")

    page.goto(f"{arena.url}/")
    for bot, author in (("snake", "ada"), ("sea", "grace")):
        row = page.locator(f'#leaderboard tr[data-bot="{bot}"]')
        expect(row).to_have_count(1, timeout=DEADLINE_MS)
        expect(row.locator("td").nth(2)).to_have_text(author)


def test_a_match_of_the_bot_opens_on_its_first_position_and_steps_through(
    arena: Running, browser: Browser
) -> None:
    finished_match(arena, "snake")
    with ladder_paused(arena):
        # The newest now; the few matches running when the ladder paused may still finish.
        match = finished_match(arena, "snake")
        page = browser.page
        page.goto(f"{arena.url}/bots/snake")
        link = page.locator(f'#matches a[href="/matches/{match["key"]}"]')
        expect(link).to_have_count(1, timeout=DEADLINE_MS)
        link.click()
    page.wait_for_url(f"{arena.url}/matches/{match['key']}")
    last = int(page.get_attribute("#step", "max") or "0")
    assert last > 1
    label = page.locator("#step-label")
    expect(label).to_have_text(f"step 0 of {last}")
    assert page.locator("#board svg").count() > 0  # the first position, drawn
    page.click("#next")
    expect(label).to_have_text(f"step 1 of {last}")
    page.keyboard.press("ArrowRight")
    expect(label).to_have_text(f"step 2 of {last}")
    expect(page).to_have_url(re.compile(r"#step=2$"))
    page.keyboard.press("End")
    expect(label).to_have_text(f"step {last} of {last}")
    # A step has its own address.
    page.goto(f"{arena.url}/matches/{match['key']}#step=1")
    page.reload()
    expect(label).to_have_text(f"step 1 of {last}")


def test_a_broken_bot_is_told_why_with_validates_advice(arena: Running, browser: Browser) -> None:
    broken = archive(
        arena.archives / "quiet.tar.gz",
        f"name: quiet\nbuild: \"echo '{HOSTILE}'\"\nrun: /usr/bin/python3 bot.py\n",
        {"bot.py": (MISTAKES / "debug_print.py").read_bytes()},
    )
    page = browser.page
    upload(page, arena, "quiet", broken)
    state = page.locator("#state-line")
    expect(state).to_have_attribute("data-state", "failed", timeout=DEADLINE_MS)
    version_id = int(page.url.rsplit("/", 1)[1])
    _, shown = arena.served.get(f"/api/versions/{version_id}", arena.tokens["ada"])
    assert shown["advice"], shown
    expect(page.locator("#reason")).to_have_text(shown["reason"])
    expect(page.locator("#advice li")).to_have_text(shown["advice"])
    # The failed step's log opens by itself: validate's report.
    expect(page.locator("#log-title")).to_have_text("The validate step's log")
    expect(page.locator("#log")).to_contain_text("verdict: FAIL (")
    # The build wrote an image tag: it is shown as the text it is.
    page.click('#steps button[data-kind="build"]')
    expect(page.locator("#log")).to_contain_text(HOSTILE)


def test_a_bot_named_with_an_image_tag_is_refused_and_its_name_shown_as_text(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    plain = archive(
        arena.archives / "img.tar.gz",
        f"name: {json.dumps(HOSTILE)}\nrun: /usr/bin/python3 bot.py\n",
        {"bot.py": (STARTERS / "random_player.py").read_bytes()},
    )
    # Named so on the page: the form will not send it, and the API refuses it unstored.
    page.goto(f"{arena.url}/submit")
    page.fill("#bot-name", HOSTILE)
    assert page.eval_on_selector("#bot-name", "input => input.validity.valid") is False
    status, said = upload_by_api(arena, "ada", HOSTILE, plain.read_bytes())
    assert status == 400, said
    # Named so in its bot.yaml: the intake refuses it, and the reason quotes it as text.
    upload(page, arena, "imgtag", plain)
    expect(page.locator("#state-line")).to_have_attribute(
        "data-state", "failed", timeout=DEADLINE_MS
    )
    expect(page.locator("#reason")).to_contain_text(HOSTILE)


def test_another_author_is_refused_the_first_authors_logs(arena: Running, browser: Browser) -> None:
    page = browser.page
    _, quiet = arena.served.get("/api/bots/quiet", arena.tokens["ada"])
    version_id = quiet["versions"][0]["id"]
    match = finished_match(arena, "snake")
    roles = {seat["bot"]: seat["role"] for seat in match["seats"]}
    sign_in(page, arena, "grace")

    page.goto(f"{arena.url}/versions/{version_id}")
    expect(page.locator("#state-line")).to_have_attribute("data-state", "failed")
    # No log is offered that would be refused: no step's button, none opened by itself.
    expect(page.locator('#steps tr[data-kind="validate"]')).to_have_count(1)
    assert page.locator("#steps button").count() == 0
    assert page.locator("#log-section").is_hidden()
    assert page.locator("#advice li").count() == 0
    step_log = f"{arena.url}/api/versions/{version_id}/steps/validate"
    assert page.request.get(step_log).status == 403

    page.goto(f"{arena.url}/matches/{match['key']}")
    expect(page.locator(f'.log-button[data-role="{roles["sea"]}"]')).to_have_count(1)
    assert page.locator(f'.log-button[data-role="{roles["snake"]}"]').count() == 0
    seat_log = f"{arena.url}/api/matches/{match['key']}/logs/{roles['snake']}"
    assert page.request.get(seat_log).status == 403
    # Her own bot's log, with its closing script tag and its image tag, as text.
    page.click(f'.log-button[data-role="{roles["sea"]}"]')
    expect(page.locator("#log")).to_contain_text(SEA_LOG)
    assert page.locator("#log-problem").is_hidden()
    # The organiser may read both seats' logs: snake wrote nothing to its standard error, so
    # it is offered no button (which would say "no log"), and the page says why.
    sign_in(page, arena, "organiser")
    page.goto(f"{arena.url}/matches/{match['key']}")
    expect(page.locator(".log-button")).to_have_count(1)
    expect(page.locator(f'.log-button[data-role="{roles["sea"]}"]')).to_have_count(1)
    expect(page.locator("#quiet-seats")).to_have_text(
        f"{roles['snake']}: snake.1: wrote nothing to its standard error, so there is no log."
    )


class _Foreign(http.server.BaseHTTPRequestHandler):
    """Another site: each page is a form that posts itself to the arena at once."""

    forms: ClassVar[dict[str, str]] = {}

    def do_GET(self) -> None:
        body = self.forms.get(self.path, "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


def form_to(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input name="{k}" value="{v}">' for k, v in fields.items())
    return (
        f'<form method="post" action="{action}">{inputs}</form>'
        "<script>document.forms[0].submit()</script>"
    )


def test_a_form_posted_from_another_origin_is_refused(arena: Running, browser: Browser) -> None:
    page = browser.page
    sign_in(page, arena, "organiser")
    _Foreign.forms = {
        "/pause": form_to(f"{arena.url}/api/ladder/pause", {"x": "1"}),
        "/signin": form_to(f"{arena.url}/signin", {"token": arena.tokens["grace"]}),
    }
    with local_http(_Foreign) as foreign, browser.also_allowing(f"{foreign}/"):
        attacked = browser.new_page()
        for path, target in (("/pause", "/api/ladder/pause"), ("/signin", "/signin")):
            with attacked.expect_response(f"{arena.url}{target}") as answer:
                attacked.goto(f"{foreign}{path}")
            assert answer.value.status == 403, path
            assert "cross-origin" in answer.value.text()
            browser.expected(403, f"{arena.url}{target}")
        attacked.close()
    _, status = arena.served.get("/api/status", arena.tokens["organiser"])
    assert status["ladder"]["paused"] is False
    # Still the organiser: the foreign sign-in as grace changed nothing.
    page.goto(f"{arena.url}/")
    expect(page.locator("#me")).to_have_text("organiser")


def test_the_organiser_suspends_a_bot_and_it_leaves_the_open_leaderboard(
    arena: Running, browser: Browser
) -> None:
    board = browser.page
    board.goto(f"{arena.url}/")
    sea = board.locator('#leaderboard tr[data-bot="sea"]')
    expect(sea).to_have_count(1, timeout=DEADLINE_MS)

    organiser = browser.new_page()
    organiser.goto(f"{arena.url}/organiser")
    row = organiser.locator('#bots tr[data-bot="sea"]')
    expect(row.locator("button.suspend")).to_have_count(1, timeout=DEADLINE_MS)
    row.locator("input.reason").fill(HOSTILE)
    row.locator("button.suspend").click()
    expect(row.locator("button.reinstate")).to_have_count(1, timeout=DEADLINE_MS)

    # The leaderboard already open loses it on its next poll, without a reload.
    expect(sea).to_have_count(0, timeout=DEADLINE_MS)
    expect(board.locator('#suspended li[data-bot="sea"]')).to_have_count(1)
    expect(board.locator('#leaderboard tr[data-bot="snake"]')).to_have_count(1)

    # The organiser replays one of its matches: it verifies.
    match = finished_match(arena, "sea")
    organiser.fill("#replay-key", match["key"])
    organiser.click("#replay-form button")
    result = organiser.locator("#replay-result")
    expect(result).to_have_attribute("data-verified", "yes", timeout=DEADLINE_MS)

    organiser.goto(f"{arena.url}/bots/sea")
    reason = organiser.locator("#versions tbody tr:first-child td:last-child")
    expect(reason).to_contain_text(HOSTILE, timeout=DEADLINE_MS)
    organiser.close()


def test_the_organiser_plays_the_final_from_the_page_and_submissions_close(
    arena: Running, browser: Browser
) -> None:
    organiser = browser.new_page()
    organiser.goto(f"{arena.url}/organiser")
    line = organiser.locator("#final-line")
    expect(line).to_have_attribute("data-state", "none", timeout=DEADLINE_MS)
    # Not without its box ticked: submissions close for good.
    organiser.click("#final-play")
    assert organiser.eval_on_selector("#final-sure", "box => !box.validity.valid")
    status, said = arena.served.get("/api/final", arena.tokens["ada"])
    assert status == 200 and said["closed"] is False, said
    # sea, suspended, is put back: a final needs two bots on the ladder.
    row = organiser.locator('#bots tr[data-bot="sea"]')
    row.locator("button.reinstate").click()
    expect(row.locator("button.suspend")).to_have_count(1, timeout=DEADLINE_MS)
    organiser.check("#final-sure")
    organiser.click("#final-play")
    expect(line).to_have_attribute("data-state", "played", timeout=DEADLINE_MS)
    expect(organiser.locator("#action-problem")).to_be_hidden()
    organiser.click("#final-line a")
    organiser.wait_for_url(f"{arena.url}/final/index.html", timeout=DEADLINE_MS)
    expect(organiser.locator("body")).to_contain_text("sea")
    expect(organiser.locator("body")).to_contain_text("snake")
    # Closed: the API refuses a new version, and the ladder was paused for the final.
    status, said = upload_by_api(arena, "ada", "late", b"x")
    assert status == 403 and "submissions are closed" in said["error"], said
    status, said = arena.served.get("/api/status", arena.tokens["organiser"])
    assert said["ladder"]["paused"] is True and said["final"]["state"] == "played", said
    organiser.close()
