"""The page "Write a bot": this arena's games, clocks and limits as its config sets them; each
starter bot offered as an archive that unpacks to a bot the arena takes, the same bytes at
every download; only the starters the arena's jail can build and run; nothing but those
archives served under /starters/; and a starter downloaded from the page and submitted
unchanged reaches the ladder."""

from __future__ import annotations

import html
import os
import re
import shlex
import stat
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from referee.arena.intake.archive import Caps, unpack
from referee.arena.intake.submissions import archive_limit
from referee.arena.store.config import SubmissionCaps
from referee.arena.store.manifest import lift, read_manifest
from referee.arena.web.api import create_app
from referee.arena.web.guide import jail_word, starter_offer
from referee.games import RULESHEETS
from referee.players.starter import STARTER_OF, STARTERS, Language
from referee.sandbox.isolation import machine_protections
from tests.support.arena import SERVICE_CONFIG, StandIn, wait_for
from tests.support.arena_databases import ArenaMaker
from tests.support.arena_pages import Running, arena_served, upload_by_api
from tests.support.arena_serving import DEADLINE_S
from tests.support.facilities import missing
from tests.support.paths import EXAMPLES

# An arena whose every figure on the page is its own: two games, one with clocks of its own.
CONFIG = f"""\
name: guide-test
games:
  - ticblock
  - {{id: quad, start_clock: 3000, play_clock: 250}}
  - {EXAMPLES / "tictactoe.kif"}
start_clock: 7000
play_clock: 1500
time_bank: 30000
policy: random
limits: {{memory_mb: 384, cpu_s: 77, processes: 33, disk_mb: 48}}
arena:
  placement_matches: 5
  submission: {{max_mb: 3, max_files: 123, per_hour: 9}}
  build: {{seconds: 45, memory_mb: 768}}
  validate: {{matches_per_role: 2}}
  suspend: {{after: 17, faults: 0.25}}
"""
# A little over the largest starter's archive, unpacked: an archive of a starter is small.
MIB = 1024 * 1024
SMALL = Caps(max_bytes=64 * 1024, max_files=10)


class _Links(HTMLParser):
    """The page's starter links: each one's href and download name, by its language."""

    def __init__(self) -> None:
        super().__init__()
        self.language = ""
        self.links: dict[str, tuple[str, str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "li" and values.get("data-language"):
            self.language = values["data-language"] or ""
        if tag == "a" and values.get("class") == "starter":
            self.links[self.language] = (values["href"] or "", values["download"] or "")


def starter_links(page: str) -> dict[str, tuple[str, str]]:
    parser = _Links()
    parser.feed(page)
    return parser.links


def text_of(page: str) -> str:
    """The page's text, tags dropped and spaces squeezed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def section(page: str, game: str) -> str:
    found = re.search(rf'<section class="game" data-game="{game}">(.*?)</section>', page, re.S)
    assert found, game
    return text_of(found.group(1))


def unpacked(data: bytes, tmp_path: Path, name: str) -> Path:
    """An archive unpacked as the arena unpacks a submission, its one directory lifted."""
    archive = tmp_path / f"{name}.archive"
    archive.write_bytes(data)
    directory = tmp_path / name
    unpack(archive, directory, SMALL)
    lift(directory)
    return directory


@pytest.fixture
def client(make_arena: ArenaMaker) -> Iterator[TestClient]:
    arena = make_arena(config_text=CONFIG)
    with TestClient(create_app(arena, StandIn().hooks())) as opened:
        yield opened


def test_the_page_shows_the_arenas_games_clocks_and_limits_as_configured(
    client: TestClient,
) -> None:
    answer = client.get("/write-a-bot")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    page = answer.text
    ticblock, quad = section(page, "ticblock"), section(page, "quad")
    assert "roles, in order xcplayer, obplayer" in ticblock
    assert "start clock 7 s play clock 1.5 s a move time bank 30 s a match" in ticblock
    assert "roles, in order x, o" in quad
    assert "start clock 3 s play clock 0.25 s a move" in quad
    # A rulesheet's game: its roles read from it, its rules shown as written, escaped.
    tictactoe = section(page, "tictactoe")
    assert "roles, in order xplayer, oplayer" in tictactoe
    shown = re.findall(r'<pre class="log rulesheet">([^<]*)</pre>', page)
    assert [html.unescape(text) for text in shown] == [(EXAMPLES / "tictactoe.kif").read_text()]
    text = text_of(page)
    assert "memory 384 MiB" in text
    assert "CPU time 77 s a match" in text
    assert "processes 33 processes and threads" in text
    assert "disk 48 MiB in HOME and TMPDIR" in text
    assert "unpacked 3 MiB at most, in 123 files and directories at most" in text
    assert "submissions 9 an hour at most" in text
    # The archive's cap, rounded down: never more than the arena takes.
    found = re.search(r"archive ([0-9.]+) MiB at most, as sent", text)
    assert found, text
    cap = archive_limit(SubmissionCaps(3 * MIB, 123, 9))
    assert float(found[1]) * MIB <= cap < (float(found[1]) + 0.1) * MIB
    assert "build 45 s and 768 MiB of memory at most" in text
    # The policy is random: a fault costs the move, not the match.
    assert "a fault costs its move" in text and "forfeits the match" not in text
    # 2 matches in one process and 1 in a fresh one, in each of the 6 roles of the 3 games.
    assert "plays 2 matches in one process" in text and "(18 matches in all)" in text
    assert "it plays 5 placement matches" in text
    assert "more than 25% of its matches, once it has played 17" in text
    # How to check a transcript, with the arena's key (the match page's names the same).
    assert re.search(r"referee replay --verify FILE --key ed25519:[A-Za-z0-9+/=]{40,}", text)
    # Everyone may read it, and the header of every page links to it.
    assert '<a href="/write-a-bot">Write a bot</a>' in client.get("/signin").text


def test_the_protocol_of_an_arena_of_perfect_information_has_no_sees_line(
    client: TestClient,
) -> None:
    text = text_of(client.get("/write-a-bot").text)
    assert "sees STEP" not in text and "imperfect" not in text
    assert "the moves line tells you what it played, and what every other role played" in text


def test_the_protocol_of_a_gdl_ii_arena_explains_sees(make_arena: ArenaMaker) -> None:
    blind = RULESHEETS / "blind-tictactoe.kif"
    arena = make_arena(config_text=f"name: blind-guide\ngames: [ticblock, {blind}]\n")
    with TestClient(create_app(arena, StandIn().hooks())) as opened:
        page = opened.get("/write-a-bot").text
    sees = re.search(r'<tr id="sees">(.*?)</tr>', page, re.S)
    assert sees, "no sees line in the protocol's table"
    assert text_of(sees.group(1)) == (
        " sees STEP MOVE PERCEPT ... in a game of imperfect information (blind-tictactoe),"
        " instead of moves : your own move at STEP and what the rules let you perceive after"
        " it (often nothing), in GDL text; never another role's move nothing "
    )
    text = text_of(page)
    assert "moves lines still tell you everything" not in text
    assert "not sent in a game of imperfect information" in text
    assert "the sees line tells you your own move, forced or not" in text
    # The game itself says so; the built-in one does not.
    assert "information imperfect: each role is told only what" in section(page, "blind-tictactoe")
    assert "imperfect" not in section(page, "ticblock")


def code_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.lstrip().startswith(("//", "#"))]


def test_each_starter_downloads_as_an_archive_of_a_bot_the_arena_takes(
    client: TestClient, tmp_path: Path
) -> None:
    links = starter_links(client.get("/write-a-bot").text)
    # This machine has at least the Python and shell starters' programs in its system.
    assert {"python", "shell"} <= set(links)
    for language, (href, download) in links.items():
        answer = client.get(href)
        assert answer.status_code == 200, href
        assert answer.headers["content-type"] == "application/gzip"
        assert answer.headers["content-disposition"] == f'attachment; filename="{download}"'
        assert client.get(href).content == answer.content, "the same bytes at each download"
        directory = unpacked(answer.content, tmp_path, language)
        manifest = read_manifest(directory)
        # The archive's one directory is the bot's, named as bot.yaml names it.
        assert download == f"{manifest.name}.tar.gz"
        starter = STARTER_OF[Language(language)]
        assert sorted(p.name for p in directory.iterdir()) == sorted(["bot.yaml", starter.file])
        # The starter as new-bot writes it: its code the package's, its comments naming the
        # bot's own files.
        held = (directory / starter.file).read_text()
        assert held == starter.text()
        assert code_lines(held) == code_lines((STARTERS / starter.source).read_text())
        assert (manifest.build is None) == (starter.build is None)
        # Its run command's program is one the arena finds where its bots run.
        program = shlex.split(manifest.run)[0]
        if not program.startswith("./"):
            assert jail_word(Path(program).name, os.environ["PATH"]) == program


def test_a_starter_whose_programs_the_jail_lacks_is_marked_and_not_served(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nowhere = tmp_path / "empty"
    nowhere.mkdir()
    monkeypatch.setenv("PATH", str(nowhere))
    page = client.get("/write-a-bot").text
    assert starter_links(page) == {}
    assert "it needs python3, which the jail does not have" in text_of(page)
    assert "it needs javac, java, which the jail does not have" in text_of(page)
    assert client.get("/starters/python.tar.gz").status_code == 404


def test_an_interpreter_found_first_outside_the_system_is_named_by_its_path_in_the_system(
    tmp_path: Path,
) -> None:
    system = "/usr/bin"
    if not (Path(system) / "python3").is_file():
        missing("no /usr/bin/python3 on this machine")
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python3"
    shim.write_text('#!/bin/sh\nexec pyenv exec python3 "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    assert jail_word("python3", system) == "python3"
    assert jail_word("python3", f"{shims}{os.pathsep}{system}") == f"{system}/python3"
    assert jail_word("python3", str(shims)) is None
    offer = starter_offer(Language.PYTHON, f"{shims}{os.pathsep}{system}")
    assert offer.offered and offer.manifest.run == f"{system}/python3 bot.py"
    # A compiled starter's build is run by the jail's shell, which finds its compiler itself.
    c = starter_offer(Language.C, str(shims))
    assert c.lacking == ("cc",) and c.manifest.build == "cc -O2 -o bot bot.c"


@pytest.mark.parametrize(
    "path",
    [
        "/starters/cobol.tar.gz",
        "/starters/python",
        "/starters/python.zip",
        "/starters/PYTHON.tar.gz",
        "/starters/random_player.py",
        "/starters/..%2Fplayers%2Fstarters%2Frandom_player.py",
        "/starters/%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/starters/python.tar.gz%00",
        "/starters/python.tar.gz/..",
        "/starters/",
    ],
)
def test_nothing_but_an_offered_starter_is_served_under_starters(
    client: TestClient, path: str
) -> None:
    answer = client.get(path)
    assert answer.status_code == 404, path
    assert answer.headers["content-type"] != "application/gzip"
    assert "import random" not in answer.text and "[project]" not in answer.text


def offered_links(arena: Running) -> dict[str, tuple[str, str]]:
    with urllib.request.urlopen(f"{arena.url}/write-a-bot", timeout=DEADLINE_S) as answer:
        return starter_links(answer.read().decode())


def submit_unchanged(arena: Running, href: str, tmp_path: Path) -> int:
    """Download the archive at `href` and submit it as it is, as ada, under the name its
    bot.yaml says (as the page tells the author): the version's id."""
    with urllib.request.urlopen(f"{arena.url}{href}", timeout=DEADLINE_S) as answer:
        archive = answer.read()
    name = read_manifest(unpacked(archive, tmp_path, href.rsplit("/", 1)[1])).name
    status, said = upload_by_api(arena, "ada", name, archive)
    assert status == 202, said
    return int(said["id"])


def wait_for_the_ladder(arena: Running, versions: dict[str, int]) -> None:
    """Until every version is placing or rated; failed at once if one fails."""

    def on_the_ladder() -> bool:
        states = {}
        for language, version in versions.items():
            status, shown = arena.served.get(f"/api/versions/{version}", arena.tokens["ada"])
            assert status == 200, shown
            assert shown["state"] != "failed", (language, shown)
            states[language] = shown["state"]
        return all(state in ("placing", "rated") for state in states.values())

    wait_for(f"{', '.join(versions)} on the ladder", on_the_ladder)


@pytest.mark.slow
def test_a_starter_downloaded_from_the_page_and_submitted_unchanged_reaches_the_ladder(
    tmp_path: Path,
) -> None:
    with arena_served(tmp_path, SERVICE_CONFIG, ("ada",)) as arena:
        href, _ = offered_links(arena)["python"]
        wait_for_the_ladder(arena, {"python": submit_unchanged(arena, href, tmp_path)})


@pytest.mark.slow
@pytest.mark.starters
def test_every_starter_the_page_offers_reaches_the_ladder_unchanged(tmp_path: Path) -> None:
    with arena_served(tmp_path, SERVICE_CONFIG, ("ada",)) as arena:
        links = offered_links(arena)
        if not machine_protections().memory_by_cgroup:
            # Limited by address space only, a JVM, Go or Node program may not start.
            for language in ("java", "go", "javascript"):
                links.pop(language, None)
        versions = {
            language: submit_unchanged(arena, href, tmp_path)
            for language, (href, _) in links.items()
        }
        wait_for_the_ladder(arena, versions)
