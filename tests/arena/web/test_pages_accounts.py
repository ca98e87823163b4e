"""The arena's accounts in a real browser (Debian's Chromium, driven by Playwright) against
one real `referee arena serve` on SQLite: signing out ends the session on the server, so a
copy of the old cookie put back into the browser is no one's; the organiser replaces an
author's token on the organiser's page and sees the new one once; the audit page lists the
sign-ins; an author signed out by the organiser is told so on the page she has open, with a
link that signs her in and brings her back; an organiser's action that cannot reach the
arena says to try again, not that it is retried. At a laptop's width and a phone's. No
request leaves the arena's origin and nothing goes wrong in the console.

The tests run in order on one arena and one browser, each going on from the last."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.arena import SERVICE_CONFIG
from tests.support.arena_pages import (
    DEADLINE_MS,
    Running,
    arena_served,
    sign_in,
    sign_out,
)
from tests.support.browsers import Browser

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]
COOKIE = "referee_session"
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """An arena on SQLite, served, with two authors (ada, grace) and the organiser."""
    with arena_served(tmp_path_factory.mktemp("accounts"), SERVICE_CONFIG) as running:
        yield running


def session_cookie(browser: Browser) -> dict[str, Any]:
    (found,) = [cookie for cookie in browser.context.cookies() if cookie["name"] == COOKIE]
    return dict(found)


def me(browser: Browser, arena: Running) -> int:
    """The status of /api/me asked with the browser's cookies (the context's own requests
    share its cookie jar)."""
    return int(browser.context.request.get(f"{arena.url}/api/me").status)


def test_after_signing_out_the_old_cookie_put_back_gets_401(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "ada")
    old = session_cookie(browser)
    # The cookie holds a session's id, never the token, and scripts cannot read it.
    assert old["value"] != arena.tokens["ada"] and old["httpOnly"] is True
    assert me(browser, arena) == 200
    sign_out(page, arena)
    assert [c for c in browser.context.cookies() if c["name"] == COOKIE] == []
    browser.context.add_cookies([old])
    assert session_cookie(browser)["value"] == old["value"]
    assert me(browser, arena) == 401
    page.goto(f"{arena.url}/")
    expect(page.locator("header a.button")).to_have_text("Sign in")
    browser.context.clear_cookies()


def test_the_organiser_replaces_a_token_and_sees_it_once(arena: Running, browser: Browser) -> None:
    page = browser.page
    sign_in(page, arena, "grace")
    grace = session_cookie(browser)
    # The organiser in a browser of their own: grace's stays signed in (a sign-in in hers
    # would end her session, and with it what this test shows of replacing her token).
    browser.context.clear_cookies()
    sign_in(page, arena, "organiser")
    organiser = session_cookie(browser)
    browser.context.add_cookies([grace])
    assert me(browser, arena) == 200
    browser.context.add_cookies([organiser])
    page.goto(f"{arena.url}/organiser")
    row = page.locator('#authors tr[data-author="grace"]')
    expect(row.locator("td").nth(1)).to_have_text("active")
    button = row.locator("button.replace-token")
    button.click()
    # The first click asks; nothing is replaced yet.
    expect(button).to_have_text("Replace token: click again to confirm")
    assert arena.served.get("/api/me", arena.tokens["grace"])[0] == 200
    button.click()
    shown = page.locator("#new-token-value")
    expect(shown).to_have_text(re.compile(r"^[A-Za-z0-9_-]{43}$"), timeout=DEADLINE_MS)
    new = shown.inner_text()
    expect(page.locator("#new-token")).to_contain_text("grace's new token (shown once")
    assert arena.served.get("/api/me", arena.tokens["grace"])[0] == 401
    assert arena.served.get("/api/me", new)[0] == 200
    arena.tokens["grace"] = new
    # Her browser's sign-in ended with the old token.
    browser.context.add_cookies([grace])
    assert me(browser, arena) == 401
    browser.context.add_cookies([organiser])
    # Once: the page opened again shows it nowhere.
    page.reload()
    expect(page.locator('#authors tr[data-author="grace"]')).to_be_visible()
    expect(page.locator("#new-token")).to_be_hidden()
    assert new not in page.content()


def test_the_audit_page_lists_the_sign_ins(arena: Running, browser: Browser) -> None:
    page = browser.page
    page.goto(f"{arena.url}/organiser")
    page.click("text=audit log")
    page.wait_for_url(f"{arena.url}/organiser/audit")
    signins = page.locator('#audit tr[data-action="signin"]')
    # ada's, grace's and the organiser's, at least (the organiser signed in twice).
    expect(signins.first).to_be_visible(timeout=DEADLINE_MS)
    who = set(signins.locator("td:nth-child(2)").all_inner_texts())
    assert who == {"ada", "grace", "organiser"}
    expect(page.locator('#audit tr[data-action="signout"]').first).to_be_visible()
    replaced = page.locator('#audit tr[data-action="token replaced"]')
    expect(replaced).to_have_count(1)
    expect(replaced.locator("td").nth(3)).to_have_text("author grace")
    text = page.content()
    assert all(token not in text for token in arena.tokens.values())
    # An author is refused the page.
    sign_in(page, arena, "ada")
    answer = page.goto(f"{arena.url}/organiser/audit")
    assert answer is not None and answer.status == 403
    browser.expected(403, f"{arena.url}/organiser/audit")


def test_the_audit_log_s_older_page_is_in_the_address_and_back_returns_to_the_newer(
    arena: Running, browser: Browser
) -> None:
    # More rows than a page holds: the organiser pauses and resumes the ladder, 30 times.
    for _ in range(30):
        for action in ("pause", "resume"):
            status, _ = arena.served.post(f"/api/ladder/{action}", arena.tokens["organiser"])
            assert status == 200
    page = browser.page
    sign_in(page, arena, "organiser")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        page.goto(f"{arena.url}/organiser/audit")
        rows = page.locator("#audit tbody tr")
        expect(rows).to_have_count(50, timeout=DEADLINE_MS)
        newest = ids_of(rows)
        expect(page.locator("#audit-newest")).to_be_disabled()
        page.click("#audit-older")
        page.wait_for_url(re.compile(r"/organiser/audit\?before=\d+$"), timeout=DEADLINE_MS)
        older_page = page.url
        expect(rows.first).not_to_have_attribute("data-id", str(newest[0]), timeout=DEADLINE_MS)
        older = ids_of(rows)
        # The rows before the newest page's last, newest first.
        assert older and max(older) < min(newest) and older == sorted(older, reverse=True)
        expect(page.locator("#audit-newest")).to_be_enabled()
        # Back: the newest page again; Forward: the same older page.
        page.go_back()
        page.wait_for_url(f"{arena.url}/organiser/audit", timeout=DEADLINE_MS)
        expect(rows.first).to_have_attribute("data-id", str(newest[0]), timeout=DEADLINE_MS)
        assert ids_of(rows) == newest
        page.go_forward()
        page.wait_for_url(older_page, timeout=DEADLINE_MS)
        expect(rows.first).to_have_attribute("data-id", str(older[0]), timeout=DEADLINE_MS)
        assert ids_of(rows) == older
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1] == size["width"], widths


def ids_of(rows: Any) -> list[int]:
    return [int(found) for found in rows.evaluate_all("rows => rows.map(r => r.dataset.id)")]


def test_an_author_signed_out_elsewhere_is_told_so_with_a_link_to_sign_in_again(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        sign_in(page, arena, "ada")
        expect(page.locator("#no-bots")).to_be_visible(timeout=DEADLINE_MS)
        # The organiser signs her out of every browser; her page is still open.
        status, ended = arena.served.post("/api/authors/ada/signout", arena.tokens["organiser"])
        assert status == 200 and ended["sessions_ended"] >= 1
        problem = page.locator("#problem")
        expect(problem).to_contain_text(
            "You are signed out: your sign-in here has ended", timeout=DEADLINE_MS
        )
        assert "Bearer" not in problem.inner_text()
        browser.expected(401, f"{arena.url}/api/me")
        link = problem.locator("a.sign-in-again")
        expect(link).to_be_in_viewport()
        expect(link).to_have_attribute("href", "/signin?next=%2Fme")
        link.click()
        page.wait_for_url(f"{arena.url}/signin?next=%2Fme")
        page.fill("#token", arena.tokens["ada"])
        page.click("form.signin button")
        # Back where she was, signed in again.
        page.wait_for_url(f"{arena.url}/me", timeout=DEADLINE_MS)
        expect(page.locator("#me")).to_have_text("ada")
        expect(page.locator("#no-bots")).to_be_visible(timeout=DEADLINE_MS)
        expect(problem).to_be_hidden()


def test_an_organisers_action_that_cannot_reach_the_arena_says_to_try_again(
    arena: Running, browser: Browser
) -> None:
    page = browser.page
    sign_in(page, arena, "organiser")
    for size in (LAPTOP, PHONE):
        page.set_viewport_size(size)
        page.goto(f"{arena.url}/organiser")
        expect(page.locator("#ladder-line")).not_to_be_empty(timeout=DEADLINE_MS)
        with arena.stopped():
            page.click("#pause")
            said = page.locator("#action-problem")
            expect(said).to_have_text(
                re.compile(r"^The arena could not be reached \(.+\); try again\.$"),
                timeout=DEADLINE_MS,
            )
            expect(said).to_be_in_viewport()
            # The page's own polling does ask again, and says so.
            expect(page.locator("#problem")).to_have_text(
                re.compile(r"^The arena could not be reached \(.+\); asking again\.$"),
                timeout=DEADLINE_MS,
            )
        browser.unreached(arena.url)
