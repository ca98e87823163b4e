"""The starter bots of referee/players/starters/, one per language, built as docs/protocol.md
says and played at the default limits; and Java bots that live within a seat's memory, or die
at it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.players.starters import STARTERS as SOURCES
from referee.records.transcript import read_transcript
from referee.sandbox.isolation import machine_protections
from tests.conftest import ROOT, SHARED

JAVA_BOTS = Path(__file__).resolve().parent / "players" / "java"
runner = CliRunner()

pytestmark = pytest.mark.usefixtures("every_transcript_verifies")


@dataclass(frozen=True)
class Starter:
    """A starter bot: its file in referee/players/starters/, the command that builds it into a
    directory (`{out}`), if it needs one, and the command that runs it, as docs/protocol.md gives
    them."""

    source: str
    build: str | None
    run: str

    def words(self, template: str, out: Path) -> list[str]:
        return shlex.split(template.format(out=out, source=SOURCES / self.source))

    def tools(self) -> set[str]:
        """The compiler and the runtime it needs: not a program it is built into."""
        commands = (self.build, self.run)
        return {c.split()[0] for c in commands if c is not None and not c.startswith("{out}")}


STARTERS = {
    # This interpreter: a `python3` found first on PATH may be a shim the jail cannot run.
    "python": Starter("random_player.py", None, f"{sys.executable} {{source}}"),
    "c": Starter("random_player.c", "cc -O2 -o {out}/bot {source}", "{out}/bot"),
    "c++": Starter("random_player.cpp", "g++ -O2 -o {out}/bot {source}", "{out}/bot"),
    "java": Starter("RandomPlayer.java", "javac -d {out} {source}", "java -cp {out} RandomPlayer"),
    "go": Starter("random_player.go", "go build -o {out}/bot {source}", "{out}/bot"),
    "rust": Starter("random_player.rs", "rustc -O -o {out}/bot {source}", "{out}/bot"),
    "javascript": Starter("random_player.js", None, "node {source}"),
}


def _missing(reason: str) -> None:
    """A toolchain or facility this machine lacks: a skip that says so; under CI, a failure."""
    pytest.fail(reason) if os.environ.get("CI") else pytest.skip(reason)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each starter whose toolchain is installed, built once: its command, or why it is not."""
    commands = {}
    for language, starter in STARTERS.items():
        absent = sorted(tool for tool in starter.tools() if shutil.which(tool) is None)
        if absent:
            commands[language] = f"missing: {', '.join(absent)} is not installed"
            continue
        out = tmp_path_factory.mktemp(language.replace("+", "p"))
        out.chmod(0o755)  # a root referee's players run as users of their own
        if starter.build is not None:
            # Go keeps its build cache in HOME; the test's own, not the developer's.
            env = {**os.environ, "GOCACHE": str(out / "cache"), "GOPATH": str(out / "gopath")}
            build = starter.words(starter.build, out)
            subprocess.run(build, check=True, capture_output=True, env=env, timeout=300)
        commands[language] = shlex.join(starter.words(starter.run, out))
    return commands


def _command(built: dict[str, str], language: str) -> str:
    command = built[language]
    if command.startswith("missing: "):
        _missing(f"the {language} starter cannot be built: {command.removeprefix('missing: ')}")
    return command


def _jail() -> None:
    # Unjailed, the address space is the only firm memory limit, and a JVM cannot start in it.
    if not machine_protections().memory_by_cgroup:
        _missing("no memory cgroup on this machine: memory is limited by address space only")


@pytest.mark.parametrize("language", list(STARTERS))
def test_each_starter_passes_validate_and_plays_a_full_match_at_the_default_limits(
    tmp_path: Path, built: dict[str, str], language: str
) -> None:
    command = _command(built, language)
    if language in ("java", "go", "javascript"):
        _jail()
    games = f"ticblock,{SHARED / 'gdl' / 'ticTacToe.kif'}"
    result = runner.invoke(app, ["validate", command, "--games", games, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass", [c for c in report["checks"] if c["verdict"] != "pass"]
    out = tmp_path / "match.json"
    args = ["play", "quad", "-p", f"x={command}", "-p", "o=random", "--out", str(out)]
    result = runner.invoke(app, [*args, "--policy", "forfeit"])
    assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert (transcript.end_reason, transcript.faults) == ("terminal", [])


def test_every_starter_is_under_60_lines_and_shown_in_the_protocol_docs() -> None:
    docs = (ROOT / "docs" / "protocol.md").read_text()
    for starter in STARTERS.values():
        assert len((SOURCES / starter.source).read_text().splitlines()) < 60, starter.source
        assert f"| `referee/players/starters/{starter.source}` |" in docs, starter.source


@pytest.fixture(scope="module")
def keeper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the compiled Keeper, a Java bot that keeps its argument's MiB live."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        _missing("java is not installed")
    _jail()
    out = tmp_path_factory.mktemp("keeper")
    out.chmod(0o755)  # a root referee's players run as users of their own
    subprocess.run(
        ["javac", "-d", str(out), str(JAVA_BOTS / "Keeper.java")], check=True, timeout=300
    )
    return out


def _play_keeper(tmp_path: Path, keeper: Path, live_mib: int) -> tuple[int, Path]:
    out = tmp_path / "keeper.json"
    command = f"java -cp {keeper} Keeper {live_mib}"
    args = ["play", "ticblock", "-p", f"xcplayer={command}", "-p", "obplayer=random"]
    result = runner.invoke(app, [*args, "--memory-mb", "512", "--out", str(out)])
    return result.exit_code, out


def test_a_java_bot_that_keeps_50_mib_and_makes_garbage_plays_a_match_in_512_mib(
    tmp_path: Path, keeper: Path
) -> None:
    code, out = _play_keeper(tmp_path, keeper, 50)
    assert code == 0
    transcript = read_transcript(out)
    assert (transcript.end_reason, transcript.faults) == ("terminal", [])
    # It made 64 MiB of garbage for each of its moves: more than the seat's memory.
    assert 64 * sum(1 for step in transcript.steps if step.moves["xcplayer"] != "noop") > 512


def test_a_java_bot_that_keeps_1_gib_dies_with_the_memory_limit(
    tmp_path: Path, keeper: Path
) -> None:
    code, out = _play_keeper(tmp_path, keeper, 1024)
    assert code != 0
    (fault,) = read_transcript(out).faults
    # Killed by the memory cgroup at 512 MiB: named for the limit, not taken for a crash.
    assert (fault.role, fault.kind, fault.detail) == (
        "xcplayer",
        "resource",
        "exceeded its memory limit 512 MiB",
    )
