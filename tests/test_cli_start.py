"""The command line starts at once: its version, its help and shell completion load the
command line's own light modules, never what its commands run (the arena, the records, the
presenters) nor the heavy libraries behind them. What is tested is what is imported, in a
fresh process each time; the time it takes is `benchmarks/cli_start.py`'s to measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from referee.cli import main

# Libraries none of which the version, the help or a completion needs: the arena's web
# server and database, the cluster, the grounder, the numbers, the signatures, and the
# terminal's progress bars and Typer's conversion of values (pydantic).
HEAVY_LIBRARIES = (
    "alembic",
    "clingo",
    "cryptography",
    "dask",
    "distributed",
    "jinja2",
    "numpy",
    "psycopg",
    "pydantic",
    "pydantic_core",
    "rich",
    "rustworkx",
    "scipy",
    "sqlalchemy",
    "starlette",
    "uvicorn",
)
# What the commands run, which each imports when it runs.
COMMANDS_WORK = (
    "referee.arena",
    "referee.cli.present",
    # The rule engines and the GDL reasoners: the help names the games from the registry.
    "referee.games.base",
    "referee.games.blocker_parallel",
    "referee.games.double_tictactoe",
    "referee.games.gdl.game",
    "referee.games.hex_pie",
    "referee.games.quad",
    "referee.games.ticblock",
    "referee.cli.running",
    "referee.cli.sandbox",
    "referee.cli.results",
    "referee.gateway",
    "referee.match",
    "referee.records",
    "referee.report",
    "referee.validate",
    "referee.tournaments.runner",
    "referee.tournaments.standings",
)


def _forbidden(modules: set[str]) -> list[str]:
    """The modules among `modules` that a start of the command line must not load."""
    return sorted(
        name
        for name in modules
        if name.split(".")[0] in HEAVY_LIBRARIES
        or any(name == work or name.startswith(work + ".") for work in COMMANDS_WORK)
    )


def _imported(args: list[str], env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """Run `python -m referee ARGS` in a fresh process: its output, and every module it
    imported (as `-X importtime` lists them)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "referee", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "referee.cli.app" in modules, "the import times were not read"
    return result.stdout, modules


def test_importing_the_app_loads_no_command_work_and_no_heavy_library() -> None:
    probe = "import json, sys; import referee.cli.app; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(result.stdout))
    assert "referee.cli.app" in modules
    assert _forbidden(modules) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--version"], "referee "),
        (["--help"], "Usage: referee [OPTIONS] COMMAND [ARGS]..."),
        (["play", "--help"], "Usage: referee play [OPTIONS] GAME"),
        (["validate", "--help"], "Usage: referee validate [OPTIONS] COMMAND"),
        (["arena", "--help"], "Usage: referee arena [OPTIONS] COMMAND [ARGS]..."),
        (["arena", "serve", "--help"], "Usage: referee arena serve [OPTIONS] DIR"),
        (["arena", "author", "add", "--help"], "Usage: referee arena author add [OPTIONS]"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_the_version_and_every_help_load_no_command_work(args: list[str], said: str) -> None:
    output, modules = _imported(args)
    assert output.startswith(said)
    assert _forbidden(modules) == []


@pytest.mark.parametrize(
    ("words", "completed"),
    [
        ("referee ", "games"),
        ("referee pl", "play"),
        ("referee play --po", "--policy"),
        ("referee standings --format ", "markdown"),
        ("referee arena serve --", "--workers"),
    ],
    ids=lambda value: repr(value) if value.startswith("referee") else "",
)
def test_shell_completion_loads_no_command_work(words: str, completed: str) -> None:
    # What the completion script asks of `referee` at each tab (test_cli.py has its answers).
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {"_REFEREE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    output, modules = _imported([], env)
    assert completed in output.split()
    assert _forbidden(modules) == []


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["random", "ticblock", "--seed", "7"], 0, "ticblock, seed 7\n"),
        (["random", "ticblock", "--seed", "seven"], 2, "Input should be a valid integer"),
        (["random", "ticblock", "--seed", "-1"], 2, "greater than or equal to 0"),
        (["standings", ".", "--format", "html"], 2, "'html' is not one of"),
    ],
)
def test_the_values_a_command_is_given_are_converted_and_checked_as_ever(
    args: list[str], code: int, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Converted only once given (referee.cli.help): given, as Typer converts them.
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == code
    assert said in "".join(capsys.readouterr())
