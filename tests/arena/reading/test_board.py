"""The arena's leaderboard and matches as its users read them, through the JSON API on a
database built by hand: ratings on the organiser's scale, wins, draws, losses, score and last
match, the day's change only once there is a day, matches filtered and paged by a cursor
that new matches do not disturb, and each match's records to download."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select

from referee.arena.ladder import tallies
from referee.arena.reading import views
from referee.arena.store.config import parse_arena_config
from referee.arena.store.db import Bot, Match, MatchState, RatingPoint, Seat, Version, VersionState
from referee.errors import ConfigError
from referee.records.ggp import EXTRA
from referee.records.verify import Outcome, verify_file
from referee.report.site import match_viewer
from tests.support.arena import API_CONFIG, Site, make_site, played_match, seed
from tests.support.arena_databases import ArenaMaker

NOW = dt.datetime.now(dt.UTC)
HOUR = dt.timedelta(hours=1)


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def finished(
    site: Site,
    key: str,
    seats: list[tuple[int, float | None]],
    at: dt.datetime | None,
    game: str = "ticblock",
    state: str = MatchState.DONE,
) -> None:
    """A match of two seats (version, points), finished at `at`."""
    with site.arena.database.session() as session:
        match = Match(key=key, game=game, seed=1, state=state, finished_at=at)
        match.seats = [
            Seat(index=index, role=role, version_id=version, points=points)
            for index, (role, (version, points)) in enumerate(
                zip(("xcplayer", "obplayer"), seats, strict=True)
            )
        ]
        session.add(match)
        if state == MatchState.DONE:
            # Counted into its versions' results as the ladder records a match.
            session.flush()
            tallies.tally(match)


def version_of(site: Site, bot: str, number: int = 1) -> int:
    with site.arena.database.session() as session:
        found = session.scalar(
            select(Version.id).join(Bot).where(Bot.name == bot, Version.number == number)
        )
    assert found is not None
    return found


def played(site: Site) -> dict[str, int]:
    """seed's bots and matches, and more: ace (its versions 1 and 2), bee and cub, each
    result of a finished match, one without a result, one running, one of another game, one
    of ace against itself."""
    ids = seed(site)  # arena-000001, at NOW: ace 2 lost to bee
    ace1, ace2, bee, cub = ids["failed"], ids["ace"], ids["bee"], version_of(site, "cub")
    finished(site, "m-2", [(bee, 0.5), (ace2, 0.5)], NOW - 6 * HOUR)  # a draw
    finished(site, "m-3", [(ace1, 1.0), (bee, 0.0)], NOW - 5 * HOUR)  # ace's first version won
    finished(site, "m-4", [(ace2, None), (bee, None)], NOW - 4 * HOUR)  # no result
    finished(site, "m-5", [(cub, 0.0), (ace2, 1.0)], NOW - 3 * HOUR)
    finished(site, "m-6", [(ace2, None), (cub, None)], None, state=MatchState.RUNNING)
    finished(site, "m-7", [(bee, 1.0), (cub, 0.0)], NOW - 2 * HOUR)
    finished(site, "m-8", [(ace2, 0.0), (bee, 1.0)], NOW - 1 * HOUR, game="othello")
    # A bot against itself: no other bot's seat to win or lose against.
    finished(site, "m-9", [(ace1, 1.0), (ace2, 0.0)], NOW - 7 * HOUR)
    return {"ace1": ace1, "ace2": ace2, "bee": bee, "cub": cub}


def keys(site: Site, query: str) -> list[str]:
    answer = site.get(f"/api/matches?{query}", "bob")
    assert answer.status_code == 200, answer.text
    return [match["key"] for match in answer.json()["matches"]]


def test_the_leaderboard_counts_wins_draws_losses_score_and_the_last_match(site: Site) -> None:
    played(site)
    board = {entry["bot"]: entry for entry in site.get("/api/leaderboard").json()["leaderboard"]}
    results = {
        bot: (entry["wins"], entry["draws"], entry["losses"], entry["score"])
        for bot, entry in board.items()
    }
    # ace 2: won m-5, drew m-2, lost arena-000001 and m-8; m-3 was its first version's, m-9
    # against itself.
    # bee: won arena-000001, m-7 and m-8, drew m-2, lost m-3; m-4 had no result.
    assert results == {
        "ace": (1, 1, 2, 1.5 / 4),
        "bee": (3, 1, 1, 3.5 / 5),
        "cub": (0, 0, 2, 0.0),
    }
    last = {bot: entry["last_match"] for bot, entry in board.items()}
    assert {bot: shown["key"] for bot, shown in last.items()} == {
        "ace": "arena-000001",
        "bee": "arena-000001",
        "cub": "m-7",
    }
    assert dt.datetime.fromisoformat(last["cub"]["finished_at"]) == (NOW - 2 * HOUR).replace(
        microsecond=0
    )


def test_a_version_without_a_match_has_no_results_and_no_last_match(site: Site) -> None:
    seed(site)
    board = {entry["bot"]: entry for entry in site.get("/api/leaderboard").json()["leaderboard"]}
    cub = board["cub"]
    assert (cub["wins"], cub["draws"], cub["losses"], cub["score"], cub["last_match"]) == (
        0,
        0,
        0,
        None,
        None,
    )


def test_the_leaderboards_results_take_as_many_queries_for_many_versions_as_for_few(
    site: Site,
) -> None:
    ids = played(site)
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    engine = site.arena.database.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        views.leaderboard(site.arena)
        few = len(statements)
        with site.arena.database.session() as session:
            author = session.scalar(select(Bot.author_id).where(Bot.name == "cub"))
            many = [
                Version(
                    bot=Bot(author_id=author, name=f"many-{n}"),
                    number=1,
                    state=VersionState.RATED,
                    archive_sha256="4" * 64,
                    rating=float(n),
                    margin=10.0,
                )
                for n in range(20)
            ]
            session.add_all(many)
        for n, version in enumerate(many):
            finished(site, f"many-{n}", [(version.id, 1.0), (ids["cub"], 0.0)], NOW)
        statements.clear()
        board = views.leaderboard(site.arena)["leaderboard"]
        assert len(statements) == few
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert {(e["bot"], e["wins"]) for e in board if e["bot"].startswith("many-")} == {
        (f"many-{n}", 1) for n in range(20)
    }


def test_the_days_change_waits_for_a_rating_point_a_day_old(site: Site) -> None:
    ids = seed(site)
    now = dt.datetime.now(dt.UTC)
    with site.arena.database.session() as session:
        session.add_all(
            [
                # ace (rated 10): its first point minutes old.
                RatingPoint(
                    version_id=ids["ace"], at=now - dt.timedelta(minutes=5), rating=40.0, margin=9.0
                ),
                # bee (rated 50): a point 25 hours old, and a newer one.
                RatingPoint(version_id=ids["bee"], at=now - 25 * HOUR, rating=20.0, margin=9.0),
                RatingPoint(version_id=ids["bee"], at=now - 1 * HOUR, rating=45.0, margin=9.0),
            ]
        )
    changes = {
        e["bot"]: e["change_day"] for e in site.get("/api/leaderboard").json()["leaderboard"]
    }
    assert changes == {"ace": None, "bee": 30.0, "cub": None}


@pytest.fixture
def centred(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena, arena_keys="  rating_centre: 2000\n")


def test_every_rating_the_api_gives_is_on_the_organisers_scale(centred: Site) -> None:
    site = centred
    ids = seed(site)  # ace 2 is rated 10 ± 30 by the ladder, bee 50 ± 20
    with site.arena.database.session() as session:
        session.add(RatingPoint(version_id=ids["ace"], at=NOW - 30 * HOUR, rating=4.0, margin=40.0))
    board = {e["bot"]: e for e in site.get("/api/leaderboard").json()["leaderboard"]}
    ace = board["ace"]
    assert (ace["rating"], ace["margin"], ace["interval"]) == (2010.0, 30.0, [1980.0, 2040.0])
    # A change is a difference: the same on any scale.
    assert ace["change_day"] == 6.0
    assert board["cub"]["rating"] is None and board["cub"]["interval"] is None
    bot = site.get("/api/bots/ace", "bob").json()
    assert [v["rating"] for v in bot["versions"]] == [2010.0, None]
    assert [(p["rating"], p["margin"]) for p in bot["history"]] == [(2004.0, 40.0)]
    assert site.get(f"/api/versions/{ids['bee']}", "bob").json()["interval"] == [2030.0, 2070.0]
    listed = {b["name"]: b for b in site.get("/api/bots", "bob").json()["bots"]}
    assert (listed["ace"]["latest"]["rating"], listed["ace"]["ladder"]["rating"]) == (
        2010.0,
        2010.0,
    )
    # The database keeps the ladder's fit, centred at 0.
    with site.arena.database.session() as session:
        assert session.get_one(Version, ids["ace"]).rating == 10.0


def test_the_rating_centre_is_checked_as_the_config_is_read(tmp_path: Path) -> None:
    text = API_CONFIG.format(public="true") + "  rating_centre: middle\n"
    with pytest.raises(ConfigError, match="rating_centre"):
        parse_arena_config(tmp_path / "arena.yaml", text)
    centred = parse_arena_config(tmp_path / "arena.yaml", API_CONFIG.format(public="true"))
    assert centred.rating_centre == 1500


def test_matches_are_filtered_by_bot_opponent_game_and_the_bots_result(site: Site) -> None:
    played(site)
    # Newest first; the running match is in none.
    assert keys(site, "bot=ace") == ["arena-000001", "m-8", "m-5", "m-4", "m-3", "m-2", "m-9"]
    # A match at a time: the one of ace against itself (a seat of each version) once, last.
    pages, cursor = [], ""
    while cursor is not None:
        answer = site.get(f"/api/matches?bot=ace&limit=1{cursor}", "bob").json()
        pages.append([match["key"] for match in answer["matches"]])
        cursor = None if answer["next"] is None else f"&cursor={answer['next']}"
    assert pages == [["arena-000001"], ["m-8"], ["m-5"], ["m-4"], ["m-3"], ["m-2"], ["m-9"]]
    assert keys(site, "bot=ace&opponent=cub") == ["m-5"]
    assert keys(site, "opponent=cub") == ["m-7", "m-5"]
    assert keys(site, "bot=ace&result=win") == ["m-5", "m-3"]
    assert keys(site, "bot=ace&result=draw") == ["m-2"]
    assert keys(site, "bot=ace&result=loss") == ["arena-000001", "m-8"]
    assert keys(site, "bot=bee&result=loss") == ["m-3"]
    assert keys(site, "game=othello") == ["m-8"]
    assert keys(site, "bot=ace&game=ticblock&result=loss") == ["arena-000001"]
    assert keys(site, "game=chess") == []
    first = site.get("/api/matches?bot=cub&result=loss", "alice").json()["matches"][0]
    assert [(seat["bot"], seat["points"]) for seat in first["seats"]] == [
        ("bee", 1.0),
        ("cub", 0.0),
    ]


@pytest.mark.parametrize("of", ["bot=ace&", "game=ticblock&", ""])
def test_the_cursor_pages_without_a_gap_or_a_repeat_while_matches_finish(
    site: Site, of: str
) -> None:
    """Each page from where the last ended: the whole list, a game's (read from the finished
    matches' index) and a bot's (read from its seats) alike."""
    ids = seed(site)
    ace, bee = ids["ace"], ids["bee"]
    for n in range(30):
        # Five at each moment: the cursor orders those by id.
        finished(site, f"old-{n:02}", [(ace, 1.0), (bee, 0.0)], NOW - dt.timedelta(minutes=n // 5))
    expected = keys(site, f"{of}limit=200")
    assert len(expected) == 31 and len(set(expected)) == 31
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = f"{of}limit=7" + ("" if cursor is None else f"&cursor={cursor}")
        answer = site.get(f"/api/matches?{query}", "bob").json()
        seen += [match["key"] for match in answer["matches"]]
        cursor = answer["next"]
        pages += 1
        # A new match finishes between each two pages: the newest, on no page of these.
        finished(site, f"new-{pages}", [(ace, 0.0), (bee, 1.0)], dt.datetime.now(dt.UTC))
        if cursor is None:
            break
    assert seen == expected
    assert pages == 5
    assert keys(site, f"{of}limit=3")[0].startswith("new-")


def test_a_bad_filter_is_400_with_one_line_and_an_unknown_bot_404(site: Site) -> None:
    played(site)

    def cursor(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    bad = {
        "colour=red": "colour",
        "bot=ace&bot=bee": "bot",
        "bot=": "bot",
        "result=win": "bot",
        "bot=ace&result=won": "result",
        "limit=0": "limit",
        "limit=x": "limit",
        f"game={'g' * 300}": "game",
        "cursor=%25%25%25": "cursor",
        f"cursor={cursor('yesterday|5')}": "cursor",
        f"cursor={cursor('2026-01-01T00:00:00|5')}": "cursor",
        f"cursor={cursor('2026-01-01T00:00:00+00:00|-5')}": "cursor",
        f"cursor={cursor('2026-01-01T00:00:00+00:00|99999999999')}": "cursor",
        f"cursor={cursor('2026-01-01T00:00:00+00:00')}": "cursor",
    }
    for query, named in bad.items():
        answer = site.get(f"/api/matches?{query}", "bob")
        error = answer.json()["error"]
        assert answer.status_code == 400, query
        assert named in error and "\n" not in error, (query, error)
    for query in ("bot=nobody", "bot=ace&opponent=nobody"):
        answer = site.get(f"/api/matches?{query}", "bob")
        assert answer.status_code == 404 and "nobody" in answer.json()["error"]
    assert site.get("/api/matches?bot=ace").status_code == 401


def test_the_transcript_downloads_as_written_and_verifies(site: Site, tmp_path: Path) -> None:
    ids = seed(site)
    path = played_match(site, "arena-dl", (ids["ace"], ids["bee"]))
    answer = site.get("/api/matches/arena-dl/transcript", "bob")
    assert answer.status_code == 200
    assert answer.headers["content-disposition"] == 'attachment; filename="arena-dl.json"'
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.content == path.read_bytes()
    downloaded = tmp_path / "downloaded.json"
    downloaded.write_bytes(answer.content)
    assert verify_file(downloaded, site.arena.key.public).outcome is Outcome.VERIFIED


def test_the_ggp_export_downloads_with_the_signed_transcript_inside(site: Site) -> None:
    ids = seed(site)
    path = played_match(site, "arena-dl", (ids["ace"], ids["bee"]))
    answer = site.get("/api/matches/arena-dl/ggp", "alice")
    assert answer.status_code == 200
    assert answer.headers["content-disposition"] == 'attachment; filename="arena-dl.ggp.json"'
    exported = answer.json()
    assert exported["matchId"] == "arena-dl"
    assert exported["playerNamesFromHost"] == ["ace.2", "bee.1"]
    assert exported[EXTRA] == json.loads(path.read_text(encoding="utf-8"))


def test_downloads_are_refused_without_a_token_missing_or_unverified(site: Site) -> None:
    ids = seed(site)  # arena-000001's transcript is a stand-in, signed by no one
    played_match(site, "arena-dl", (ids["ace"], ids["bee"]))
    finished(site, "no-transcript", [(ids["ace"], 1.0), (ids["bee"], 0.0)], NOW)
    for kind in ("transcript", "ggp"):
        assert site.get(f"/api/matches/arena-dl/{kind}").status_code == 401
        assert site.get(f"/api/matches/nowhere/{kind}", "bob").status_code == 404
        missing = site.get(f"/api/matches/no-transcript/{kind}", "bob")
        assert missing.status_code == 404 and "no transcript" in missing.json()["error"]
    # The file as written, whatever it holds; no export of moves that do not verify.
    assert site.get("/api/matches/arena-000001/transcript", "bob").json() == {
        "match_id": "arena-000001"
    }
    refused = site.get("/api/matches/arena-000001/ggp", "bob")
    assert refused.status_code == 409 and "does not verify" in refused.json()["error"]


def test_the_match_page_links_each_seat_to_its_bot_and_offers_the_downloads(site: Site) -> None:
    ids = seed(site)
    played_match(site, "arena-dl", (ids["ace"], ids["bee"]))
    page = site.get("/matches/arena-dl", "bob")
    assert page.status_code == 200
    for player, bot in (("ace.2", "ace"), ("bee.1", "bee")):
        assert f'<a class="player" href="/bots/{bot}">{player}</a>' in page.text
    assert 'href="/api/matches/arena-dl/transcript" download' in page.text
    assert 'href="/api/matches/arena-dl/ggp" download' in page.text


def test_the_viewer_links_a_player_only_where_told_and_escapes_the_link(
    site: Site,
) -> None:
    ids = seed(site)
    path = played_match(site, "arena-dl", (ids["ace"], ids["bee"]))
    replayed = verify_file(path, site.arena.key.public).replayed
    assert replayed is not None and replayed.game is not None
    shown = (replayed.transcript, replayed.game, replayed.frames)
    plain = match_viewer(*shown)
    assert "<td>ace.2</td>" in plain and 'class="player"' not in plain
    links = {"ace.2": '/bots/"><script>'}
    linked = match_viewer(*shown, links.get)
    assert '<a class="player" href="/bots/&quot;&gt;&lt;script&gt;">ace.2</a>' in linked
    assert "<td>bee.1</td>" in linked and "<script>" not in linked
