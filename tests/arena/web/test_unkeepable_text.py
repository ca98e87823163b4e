"""Text no database keeps as it is, a NUL (PostgreSQL refuses it) or a lone surrogate (no
UTF-8 holds it), in every path, query and body field of the API, on SQLite and PostgreSQL:
each answered 400 or 404 in one line, never 500 (issue 71). A URL cannot carry a lone
surrogate (its bytes that are not UTF-8 reach the arena as U+FFFD), so paths and queries are
tried with a NUL and with such bytes, and JSON bodies with both escapes."""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Iterator

import pytest
from starlette.routing import Route

from tests.support.arena import Site, make_site, seed, signed_in
from tests.support.arena_databases import ArenaMaker

# In a URL: a NUL, the bytes of a lone surrogate as UTF-8 would write one, a byte no UTF-8 has.
IN_URLS = ("a%00b", "..%00.json", "%00", "%ED%A0%80", "x%FF")
# In JSON: a NUL, a lone surrogate of each half, and both beside other text.
IN_JSON = ("a\\u0000b", "\\ud800", "x\\udfffy", "\\u0000\\udc80")
# The query parameters each route reads.
QUERIES = {
    "/api/matches": ("bot", "opponent", "game", "result", "limit", "cursor"),
    "/api/matches/{key}/live": ("after",),
    "/api/audit": ("limit", "before"),
}
# The query parameters each page reads: a page says what it refused in its text.
PAGE_QUERIES = {
    "/matches": ("bot", "opponent", "game", "result", "limit", "cursor"),
    "/organiser/audit": ("before",),
    "/signin": ("next",),
}
# A cursor whose text is base64 of what no database keeps: a NUL, a lone surrogate's bytes.
CURSORS = tuple(
    base64.urlsafe_b64encode(raw).decode().rstrip("=")
    for raw in (
        b"2025-01-01T00:00:00+00:00\x00 1",
        b"\xed\xa0\x80 1",
        b"2025-01-01T00:00:00+00:00 \x00",
    )
)
# The fields of each body the API reads, as JSON.
BODIES = {
    "/api/final": ("format", "rounds"),
    "/api/bots/{name}/suspend": ("reason",),
}
ANSWERED = (400, 404)
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    # Paced as the arena paces a client, the fuzzing would be answered 429.
    yield from make_site(make_arena, arena_keys="  requests: {per_s: 100000, burst: 100000}\n")


def routes(site: Site) -> list[tuple[str, str]]:
    """Each route of the API and of the pages, and each of its methods."""
    return [
        (route.path, method)
        for route in site.client.app.routes
        if isinstance(route, Route)
        for method in sorted((route.methods or set()) - {"HEAD"})
    ]


def filled(template: str, bad: str | None = None, which: str | None = None) -> str:
    """A route's path with each parameter a real one of `seed`'s, `which` of them `bad`."""
    real = {
        "name": "ace",
        "id:int": "1",
        "key": "arena-000001",
        "role": "xcplayer",
        "kind": "build",
    }
    return re.sub(
        r"\{([^}]+)\}",
        lambda found: bad if found.group(1) == which and bad is not None else real[found.group(1)],
        template,
    )


def answered(site: Site, method: str, path: str, who: str, **kwargs: object) -> int:
    answer = site.client.request(method, path, headers=site.auth(who), **kwargs)
    assert answer.status_code < 500, (method, path, answer.text)
    if answer.status_code >= 400 and path.startswith("/api/"):
        # One line saying why, whatever the text held.
        message = answer.json()["error"]
        assert message and "\n" not in message and "Traceback" not in message
    return answer.status_code


def test_every_path_field_answers_400_or_404(site: Site) -> None:
    """Of the API, and of the pages too."""
    seed(site)
    tried = 0
    for (template, method), bad in itertools.product(routes(site), IN_URLS):
        for which in re.findall(r"\{([^}]+)\}", template):
            # The organiser passes every guard, an author is refused the organiser's routes
            # first; an author submits (the audit log records a refusal).
            for who in ("organiser", "alice"):
                status = answered(site, method, filled(template, bad, which), who)
                allowed = ANSWERED if who == "organiser" else (*ANSWERED, 403)
                assert status in allowed, (method, template, which, bad, who, status)
                tried += 1
    assert tried > 100


def test_every_query_field_of_the_api_answers_400_or_404(site: Site) -> None:
    seed(site)
    for template, names in QUERIES.items():
        for name in names:
            values = IN_URLS + (CURSORS if name == "cursor" else ())
            for value in values:
                query = f"{name}={value}" if name != "result" else f"bot=ace&result={value}"
                path = f"{filled(template)}?{query}"
                status = answered(site, "GET", path, "organiser")
                if name == "game" and "%00" not in value:
                    # Bytes that are not UTF-8 reach the arena as U+FFFD: a game no match has.
                    assert status == 200 and site.get(path, "organiser").json()["matches"] == []
                else:
                    # A bot's name that is not a NUL: a bot no one has (404).
                    assert status in ANSWERED, (path, status)


def test_no_query_field_of_a_page_fails_it(site: Site) -> None:
    seed(site)
    for (path, names), value in itertools.product(PAGE_QUERIES.items(), IN_URLS):
        for name in names:
            assert answered(site, "GET", f"{path}?{name}={value}", "organiser") < 500


def test_every_body_field_of_the_api_answers_400(site: Site) -> None:
    seed(site)
    for (template, fields), escaped in itertools.product(BODIES.items(), IN_JSON):
        for name in fields:
            body = f'{{"{name}": "{escaped}"}}'.encode()
            assert answered(site, "POST", filled(template), "organiser", content=body) == 400
            # The field's name itself.
            body = f'{{"{escaped}": 1}}'.encode()
            assert answered(site, "POST", filled(template), "organiser", content=body) == 400
    assert site.ladder.finals == [] and site.ladder.changed == 0


def test_a_sign_in_with_such_a_token_is_refused_and_recorded(site: Site) -> None:
    """A page's form, not the API: a token no author has, refused in one line (not 500), and
    the failed sign-in in the audit log."""
    for value in ("a%00b", "%ED%A0%80"):
        answer = site.client.post(
            "/signin",
            content=f"token={value}",
            headers={"Origin": "http://testserver", "Content-Type": FORM},
        )
        assert answer.status_code in (401, 403), answer.status_code
    cookie = signed_in(site.client, site.tokens["organiser"])
    entries = site.client.get("/api/audit", headers={"Cookie": cookie}).json()["entries"]
    assert [e["action"] for e in entries].count("signin failed") >= 2
