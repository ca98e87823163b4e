"""A match watched as it is played: its live file, written step by step and read as untrusted
text (a torn last line, a file past its bound, lines that are no steps, another run), and the
arena's answers from it (`/api/matches/{key}/live`, the match page): the frames of the steps
after N, computed as the report computes a transcript's, each step replayed once however
many ask, and the match's end."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import sys
import threading
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from referee.arena.accounts.auth import author_of
from referee.arena.replays import watching
from referee.arena.replays import work as replay_work
from referee.arena.replays.watching import Watching
from referee.arena.store.db import Match, MatchState, Seat
from referee.clock import Clocks
from referee.errors import ConfigError
from referee.games import RULESHEETS, Move, get_game
from referee.match import Match as PlayedMatch
from referee.match import MatchSetup
from referee.records.replay import replay
from referee.records.transcript import Transcript
from referee.report.site import frame_data
from referee.tournaments import live, playing
from referee.tournaments.config import load_config, parse_config
from referee.tournaments.live import LIVE, LiveMoves, LiveReader, LiveStep, live_path
from tests.support.arena import NEVER, Site, add_author, make_site, played_match, seed, wait_for
from tests.support.arena_databases import ArenaMaker
from tests.support.fakes import first_legal, scripted
from tests.support.referees import MISBEHAVING
from tests.support.replay_workers import hold, let_go, observed, replays_of
from tests.support.tournaments import run, transcripts, write_config

ROLES = ("xcplayer", "obplayer")
KEY = "arena-00000042"
# The players of match KEY (`running`), as versions are named (`db.player_name`): ace v2
# and bee v1, the rated ones `seed` makes.
PLAYERS = {"xcplayer": "ace.2", "obplayer": "bee.1"}


def a_match() -> tuple[list[tuple[int, tuple[Move, ...]]], Transcript]:
    """A real match of ticblock: each step's joint move as the referee told it, and the
    transcript."""
    (one, _), (two, _) = scripted("one", first_legal()), scripted("two", first_legal())
    setup = MatchSetup(KEY, get_game("ticblock"), [one, two], Clocks(5000, 2000), seed=3)
    steps: list[tuple[int, tuple[Move, ...]]] = []

    def took(step: int, joint: tuple[Move, ...], _state: Hashable) -> None:
        steps.append((step, joint))

    transcript = asyncio.run(PlayedMatch(setup).run(took))
    return steps, transcript


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


# -- the live file


@pytest.fixture
def begun(tmp_path: Path) -> tuple[Path, LiveMoves]:
    """Match m's live file of ROLES, begun by its writer: where it is, and the writer."""
    path = tmp_path / "m.jsonl"
    return path, LiveMoves(path, "m", ROLES)


def test_the_reader_takes_each_step_once_and_a_torn_last_line_when_it_is_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live" / "m.jsonl"
    writer = LiveMoves(path, "m", ROLES)
    reader = LiveReader(path, ROLES)
    assert reader.read() == (False, [])
    assert reader.run is not None
    writer.step(1, (Move("a"), Move("b")), None)
    assert reader.read() == (False, [LiveStep(1, ("a", "b"))])
    assert reader.read() == (False, [])
    append(path, '{"step":2,"mo')  # written as far as this when it is read
    assert reader.read() == (False, [])
    append(path, 'ves":["c","d"]}\n')
    assert reader.read() == (False, [LiveStep(2, ("c", "d"))])
    assert reader.problem is None
    writer.close()
    assert not path.exists()
    assert reader.read() == (False, [])


def test_a_file_past_its_bound_is_followed_no_further(
    begun: tuple[Path, LiveMoves], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MAX_BYTES", 400)
    path, writer = begun
    for step in range(1, 41):
        writer.step(step, (Move("(mark 1 1)"), Move("noop")), None)
    assert path.stat().st_size > 400
    reader = LiveReader(path, ROLES)
    _, steps = reader.read()
    assert 0 < len(steps) < 40
    assert [step.step for step in steps] == list(range(1, len(steps) + 1))
    assert reader.problem is not None and "longer than" in reader.problem
    writer.step(41, (Move("x"), Move("y")), None)
    assert reader.read() == (False, [])


def test_a_line_longer_than_its_bound_ends_what_is_read_even_unfinished(
    begun: tuple[Path, LiveMoves], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MAX_LINE", 100)
    path, _ = begun
    append(path, '{"step":1,"moves":["' + "x" * 200)
    reader = LiveReader(path, ROLES)
    assert reader.read() == (False, [])
    assert reader.problem is not None and "line longer than" in reader.problem


@pytest.mark.parametrize(
    "line",
    [
        "not json at all",
        '["a", "list"]',
        '{"step": 3, "moves": ["a", "b"]}',
        '{"step": true, "moves": ["a", "b"]}',
        '{"step": 2, "moves": ["only one"]}',
        '{"step": 2, "moves": ["a", 7]}',
        '{"step": 2, "moves": "a b"}',
    ],
)
def test_a_line_that_is_no_next_step_ends_what_is_read(
    begun: tuple[Path, LiveMoves], line: str
) -> None:
    path, writer = begun
    writer.step(1, (Move("a"), Move("b")), None)
    append(path, line + "\n" + '{"step": 2, "moves": ["c", "d"]}\n')
    reader = LiveReader(path, ROLES)
    assert reader.read() == (False, [LiveStep(1, ("a", "b"))])
    assert reader.problem is not None
    assert reader.read() == (False, [])


def test_a_file_of_another_match_s_roles_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    LiveMoves(path, "m", ("white", "black")).step(1, (Move("a"), Move("b")), None)
    reader = LiveReader(path, ROLES)
    assert reader.read() == (False, [])
    assert reader.problem is not None and "roles" in reader.problem


def test_a_match_played_again_is_another_run_read_from_its_start(
    begun: tuple[Path, LiveMoves],
) -> None:
    path, first = begun
    for step in (1, 2, 3):
        first.step(step, (Move("a"), Move("b")), None)
    reader = LiveReader(path, ROLES)
    assert len(reader.read()[1]) == 3
    run = reader.run
    again = LiveMoves(path, "m", ROLES)
    again.step(1, (Move("c"), Move("d")), None)
    assert reader.read() == (True, [LiveStep(1, ("c", "d"))])
    assert reader.run not in (None, run)


def test_a_writer_that_cannot_write_leaves_the_match_alone(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    writer = LiveMoves(blocked / "live" / "m.jsonl", "m", ROLES)
    writer.step(1, (Move("a"), Move("b")), None)
    writer.close()
    assert blocked.read_text() == "not a directory"


def test_the_arena_s_field_writes_live_files_and_an_arena_config_may_not_say_otherwise(
    tmp_path: Path, make_arena: ArenaMaker
) -> None:
    arena = make_arena(config_text="name: field\ngames: [ticblock]\n")
    assert arena.config.field_config([], arena.results).live is True
    assert arena.config.tournament.live is False  # what validates a bot writes none
    plain = tmp_path / "plain.yaml"
    players = "players: [{name: a, command: random}, {name: b, command: random}]\n"
    plain.write_text(f"name: plain\ngames: [ticblock]\n{players}")
    assert parse_config(plain, plain.read_text()).live is False
    with pytest.raises(ConfigError, match="not in an arena: an arena writes every match's moves"):
        make_arena(config_text="name: field\ngames: [ticblock]\nlive: false\n")


def test_a_live_tournament_writes_each_step_as_it_is_played_and_removes_it_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_disk: dict[str, list[int]] = {}

    class Watched(LiveMoves):
        """The live file, read back after each step is written."""

        def __init__(self, path: Path, match_id: str, roles: Sequence[str]) -> None:
            super().__init__(path, match_id, roles)
            self.reader = LiveReader(path, roles)
            self.seen = on_disk.setdefault(match_id, [])

        def step(self, step: int, joint: Sequence[Move], state: Hashable) -> None:
            super().step(step, joint, state)
            self.seen.extend(found.step for found in self.reader.read()[1])

    monkeypatch.setattr(playing, "LiveMoves", Watched)
    player = f"{sys.executable} {MISBEHAVING} {NEVER}"
    players = {"a": player, "b": player}
    config = load_config(write_config(tmp_path, players, "[ticblock]", "live: true\n"))
    run(config)
    played = transcripts(config.output)
    assert played and on_disk.keys() == played.keys()
    for name, transcript in played.items():
        assert transcript.end_reason == "terminal", (name, transcript.faults)
        assert on_disk[name] == [step.step for step in transcript.steps], name
    assert list((config.output / LIVE).iterdir()) == []
    quiet = load_config(write_config(tmp_path, players, "[ticblock]", name="quiet"))
    run(quiet)
    assert transcripts(quiet.output) and not (quiet.output / LIVE).exists()


# -- the arena's answers


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


def running(site: Site, state: MatchState = MatchState.RUNNING) -> None:
    """Match KEY of ace (alice's) against bee (bob's), in `state`."""
    ids = seed(site)
    with site.arena.database.session() as session:
        match = Match(
            key=KEY, game="ticblock", seed=3, state=state, started_at=dt.datetime.now(dt.UTC)
        )
        match.seats = [
            Seat(index=0, role="xcplayer", version_id=ids["ace"]),
            Seat(index=1, role="obplayer", version_id=ids["bee"]),
        ]
        session.add(match)


def set_state(site: Site, state: MatchState) -> None:
    with site.arena.database.session() as session:
        session.query(Match).filter_by(key=KEY).one().state = state


def shown(frame: dict[str, Any]) -> dict[str, Any]:
    """What a frame shows that a live file knows, as JSON has it: the answer times and faults
    are the transcript's alone."""
    kept = {key: value for key, value in frame.items() if key not in ("times_ms", "faults")}
    return dict(json.loads(json.dumps(kept)))


def test_the_api_gives_the_frames_after_a_step_as_the_report_computes_them(site: Site) -> None:
    running(site)
    steps, transcript = a_match()
    assert len(steps) >= 4
    game = get_game("ticblock")
    expected = [shown(frame_data(game, frame, PLAYERS)) for frame in replay(transcript).frames]
    writer = LiveMoves(live_path(site.arena.results, KEY), KEY, ROLES)
    for step, joint in steps[:2]:
        writer.step(step, joint, None)
    path = f"/api/matches/{KEY}/live"
    answer = site.get(f"{path}?after=0", "bob")
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["state"] == "running" and found["run"] is not None and found["problem"] is None
    assert [shown(frame) for frame in found["frames"]] == expected[1:3]
    assert found["last"] == 2
    assert [f["step"] for f in site.get(f"{path}?after=1", "alice").json()["frames"]] == [2]
    for step, joint in steps[2:]:
        writer.step(step, joint, None)
    rest = site.get(f"{path}?after=2", "alice").json()
    assert [shown(frame) for frame in rest["frames"]] == expected[3:]
    assert rest["frames"][-1]["terminal"] is True
    writer.close()
    set_state(site, MatchState.DONE)
    done = site.get(f"{path}?after=0", "alice").json()
    assert (done["state"], done["frames"], done["last"]) == ("done", [], None)


def test_the_api_refuses_a_stranger_an_unknown_match_and_a_step_that_is_no_number(
    site: Site,
) -> None:
    running(site)
    path = f"/api/matches/{KEY}/live"
    assert site.get(path).status_code == 401
    assert site.client.get(path, headers={"Authorization": "Bearer nobody"}).status_code == 401
    missing = site.get("/api/matches/arena-99999999/live", "alice")
    assert missing.status_code == 404 and missing.json().keys() == {"error"}
    for after in ("-1", "x", "1" * 12, "1.5"):
        refused = site.get(f"{path}?after={after}", "alice")
        assert refused.status_code == 400, after
        assert "step number" in refused.json()["error"]
    assert site.get("/api/running").status_code == 401
    assert [m["key"] for m in site.get("/api/running", "bob").json()["running"]] == [KEY]


def test_a_match_not_started_is_its_start_and_a_move_the_rules_refuse_ends_the_following(
    site: Site,
) -> None:
    running(site, MatchState.QUEUED)
    path = f"/api/matches/{KEY}/live?after=0"
    waiting = site.get(path, "alice").json()
    assert (waiting["state"], waiting["run"], waiting["frames"], waiting["last"]) == (
        "queued",
        None,
        [],
        0,
    )
    set_state(site, MatchState.RUNNING)
    hostile = "<script>alert(1)</script>"
    writer = LiveMoves(live_path(site.arena.results, KEY), KEY, ROLES)
    writer.step(1, (Move(hostile), Move("noop")), None)
    refused = site.get(path, "alice").json()
    assert refused["frames"] == [] and refused["last"] == 0
    assert "xcplayer's move is not legal" in refused["problem"]
    assert hostile not in json.dumps(refused)
    page = site.get(f"/matches/{KEY}", "alice")
    assert page.status_code == 200
    assert hostile not in page.text
    assert "xcplayer&#39;s move is not legal" in page.text


def test_the_match_page_follows_a_running_match_then_is_the_finished_viewer(
    site: Site,
) -> None:
    running(site)
    steps, _ = a_match()
    writer = LiveMoves(live_path(site.arena.results, KEY), KEY, ROLES)
    for step, joint in steps[:3]:
        writer.step(step, joint, None)
    page = site.get(f"/matches/{KEY}", "alice")
    assert page.status_code == 200
    assert 'data-page="live"' in page.text and 'data-after="3"' in page.text
    assert '<script src="/assets/live.js" defer></script>' in page.text
    found = re.search(r'<script type="application/json" id="frames">(.*?)</script>', page.text)
    assert found is not None
    assert [frame["step"] for frame in json.loads(found.group(1))] == [0, 1, 2, 3]
    assert site.get("/assets/live.js").status_code == 200
    writer.close()
    set_state(site, MatchState.DONE)
    finished = site.get(f"/matches/{KEY}", "alice")
    assert 'data-page="live"' not in finished.text
    assert site.get(f"/matches/{KEY}", follow_redirects=False).status_code == 303


def test_a_crowd_of_watchers_replays_each_step_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    running(site)
    steps, _ = a_match()
    made: list[int] = []

    def counted(game: Any, frame: Any, players: Any) -> dict[str, Any]:
        made.append(frame.step)
        return frame_data(game, frame, players)

    monkeypatch.setattr(watching, "frame_data", counted)
    followed = Watching(site.arena)
    writer = LiveMoves(live_path(site.arena.results, KEY), KEY, ROLES)
    answers: list[int] = []
    lock = threading.Lock()

    alice = author_of(site.arena, site.tokens["alice"])
    assert alice is not None

    def watcher() -> None:
        last = followed.live(KEY, 0, alice)["last"]
        with lock:
            answers.append(last)

    for step, joint in steps:
        writer.step(step, joint, None)
        crowd = [threading.Thread(target=watcher) for _ in range(12)]
        for thread in crowd:
            thread.start()
        for thread in crowd:
            thread.join()
    assert made == list(range(len(steps) + 1))
    assert answers == [step for step, _ in steps for _ in range(12)]


def test_the_watchers_of_a_match_that_has_just_ended_wait_for_one_replay_of_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(site)
    key = "arena-00000043"
    path = played_match(site, key)
    # Held until it has begun: who asks meanwhile waits for it, past its requester's turn.
    monkeypatch.setattr(replay_work, "replayed", observed)
    hold(path)
    statuses: list[int] = []
    lock = threading.Lock()

    def watcher() -> None:
        answer = site.get(f"/matches/{key}", "alice")
        with lock:
            statuses.append(answer.status_code)

    crowd = [threading.Thread(target=watcher) for _ in range(8)]
    for thread in crowd:
        thread.start()
    wait_for("the replay to start", lambda: bool(replays_of(path)))
    let_go(path)
    for thread in crowd:
        thread.join()
    assert statuses == [200] * 8
    assert len(replays_of(path)) == 1


def test_a_match_longer_than_the_steps_followed_is_followed_no_further(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watching, "MAX_STEPS", 2)
    running(site)
    steps, _ = a_match()
    writer = LiveMoves(live_path(site.arena.results, KEY), KEY, ROLES)
    for step, joint in steps[:4]:
        writer.step(step, joint, None)
    found = site.get(f"/api/matches/{KEY}/live?after=0", "alice").json()
    assert [frame["step"] for frame in found["frames"]] == [1, 2]
    assert found["state"] == "running" and "longer than 2 steps" in found["problem"]


# -- a game of imperfect information

BLIND = RULESHEETS / "blind-tictactoe.kif"


@pytest.fixture
def blind_site(make_arena: ArenaMaker) -> Iterator[Site]:
    """A site that plays blind tic-tac-toe besides, with carol, who has no bot in its match."""
    for site in make_site(make_arena, games=f"ticblock, {BLIND}"):
        site.tokens["carol"] = add_author(site.arena, "carol")
        yield site


def blind_match(site: Site) -> tuple[list[tuple[int, tuple[Move, ...]]], Transcript]:
    """Match KEY of blind tic-tac-toe, ace (alice's) as xplayer against bee (bob's), running,
    and a real match of it: each step's joint move, and the transcript."""
    ids = seed(site)
    with site.arena.database.session() as session:
        match = Match(
            key=KEY,
            game="blind-tictactoe",
            seed=3,
            state=MatchState.RUNNING,
            started_at=dt.datetime.now(dt.UTC),
        )
        match.seats = [
            Seat(index=0, role="xplayer", version_id=ids["ace"]),
            Seat(index=1, role="oplayer", version_id=ids["bee"]),
        ]
        session.add(match)
    # Both mark the first cell offered: o finds x's first mark, and is refused.
    (one, _), (two, _) = scripted("one", first_legal()), scripted("two", first_legal())
    setup = MatchSetup(KEY, get_game(str(BLIND)), [one, two], Clocks(5000, 2000), seed=3)
    steps: list[tuple[int, tuple[Move, ...]]] = []
    transcript = asyncio.run(
        PlayedMatch(setup).run(lambda step, joint, _state: steps.append((step, joint)))
    )
    assert any(step.percepts and step.percepts["oplayer"] for step in transcript.steps)
    return steps, transcript


def test_a_running_match_of_imperfect_information_shows_each_author_only_their_seat(
    blind_site: Site,
) -> None:
    site = blind_site
    steps, transcript = blind_match(site)
    writer = LiveMoves(live_path(site.arena.results, KEY), KEY, ("xplayer", "oplayer"))
    for step, joint in steps[:4]:
        writer.step(step, joint, None)
    path = f"/api/matches/{KEY}/live?after=0"
    for author, role in (("alice", "xplayer"), ("bob", "oplayer")):
        found = site.get(path, author).json()
        assert found["last"] == 4 and found["problem"] is None
        for frame, played in zip(found["frames"], transcript.steps, strict=False):
            told = {"move": played.moves[role], "percepts": (played.percepts or {})[role]}
            assert frame["moves"] == {role: played.moves[role]}
            assert frame["told"] == {role: told}
            assert (frame["board"], frame["boards"], frame["legend"]) == ("", [], [])
        assert [frame["step"] for frame in found["frames"]] == [1, 2, 3, 4]
    # The organiser may read every seat: each seat's view, still not the board.
    every = site.get(path, "organiser").json()["frames"]
    assert [set(frame["told"]) for frame in every] == [{"xplayer", "oplayer"}] * 4
    assert all(frame["boards"] == [] for frame in every)
    # An author with no seat in it is told the match goes on, and nothing of its steps.
    stranger = site.get(path, "carol").json()
    assert (stranger["state"], stranger["frames"], stranger["last"]) == ("running", [], None)
    page = site.get(f"/matches/{KEY}", "alice").text
    found_frames = re.search(r'<script type="application/json" id="frames">(.*?)</script>', page)
    assert found_frames is not None
    frames = json.loads(found_frames.group(1))
    assert [set(frame["moves"]) for frame in frames] == [set()] + [{"xplayer"}] * 4
    assert "what xplayer was told" in page
    assert "what oplayer was told" not in page and "the whole truth" not in page
    shut = site.get(f"/matches/{KEY}", "carol").text
    assert 'id="frames"' not in shut and "its moves are shown once it ends" in shut
    # A step the rules refuse ends the following; why, which may name the hidden state, is
    # the organiser's to read.
    writer.step(5, (Move("(mark 9 9)"), Move("noop")), None)
    assert "(the organiser can see why)" in site.get(path, "alice").json()["problem"]
    assert "xplayer's move is not legal" in site.get(path, "organiser").json()["problem"]
    writer.close()
    set_state(site, MatchState.DONE)
    assert site.get(path, "carol").json()["state"] == "done"
