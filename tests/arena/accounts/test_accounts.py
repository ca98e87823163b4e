"""The arena's accounts through its API: a sign-in is a session the server ends (signing
out, expiring, the organiser), tokens are replaced and revoked, every sign-in, submission and
organiser's action is in the audit log with no token in it, a flood of failed sign-ins is
bounded, names are unique without regard to case (in the database too, and when an old
arena is upgraded), and a public URL fixes the Host a request may name. The same in a real
browser is tests/arena/web/test_pages_accounts.py."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import select, text, update
from sqlalchemy.exc import IntegrityError
from starlette.testclient import TestClient
from typer.testing import CliRunner

from referee.arena.accounts import audit, sessions
from referee.arena.store.db import AuditEntry, Author, Bot, SignIn, upgrade
from referee.arena.store.home import add_author
from referee.arena.web.api import create_app
from referee.cli import app
from referee.errors import ArenaError, ConfigError
from tests.support.arena import (
    API_CONFIG,
    Site,
    StandIn,
    make_site,
    played_match,
    seed,
    signed_in,
    token_of,
)
from tests.support.arena_databases import ArenaMaker
from tests.support.migrations import alembic_config, engine_on, head, revision

OWN = "http://testserver"
PUBLIC = "https://arena.example.org"
runner = CliRunner()


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def me(site: Site, cookie: str) -> int:
    """The status of /api/me for a Cookie header."""
    return int(site.client.get("/api/me", headers={"Cookie": cookie}).status_code)


def bearer(site: Site, token: str) -> int:
    answer = site.client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    return int(answer.status_code)


def sign_out(site: Site, cookie: str) -> None:
    answer = site.client.post(
        "/signout", headers={"Cookie": cookie, "Origin": OWN}, follow_redirects=False
    )
    assert answer.status_code == 303
    assert "Max-Age=0" in answer.headers["set-cookie"]


def rows(site: Site) -> list[AuditEntry]:
    with site.arena.database.session() as session:
        return list(session.scalars(select(AuditEntry).order_by(AuditEntry.id)))


def test_signing_out_ends_the_session_so_the_old_cookie_is_no_ones(site: Site) -> None:
    cookie = signed_in(site.client, site.tokens["alice"])
    assert me(site, cookie) == 200
    sign_out(site, cookie)
    # A copy of the cookie kept from before (a shared computer, a stolen profile): ended.
    assert me(site, cookie) == 401
    page = site.client.get("/", headers={"Cookie": cookie})
    assert ">Sign in</a>" in page.text and 'name="csrf-token"' not in page.text
    # Her token itself still works, and signs in afresh.
    assert bearer(site, site.tokens["alice"]) == 200
    assert me(site, signed_in(site.client, site.tokens["alice"])) == 200


def test_a_sign_in_is_a_new_session_whatever_cookie_came_with_it(site: Site) -> None:
    planted = signed_in(site.client, site.tokens["bob"])
    # A cookie planted in the browser before alice signs in is ended, never taken up.
    answer = site.client.post(
        "/signin",
        data={"token": site.tokens["alice"]},
        headers={"Origin": OWN, "Cookie": planted},
        follow_redirects=False,
    )
    site.client.cookies.clear()
    fresh = answer.headers["set-cookie"].split(";")[0]
    assert fresh != planted
    assert (me(site, planted), me(site, fresh)) == (401, 200)
    # The session's id is kept only as its hash.
    session_id = fresh.partition("=")[2]
    with site.arena.database.session() as session:
        kept = session.scalars(select(SignIn.id_hash)).all()
    assert session_id not in kept and len(kept) == 1


def test_an_expired_or_idle_session_is_no_ones(site: Site) -> None:
    expired = signed_in(site.client, site.tokens["alice"])
    idle = signed_in(site.client, site.tokens["bob"])
    assert (me(site, expired), me(site, idle)) == (200, 200)
    now = dt.datetime.now(dt.UTC)
    with site.arena.database.session() as session:
        alice, bob = (
            session.scalars(select(Author.id).where(Author.name == name)).one()
            for name in ("alice", "bob")
        )
        past = now - dt.timedelta(seconds=1)
        session.execute(update(SignIn).where(SignIn.author_id == alice).values(expires_at=past))
        long_ago = now - sessions.IDLE - dt.timedelta(seconds=1)
        session.execute(update(SignIn).where(SignIn.author_id == bob).values(seen_at=long_ago))
    assert (me(site, expired), me(site, idle)) == (401, 401)
    with site.arena.database.session() as session:
        assert session.scalars(select(SignIn)).all() == []


def test_an_author_keeps_a_bounded_number_of_sessions(site: Site) -> None:
    first = signed_in(site.client, site.tokens["alice"])
    for _ in range(sessions.MAX_PER_AUTHOR):
        last = signed_in(site.client, site.tokens["alice"])
    with site.arena.database.session() as session:
        assert len(session.scalars(select(SignIn)).all()) == sessions.MAX_PER_AUTHOR
    assert (me(site, first), me(site, last)) == (401, 200)


def test_a_replaced_token_and_its_sessions_stop_working_at_once(site: Site) -> None:
    old = site.tokens["alice"]
    cookies = [signed_in(site.client, old) for _ in range(2)]
    answer = site.post("/api/authors/alice/token", "organiser")
    assert answer.status_code == 200
    new = answer.json()["token"]
    assert answer.json()["author"] == "alice" and new != old
    assert bearer(site, old) == 401
    assert [me(site, cookie) for cookie in cookies] == [401, 401]
    assert bearer(site, new) == 200
    refused = site.client.post("/signin", data={"token": old}, headers={"Origin": OWN})
    assert refused.status_code == 401
    # Only the hash of the new one is kept.
    with site.arena.database.session() as session:
        hashes = session.scalars(select(Author.token_hash)).all()
    assert new not in hashes


def test_a_revoked_token_is_no_ones_until_it_is_replaced(site: Site) -> None:
    cookie = signed_in(site.client, site.tokens["bob"])
    answer = site.post("/api/authors/bob/revoke", "organiser")
    assert answer.json() == {"author": "bob", "sessions_ended": 1}
    assert (bearer(site, site.tokens["bob"]), me(site, cookie)) == (401, 401)
    listed = {a["name"]: a for a in site.get("/api/authors", "organiser").json()["authors"]}
    assert listed["bob"]["has_token"] is False and listed["alice"]["has_token"] is True
    new = site.post("/api/authors/bob/token", "organiser").json()["token"]
    assert bearer(site, new) == 200


def test_the_organiser_signs_an_author_out_of_every_browser(site: Site) -> None:
    cookies = [signed_in(site.client, site.tokens["alice"]) for _ in range(3)]
    listed = {a["name"]: a for a in site.get("/api/authors", "organiser").json()["authors"]}
    assert listed["alice"]["sessions"] == 3
    answer = site.post("/api/authors/alice/signout", "organiser")
    assert answer.json() == {"author": "alice", "sessions_ended": 3}
    assert [me(site, cookie) for cookie in cookies] == [401, 401, 401]
    # Her token is untouched.
    assert bearer(site, site.tokens["alice"]) == 200


def test_only_the_organiser_changes_accounts_and_never_their_own_here(site: Site) -> None:
    for path in ["/api/authors/bob/token", "/api/authors/bob/revoke", "/api/authors/bob/signout"]:
        assert site.post(path, "alice").status_code == 403, path
        assert site.post(path, None).status_code == 401, path
    assert site.get("/api/authors", "alice").status_code == 403
    assert site.get("/api/audit", "alice").status_code == 403
    own = site.post("/api/authors/organiser/revoke", "organiser")
    assert own.status_code == 409
    assert "referee arena author token DIR organiser" in own.json()["error"]
    assert bearer(site, site.tokens["organiser"]) == 200
    missing = site.post("/api/authors/nobody/token", "organiser")
    assert missing.status_code == 404 and missing.json() == {"error": "no author 'nobody'"}
    assert bearer(site, site.tokens["bob"]) == 200


def test_the_command_line_replaces_and_revokes_a_token(site: Site) -> None:
    directory = str(site.arena.directory)
    cookie = signed_in(site.client, site.tokens["alice"])
    result = runner.invoke(app, ["arena", "author", "token", directory, "alice"])
    assert result.exit_code == 0, result.output
    new = token_of(result.stdout)
    assert (bearer(site, site.tokens["alice"]), me(site, cookie), bearer(site, new)) == (
        401,
        401,
        200,
    )
    result = runner.invoke(app, ["arena", "author", "revoke", directory, "alice"])
    assert result.exit_code == 0, result.output
    assert bearer(site, new) == 401
    for command_ in ("token", "revoke"):
        refused = runner.invoke(app, ["arena", "author", command_, directory, "nobody"])
        assert refused.exit_code == 2
        assert refused.stderr.splitlines() == ["referee: error: no author 'nobody'"]
    actions = [(row.action, row.author, row.address) for row in rows(site)[-2:]]
    assert actions == [
        ("token replaced", None, audit.COMMAND_LINE),
        ("token revoked", None, audit.COMMAND_LINE),
    ]


def test_every_kind_of_event_is_audited_without_a_token_in_it(site: Site) -> None:
    seed(site)
    played_match(site, "arena-000002")
    secrets_given = ["WRONG-TOKEN-TEXT-0123456789", *site.tokens.values()]
    cookie = signed_in(site.client, site.tokens["alice"])
    session_id = cookie.partition("=")[2]
    failed = site.client.post("/signin", data={"token": secrets_given[0]}, headers={"Origin": OWN})
    assert failed.status_code == 401
    assert site.post("/api/bots/newbot/versions", "alice", content=b"archive").status_code == 202
    assert site.post("/api/bots/bee/versions", "alice", content=b"archive").status_code == 403
    for path in [
        "/api/bots/ace/suspend",
        "/api/bots/ace/reinstate",
        "/api/ladder/pause",
        "/api/ladder/resume",
        "/api/matches/arena-000002/replay",
        "/api/authors/bob/signout",
        "/api/authors/bob/token",
        "/api/authors/bob/revoke",
    ]:
        assert site.post(path, "organiser").status_code == 200, path
    sign_out(site, cookie)
    found = rows(site)
    assert [(row.action, row.author, row.subject) for row in found] == [
        ("signin", "alice", "author alice"),
        ("signin failed", None, ""),
        ("submitted", "alice", "bot newbot v1"),
        ("submission refused", "alice", "bot bee"),
        ("suspend", "organiser", "bot ace v2"),
        ("reinstate", "organiser", "bot ace v2"),
        ("pause", "organiser", "ladder"),
        ("resume", "organiser", "ladder"),
        ("replay", "organiser", "match arena-000002"),
        ("sessions revoked", "organiser", "author bob"),
        ("token replaced", "organiser", "author bob"),
        ("token revoked", "organiser", "author bob"),
        ("signout", "alice", "author alice"),
    ]
    assert found[3].detail == "bot 'bee' is another author's"
    assert found[8].detail == "verified"
    assert {row.address for row in found} == {"testclient"}
    # The organiser reads the same through the API, newest first; no token, no session id.
    answer = site.get("/api/audit", "organiser")
    shown = answer.json()["entries"]
    assert [entry["action"] for entry in shown] == [row.action for row in reversed(found)]
    assert shown[0].keys() == {"id", "at", "author", "action", "object", "address", "detail"}
    every_text = answer.text + json.dumps([vars(row).get("detail") for row in found])
    for secret in [*secrets_given, session_id]:
        assert secret not in every_text


def test_the_audit_log_is_read_a_page_at_a_time(site: Site) -> None:
    for number in range(7):
        audit.record(site.arena.database, audit.Action.PAUSED, "organiser", "here", f"n{number}")
    pages: list[list[str]] = []
    before: int | None = None
    while True:
        query = "?limit=3" + ("" if before is None else f"&before={before}")
        page = site.get(f"/api/audit{query}", "organiser").json()
        pages.append([entry["object"] for entry in page["entries"]])
        before = page["before"]
        if before is None:
            break
    assert pages == [["n6", "n5", "n4"], ["n3", "n2", "n1"], ["n0"]]
    for query in ["limit=0", "limit=201", "limit=x", "before=-1", "before=99999999999"]:
        answer = site.get(f"/api/audit?{query}", "organiser")
        assert answer.status_code == 400, query
        assert answer.json().keys() == {"error"}


def test_a_flood_of_failed_sign_ins_is_bounded_and_the_right_token_still_works(
    site: Site,
) -> None:
    flood = audit.FAILED_PER_ADDRESS + 15
    answers = [
        site.client.post("/signin", data={"token": f"guess-{n}"}, headers={"Origin": OWN})
        for n in range(flood)
    ]
    statuses = [answer.status_code for answer in answers]
    assert statuses == [401] * audit.FAILED_PER_ADDRESS + [429] * 15
    assert "Too many failed sign-ins from your address" in answers[-1].text
    wait = int(answers[-1].headers["retry-after"])
    assert 0 < wait <= audit.FAILED_WINDOW.total_seconds()
    # One row each up to the bound, then one that says so; no more however long it goes on.
    actions = [row.action for row in rows(site)]
    assert actions == ["signin failed"] * audit.FAILED_PER_ADDRESS + ["signin limited"]
    assert me(site, signed_in(site.client, site.tokens["alice"])) == 200
    # Another address is not kept waiting by this one.
    with TestClient(site.client.app, client=("192.0.2.7", 5000)) as other:
        answer = other.post("/signin", data={"token": "guess"}, headers={"Origin": OWN})
    assert answer.status_code == 401


def test_failed_sign_ins_from_many_addresses_are_bounded_in_all(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "FAILED_IN_ALL", 4)
    for number in range(10):
        with TestClient(site.client.app, client=(f"192.0.2.{number}", 5000)) as client:
            answer = client.post("/signin", data={"token": "guess"}, headers={"Origin": OWN})
        # Each address is under its own bound: answered as a wrong token.
        assert answer.status_code == 401
    actions = [(row.action, row.address) for row in rows(site)]
    assert actions == [("signin failed", f"192.0.2.{n}") for n in range(4)] + [
        ("signin limited", "")
    ]


def test_an_authors_refused_submissions_are_bounded(site: Site) -> None:
    seed(site)
    for _ in range(audit.REFUSED_PER_AUTHOR + 10):
        assert site.post("/api/bots/bee/versions", "alice", content=b"a").status_code == 403
    actions = [row.action for row in rows(site)]
    assert actions == ["submission refused"] * audit.REFUSED_PER_AUTHOR + ["submissions limited"]


def test_an_author_name_differing_only_by_case_is_refused(site: Site) -> None:
    add_author(site.arena, "ada-good")
    with pytest.raises(ArenaError) as raised:
        add_author(site.arena, "ADA-GOOD")
    assert str(raised.value) == (
        "author 'ADA-GOOD': 'ada-good' is already in this arena"
        " (names must differ by more than case)"
    )
    result = runner.invoke(app, ["arena", "author", "add", str(site.arena.directory), "Ada-Good"])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "'ada-good'" in result.stderr
    # The database refuses it too, whoever writes the row.
    with pytest.raises(IntegrityError), site.arena.database.session() as session:
        session.add(Author(name="ALICE", token_hash="f" * 64))


def test_a_bot_name_differing_only_by_case_is_refused_409(site: Site) -> None:
    assert site.post("/api/bots/ada-good/versions", "alice", content=b"a").status_code == 202
    for who in ("alice", "bob"):
        answer = site.post("/api/bots/ADA-GOOD/versions", who, content=b"a")
        assert answer.status_code == 409, who
        assert answer.json() == {
            "error": "bot name 'ADA-GOOD': bot 'ada-good' is already in this arena"
            " (names must differ by more than case)"
        }
    with site.arena.database.session() as session:
        assert session.scalars(select(Bot.name)).all() == ["ada-good"]


def _at_0002(url: str, names: list[str], bots: tuple[str, ...] = ()) -> None:
    """A database at the schema before accounts, holding authors of `names`, the first of
    them with bots of `bots`."""
    command.upgrade(alembic_config(url), "0002")
    with engine_on(url) as engine, engine.begin() as connection:
        for number, name in enumerate(names, 1):
            connection.execute(
                text(
                    "INSERT INTO authors (id, name, token_hash, organiser, created_at)"
                    " VALUES (:id, :name, :hash, false, :now)"
                ),
                {"id": number, "name": name, "hash": f"{number:064x}", "now": "2025-03-01"},
            )
        for number, bot in enumerate(bots, 1):
            connection.execute(
                text(
                    "INSERT INTO bots (id, author_id, name, created_at)"
                    " VALUES (:id, 1, :name, :now)"
                ),
                {"id": number, "name": bot, "now": "2025-03-01"},
            )


def test_an_arena_before_accounts_is_upgraded_with_its_names_keys(old_database_url: str) -> None:
    url = old_database_url
    _at_0002(url, ["organiser", "Ada-Good"], ("Ace", "bee"))
    upgrade(url)
    with engine_on(url) as engine, engine.connect() as connection:
        keys = connection.execute(text("SELECT name_key FROM authors ORDER BY id")).all()
        bots = connection.execute(text("SELECT name_key FROM bots ORDER BY id")).all()
    assert [key for (key,) in keys] == ["organiser", "ada-good"]
    assert [key for (key,) in bots] == ["ace", "bee"]


def test_an_arena_with_names_differing_by_case_is_not_upgraded(old_database_url: str) -> None:
    url = old_database_url
    _at_0002(url, ["organiser", "ada-good", "ADA-GOOD"])
    with pytest.raises(ArenaError) as raised:
        upgrade(url)
    assert str(raised.value) == (
        "cannot upgrade the arena: author names 'ada-good' and 'ADA-GOOD' differ only by"
        " case, and names are now unique without regard to case; rename one in the authors"
        " table, then start the arena again"
    )
    # Nothing changed: the arena is as it was, at the schema before.
    assert revision(url) == "0002"


def test_an_arena_with_bot_names_differing_by_case_is_not_upgraded(
    old_database_url: str,
) -> None:
    url = old_database_url
    _at_0002(url, ["organiser"], ("blocker", "Blocker"))
    with pytest.raises(ArenaError, match="bot names 'blocker' and 'Blocker' differ only by case"):
        upgrade(url)
    assert revision(url) == "0002"
    # Renamed by the organiser, the arena upgrades: nothing was left half done.
    with engine_on(url) as engine, engine.begin() as connection:
        connection.execute(text("UPDATE bots SET name = 'blocker-2' WHERE name = 'Blocker'"))
    upgrade(url)
    assert revision(url) == head()


def _public_app(make_arena: ArenaMaker, public_url: str) -> tuple[TestClient, str]:
    config = API_CONFIG.format(public="true") + f"  public_url: {public_url}\n"
    arena = make_arena(config_text=config)
    return TestClient(create_app(arena, StandIn().hooks()), base_url=PUBLIC), (
        make_arena.organiser_token(arena)
    )


def test_a_request_for_another_host_is_refused(make_arena: ArenaMaker) -> None:
    client, token = _public_app(make_arena, PUBLIC + "/")
    with client:
        assert client.get("/api/leaderboard").status_code == 200
        for host in ["evil.example", "arena.example.org:8443", "arena.example.org.evil.example"]:
            answer = client.get("/api/leaderboard", headers={"Host": host})
            assert answer.status_code == 421, host
            assert answer.json() == {
                "error": f"this arena is {PUBLIC}: Host {host!r} is not its host"
            }
        # Sign-in is checked against the public origin, and its cookie is the secure one.
        answer = client.post(
            "/signin", data={"token": token}, headers={"Origin": PUBLIC}, follow_redirects=False
        )
        assert answer.status_code == 303
        assert answer.headers["set-cookie"].startswith("__Host-referee_session=")
        assert "Secure" in answer.headers["set-cookie"]
        spoofed = client.post(
            "/signin",
            data={"token": token},
            headers={"Origin": "https://evil.example", "Host": "evil.example"},
        )
        assert spoofed.status_code == 421


def test_hsts_only_when_the_public_url_is_https(make_arena: ArenaMaker) -> None:
    client, _ = _public_app(make_arena, PUBLIC)
    with client:
        for path in ["/", "/api/leaderboard", "/api/me"]:
            answer = client.get(path)
            assert answer.headers["strict-transport-security"] == "max-age=31536000", path
    plain = make_arena(config_text=API_CONFIG.format(public="true"))
    with TestClient(create_app(plain, StandIn().hooks()), base_url=PUBLIC) as client:
        # Over https, but no public URL says the arena is only ever reached so.
        assert "strict-transport-security" not in client.get("/").headers
    http = make_arena(
        config_text=API_CONFIG.format(public="true") + "  public_url: http://arena.test:8080\n"
    )
    with TestClient(create_app(http, StandIn().hooks()), base_url="http://arena.test:8080") as c:
        answer = c.get("/")
        assert answer.status_code == 200
        assert "strict-transport-security" not in answer.headers


@pytest.mark.parametrize(
    "url", ["arena.example.org", "ftp://arena.example.org", "https://a.example/path",
            "https://user@a.example", "https://a.example/?q=1", "https://a.example:99999"],
)  # fmt: skip
def test_a_public_url_that_is_not_an_origin_is_refused_with_its_line(
    make_arena: ArenaMaker, url: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        make_arena(config_text=API_CONFIG.format(public="true") + f"  public_url: {url}\n")
    line = str(raised.value)
    assert "arena.public_url" in line and "http(s)://HOST[:PORT] with no path" in line
    assert len(line.splitlines()) == 1
