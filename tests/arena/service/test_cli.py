"""`referee arena`: init, author add, serve as a process stopped by SIGTERM, and the clients'
one-line refusals."""

from __future__ import annotations

import contextlib
import gc
import http.server
import io
import json
import re
import shutil
import socket
import tarfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from referee.arena import client
from referee.arena.intake import submissions
from referee.arena.service import rooms
from referee.arena.store.db import Author
from referee.arena.store.home import open_arena
from referee.arena.store.tokens import token_hash
from referee.cli import app
from referee.games import RULESHEETS
from referee.tournaments.cluster import Workers
from tests.support.arena import token_of
from tests.support.arena_serving import DEADLINE_S, Served, serving
from tests.support.local_http import local_http

runner = CliRunner()


def one_error(args: list[str]) -> str:
    """The one line on standard error of a command refused with exit code 2."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("referee: error: ")
    return line


@pytest.fixture
def arena(tmp_path: Path, database_url: str | None) -> tuple[Path, str]:
    """An arena made by `referee arena init`, on SQLite and on PostgreSQL: its directory and
    the organiser's token."""
    directory = tmp_path / "arena"
    database = [] if database_url is None else ["--database", database_url]
    result = runner.invoke(app, ["arena", "init", str(directory), *database])
    assert result.exit_code == 0, result.output
    assert f"arena: {directory}" in result.stdout
    return directory, token_of(result.stdout)


def test_init_and_author_add_print_tokens_kept_only_as_hashes(arena: tuple[Path, str]) -> None:
    directory, organiser = arena
    result = runner.invoke(app, ["arena", "author", "add", str(directory), "ada"])
    assert result.exit_code == 0, result.output
    ada = token_of(result.stdout)
    assert ada != organiser
    opened = open_arena(directory)
    try:
        with opened.database.session() as session:
            rows = {author.name: author.token_hash for author in session.scalars(select(Author))}
    finally:
        opened.close()
    assert rows == {"organiser": token_hash(organiser), "ada": token_hash(ada)}
    if opened.database.url.startswith("sqlite"):
        stored = b"".join(path.read_bytes() for path in sorted(directory.glob("arena.db*")))
        assert stored and not any(token.encode() in stored for token in (organiser, ada))


def test_bad_inputs_are_one_line_and_exit_2(arena: tuple[Path, str], tmp_path: Path) -> None:
    directory, _ = arena
    assert "already an arena" in one_error(["arena", "init", str(directory)])
    runner.invoke(app, ["arena", "author", "add", str(directory), "ada"])
    assert "already in this arena" in one_error(["arena", "author", "add", str(directory), "ada"])
    assert "not an arena" in one_error(["arena", "author", "add", str(tmp_path / "none"), "x"])
    assert "not an arena" in one_error(["arena", "serve", str(tmp_path / "none")])
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ngames: [ticblock]\narena:\n  pairing: nearest\n")
    line = one_error(["arena", "init", str(tmp_path / "other"), "--config", str(bad)])
    assert re.search(r"bad\.yaml:4\b.*pairing", line), line


def test_the_clients_refuse_bad_inputs_before_sending(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.yaml").write_text("name: mybot\nrun: ./bot\n")
    url = "http://127.0.0.1:9"
    assert "must agree" in one_error(
        ["arena", "submit", url, str(bot), "--token", "t", "--name", "other"]
    )
    assert "no such directory" in one_error(
        ["arena", "submit", url, str(tmp_path / "none"), "--token", "t"]
    )
    archive = tmp_path / "bot.tgz"
    archive.write_bytes(b"not much")
    assert "--name" in one_error(["arena", "submit", url, str(archive), "--token", "t"])
    assert "not an arena's URL" in one_error(["arena", "status", "ftp://x", "--token", "t"])
    assert "not one an arena gives" in one_error(["arena", "status", url, "--token", "a\nb"])
    assert "cannot reach" in one_error(["arena", "status", url, "--token", "t"])


@pytest.fixture
def served(arena: tuple[Path, str]) -> Iterator[tuple[Path, str, str, Served]]:
    """`referee arena serve` on a free port: the arena's directory, its URL, the organiser's
    token, the served process."""
    directory, organiser = arena
    with serving(directory) as served:
        yield directory, served.url, organiser, served


@pytest.mark.slow
def test_serve_answers_and_stops_cleanly_on_sigterm(
    served: tuple[Path, str, str, Served],
) -> None:
    directory, url, organiser, running = served
    request = urllib.request.Request(
        f"{url}/api/me", headers={"Authorization": f"Bearer {organiser}"}
    )
    with urllib.request.urlopen(request, timeout=DEADLINE_S) as answer:
        assert json.loads(answer.read()) == {
            "name": "organiser",
            "organiser": True,
            "bots": [],
            "my_bots": [],
        }

    result = runner.invoke(
        app, ["arena", "status", url, "--json"], env={"REFEREE_TOKEN": organiser}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "author": "organiser",
        "bots": [],
        "leaderboard": [],
        "submissions_closed": False,
        "final": None,
    }
    line = one_error(["arena", "status", url, "--token", "not-a-token"])
    assert "401" in line and "unknown token" in line

    # A submission followed to its end: refused by the intake, so exit 1 with the reason.
    added = runner.invoke(app, ["arena", "author", "add", str(directory), "ada"])
    ada = token_of(added.stdout)
    archive = directory.parent / "bot.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        manifest = b"name: somebody-else\nrun: ./bot\n"
        info = tarfile.TarInfo("bot.yaml")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    result = runner.invoke(
        app, ["arena", "submit", url, str(archive), "--name", "adabot", "--token", ada]
    )
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == "adabot.1: failed"
    assert "reason: bot.yaml: name 'somebody-else'" in result.stdout
    assert "adabot: version 1 submitted" in result.stderr
    # Now adabot is ada's: the organiser may not submit it.
    line = one_error(
        ["arena", "submit", url, str(archive), "--name", "adabot", "--token", organiser]
    )
    assert "403" in line and "another author's" in line

    # Once the season is over, an author's status says so first.
    arena = open_arena(directory)
    try:
        submissions.close(arena)
    finally:
        arena.close()
    result = runner.invoke(app, ["arena", "status", url, "--token", ada])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("submissions are closed: the season is over\n\nada's bots:")

    said = running.stop()
    assert said.strip().endswith("stopped")


@pytest.mark.parametrize(("workers", "short"), [(None, True), (Workers(1), False)])
def test_the_ladder_keeps_the_collectors_pauses_short_where_it_plays_the_matches_itself(
    arena: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, workers: Workers | None, short: bool
) -> None:
    # A full pass of the collector on the loop that reads the players' answers would hold
    # their clocks; played on workers, the matches are not the ladder room's to keep from it.
    seen: list[bool] = []

    async def played(*args: object) -> None:
        seen.append(gc.get_threshold()[2] > 1_000_000)

    monkeypatch.setattr(rooms, "run_ladder_room", played)
    directory, _ = arena
    opened = open_arena(directory)
    mine, theirs = socket.socketpair()
    try:
        rooms.play(opened, workers, theirs)
    finally:
        opened.close()
        mine.close()
        theirs.close()
    assert seen == [short]
    assert gc.get_threshold()[2] < 1_000_000, "the collector's own counts again after the room"


class _Busy(http.server.BaseHTTPRequestHandler):
    """An arena that is busy (503) for its first `busy` submissions, then takes one and
    says its version is rated; each POST counted."""

    busy = 2
    posts = 0
    refusal = 503
    retry_after = "1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).posts += 1
        if type(self).posts <= type(self).busy:
            self.answer(self.refusal, {"error": "too many at once"}, self.retry_after)
        else:
            self.answer(202, {"id": 7, "bot": "calm", "number": 1, "state": "queued"})

    def do_GET(self) -> None:
        self.answer(200, {"id": 7, "number": 1, "state": "rated", "steps": []})

    def answer(self, status: int, body: dict[str, object], retry_after: str = "") -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


@contextlib.contextmanager
def busy_arena(busy: int, refusal: int = 503, retry_after: str = "1") -> Iterator[str]:
    """An arena's API that refuses the first `busy` submissions with `refusal`, asking for
    `retry_after` seconds: its URL."""
    attributes = {"busy": busy, "posts": 0, "refusal": refusal, "retry_after": retry_after}
    handler = type("Handler", (_Busy,), attributes)
    with local_http(handler) as url:
        yield url
    assert handler.posts == (busy + 1 if retry_after == "1" else 1)


def test_a_submission_to_a_busy_arena_is_sent_again_and_says_so(tmp_path: Path) -> None:
    archive = tmp_path / "calm.tar.gz"
    archive.write_bytes(b"an archive")
    lines: list[str] = []
    with busy_arena(2) as url:
        done = client.submit(client.Api(url, "t0ken"), archive, "calm", lines.append, 0.0)
    assert done.reached_ladder
    waits = [line for line in lines if line.startswith("the arena is busy")]
    # The wait doubles from 1 s (its Retry-After asks for 1 s).
    assert [line.rsplit(" in ", 1)[1] for line in waits] == ["1 s", "2 s"], waits
    assert "503" in waits[0] and "too many at once" in waits[0]
    # A 429 that asks for a moment paces the client's requests: sent again after it.
    lines.clear()
    with busy_arena(1, refusal=429) as url:
        assert client.submit(client.Api(url, "t0ken"), archive, "calm", lines.append, 0.0)
    assert [line for line in lines if "429" in line and line.endswith("sending again in 1 s")]
    # One that asks for an hour (the hourly cap) is not: nor is any other refusal. It is the
    # one line the command exits with.
    with (
        busy_arena(1, refusal=429, retry_after="3600") as url,
        pytest.raises(client.ClientError, match="429"),
    ):
        client.submit(client.Api(url, "t0ken"), archive, "calm", lines.append, 0.0)


class _Unsteady(client.Api):
    """An arena that, while a submission is followed, is out of reach once (restarted),
    then busy once (its database out), then says the version is rated."""

    def __init__(self) -> None:
        super().__init__("http://arena.invalid", "t0ken")
        self.refusals = [
            client.ClientError("cannot reach http://arena.invalid: Connection refused"),
            client.ClientError("GET /api/versions/7: 503 Service Unavailable: out", 503, 4.0),
        ]

    def request(self, method: str, path: str, body: bytes | None = None) -> client.Json:
        assert (method, path) == ("GET", "/api/versions/7")
        if self.refusals:
            raise self.refusals.pop(0)
        return {"id": 7, "number": 1, "state": "rated", "steps": []}


def test_a_submission_is_followed_through_a_restart_and_an_outage() -> None:
    lines: list[str] = []
    waits: list[float] = []
    sent = {"id": 7, "number": 1, "state": "queued"}
    done = client._follow(_Unsteady(), "calm", sent, 10, lines.append, 0.0, waits.append)
    assert done.reached_ladder
    # Out of reach: 1 s; then busy, asking for 4 s, which is more than the doubled 2 s.
    assert waits[:2] == [1.0, 4.0], waits
    said = [line for line in lines if line.startswith("the arena is")]
    assert said[0].startswith("the arena is out of reach (cannot reach"), said
    assert said[1].startswith("the arena is busy (GET /api/versions/7: 503"), said
    assert all(line.endswith(("asking again in 1 s", "asking again in 4 s")) for line in said)
    # Its end is the answer, not a line of progress besides: the command shows it once.
    assert done.version["state"] == "rated" and not [line for line in lines if "rated" in line]


def test_init_keeps_a_copy_of_the_rulesheets_its_config_names_beside_it(tmp_path: Path) -> None:
    """A config naming its rulesheet beside it makes an arena that keeps its own copy: the
    arena's config, in the arena's directory, names it from there."""
    given = tmp_path / "given"
    (given / "rules").mkdir(parents=True)
    shutil.copy(RULESHEETS / "ticblock.kif", given / "rules" / "tb.kif")
    config = given / "cup.yaml"
    (given / "books").mkdir()
    (given / "books" / "tb.txt").write_text("(mark 2 2) noop; noop (mark 1 1)\n")
    config.write_text(
        "name: cup\ngames:\n  - id: rules/tb.kif\n    openings: {file: books/tb.txt}\n"
        "start_clock: 5000\nplay_clock: 1000\n"
    )
    directory = tmp_path / "arena"
    made = runner.invoke(app, ["arena", "init", str(directory), "--config", str(config)])
    assert made.exit_code == 0, made.output
    for name in ("rules/tb.kif", "books/tb.txt"):
        assert (directory / name).read_bytes() == (given / name).read_bytes()
    arena = open_arena(directory)
    try:
        assert [s.game.id for s in arena.config.tournament.games] == ["tb"]
    finally:
        arena.close()
    # A file outside the config's folder is not copied out of it: named by its absolute path.
    config.write_text(
        "name: cup\ngames: [../elsewhere/tb.kif]\nstart_clock: 5000\nplay_clock: 1000\n"
    )
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(RULESHEETS / "ticblock.kif", tmp_path / "elsewhere" / "tb.kif")
    refused = runner.invoke(
        app, ["arena", "init", str(tmp_path / "other"), "--config", str(config)]
    )
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        f"referee: error: {config}:2: games[0].id: ../elsewhere/tb.kif: outside the config's"
        " folder; the arena keeps its own copy of the files its config names: give this one by"
        " its absolute path"
    )
    assert not (tmp_path / "other").exists()
