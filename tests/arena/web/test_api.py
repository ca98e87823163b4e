"""The arena's JSON API on a SQLite arena: who may read what, the submission caps, the
leaderboard, the organiser's controls."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.arena.reading import views
from referee.arena.replays import facts as match_facts
from referee.arena.replays import pool as replays
from referee.arena.replays import work as replay_work
from referee.arena.store import errors
from referee.arena.store.db import (
    Bot,
    Match,
    MatchState,
    RatingPoint,
    Seat,
    Version,
    VersionState,
)
from referee.records.signing import results_key
from referee.records.transcript import read_transcript, write_transcript
from referee.records.verify import Outcome, verify_file
from tests.support.arena import Site, add_match, make_site, played_match, seed, wait_for
from tests.support.arena_databases import ArenaMaker
from tests.support.replay_workers import hold, let_go, observed, replays_of

# What only the author of alice's bot (and the organiser) may read.
SECRETS = ("SECRET-REASON", "SECRET-ADVICE", "SECRET-VERDICT", "SECRET-BUILD-LOG", "SECRET-LOG")


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def reads(site: Site) -> list[str]:
    ids = seed(site)
    return [
        "/api/me",
        "/api/status",
        "/api/bots",
        "/api/bots/ace",
        f"/api/versions/{ids['failed']}",
        f"/api/versions/{ids['failed']}/steps/build",
        "/api/matches",
        "/api/matches/arena-000001",
        "/api/matches/arena-000001/logs/xcplayer",
    ]


def test_every_route_refuses_a_missing_bad_or_overlong_token(site: Site) -> None:
    bad = {
        "none": {},
        "unknown": {"Authorization": "Bearer not-a-token-of-anyone"},
        "scheme": {"Authorization": f"Basic {site.tokens['alice']}"},
        "overlong": {"Authorization": "Bearer " + "x" * 100_000},
    }
    posts = ["/api/bots/ace/versions", "/api/ladder/pause", "/api/bots/ace/suspend"]
    for path in reads(site):
        for case, headers in bad.items():
            answer = site.client.get(path, headers=headers)
            assert answer.status_code == 401, (path, case)
            assert answer.json().keys() == {"error"}
            assert not any(secret in answer.text for secret in SECRETS)
    for path in posts:
        for case, headers in bad.items():
            answer = site.client.post(path, headers=headers, content=b"x")
            assert answer.status_code == 401, (path, case)
    assert site.ladder.submitted == [] and site.ladder.paused == []


def test_another_authors_private_data_is_refused_and_never_shown(site: Site) -> None:
    ids = seed(site)
    failed = f"/api/versions/{ids['failed']}"
    for path in [failed, "/api/bots/ace", "/api/bots"]:
        answer = site.get(path, "bob")
        assert answer.status_code == 200, path
        assert not any(secret in answer.text for secret in (*SECRETS, "SECRET-RUN")), path
    assert site.get(failed, "bob").json()["state"] == "failed"
    for path in [f"{failed}/steps/build", "/api/matches/arena-000001/logs/xcplayer"]:
        answer = site.get(path, "bob")
        assert answer.status_code == 403, path
        assert not any(secret in answer.text for secret in SECRETS)
    # bob reads his own seat's log.
    assert "bee says hello" in site.get("/api/matches/arena-000001/logs/obplayer", "bob").text


@pytest.mark.parametrize("who", ["alice", "organiser"])
def test_the_author_and_the_organiser_read_everything(site: Site, who: str) -> None:
    ids = seed(site)
    version = site.get(f"/api/versions/{ids['failed']}", who).json()
    assert version["reason"] == "SECRET-REASON"
    assert version["advice"] == ["SECRET-ADVICE", "flush after each line"]
    assert version["steps"][0]["verdict"] == "SECRET-VERDICT"
    # Whether each step has a log to offer, for those who may read it.
    assert version["steps"][0]["has_log"] is True
    assert "has_log" not in site.get(f"/api/versions/{ids['failed']}", "bob").json()["steps"][0]
    assert site.get(f"/api/versions/{ids['failed']}/steps/build", who).json()["log"] == (
        "SECRET-BUILD-LOG"
    )
    log = site.get("/api/matches/arena-000001/logs/xcplayer", who).json()
    assert log["log"] == "ace says SECRET-LOG\n" and not log["truncated"]
    bot = site.get("/api/bots/ace", who).json()
    assert [v["number"] for v in bot["versions"]] == [2, 1]
    assert bot["versions"][1]["reason"] == "SECRET-REASON"


def test_unknown_things_are_404_in_json(site: Site) -> None:
    seed(site)
    for path in [
        "/api/bots/nobody",
        "/api/versions/999",
        f"/api/versions/{10**30}",
        "/api/versions/1/steps/validate",
        "/api/matches/arena-999",
        "/api/matches/arena-000001/logs/nobody",
        "/api/matches?bot=nobody",
        "/api/nothing",
    ]:
        answer = site.get(path, "organiser")
        assert answer.status_code == 404, path
        assert answer.json().keys() == {"error"}


def test_me_names_the_author_and_their_bots(site: Site) -> None:
    seed(site)
    me = site.get("/api/me", "bob").json()
    assert {key: me[key] for key in ("name", "organiser", "bots")} == {
        "name": "bob",
        "organiser": False,
        "bots": ["bee", "cub"],
    }
    # And each with its versions, as their author reads them (the home page's).
    assert [(bot["name"], len(bot["versions"])) for bot in me["my_bots"]] == [
        ("bee", 1),
        ("cub", 1),
    ]
    assert site.get("/api/me", "organiser").json()["organiser"] is True


def test_leaderboard_best_first_with_intervals_and_unrated_last(site: Site) -> None:
    seed(site)
    board = site.get("/api/leaderboard").json()["leaderboard"]
    assert [(e["rank"], e["bot"], e["version"], e["author"]) for e in board] == [
        (1, "bee", 1, "bob"),
        (2, "ace", 2, "alice"),
        (None, "cub", 1, "bob"),
    ]
    # ace is rated 10 ± 30 by the ladder: shown centred at 1500 (the default).
    assert board[1]["interval"] == [1480.0, 1540.0]
    assert (board[1]["matches"], board[1]["faults"], board[1]["state"]) == (4, 1, "rated")


def test_a_private_leaderboard_needs_a_token(make_arena: ArenaMaker) -> None:
    for site in make_site(make_arena, public=False):
        assert site.get("/api/leaderboard").status_code == 401
        assert site.get("/api/leaderboard", "bob").json() == {"leaderboard": []}


def test_matches_are_filtered_by_bot_and_their_limit_capped(site: Site) -> None:
    seed(site)
    first = site.get("/api/matches?bot=ace", "bob").json()["matches"]
    assert [m["key"] for m in first] == ["arena-000001"]
    assert [(s["bot"], s["points"]) for s in first[0]["seats"]] == [("ace", 0.0), ("bee", 100.0)]
    assert site.get("/api/matches?bot=cub", "bob").json() == {"matches": [], "next": None}
    full = site.get("/api/matches/arena-000001", "bob").json()
    assert full["transcript"] == {"match_id": "arena-000001"}
    with site.arena.database.session() as session:
        version = session.query(Version).filter_by(number=1, state="placing").one()
        for number in range(2, 260):
            match = Match(
                key=f"arena-{number:06}",
                game="ticblock",
                seed=number,
                state="done",
                finished_at=dt.datetime.now(dt.UTC),
            )
            match.seats = [Seat(index=0, role="xcplayer", version_id=version.id)]
            session.add(match)
    assert len(site.get("/api/matches?limit=100000", "bob").json()["matches"]) == 200
    assert len(site.get("/api/matches?limit=3", "bob").json()["matches"]) == 3
    for bad in ["0", "-1", "x", "9" * 50]:
        answer = site.get(f"/api/matches?limit={bad}", "bob")
        assert answer.status_code == 400 and "limit" in answer.json()["error"]


def test_a_submission_is_stored_queued_and_told_to_the_intake(site: Site) -> None:
    answer = site.post("/api/bots/newbot/versions", "alice", content=b"archive bytes")
    assert answer.status_code == 202
    shown = answer.json()
    assert (shown["number"], shown["state"]) == (1, "queued")
    assert site.ladder.submitted == [shown["id"]]
    assert site.arena.archive(shown["id"]).read_bytes() == b"archive bytes"
    assert site.get(shown["url"], "alice").json()["state"] == "queued"
    again = site.post("/api/bots/newbot/versions", "alice", content=b"more").json()
    assert again["number"] == 2
    assert site.get("/api/me", "alice").json()["bots"] == ["newbot"]


def test_another_authors_bot_name_is_refused(site: Site) -> None:
    seed(site)
    answer = site.post("/api/bots/ace/versions", "bob", content=b"mine now")
    assert answer.status_code == 403 and "another author's" in answer.json()["error"]
    assert site.ladder.submitted == []
    bad = site.post("/api/bots/..%2Fetc/versions", "bob", content=b"x")
    assert bad.status_code in (400, 404) and bad.json().keys() == {"error"}
    assert site.post("/api/bots/-x/versions", "bob", content=b"x").status_code == 400


def test_an_archive_past_the_cap_is_413_declared_or_streamed(site: Site) -> None:
    big = b"x" * (2 * 1024 * 1024)
    assert site.post("/api/bots/big/versions", "alice", content=big).status_code == 413

    def chunks() -> Iterator[bytes]:
        # No length declared: counted as it comes.
        for _ in range(64):
            yield b"x" * 32768

    answer = site.post("/api/bots/big/versions", "alice", content=chunks())
    assert answer.status_code == 413 and "larger than" in answer.json()["error"]
    assert site.post("/api/bots/big/versions", "alice", content=b"").status_code == 400
    assert site.ladder.submitted == []
    assert not list((site.arena.directory / "submissions").iterdir())


def test_submissions_past_the_hourly_cap_are_429_with_when_they_free(site: Site) -> None:
    for number in range(3):
        assert site.post(f"/api/bots/b{number}/versions", "alice", content=b"a").status_code == 202
    answer = site.post("/api/bots/b0/versions", "alice", content=b"a")
    assert answer.status_code == 429
    assert 3000 < int(answer.headers["Retry-After"]) <= 3600
    assert "3 submissions in the last hour" in answer.json()["error"]
    # Another author's hour is their own.
    assert site.post("/api/bots/bobs/versions", "bob", content=b"a").status_code == 202


def test_the_organiser_pauses_resumes_suspends_and_reinstates(site: Site) -> None:
    seed(site)
    for path in ["/api/ladder/pause", "/api/ladder/resume", "/api/bots/ace/suspend"]:
        assert site.post(path, "alice").status_code == 403
    assert site.ladder.paused == []
    assert site.post("/api/ladder/pause", "organiser").json()["ladder"]["paused"] is True
    assert site.post("/api/ladder/resume", "organiser").json()["ladder"]["paused"] is False
    assert site.ladder.paused == [True, False]
    assert site.get("/api/status", "bob").json()["intake"] == {
        "queued": 0,
        "building": 0,
        "validating": 0,
    }

    def on_board() -> dict[str, str]:
        board = site.get("/api/leaderboard", None).json()["leaderboard"]
        return {row["bot"]: row["state"] for row in board}

    assert on_board()["ace"] == "rated"
    answer = site.post("/api/bots/ace/suspend", "organiser", json={"reason": "floods\nthe log"})
    assert answer.json() == {"bot": "ace", "version": 2, "state": "suspended"}
    # At once: the leaderboard as rendered before is not served after the organiser's change.
    assert on_board()["ace"] == "suspended"
    shown = site.get("/api/bots/ace", "alice").json()["versions"][0]
    assert shown["reason"] == "suspended by the organiser: floods the log"
    assert site.post("/api/bots/ace/suspend", "organiser").status_code == 409
    assert site.post("/api/bots/ace/reinstate", "organiser").json()["state"] == "rated"
    assert on_board()["ace"] == "rated"
    assert site.post("/api/bots/cub/reinstate", "organiser").status_code == 409
    assert site.post("/api/bots/nobody/suspend", "organiser").status_code == 404
    assert site.ladder.changed == 2


def test_the_organiser_acts_on_the_version_on_the_ladder_while_a_newer_one_builds(
    site: Site,
) -> None:
    seed(site)
    with site.arena.database.session() as session:
        ace = session.query(Bot).filter_by(name="ace").one()
        session.add(
            Version(bot=ace, number=3, state=VersionState.BUILDING, archive_sha256="3" * 64)
        )
    listed = {bot["name"]: bot for bot in site.get("/api/bots", "organiser").json()["bots"]}
    assert (listed["ace"]["latest"]["number"], listed["ace"]["ladder"]["number"]) == (3, 2)
    answer = site.post("/api/bots/ace/suspend", "organiser", json={"reason": "hangs"})
    assert answer.json() == {"bot": "ace", "version": 2, "state": "suspended"}
    listed = {bot["name"]: bot for bot in site.get("/api/bots", "organiser").json()["bots"]}
    assert listed["ace"]["ladder"]["state"] == "suspended"
    assert site.post("/api/bots/ace/reinstate", "organiser").json()["version"] == 2
    with site.arena.database.session() as session:
        bee = session.query(Bot).filter_by(name="bee").one()
        session.add(Version(bot=bee, number=2, state=VersionState.PLACING, archive_sha256="4" * 64))
        session.query(Version).filter_by(bot_id=bee.id, number=1).update(
            {"state": VersionState.SUSPENDED}
        )
    # bee's version 1 is suspended but version 2 plays: reinstating 1 would put two on it.
    refused = site.post("/api/bots/bee/reinstate", "organiser")
    assert refused.status_code == 409 and "version 2 is on the ladder" in refused.json()["error"]


def add_points(site: Site, version_id: int, points: list[tuple[dt.timedelta, float]]) -> None:
    """Rating points of a version, each so long ago."""
    now = dt.datetime.now(dt.UTC)
    with site.arena.database.session() as session:
        session.add_all(
            RatingPoint(version_id=version_id, at=now - ago, rating=rating, margin=25.0)
            for ago, rating in points
        )


def test_the_leaderboard_gives_each_versions_change_over_a_day(site: Site) -> None:
    ids = seed(site)
    hours = dt.timedelta(hours=1)
    # ace (rated 10): its last point at or before a day ago says 4.
    add_points(site, ids["ace"], [(30 * hours, 2.0), (25 * hours, 4.0), (2 * hours, 9.0)])
    # bee (rated 50): no point a day old, so no change over a day yet.
    add_points(site, ids["bee"], [(3 * hours, 45.0), (1 * hours, 48.0)])
    board = site.get("/api/leaderboard").json()["leaderboard"]
    changes = {entry["bot"]: entry["change_day"] for entry in board}
    assert changes == {"ace": 6.0, "bee": None, "cub": None}


def test_a_bots_history_is_its_newest_points_oldest_first(site: Site) -> None:
    ids = seed(site)
    minutes = dt.timedelta(minutes=1)
    add_points(site, ids["failed"], [(900 * minutes, -5.0)])
    add_points(site, ids["ace"], [(ago * minutes, float(ago)) for ago in range(1, 600)])
    add_points(site, ids["bee"], [(1 * minutes, 77.0)])  # another bot's
    history = site.get("/api/bots/ace", "bob").json()["history"]
    assert len(history) == views.HISTORY_LIMIT
    # The newest 500 of version 2's: 500 minutes ago to 1; version 1's, older, left out. Each
    # is shown centred at 1500, the default.
    assert [point["rating"] for point in history] == [1500.0 + n for n in range(500, 0, -1)]
    assert {point["version"] for point in history} == {2}
    assert history[-1]["margin"] == 25.0
    times = [dt.datetime.fromisoformat(point["at"]) for point in history]
    assert times == sorted(times)
    add_points(site, ids["failed"], [(dt.timedelta(0), -1.0)])
    newest = site.get("/api/bots/ace", "bob").json()["history"][-1]
    assert (newest["version"], newest["rating"]) == (1, 1499.0)
    assert site.get("/api/bots/cub", "bob").json()["history"] == []


def test_head_to_head_counts_every_finished_match_against_each_other_bot(site: Site) -> None:
    ids = seed(site)  # arena-000001: ace 2 lost to bee 1
    with site.arena.database.session() as session:
        cub = session.query(Version).join(Bot).filter(Bot.name == "cub").one().id
    ace1, ace2, bee = ids["failed"], ids["ace"], ids["bee"]
    add_match(site, "m-2", [(bee, 0.5), (ace2, 0.5)])  # a draw, ace seated second
    add_match(site, "m-3", [(ace1, 1.0), (bee, 0.0)])  # won by ace's first version
    add_match(site, "m-4", [(ace2, None), (bee, None)])  # no result
    add_match(site, "m-5", [(cub, 0.0), (ace2, 1.0)])
    add_match(site, "m-6", [(ace2, None), (cub, None)], state=MatchState.RUNNING)
    add_match(site, "m-7", [(bee, 1.0), (cub, 0.0)])  # not ace's
    assert site.get("/api/bots/ace", "bob").json()["head_to_head"] == [
        {"opponent": "bee", "matches": 4, "wins": 1, "draws": 1, "losses": 1},
        {"opponent": "cub", "matches": 1, "wins": 1, "draws": 0, "losses": 0},
    ]
    assert site.get("/api/bots/cub", "alice").json()["head_to_head"] == [
        {"opponent": "ace", "matches": 1, "wins": 0, "draws": 0, "losses": 1},
        {"opponent": "bee", "matches": 1, "wins": 0, "draws": 0, "losses": 1},
    ]


def test_the_status_lists_the_running_matches_and_asks_for_the_address_for_the_organiser(
    site: Site,
) -> None:
    ids = seed(site)
    start = dt.datetime.now(dt.UTC)
    with site.arena.database.session() as session:
        for number in range(views.RUNNING_LIMIT + 5):
            match = Match(
                key=f"run-{number:03}",
                game="ticblock",
                seed=number,
                state=MatchState.RUNNING,
                # The later the key, the earlier it started.
                started_at=start - dt.timedelta(seconds=number),
            )
            match.seats = [
                Seat(index=0, role="xcplayer", version_id=ids["ace"]),
                Seat(index=1, role="obplayer", version_id=ids["bee"]),
            ]
            session.add(match)
        # Claimed earlier still, but waiting their turn in a place's batch: not begun.
        for number in range(3):
            waiting = Match(
                key=f"wait-{number}",
                game="ticblock",
                seed=number,
                state=MatchState.RUNNING,
                claimed_at=start - dt.timedelta(hours=1),
            )
            waiting.seats = [
                Seat(index=0, role="xcplayer", version_id=ids["ace"]),
                Seat(index=1, role="obplayer", version_id=ids["bee"]),
            ]
            session.add(waiting)
    status = site.get("/api/status", "bob").json()
    running = status["running"]
    # Only the matches being played, the longest played first.
    assert [m["key"] for m in running] == [
        f"run-{n:03}" for n in range(views.RUNNING_LIMIT + 4, 4, -1)
    ]
    assert site.get("/api/running", "bob").json()["running"] == running
    assert {m["state"] for m in running} == {"running"}
    assert [(s["bot"], s["version"]) for s in running[0]["seats"]] == [("ace", 2), ("bee", 1)]
    site.get("/api/status", "organiser")
    site.post("/api/ladder/pause", "organiser")
    assert site.ladder.addresses == [False, True, True]


def test_the_organiser_replays_a_match_and_a_tampered_one_fails(site: Site) -> None:
    seed(site)
    path = played_match(site, "arena-000002")
    replay = "/api/matches/arena-000002/replay"
    assert site.post(replay).status_code == 401
    assert site.post(replay, "alice").status_code == 403
    assert site.post(replay, "organiser").json() == {
        "key": "arena-000002",
        "verified": True,
        "problem": None,
    }
    verdict = verify_file(path, site.arena.key.public)
    assert verdict.replayed is not None and verdict.replayed.problem is None
    # A move flipped: another legal first move than the one played.
    data = json.loads(path.read_text())
    move = data["steps"][0]["moves"]["xcplayer"]
    data["steps"][0]["moves"]["xcplayer"] = "b1" if move != "b1" else "c1"
    path.write_text(json.dumps(data))
    shown = site.post(replay, "organiser").json()
    assert shown["verified"] is False and "signature" in shown["problem"]
    # No such match, and one still running: no transcript yet.
    add_match(site, "m-none", [(1, None), (1, None)], state=MatchState.RUNNING)
    for missing in ["arena-999", "m-none"]:
        answer = site.post(f"/api/matches/{missing}/replay", "organiser")
        assert answer.status_code == 404 and missing in answer.json()["error"]
    with pytest.raises(errors.NotFound, match="no transcript"):
        match_facts.read(site.arena, "m-none").transcript_in(site.arena.directory)


def test_a_transcript_signed_with_another_key_is_not_verified(site: Site, tmp_path: Path) -> None:
    path = played_match(site, "arena-000003")
    other = results_key(tmp_path / "elsewhere", None)[0]
    transcript = read_transcript(path)
    write_transcript(path, transcript, other)
    shown = site.post("/api/matches/arena-000003/replay", "organiser").json()
    assert shown["verified"] is False and shown["problem"]
    assert verify_file(path, site.arena.key.public).outcome is not Outcome.VERIFIED


def test_replays_past_the_requesters_turn_are_refused_at_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the organiser's replay is under way (held, as a long match's would be), another
    of theirs is refused at once: 503 with Retry-After, not a queue; once it ends, it is
    taken."""
    monkeypatch.setattr(replay_work, "replayed", observed)
    transcript = played_match(site, "arena-000004")
    hold(transcript)
    path = "/api/matches/arena-000004/replay"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(site.post, path, "organiser")
        wait_for("the replay to start", lambda: bool(replays_of(transcript)))
        answer = site.post(path, "organiser")
        assert answer.status_code == 503 and "replay under way" in answer.json()["error"]
        assert answer.headers["Retry-After"] == str(replays.RETRY_AFTER_S)
        let_go(transcript)
        assert first.result().json()["verified"] is True
    assert site.post(path, "organiser").json()["verified"] is True


def test_what_a_client_may_send_amiss_is_a_400_or_404_with_one_line(site: Site) -> None:
    seed(site)
    # Digits Python calls digits that int() refuses; a NUL, which PostgreSQL refuses in text.
    answers = {
        "/api/matches?limit=²": 400,
        "/api/matches?limit=٣": 400,
        "/api/matches?game=a%00b": 400,
        "/api/matches?bot=a%00b": 400,
        "/api/matches/arena-1%00": 404,
        "/api/bots/a%00b": 404,
        "/api/matches/arena-1/live?after=²": 400,
    }
    for path, status in answers.items():
        answer = site.get(path, "bob")
        error = answer.json()["error"]
        assert answer.status_code == status, (path, answer.text)
        assert error and "\n" not in error, path
    # An organiser's body nested past the parser's depth, or a reason that is no text.
    deep = b'{"reason": ' + b"[" * 2000 + b"]" * 2000 + b"}"
    lone = b'{"reason": "\\ud800"}'
    for body in (deep, lone):
        answer = site.post("/api/bots/ace/suspend", "organiser", content=body)
        assert answer.status_code == 400, answer.text
        assert "\n" not in answer.json()["error"]
    assert site.get("/api/bots/ace", "bob").json()["versions"][0]["state"] == "rated"


def test_the_organiser_asks_for_the_final_and_sees_how_it_goes(site: Site) -> None:
    assert site.post("/api/final", "alice", json={"format": "swiss"}).status_code == 403
    answer = site.post("/api/final", "organiser", json={"format": "swiss", "rounds": 3})
    assert answer.status_code == 202
    assert answer.json() == {"state": "playing", "format": "swiss", "rounds": 3}
    # No body: a round robin of one round.
    assert site.post("/api/final", "organiser").status_code == 202
    assert site.ladder.finals == [("swiss", 3), ("round-robin", 1)]
    for body, said in [
        ({"format": "knockout"}, "format: give one of round-robin, swiss"),
        ({"rounds": 0}, "rounds: a whole number from 1 to 1000"),
        ({"rounds": True}, "rounds: a whole number from 1 to 1000"),
        ({"rounds": "2"}, "rounds: a whole number from 1 to 1000"),
        ({"format": "swiss", "seed": 1}, "the body must be JSON"),
        (["swiss"], "the body must be JSON"),
    ]:
        refused = site.post("/api/final", "organiser", json=body)
        assert refused.status_code == 400 and said in refused.json()["error"], body
    assert len(site.ladder.finals) == 2
    # How it goes is the organiser's to read.
    assert site.get("/api/status", "organiser").json()["final"] == {"state": "none"}
    assert "final" not in site.get("/api/status", "alice").json()
