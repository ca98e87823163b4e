"""The starter bots, one per language: written by `referee new-bot`, built and validated by
the commands it prints, run as printed, and played at the default limits; and Java bots that
live within a seat's memory, or die at it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath

import pytest
from typer.testing import CliRunner

from referee.arena.store.manifest import MANIFEST, Manifest, bot_name, read_manifest
from referee.cli import app
from referee.players.starter import STARTER_OF, STARTERS, InBot, Language, Word, command
from referee.records.transcript import read_transcript
from referee.sandbox.isolation import machine_protections
from tests.support.facilities import missing
from tests.support.paths import EXAMPLES, ROOT
from tests.support.pyenv import PyenvShim

JAVA_BOTS = Path(__file__).resolve().parent / "players" / "java"
# The bot's directory, as an author might name it: a space the printed commands must quote.
BOT_DIR = "my bot"
runner = CliRunner()

pytestmark = [pytest.mark.starters, pytest.mark.usefixtures("every_transcript_verifies")]


def _tools(language: Language) -> list[str]:
    """The programs a starter's build and run need installed: its compiler, its runtime."""
    starter = STARTER_OF[language]
    commands = [starter.run] if starter.build is None else [starter.build, starter.run]
    return [words[0] for words in commands if isinstance(words[0], str)]


def _shell(line: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a printed command line through the shell from `cwd`, as its author would: its
    output, after a check that it succeeded. `referee` is this package's."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(
        line,
        shell=True,
        cwd=cwd,
        env={**os.environ, "PATH": path, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
    return done.stdout


@dataclass(frozen=True)
class Written:
    """A bot new-bot wrote: where its command ran, and the command lines it printed."""

    cwd: Path
    commands: list[str]

    @property
    def validate(self) -> str:
        return self.commands[-1]

    @property
    def program(self) -> str:
        """The player command given to validate."""
        words = shlex.split(self.validate)
        assert words[:2] == ["referee", "validate"] and len(words) == 3, self.validate
        return words[2]


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[Language, Written | str]:
    """Each starter whose toolchain is installed, written by new-bot and built by the command
    it printed; or why not."""
    bots: dict[Language, Written | str] = {}
    for language in Language:
        absent = [tool for tool in _tools(language) if shutil.which(tool) is None]
        if absent:
            bots[language] = f"{', '.join(absent)} is not installed"
            continue
        here = tmp_path_factory.mktemp(language.value)
        here.chmod(0o755)  # a root referee's players run as users of their own
        said = _shell(f"referee new-bot {language} {shlex.quote(BOT_DIR)}", here)
        commands = [line.removeprefix("  ") for line in said.splitlines() if line.startswith("  ")]
        # Go keeps its build cache in HOME; the test's own, not the developer's.
        env = {"GOCACHE": str(here / "cache"), "GOPATH": str(here / "gopath")}
        for build in commands[:-1]:
            _shell(build, here, env)
        bots[language] = Written(here, commands)
    return bots


def _bot(written: dict[Language, Written | str], language: Language) -> Written:
    bot = written[language]
    if isinstance(bot, str):
        missing(f"the {language} starter cannot be built: {bot}")
    assert isinstance(bot, Written)
    return bot


def _jail() -> None:
    # Unjailed, the address space is the only firm memory limit, and a JVM cannot start in it.
    if not machine_protections().memory_by_cgroup:
        missing("no memory cgroup on this machine: memory is limited by address space only")


@pytest.mark.parametrize("language", list(Language))
def test_each_starter_written_by_new_bot_passes_validate_as_printed_and_plays_a_full_match(
    tmp_path: Path, written: dict[Language, Written | str], language: Language
) -> None:
    bot = _bot(written, language)
    if language in (Language.JAVA, Language.GO, Language.JAVASCRIPT):
        _jail()
    assert len(bot.commands) == (1 if STARTER_OF[language].build is None else 2), bot.commands
    games = shlex.quote(f"ticblock,{EXAMPLES / 'tictactoe.kif'}")
    report = json.loads(_shell(f"{bot.validate} --games {games} --json", bot.cwd))
    assert report["verdict"] == "pass", [c for c in report["checks"] if c["verdict"] != "pass"]
    out = tmp_path / "match.json"
    play = ["play", "quad", "-p", f"x={bot.program}", "-p", "o=random", "--out", str(out)]
    _shell(shlex.join(["referee", *play, "--policy", "forfeit"]), bot.cwd)
    transcript = read_transcript(out)
    assert (transcript.end_reason, transcript.faults) == ("terminal", [])


@pytest.mark.parametrize("language", list(Language))
def test_a_new_bots_yaml_is_read_by_the_arena_and_its_build_outputs_are_ignored(
    tmp_path: Path, language: Language
) -> None:
    result = runner.invoke(app, ["new-bot", language, str(tmp_path / "Ada's bot!")])
    assert result.exit_code == 0, result.output
    directory = tmp_path / "Ada's bot!"
    starter = STARTER_OF[language]
    here = PurePath(".")
    build = command(starter.build, here) if starter.build is not None else None
    assert read_manifest(directory) == Manifest("Ada-s-bot", command(starter.run, here), build)
    # The starter, its comment naming the files here (test below).
    assert (directory / starter.file).read_text() == starter.text()
    ignored = directory / ".gitignore"
    assert (ignored.read_text().split() if ignored.exists() else []) == list(starter.outputs)
    # What the build writes into the directory, the .gitignore leaves out.
    written = {word.name for word in starter.build or () if isinstance(word, InBot)}
    assert written - {starter.file, "."} <= {o.strip("/") for o in starter.outputs}


def test_new_bot_takes_a_language_by_the_suffix_of_its_source(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new-bot", "js", str(tmp_path / "bot")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "bot" / "bot.js").is_file()


def test_new_bot_refuses_an_unknown_language_in_one_line_naming_the_languages(
    tmp_path: Path,
) -> None:
    result = runner.invoke(app, ["new-bot", "cobol", str(tmp_path / "bot")])
    assert result.exit_code == 2
    assert result.stderr == (
        "referee: error: unknown language 'cobol': choose python, c, cpp, go, javascript,"
        " rust, java, shell (or py, js, rs, sh)\n"
    )
    assert not (tmp_path / "bot").exists()


def test_new_bot_refuses_a_directory_that_holds_anything_and_overwrites_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "bot.c").write_text("mine")
    result = runner.invoke(app, ["new-bot", "c", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"referee: error: {tmp_path}: is not empty; new-bot writes into a new or empty one\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["bot.c"]
    assert (tmp_path / "bot.c").read_text() == "mine"
    result = runner.invoke(app, ["new-bot", "c", str(tmp_path / "bot.c")])
    assert (result.exit_code, result.stderr.count("\n")) == (2, 1)


def test_new_bot_writes_into_an_empty_directory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new-bot", "shell", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.sh", MANIFEST]


def test_the_validate_new_bot_prints_names_the_interpreter_a_pyenv_shim_stands_for(
    tmp_path: Path, pyenv_shim: PyenvShim, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{pyenv_shim.shim.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYENV_VERSION", "3.99.1")
    result = runner.invoke(app, ["new-bot", "python", str(tmp_path / "bot")])
    assert result.exit_code == 0, result.output
    validate = f'referee validate "{pyenv_shim.real} {tmp_path / "bot" / "bot.py"}"'
    assert result.stdout.splitlines()[-1] == f"  {validate}"
    # The arena's machine has interpreters of its own.
    assert read_manifest(tmp_path / "bot").run == "python3 bot.py"


@pytest.mark.parametrize("language", list(Language))
def test_a_new_bots_source_comment_names_the_files_new_bot_wrote(
    tmp_path: Path, language: Language
) -> None:
    result = runner.invoke(app, ["new-bot", language.value, str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    starter = STARTER_OF[language]
    text = (tmp_path / "b" / starter.file).read_text()
    # `go build -o bot bot.go`, not the starter's own names, which are not in the directory.
    if starter.file != starter.source:
        assert PurePath(starter.source).stem not in text
    stem = PurePath(starter.file).stem
    comment = [line for line in text.splitlines() if line.startswith(("//", "#"))]
    commands = [line for line in comment if "Build: " in line or "Run: " in line]
    assert all(f" {starter.file}" in line for line in commands), commands
    # The code itself is the starter's, only its comment renamed.
    code = (STARTERS / starter.source).read_text().splitlines()
    assert [line for line in text.splitlines() if line not in comment] == [
        line for line in code if not line.startswith(("//", "#"))
    ]
    if starter.build is not None and language is not Language.JAVA:
        assert f"-o {stem} {starter.file}" in text


@pytest.mark.parametrize(
    ("directory", "name"),
    [("my-bot", "my-bot"), ("Ada's bot!", "Ada-s-bot"), ("__x", "x"), ("été", "t"), ("…", "bot")],
)
def test_a_bot_is_named_after_its_directory_as_the_arena_allows(directory: str, name: str) -> None:
    assert bot_name(directory) == name
    assert bot_name("b" * 50) == "b" * 40


def test_the_commands_name_the_bots_files_from_where_they_run() -> None:
    words: tuple[Word, ...] = ("cc", "-o", InBot("bot"), InBot("bot.c"))
    assert command(words, PurePath(".")) == "cc -o bot bot.c"
    assert command(words, PurePath("-x")) == "cc -o ./-x/bot ./-x/bot.c"
    assert command((InBot("bot"),), PurePath(".")) == "./bot"
    assert command((InBot("bot"),), PurePath("../b")) == "../b/bot"
    assert command((InBot("bot"),), PurePath("/b")) == "/b/bot"
    assert command(("python3", InBot("b.py")), PurePath("a b"), str.upper) == "PYTHON3 'a b/b.py'"


def test_every_starter_is_under_60_lines_and_shown_in_the_protocol_docs() -> None:
    docs = (ROOT / "docs" / "protocol.md").read_text()
    here = PurePath(".")
    for language, starter in STARTER_OF.items():
        assert len((STARTERS / starter.source).read_text().splitlines()) < 60, starter.source
        build = f"`{command(starter.build, here)}`" if starter.build is not None else "none"
        row = f"| `{language}` | `{starter.source}` | {build} | `{command(starter.run, here)}` |"
        assert row in docs, row


@pytest.fixture(scope="module")
def keeper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the compiled Keeper, a Java bot that keeps its argument's MiB live."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        missing("java is not installed")
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


def test_new_bot_warns_when_the_jail_here_finds_no_program_the_bot_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The toolchain outside the system directories the jail shows (a user's ~/.cargo/bin).
    own = tmp_path / "own-bin"
    own.mkdir()
    (own / "rustc").write_text("#!/bin/sh\n")
    (own / "rustc").chmod(0o755)
    monkeypatch.setenv("PATH", str(own))
    result = runner.invoke(app, ["new-bot", "rust", str(tmp_path / "bot")])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: the jail finds no rustc on this machine (it looks on PATH, in the system"
        " directories it shows): an arena on such a machine could not build or run this bot\n"
    )
    assert "build it and validate it:" in result.stdout
    # A program the jail finds: no note.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    result = runner.invoke(app, ["new-bot", "shell", str(tmp_path / "sh-bot")])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
