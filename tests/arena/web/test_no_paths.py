"""What an author can reach names no path of the arena's machine (issue 71): after real
matches on the ladder (a built-in game and a rulesheet's, a bot that writes a log), a version
failed at validation and a final played, every page, API answer and download an author can
reach is walked, every route of the arena among them, for the directory the arena and its
config are in. The transcripts name a seat's files from its bot's directory, its log from the
results directory and the rulesheet as the config named it, and still verify."""

from __future__ import annotations

import asyncio
import gzip
import re
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from sqlalchemy import select
from starlette.routing import Route
from starlette.testclient import TestClient

from referee.arena.intake.pipeline import Intake
from referee.arena.ladder import final
from referee.arena.ladder.playing import Ladder
from referee.arena.store.db import Bot, Match, MatchState, Seat, StepKind, Version
from referee.arena.store.home import Arena, add_author
from referee.arena.web.api import create_app
from referee.protocol import EndReason
from referee.records.transcript import read_transcript
from referee.records.verify import Outcome, verify_file
from referee.tournaments.runner import run_tournament
from tests.support.archives import Entry, tar
from tests.support.arena import StandIn, add_version, signed_in
from tests.support.arena_databases import ArenaMaker
from tests.support.hostile_submissions import PYTHON, bot_yaml, submit
from tests.support.paths import ROOT

# A ladder of a built-in game and a rulesheet's, its rulesheet named from the config's
# folder, as `arena init` copies it; the walk's requests are not paced.
CONFIG = """\
name: paths
games: [ticblock, rules/tictactoe.kif]
start_clock: 5000
play_clock: 1000
policy: forfeit
concurrency: 2
arena:
  placement_matches: 2
  validate: {matches_per_role: 1}
  requests: {per_s: 100000, burst: 100000}
"""
RULESHEET = ROOT / "matches" / "rulesheets" / "tictactoe.kif"
PATIENCE_S = 120
# What a page offers to follow: links, forms' targets, scripts, styles and images.
LINKS = re.compile(r'(?:href|src|action)="([^"#]+)')
# A path of the site in a JSON answer (`"report": "/final/index.html"`).
JSON_LINKS = re.compile(r'"(/(?:final|matches|bots|versions)/[^"\s]*)"')
# The most pages a walk reads: the arena above has a few dozen.
MOST = 400


@pytest.fixture
def arena(make_arena: ArenaMaker, tmp_path: Path) -> tuple[Arena, dict[str, str]]:
    """The arena and its authors' tokens."""
    (tmp_path / "rules").mkdir()
    shutil.copy(RULESHEET, tmp_path / "rules" / "tictactoe.kif")
    made = make_arena(config_text=CONFIG)
    return made, {name: add_author(made, name) for name in ("alice", "bob", "carol")}


def played_ladder(arena: Arena, enough: Callable[[], bool]) -> None:
    """The ladder run until `enough()`, then stopped."""

    async def main() -> None:
        running = asyncio.create_task(Ladder(arena).run())
        deadline = time.monotonic() + PATIENCE_S
        try:
            while not await asyncio.to_thread(enough):
                assert not running.done(), running.exception()
                assert time.monotonic() < deadline, "the ladder played too few matches"
                await asyncio.sleep(0.2)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    asyncio.run(main())


def done_games(arena: Arena) -> set[str]:
    with arena.database.session() as session:
        return set(session.scalars(select(Match.game).where(Match.state == MatchState.DONE)))


def failed_at_validation(arena: Arena) -> int:
    """carol's version, built, which exits at once: failed by the intake."""
    archive = tar(
        [
            Entry("bot.yaml", bot_yaml("quitter", f"{PYTHON} quitter.py", "echo built")),
            Entry("quitter.py", b"import sys\nsys.exit(3)\n"),
        ]
    )
    version_id = submit(arena, "carol", "quitter", archive)
    asyncio.run(Intake(arena).process(version_id))
    with arena.database.session() as session:
        assert session.get_one(Version, version_id).reason.startswith("validation: FAIL")
    return version_id


@pytest.mark.slow
def test_nothing_an_author_reaches_names_a_path_of_the_arenas_machine(
    arena: tuple[Arena, dict[str, str]], tmp_path: Path
) -> None:
    the_arena, tokens = arena
    # alice's bot writes a log (at each start), bob's does not; carol has no bot on the
    # ladder, and one failed at validation.
    add_version(the_arena, "ann", author="alice", mode="scheduling")
    add_version(the_arena, "bee", author="bob")
    played_ladder(the_arena, lambda: done_games(the_arena) == {"ticblock", "tictactoe"})
    failed_at_validation(the_arena)
    settings, key = final.begin(the_arena, "round-robin", 1)
    asyncio.run(run_tournament(settings, key))
    assert not final.publish(the_arena, settings.output, key).problems

    transcripts = [*the_arena.results.glob("*.json"), *settings.output.glob("*.json")]
    for path in transcripts:
        recorded = read_transcript(path)
        # (A match the ladder's stop cut short at its start may not verify: issue 71, 5.)
        if recorded.end_reason != EndReason.ABORTED:
            assert verify_file(path, the_arena.key.public).outcome is Outcome.VERIFIED, path
        for seat in recorded.seats:
            # The bot's program named from its directory (the interpreter is the tests').
            assert seat.command[1] == "misbehaving.py" and "misbehaving.py" in (seat.files or {})
            assert seat.log in (None, f"logs/{recorded.match_id}.{seat.role}.log")
        if recorded.rulesheet is not None:
            assert recorded.rulesheet.path == "rules/tictactoe.kif"
    assert any(seat.log for path in transcripts for seat in read_transcript(path).seats)

    app = create_app(the_arena, StandIn().hooks())
    walked: dict[tuple[str, str], bytes] = {}
    with TestClient(app) as client:
        for who in ("carol", "alice"):
            paths = list(get_paths(the_arena))
            cookie = {"Cookie": signed_in(client, tokens[who])}
            bearer = {"Authorization": f"Bearer {tokens[who]}"}
            for path, body in [
                *walk(client, cookie, paths).items(),
                *walk(client, bearer, [p for p in paths if p.startswith("/api/")]).items(),
            ]:
                walked[(who, path)] = body
    needles = {str(tmp_path), str(tmp_path.resolve())}
    for (who, path), body in walked.items():
        text = body.decode("utf-8", "replace")
        assert not [needle for needle in needles if needle in text], (who, path)
    # Every route that answers a GET was walked, and the records themselves among them.
    gets = [r for r in app.routes if isinstance(r, Route) and "GET" in (r.methods or ())]
    assert not [
        route.path
        for route in gets
        if not any(route.path_regex.match(urlsplit(path).path) for _, path in walked)
    ]
    records = [(path, body) for (_, path), body in walked.items() if path.endswith("/ggp")]
    assert [path for path, body in records if b"misbehaving.py" in body]
    assert [path for _, path in walked if path.startswith("/final/matches/")]
    assert [body for (who, path), body in walked.items() if "/logs/" in path and b"born" in body]


def get_paths(arena: Arena) -> Iterator[str]:
    """Every GET of the arena's pages and API, for each bot, version, match, seat and step the
    database has: what an author may ask for, whether it is theirs to read or not."""
    yield from (
        "/", "/me", "/matches", "/write-a-bot", "/submit", "/signin", "/organiser",
        "/organiser/audit", "/final", "/final/", "/favicon.ico",
        "/api/me", "/api/leaderboard", "/api/status", "/api/bots", "/api/matches",
        "/api/running", "/api/final", "/api/authors", "/api/audit", "/api/disk",
    )  # fmt: skip
    with arena.database.session() as session:
        bots = session.scalars(select(Bot.name)).all()
        versions = session.scalars(select(Version.id)).all()
        seats = session.execute(select(Match.key, Seat.role).join(Seat)).all()
    for name in bots:
        yield from (f"/bots/{name}", f"/api/bots/{name}", f"/api/matches?bot={name}")
    for version in versions:
        yield from (f"/versions/{version}", f"/api/versions/{version}")
        yield from (f"/api/versions/{version}/steps/{kind}" for kind in StepKind)
    for key in sorted({key for key, _ in seats}):
        yield from (f"/matches/{key}", f"/api/matches/{key}", f"/api/matches/{key}/live")
        yield from (f"/api/matches/{key}/transcript", f"/api/matches/{key}/ggp")
    for key, role in seats:
        yield f"/api/matches/{key}/logs/{role}"


def walk(client: TestClient, headers: dict[str, str], starts: Iterable[str]) -> dict[str, bytes]:
    """Each path of `starts` read, and every path of the site its answers link to, read in
    turn: each answer's body by its path (a gzipped one unpacked)."""
    read: dict[str, bytes] = {}
    waiting = deque(starts)
    while waiting and len(read) < MOST:
        path = waiting.popleft()
        if path in read:
            continue
        answer = client.get(path, headers=headers, follow_redirects=False)
        assert answer.status_code not in (429, 503) and answer.status_code < 500, path
        body = answer.content
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        read[path] = body
        text = body.decode("utf-8", "replace")
        found = LINKS.findall(text) + JSON_LINKS.findall(text)
        if "location" in answer.headers:
            found.append(answer.headers["location"])
        for link in found:
            target = urlsplit(urljoin(f"http://testserver{path}", link.replace("&amp;", "&")))
            if target.netloc == "testserver" and target.path != "/signout":
                waiting.append(target.path + (f"?{target.query}" if target.query else ""))
    assert not waiting, f"more than {MOST} pages"
    return read
