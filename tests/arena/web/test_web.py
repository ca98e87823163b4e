"""The arena's pages without a browser: sign-in by cookie, the cross-site rules that guard
every change a cookie could make, the headers on every response, and the escaping of what
authors and bots choose. The pages in a real browser are tests/arena/web/test_pages.py."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from referee.arena.intake import submissions
from referee.arena.replays import work as replay_work
from referee.arena.web.api import create_app
from tests.support.arena import API_CONFIG as CONFIG
from tests.support.arena import Site, StandIn, make_site, played_match, seed, signed_in
from tests.support.arena_databases import ArenaMaker
from tests.support.replay_workers import observed, replays_of

OWN = "http://testserver"
FOREIGN = "http://evil.example"
HOSTILE = "<img src=x onerror=alert(1)>"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def cookie(site: Site, who: str) -> dict[str, str]:
    """The Cookie header of a new sign-in of `who`."""
    return {"Cookie": signed_in(site.client, site.tokens[who])}


def sign_in(site: Site, token: str, origin: str | None = OWN, target: str = "/") -> object:
    headers = {} if origin is None else {"Origin": origin}
    form = {"token": token, "next": target}
    return site.client.post("/signin", data=form, headers=headers, follow_redirects=False)


def csrf_of(site: Site, signed: dict[str, str]) -> str:
    """The CSRF token of the pages of a sign-in (its Cookie header)."""
    page = site.client.get("/", headers=signed)
    found = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', page.text)
    assert found, page.text
    return found.group(1)


def test_signing_in_sets_an_http_only_strict_cookie_and_goes_where_asked(site: Site) -> None:
    answer = sign_in(site, site.tokens["alice"], target="/bots/ace")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/bots/ace"
    set_cookie = answer.headers["set-cookie"]
    site.client.cookies.clear()
    parts = [part.strip() for part in set_cookie.split(";")]
    name, _, value = parts[0].partition("=")
    # The cookie holds a session's id, never the token.
    assert name == "referee_session" and len(value) >= 43
    assert site.tokens["alice"] not in set_cookie
    assert set(parts[1:]) == {"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=1209600"}
    # The cookie then names alice to the API, as her bearer token would.
    me = site.client.get("/api/me", headers={"Cookie": parts[0]})
    assert me.status_code == 200 and me.json()["name"] == "alice"
    # A cookie that holds the token itself is no one's.
    made_up = {"Cookie": f"referee_session={site.tokens['alice']}"}
    assert site.client.get("/api/me", headers=made_up).status_code == 401


def test_over_https_the_cookie_is_secure(make_arena: ArenaMaker) -> None:
    arena = make_arena(config_text=CONFIG.format(public="true"))
    token = make_arena.organiser_token(arena)
    app = create_app(arena, StandIn().hooks())
    with TestClient(app, base_url="https://arena.example") as client:
        answer = client.post(
            "/signin",
            data={"token": token},
            headers={"Origin": "https://arena.example"},
            follow_redirects=False,
        )
    assert answer.status_code == 303
    parts = [part.strip() for part in answer.headers["set-cookie"].split(";")]
    name, _, session_id = parts[0].partition("=")
    assert name == "__Host-referee_session" and "Secure" in parts
    # Over https only the __Host- cookie signs in: one a sibling subdomain planted is no one's.
    with TestClient(app, base_url="https://arena.example") as client:
        planted = client.get("/api/me", headers={"Cookie": f"referee_session={session_id}"})
        kept = client.get("/api/me", headers={"Cookie": f"__Host-referee_session={session_id}"})
    assert (planted.status_code, kept.status_code) == (401, 200)


def test_an_unknown_token_gets_the_form_again_with_one_line_and_no_cookie(site: Site) -> None:
    for token in ("not-anyones-token", "", "x" * 500):
        answer = sign_in(site, token)
        assert answer.status_code == 401, token[:20]
        assert "set-cookie" not in answer.headers
        assert "That token is no author&#39;s in this arena" in answer.text
        assert '<form method="post" action="/signin"' in answer.text
    # A form far longer than any token's is refused before it is read.
    huge = site.client.post("/signin", content=b"token=" + b"x" * 100_000, headers={"Origin": OWN})
    assert huge.status_code == 413


def test_sign_in_and_out_need_a_same_origin_origin(site: Site) -> None:
    for origin in (FOREIGN, None, "null", "https://testserver"):
        answer = sign_in(site, site.tokens["alice"], origin=origin)
        assert answer.status_code == 403, origin
        assert "set-cookie" not in answer.headers
    out = site.client.post("/signout", headers={"Origin": FOREIGN, **cookie(site, "alice")})
    assert out.status_code == 403
    out = site.client.post(
        "/signout", headers={"Origin": OWN, **cookie(site, "alice")}, follow_redirects=False
    )
    assert out.status_code == 303
    assert "Max-Age=0" in out.headers["set-cookie"]


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "javascript:alert(1)",
        '/"><script>alert(1)</script>',
        "/ok\r\nSet-Cookie: x=1",
    ],
)
def test_sign_in_never_sends_the_browser_to_another_site(site: Site, target: str) -> None:
    answer = sign_in(site, site.tokens["alice"], target=target)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/"
    form = site.client.get("/signin", params={"next": target})
    assert 'name="next" value="/"' in form.text


def test_a_cookie_change_without_the_csrf_token_or_from_another_origin_is_refused(
    site: Site,
) -> None:
    organiser = cookie(site, "organiser")
    token = csrf_of(site, organiser)
    other = csrf_of(site, cookie(site, "alice"))
    # The organiser's own, of another sign-in: bound to its session.
    elsewhere = csrf_of(site, cookie(site, "organiser"))
    refused = [
        {},
        {"X-CSRF-Token": "0" * 64},
        {"X-CSRF-Token": other},  # another author's
        {"X-CSRF-Token": elsewhere},
        {"X-CSRF-Token": token, "Origin": FOREIGN},
    ]
    for headers in refused:
        answer = site.client.post("/api/ladder/pause", headers={**organiser, **headers})
        assert answer.status_code == 403, headers
        assert answer.json().keys() == {"error"}
    assert site.ladder.paused == []
    answer = site.client.post(
        "/api/ladder/pause", headers={**organiser, "X-CSRF-Token": token, "Origin": OWN}
    )
    assert answer.status_code == 200
    # Without an Origin header (not every client sends one), the token is enough.
    answer = site.client.post("/api/ladder/resume", headers={**organiser, "X-CSRF-Token": token})
    assert answer.status_code == 200
    assert site.ladder.paused == [True, False]


def test_bearer_requests_need_no_csrf_token(site: Site) -> None:
    # No page of another origin can make a browser send the header: whoever sends it has
    # the token, and is its author.
    answer = site.post("/api/ladder/pause", "organiser")
    assert answer.status_code == 200
    headers = {**site.auth("organiser"), "Origin": FOREIGN}
    answer = site.client.post("/api/ladder/resume", headers=headers)
    assert answer.status_code == 200
    assert site.ladder.paused == [True, False]


def test_an_unknown_cookie_is_no_one_and_reads_only_what_is_public(site: Site) -> None:
    stranger = {"Cookie": "referee_session=someone-elses-arena"}
    assert site.client.get("/api/me", headers=stranger).status_code == 401
    assert site.client.get("/api/leaderboard", headers=stranger).status_code == 200
    page = site.client.get("/", headers=stranger)
    assert page.status_code == 200 and ">Sign in</a>" in page.text
    assert 'name="csrf-token"' not in page.text


def test_every_response_carries_the_security_headers(site: Site) -> None:
    seed(site)
    answers = [
        site.client.get("/"),
        site.client.get("/signin"),
        site.client.get("/assets/arena.js"),
        site.client.get("/api/leaderboard"),
        site.client.get("/api/me"),  # 401
        site.client.get("/api/nothing"),  # 404
        site.client.get("/bots/ace", headers=cookie(site, "alice")),
        site.client.post("/api/ladder/pause", headers=cookie(site, "organiser")),  # 403
    ]
    for answer in answers:
        assert answer.headers["content-security-policy"] == CSP, answer.url
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
        assert answer.headers["x-frame-options"] == "DENY"
        # Private pages and answers are kept by no cache; the assets may be, checked.
        kept = "no-cache" if "/assets/" in str(answer.url) else "no-store"
        assert answer.headers["cache-control"] == kept, answer.url


def test_the_assets_are_the_arenas_and_the_reports_with_their_types(site: Site) -> None:
    types = {
        "arena.js": "text/javascript",
        "arena.css": "text/css",
        "report.js": "text/javascript",
        "report.css": "text/css",
        "author.js": "text/javascript",
        "favicon.svg": "image/svg+xml",
    }
    for name, kind in types.items():
        answer = site.client.get(f"/assets/{name}")
        assert answer.status_code == 200, name
        assert answer.headers["content-type"].split(";")[0] == kind
    for name in ("nothing.js", "..%2Fapi.py", "web.py"):
        assert site.client.get(f"/assets/{name}").status_code == 404, name
    # Nothing on a page comes from elsewhere.
    page = site.client.get("/").text
    assert re.findall(r'(?:src|href)="([^"]*)"', page) == [
        "/assets/favicon.svg",
        "/assets/arena.css",
        "/assets/arena.js",
        "/assets/author.js",
        "/",
        "/",
        "/write-a-bot",
        "/signin",
    ]


def test_the_pages_that_need_an_author_send_a_stranger_to_sign_in(site: Site) -> None:
    ids = seed(site)
    pages = ["/submit", "/bots/ace", f"/versions/{ids['failed']}", "/matches/arena-000001"]
    for path in [*pages, "/organiser"]:
        answer = site.client.get(path, follow_redirects=False)
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/signin?next={path}"
    for path in pages:
        assert site.client.get(path, headers=cookie(site, "bob")).status_code == 200, path
    refused = site.client.get("/organiser", headers=cookie(site, "bob"))
    assert refused.status_code == 403
    assert "This page is the organiser" in refused.text
    assert site.client.get("/organiser", headers=cookie(site, "organiser")).status_code == 200


def test_a_closed_leaderboard_asks_a_stranger_to_sign_in(make_arena: ArenaMaker) -> None:
    for closed in make_site(make_arena, public=False):
        page = closed.client.get("/")
        assert page.status_code == 200
        assert "leaderboard is for its authors" in page.text
        assert 'id="leaderboard"' not in page.text
        assert 'id="leaderboard"' in closed.client.get("/", headers=cookie(closed, "bob")).text


def test_hostile_text_in_a_url_is_escaped_in_the_page(site: Site) -> None:
    seed(site)
    for path in (f"/bots/{HOSTILE}", f"/matches/{HOSTILE}"):
        page = site.client.get(path, headers=cookie(site, "alice"))
        assert "<img" not in page.text, path
        assert "&lt;img src=x onerror=alert(1)&gt;" in page.text, path


def test_a_match_whose_transcript_does_not_verify_is_not_rendered(site: Site) -> None:
    seed(site)  # its transcript is a stand-in, signed by no one
    page = site.client.get("/matches/arena-000001", headers=cookie(site, "bob"))
    assert page.status_code == 200
    assert "does not verify" in page.text
    assert 'id="frames"' not in page.text
    # Why names the transcript's path on the arena's machine: for the organiser alone.
    assert str(site.arena.results) not in page.text
    told = site.client.get("/matches/arena-000001", headers=cookie(site, "organiser"))
    assert str(site.arena.results / "arena-000001.json") in told.text
    missing = site.client.get("/matches/arena-999", headers=cookie(site, "bob"))
    assert missing.status_code == 404 and "No such match" in missing.text


def test_a_match_page_replays_its_transcript_once_for_every_reader(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_work, "replayed", observed)
    path = played_match(site, "arena-000002")
    pages = [
        site.client.get("/matches/arena-000002", headers=cookie(site, who))
        for who in ("alice", "bob", "alice")
    ]
    assert [page.status_code for page in pages] == [200, 200, 200]
    assert all('id="frames"' in page.text for page in pages)
    assert len(replays_of(path)) == 1


def test_the_submit_page_says_submissions_are_closed_once_they_are(site: Site) -> None:
    signed = cookie(site, "bob")
    page = site.client.get("/submit", headers=signed)
    assert 'id="submit-form"' in page.text and "Submissions are closed" not in page.text
    submissions.close(site.arena)
    page = site.client.get("/submit", headers=signed)
    assert page.status_code == 200
    assert "Submissions are closed" in page.text and 'id="submit-form"' not in page.text
