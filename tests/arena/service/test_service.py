"""The arena as its users meet it: `referee arena serve` on a real port, three authors
adding bots with `referee arena submit`, on SQLite and on PostgreSQL.

A good Python bot and a good C bot (built by its `build`) reach the ladder and play; a bot
that does not build, one whose output is never flushed and an archive with `../` in a path
each end with their reason and advice, which only their author (and the organiser) reads.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.players.starter import STARTERS
from tests.support.arena import SERVICE_CONFIG as CONFIG
from tests.support.arena import token_of, wait_for
from tests.support.arena_serving import DEADLINE_S, Served, serve_command, serving
from tests.support.paths import ROOT

runner = CliRunner()


def bot(directory: Path, name: str, run: str, build: str | None, **files: str | Path) -> Path:
    """A bot's directory: its bot.yaml and its files (text, or a file to copy)."""
    directory.mkdir()
    manifest = f"name: {name}\nrun: {run}\n" + (f"build: {build}\n" if build else "")
    (directory / "bot.yaml").write_text(manifest)
    for file_name, content in files.items():
        target = directory / file_name.replace("_dot_", ".")
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content)
    return directory


def climbing_archive(path: Path) -> Path:
    """A bot whose archive holds a member that climbs out of its directory."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (
            ("bot.yaml", b"name: climber\nrun: /usr/bin/python3 bot.py\n"),
            ("bot.py", (STARTERS / "random_player.py").read_bytes()),
            ("../outside.py", b"print('out')\n"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def submit(url: str, token: str, path: Path, *options: str) -> tuple[int, str]:
    result = runner.invoke(app, ["arena", "submit", url, str(path), "--token", token, *options])
    return result.exit_code, result.stdout


@pytest.fixture
def authors(tmp_path: Path, database_url: str | None) -> tuple[Path, dict[str, str]]:
    """An arena made with `referee arena init`, with three authors: its directory and every
    token by name (the organiser's too)."""
    config = tmp_path / "arena.yaml"
    config.write_text(CONFIG)
    directory = tmp_path / "arena"
    database = [] if database_url is None else ["--database", database_url]
    made = runner.invoke(app, ["arena", "init", str(directory), "--config", str(config), *database])
    assert made.exit_code == 0, made.output
    tokens = {"organiser": token_of(made.stdout)}
    for name in ("ada", "grace", "linus"):
        added = runner.invoke(app, ["arena", "author", "add", str(directory), name])
        assert added.exit_code == 0, added.output
        tokens[name] = token_of(added.stdout)
    return directory, tokens


@pytest.mark.slow
def test_good_bots_climb_and_the_others_are_told_why(
    authors: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    directory, tokens = authors
    players, mistakes = STARTERS, ROOT / "tests" / "players" / "mistakes"
    python_bot = bot(
        tmp_path / "py",
        "snake",
        "/usr/bin/python3 bot.py",
        None,
        bot_dot_py=players / "random_player.py",
    )
    c_bot = bot(
        tmp_path / "c",
        "sea",
        "./bot",
        "cc -O2 -o bot random_player.c",
        random_player_dot_c=players / "random_player.c",
    )
    unbuildable = bot(
        tmp_path / "broken", "broken", "./bot", "cc -o bot broken.c", broken_dot_c="int main( {\n"
    )
    unflushed = bot(
        tmp_path / "unflushed",
        "quiet",
        "./bot",
        "cc -o bot unflushed.c",
        unflushed_dot_c=mistakes / "unflushed.c",
    )
    climber = climbing_archive(tmp_path / "climber.tar.gz")

    with serving(directory) as served:
        url = served.url
        code, said = submit(url, tokens["ada"], python_bot)
        assert code == 0, said
        assert said.splitlines()[0] in ("snake.1: placing", "snake.1: rated")
        code, said = submit(url, tokens["grace"], c_bot)
        assert code == 0, said
        assert said.splitlines()[0] in ("sea.1: placing", "sea.1: rated")

        code, said = submit(url, tokens["ada"], unbuildable)
        assert code == 1
        assert said.splitlines()[:2] == [
            "broken.1: failed",
            "reason: the build failed: exit status 1",
        ]
        # The compiler's own words come with it.
        assert any(
            line.startswith("advice: build: ") and "broken.c" in line for line in said.splitlines()
        ), said
        code, said = submit(url, tokens["grace"], unflushed)
        assert code == 1
        assert said.splitlines()[0] == "quiet.1: failed"
        assert "reason: validation: FAIL" in said
        assert "fflush(stdout)" in said  # validate's advice for C
        code, said = submit(url, tokens["linus"], climber, "--name", "climber")
        assert code == 1
        assert said.splitlines()[:2] == [
            "climber.1: failed",
            "reason: '../outside.py': the path goes up (..)",
        ]
        assert not (directory / "bots" / "outside.py").exists()

        # The good ones play each other on the ladder, and are rated.
        def rated() -> bool:
            _, board = served.get("/api/leaderboard", None)
            rows = {row["bot"]: row for row in board["leaderboard"]}
            return set(rows) == {"snake", "sea"} and all(
                row["state"] == "rated" and row["matches"] >= 2 and row["rating"] is not None
                for row in rows.values()
            )

        wait_for("both good bots rated", rated)
        status, matches = served.get("/api/matches?bot=sea&limit=5", tokens["ada"])
        assert status == 200 and matches["matches"]
        assert {seat["bot"] for seat in matches["matches"][0]["seats"]} == {"snake", "sea"}

        assert_private(served, tokens)


def assert_private(served: Served, tokens: dict[str, str]) -> None:
    """Reasons, advice and logs reach their author and the organiser, nobody else."""
    owners = {"broken": "ada", "quiet": "grace", "climber": "linus"}
    for bot_name, owner in owners.items():
        status, page = served.get(f"/api/bots/{bot_name}", tokens[owner])
        assert status == 200
        (version,) = page["versions"]
        assert version["state"] == "failed" and version["reason"]
        steps = f"/api/versions/{version['id']}"
        _, mine = served.get(steps, tokens[owner])
        failed = [step for step in mine["steps"] if step["state"] == "failed"]
        assert len(failed) == 1
        log = f"{steps}/steps/{failed[0]['kind']}"
        assert served.get(log, tokens[owner])[0] == 200
        assert served.get(log, tokens["organiser"])[0] == 200
        for other in set(tokens) - {owner, "organiser"}:
            status, theirs = served.get(f"/api/bots/{bot_name}", tokens[other])
            assert status == 200
            text = repr(theirs)
            assert version["reason"] not in text and "advice" not in text
            assert served.get(log, tokens[other])[0] == 403
        assert served.get(log, None)[0] == 401


def test_a_second_serve_of_one_arena_is_refused_in_one_line(
    authors: tuple[Path, dict[str, str]],
) -> None:
    directory, _ = authors
    second = serve_command(directory)
    with serving(directory) as served:
        refused = subprocess.run(
            second, capture_output=True, text=True, timeout=DEADLINE_S, cwd=ROOT, check=False
        )
        assert refused.returncode == 2, refused.stderr
        errors = [line for line in refused.stderr.splitlines() if line.startswith("referee:")]
        assert len(errors) == 1, refused.stderr
        assert (
            "another `referee arena serve` is serving this arena, or `referee arena final`"
            in errors[0]
        )
        # The first goes on.
        assert served.get("/api/leaderboard", None)[0] == 200
    # Once it has stopped (killed: the system lets its lock go), the arena is served again.
    with serving(directory) as again:
        assert again.get("/api/leaderboard", None)[0] == 200
