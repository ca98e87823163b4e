"""`referee arena final`: submissions closed, a round robin among each bot's current version
played with the tournament machinery, every transcript signed with the arena's key and
verifying, its report and standings published beside the ladder's (`/final/`, `/api/final`,
the leaderboard), and its refusals in one line."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Coroutine
from typing import Any

import pytest
from sqlalchemy import select, update
from starlette.testclient import TestClient
from typer.testing import CliRunner

from referee.arena.client import Api
from referee.arena.intake.submissions import Refusal, SubmissionRefused, accept, closed
from referee.arena.ladder.final_play import FinalRunner
from referee.arena.store.db import Author, Version, VersionState
from referee.arena.store.home import Arena, add_author
from referee.arena.store.serving_lock import serving
from referee.arena.web.api import create_app
from referee.cli import app
from referee.errors import ArenaError
from referee.records.verify import Outcome, verify_file
from referee.tournaments.cluster import Workers
from tests.support.arena import INTAKE_CONFIG, StandIn, add_version
from tests.support.arena_databases import ArenaMaker

runner = CliRunner()
BOTS = ("amber", "basil", "cedar", "dune")
# The status of the final of BOTS, a round robin of one round, once played.
PLAYED = {
    "state": "played",
    "format": "round-robin",
    "rounds": 1,
    "matches": 12,
    "played": 12,
    "problem": "",
}


@pytest.fixture
def arena(make_arena: ArenaMaker) -> Arena:
    """An arena whose ladder holds BOTS, each at its current version; amber's first version
    retired, and a failed bot that never reached the ladder."""
    made = make_arena(config_text=INTAKE_CONFIG)
    add_author(made, "ada")
    ids = {name: add_version(made, name) for name in BOTS}
    failed = add_version(made, "fallen")
    with made.database.session() as session:
        session.execute(
            update(Version).where(Version.id == failed).values(state=VersionState.FAILED)
        )
        # amber's current version is its second: the first is retired.
        session.execute(
            update(Version).where(Version.id == ids["amber"]).values(state=VersionState.RETIRED)
        )
    second = add_version_of(made, "amber")
    assert second != ids["amber"]
    return made


def add_version_of(arena: Arena, bot: str) -> int:
    """A second version of `bot`, placing: as `add_version` makes one, numbered 2."""
    with arena.database.session() as session:
        first = session.query(Version).join(Version.bot).filter_by(name=bot).one()
        version = Version(
            bot_id=first.bot_id,
            number=2,
            state=VersionState.PLACING,
            run=first.run,
            archive_sha256="1" * 64,
        )
        session.add(version)
        session.flush()
        version_id = version.id
    source = arena.bot_directory(first.id)
    target = arena.bot_directory(version_id)
    target.mkdir(parents=True)
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return version_id


def test_the_final_is_a_round_robin_of_the_current_versions_published_beside_the_ladder(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    played = runner.invoke(app, ["arena", "final", str(arena.directory), "--json"])
    assert played.exit_code == 0, played.output
    standings = json.loads(played.stdout)
    players = {"amber.2", "basil.1", "cedar.1", "dune.1"}
    assert {record["player"] for record in standings["overall"]} == players
    # Each of the six pairs, both seatings, in the one game.
    assert standings["matches"] == 12
    results = arena.directory / "final" / "results"
    transcripts = sorted(results.glob("*.json"))
    assert len(transcripts) == 12
    for path in transcripts:
        verdict = verify_file(path, arena.key.public)
        assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert json.loads((arena.directory / "final" / "standings.json").read_text()) == standings
    # A served arena started later shows it played, on the organiser's page.
    seen = FinalRunner(arena, None, lambda: None, lambda _play: None).status()
    assert seen == PLAYED
    # Submissions are closed.
    author = author_of_name(arena, "ada")
    with pytest.raises(SubmissionRefused) as refused:
        accept(arena, author, "late", b"")
    assert refused.value.why is Refusal.CLOSED
    assert "submissions are closed" in str(refused.value)
    # Published: the standings in the API, the report's pages, a word on the leaderboard.
    with TestClient(create_app(arena, StandIn().hooks())) as client:
        shown = client.get("/api/final").json()
        assert shown["closed"] is True and shown["standings"] == standings
        assert shown["report"] == "/final/index.html"
        index = client.get("/final/")
        assert index.status_code == 200 and "amber.2" in index.text
        # In the arena's layout: its header, with the way back and the sign-in.
        assert '<header class="top"><a class="brand" href="/">' in index.text
        assert '<script src="/assets/report.js"></script>' in index.text
        assert "<script>\n" not in index.text  # nothing inline: the arena's policy refuses it
        page = next(p for p in (arena.directory / "final" / "report" / "matches").iterdir())
        assert client.get(f"/final/matches/{page.name}").status_code == 200
        for outside in ("/final/../arena.yaml", "/final/%2e%2e/arena.yaml", "/final/x.json"):
            assert client.get(outside).status_code == 404, outside
        assert 'href="/final/"' in client.get("/").text
        # An author's `arena status` says the season is over, and where the final is.
        token = add_author(arena, "eve")

        def through(api: Api, method: str, path: str, body: bytes | None = None) -> Any:
            answer = client.request(
                method, path, content=body, headers={"Authorization": f"Bearer {api.token}"}
            )
            assert answer.status_code == 200, answer.text
            return answer.json()

        monkeypatch.setattr(Api, "request", through)
        said = runner.invoke(app, ["arena", "status", "http://arena.test", "--token", token])
        assert said.exit_code == 0, said.output
        assert said.stdout.startswith(
            "submissions are closed: the season is over\n\n"
            "the final's report: http://arena.test/final/index.html\n\neve's bots:\n"
        )


def author_of_name(arena: Arena, name: str) -> Author:
    with arena.database.session() as session:
        found = session.scalars(select(Author).where(Author.name == name)).one()
        session.expunge(found)
        return found


def test_before_any_final_its_page_says_none_has_been_played(arena: Arena) -> None:
    with TestClient(create_app(arena, StandIn().hooks())) as client:
        for path in ("/final/", "/final/index.html", "/final/matches/x.html"):
            shown = client.get(path)
            assert shown.status_code == 404, path
            assert "no final has been played yet: once the organiser has played it" in (shown.text)
            assert "no such page of the final" not in shown.text


def test_a_final_is_refused_in_one_line_while_served_or_with_fewer_than_two_bots(
    arena: Arena, make_arena: ArenaMaker
) -> None:
    with serving(arena):
        refused = runner.invoke(app, ["arena", "final", str(arena.directory)])
    assert refused.exit_code == 2, refused.output
    (line,) = refused.stderr.splitlines()
    assert re.fullmatch(
        r"referee: error: \S+: another `referee arena serve` is serving this arena,"
        r" or `referee arena final` playing its final"
        r" \([^)]+\): stop it, then run the final",
        line,
    ), line
    lonely = make_arena(config_text=INTAKE_CONFIG)
    add_author(lonely, "ada")
    add_version(lonely, "alone")
    refused = runner.invoke(app, ["arena", "final", str(lonely.directory)])
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip() == (
        "referee: error: a final needs two bots on the ladder; this arena has 1"
    )
    # Refused, it changed nothing: submissions are still open, here and in the served arena.
    for refused_arena in (arena, lonely):
        with refused_arena.database.session() as session:
            assert not closed(session)


def the_served_final(arena: Arena, workers: Workers | None) -> tuple[list[dict[str, Any]], int]:
    """The final played by a FinalRunner as the served arena runs it: the statuses it went
    through, and how many times it paused the ladder. A second final asked for while the
    first is being played is refused."""
    paused: list[bool] = []

    async def played() -> list[dict[str, Any]]:
        # Held until the second ask: the first is being played then, however fast it is.
        held: list[Coroutine[Any, Any, None]] = []
        finals = FinalRunner(arena, workers, lambda: paused.append(True), held.append)
        seen = [finals.status(), await asyncio.to_thread(finals.start, "round-robin", 1)]
        with pytest.raises(ArenaError, match=r"^the final is being played: wait for its end$"):
            await asyncio.to_thread(finals.start, "round-robin", 1)
        (play,) = held
        await play
        return [*seen, finals.status()]

    return asyncio.run(played()), len(paused)


@pytest.mark.parametrize("venue", ["this process", "a local worker"])
def test_the_served_arena_plays_the_final_at_the_organisers_word(arena: Arena, venue: str) -> None:
    workers = None if venue == "this process" else Workers(count=1)
    statuses, pauses = the_served_final(arena, workers)
    assert [status["state"] for status in statuses] == ["none", "playing", "played"]
    assert statuses[-1] == PLAYED
    assert pauses == 1
    standings = json.loads((arena.directory / "final" / "standings.json").read_text())
    assert {r["player"] for r in standings["overall"]} == {
        "amber.2",
        "basil.1",
        "cedar.1",
        "dune.1",
    }
    for path in sorted((arena.directory / "final" / "results").glob("*.json")):
        verdict = verify_file(path, arena.key.public)
        assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    with arena.database.session() as session:
        assert closed(session)


def test_a_final_played_again_leaves_no_page_of_the_earlier_ones_matches(arena: Arena) -> None:
    for rounds in ("2", "1"):
        played = runner.invoke(app, ["arena", "final", str(arena.directory), "--rounds", rounds])
        assert played.exit_code == 0, played.output
    results = arena.directory / "final" / "results"
    pages = arena.directory / "final" / "report" / "matches"
    assert sorted(p.stem for p in pages.glob("*.html")) == sorted(
        p.stem for p in results.glob("*.json")
    )
    assert len(list(results.glob("*.json"))) == 12
    assert not list((arena.directory / "final").glob("report.*"))


def test_a_final_its_config_refuses_is_refused_in_one_line_and_changes_nothing(
    make_arena: ArenaMaker,
) -> None:
    two_games = make_arena(config_text=INTAKE_CONFIG.replace("[ticblock]", "[ticblock, quad]"))
    add_author(two_games, "ada")
    for name in ("amber", "basil"):
        add_version(two_games, name)
    finals = FinalRunner(two_games, None, lambda: None, lambda _play: None)
    with pytest.raises(ArenaError) as refused:
        finals.start("swiss", 3)
    assert str(refused.value).startswith("this final cannot be played: ")
    assert str(refused.value).endswith("games: a Swiss plays one game; this config has 2")
    assert finals.status()["state"] == "none"
    with two_games.database.session() as session:
        assert not closed(session)
