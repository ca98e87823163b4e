"""The arena's pages as an author and the organiser read them, without a browser: where a
sign-in lands, an author's home, pages of nothing that say so (404), the logs offered only
to those who may read them, validate's report as the validate step's log (its command's
text, without a path of the arena's machine), and the ladder's numbers. Each viewer signs in
through the sign-in form, as a browser does. The pages in a browser at a phone's width are
tests/arena/web/test_pages_phone.py."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from referee.arena.intake.pipeline import Intake
from referee.arena.ladder.playing import Ladder, LadderStatus
from referee.arena.ladder.queue import match_key
from referee.arena.store.db import Match, MatchState, Seat, StepKind, Version, VersionState
from referee.arena.store.home import Arena, add_author
from referee.tournaments.results import LOGS
from tests.support.archives import Entry, tar
from tests.support.arena import (
    INTAKE_CONFIG,
    LADDER_CONFIG,
    Site,
    add_version,
    make_site,
    played_match,
    seed,
)
from tests.support.arena_databases import ArenaMaker
from tests.support.hostile_submissions import submit

OWN = "http://testserver"
# A bot that says where it is, on standard error, and dies at its start.
SAYS_WHERE = b"""\
import os
import sys

print("I am", os.path.abspath(__file__), "in", os.getcwd(), file=sys.stderr, flush=True)
sys.exit(3)
"""


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def sign_in(site: Site, who: str, target: str | None = None) -> str:
    """Sign `who` in through the form, as a browser does (the client keeps the cookie it
    is given); where the arena sends them."""
    form = {"token": site.tokens[who]} | ({} if target is None else {"next": target})
    answer = site.client.post("/signin", data=form, headers={"Origin": OWN}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return str(answer.headers["location"])


def title_of(html: str) -> str:
    found = re.search(r"<title>(.*?) · ", html)
    assert found, html
    return found.group(1)


def test_a_sign_in_that_asks_for_no_page_lands_an_author_home(site: Site) -> None:
    assert sign_in(site, "alice") == "/me"
    assert sign_in(site, "organiser") == "/organiser"
    assert sign_in(site, "alice", "/bots/ace") == "/bots/ace"
    # The form asks for no page unless told one.
    assert 'name="next" value=""' in site.client.get("/signin").text


def test_an_authors_home_lists_her_bots_with_the_reason_and_advice(site: Site) -> None:
    ids = seed(site)
    sign_in(site, "alice")
    page = site.client.get("/me")
    assert page.status_code == 200
    assert title_of(page.text) == "My bots" and 'data-page="home"' in page.text
    assert '<a href="/me">My bots</a>' in page.text
    mine = site.client.get("/api/me").json()["my_bots"]
    assert [bot["name"] for bot in mine] == ["ace"]
    versions = {version["id"]: version for version in mine[0]["versions"]}
    failed = versions[ids["failed"]]
    assert (failed["state"], failed["reason"]) == ("failed", "SECRET-REASON")
    assert failed["advice"] == ["SECRET-ADVICE", "flush after each line"]
    # Newest first.
    assert [version["number"] for version in mine[0]["versions"]] == [2, 1]
    # Another author's home holds none of it.
    sign_in(site, "bob")
    theirs = site.client.get("/api/me").json()["my_bots"]
    assert [bot["name"] for bot in theirs] == ["bee", "cub"]
    assert "SECRET" not in str(theirs)


def test_a_page_of_nothing_is_a_404_page_that_says_so(site: Site) -> None:
    seed(site)
    sign_in(site, "bob")
    for path, title in [
        ("/bots/nobody", "No such bot"),
        ("/versions/999999", "No such version"),
        ("/versions/99999999999", "No such version"),
        ("/nope", "No such page"),
        ("/bots/ace/more", "No such page"),
    ]:
        page = site.client.get(path)
        assert page.status_code == 404, path
        assert page.headers["content-type"].startswith("text/html"), path
        assert title_of(page.text) == title, path
        # In the arena's layout, with its header, and nothing of the bot's private data.
        assert '<header class="top">' in page.text and "Sign out" in page.text, path
        assert "SECRET" not in page.text, path
    # A stranger is told the same of a page that is no page (not sent to sign in).
    site.client.cookies.clear()
    stranger = site.client.get("/nope")
    assert stranger.status_code == 404 and title_of(stranger.text) == "No such page"
    # The API's paths stay JSON, and a method a path does not take is still refused as such.
    for path in ("/api/nope", "/api/bots/ace/nope"):
        answer = site.client.get(path)
        assert answer.status_code == 404 and answer.json().keys() == {"error"}, path
    assert site.client.post("/api/me").status_code == 405
    assert site.client.post("/nope", headers={"Origin": OWN}).status_code == 404


def test_a_bots_page_of_one_that_exists_is_a_page(site: Site) -> None:
    seed(site)
    sign_in(site, "bob")
    page = site.client.get("/bots/ace")
    assert page.status_code == 200 and title_of(page.text) == "ace"


def test_the_favicon_is_the_arenas_own(site: Site) -> None:
    answer = site.client.get("/favicon.ico", follow_redirects=False)
    assert answer.status_code == 308 and answer.headers["location"] == "/assets/favicon.svg"
    icon = site.client.get("/assets/favicon.svg")
    assert icon.headers["content-type"] == "image/svg+xml" and icon.text.startswith("<svg")
    assert 'rel="icon" href="/assets/favicon.svg"' in site.client.get("/").text


def test_a_match_page_offers_only_the_logs_its_viewer_may_read(site: Site) -> None:
    ids = seed(site)
    played_match(site, "arena-000002")
    with site.arena.database.session() as session:
        match = session.scalar(select(Match).where(Match.key == "arena-000002"))
        assert match is not None
        match.seats = [
            Seat(index=0, role="xcplayer", version_id=ids["ace"], points=0.0),
            Seat(index=1, role="obplayer", version_id=ids["bee"], points=100.0),
        ]
    # ace wrote to its standard error; bee nothing, which leaves an empty log or none.
    logs = site.arena.results / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "arena-000002.xcplayer.log").write_text("ace thinks\n")
    (logs / "arena-000002.obplayer.log").write_text("")
    offered, quiet = {}, {}
    for who in ("alice", "bob", "organiser"):
        sign_in(site, who)
        page = site.client.get("/matches/arena-000002")
        assert page.status_code == 200 and 'id="frames"' in page.text
        offered[who] = re.findall(r'class="log-button" data-role="([^"]+)"', page.text)
        said = re.search(r'<p id="quiet-seats" class="note">([^<]*)</p>', page.text)
        quiet[who] = said.group(1) if said else None
    # Each the logs its viewer may read, where its bot wrote something: no button that would
    # find none ("no log"), but a line saying so.
    assert offered == {"alice": ["xcplayer"], "bob": [], "organiser": ["xcplayer"]}
    empty = "obplayer: two: wrote nothing to its standard error, so there is no log."
    assert quiet == {"alice": None, "bob": empty, "organiser": empty}
    # A reader with no bot in it is offered no log, and no section for them.
    site.tokens["carol"] = add_author(site.arena, "carol")
    sign_in(site, "carol")
    page = site.client.get("/matches/arena-000002")
    assert "log-button" not in page.text and "The bots&#39; logs" not in page.text


def test_a_version_page_offers_its_step_logs_to_its_author_and_the_organiser(
    site: Site,
) -> None:
    ids = seed(site)
    offered = {}
    for who in ("alice", "bob", "organiser"):
        sign_in(site, who)
        page = site.client.get(f"/versions/{ids['failed']}")
        found = re.search(r'data-logs="(yes|no)"', page.text)
        assert found, page.text
        offered[who] = found.group(1)
    assert offered == {"alice": "yes", "bob": "no", "organiser": "yes"}


def test_the_validate_log_is_validates_text_without_the_arenas_paths(
    make_arena: ArenaMaker,
) -> None:
    arena = make_arena(config_text=INTAKE_CONFIG)
    add_author(arena, "ada")
    archive = tar(
        [
            Entry("bot.yaml", b"name: where\nrun: /usr/bin/python3 bot.py\n"),
            Entry("bot.py", SAYS_WHERE),
        ]
    )
    version_id = submit(arena, "ada", "where", archive)
    asyncio.run(Intake(arena).process(version_id))
    with arena.database.session() as session:
        version = session.get_one(Version, version_id)
        state = version.state
        log = next(step.log for step in version.steps if step.kind == StepKind.VALIDATE)
    assert state == VersionState.FAILED
    lines = log.splitlines()
    # Advice first, as `referee validate` prints it; then the checks, the verdict last.
    assert lines[0].startswith(
        "how to fix start (dying at its start): it exited before it was ready"
    ), log
    table = lines.index(next(line for line in lines if line.split()[:2] == ["check", "result"]))
    assert table > 0
    assert re.search(r"^legal moves +not run +", log, re.MULTILINE), log
    assert lines[-1].startswith("verdict: FAIL (start")
    # What it said of where it is names the bot's directory as bot, no path of the machine.
    assert "    I am bot/bot.py in bot\n" in log, log
    assert str(arena.directory) not in log
    assert str(arena.directory.resolve()) not in log
    assert "referee-intake-" not in log and "/tmp/" not in log


def test_the_ladders_status_counts_the_matches_played_apart_from_those_claimed(
    make_arena: ArenaMaker,
) -> None:
    arena: Arena = make_arena()
    versions = (add_version(arena, "ann"), add_version(arena, "bob"))
    # Matches marked running that no place plays (a batch's waiting ones, or those a stop
    # left running): claimed, not playing.
    with arena.database.session() as session:
        for seed_ in range(3):
            match = Match(key=f"new-{seed_}", game="ticblock", seed=seed_, opening=2)
            match.state = MatchState.RUNNING
            session.add(match)
            session.flush()
            match.key, match.pair = match_key(match.id), match.id
            for index, (role, v) in enumerate(zip(("xcplayer", "obplayer"), versions, strict=True)):
                session.add(Seat(match_id=match.id, index=index, role=role, version_id=v))
    status = Ladder(arena).status()
    assert (status.claimed, status.playing, status.capacity) == (3, 0, 0)
    assert not hasattr(status, "running")


@pytest.mark.slow
def test_a_playing_ladder_plays_no_more_than_its_capacity(make_arena: ArenaMaker) -> None:
    arena = make_arena(config_text=LADDER_CONFIG.format(game="ticblock", arena=""))
    for name in ("ann", "bob", "cat"):
        add_version(arena, name)
    ladder = Ladder(arena)
    seen: list[LadderStatus] = []

    def watch() -> None:
        deadline = time.monotonic() + 120
        while not seen or seen[-1].played < 6:
            assert time.monotonic() < deadline, seen[-1:]
            seen.append(ladder.status())
            time.sleep(0.05)

    async def main() -> None:
        running = asyncio.create_task(ladder.run())
        try:
            await asyncio.to_thread(watch)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    asyncio.run(main())
    assert all(status.playing <= status.capacity for status in seen)
    # Played as the versions counted their matches, each of two seats: the matches done.
    with arena.database.session() as session:
        done = session.scalar(
            select(func.count()).select_from(Match).where(Match.state == MatchState.DONE)
        )
    assert ladder.status().played == done >= 6
    assert max(status.playing for status in seen) >= 1
