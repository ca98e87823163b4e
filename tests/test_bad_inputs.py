"""Hostile inputs: each gets one line on standard error and the documented exit code, in a
referee process whose memory is capped, with no traceback and no hang."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.tournaments.config import MAX_CONFIG_DEPTH, MAX_CONFIG_NODES

EXIT_BAD_INPUT = 2
# The referee may use this much for any of them; the inputs would take gigabytes unchecked.
MEMORY_CAP = 1024 * 1024 * 1024
HANG_GUARD_S = 60


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _referee(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        preexec_fn=_capped,
        check=False,
    )


def _alias_bomb(path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    path.write_text("\n".join(lines) + "\n")


def _deep_yaml(path: Path) -> None:
    path.write_text("name: x\ngames: " + "[" * 50_000 + "]" * 50_000 + "\n")


def _huge_config(path: Path) -> None:
    path.write_text("# padding\n" * 200_000 + "name: x\n")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _deep_json(path: Path) -> None:
    path.write_text("[" * 200_000 + "]" * 200_000)


def _malformed_transcript(path: Path) -> None:
    path.write_text('{"schema": "referee-tra')


# (command, how the input is made, what the one line says)
CASES: dict[str, tuple[str, Callable[[Path], None] | str, str]] = {
    "yaml alias bomb": (
        "tournament",
        _alias_bomb,
        f"more than {MAX_CONFIG_NODES} values once its aliases are expanded",
    ),
    "yaml nested 50,000 deep": ("tournament", _deep_yaml, f"nested more than {MAX_CONFIG_DEPTH}"),
    "config of 2 MiB": ("tournament", _huge_config, "cannot read: larger than 1 MiB"),
    "config from /dev/zero": ("tournament", "/dev/zero", "cannot read: not a regular file"),
    "config from a FIFO": ("tournament", _fifo, "cannot read: not a regular file"),
    "json nested 200,000 deep": ("replay", _deep_json, "JSON nested too deeply"),
    "transcript from /dev/zero": ("replay", "/dev/zero", "cannot read: not a regular file"),
    "transcript from a FIFO": ("replay", _fifo, "cannot read: not a regular file"),
    "malformed transcript": ("replay", _malformed_transcript, "the file ends early"),
    "GGP match nested 200,000 deep": ("import", _deep_json, "JSON nested too deeply"),
    "GGP match from a FIFO": ("import", _fifo, "cannot read: not a regular file"),
    "GGP match cut short": ("import", _malformed_transcript, "the file ends early"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_input_gets_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    command, make, said = CASES[case]
    if isinstance(make, str):
        path = Path(make)
    else:
        path = tmp_path / "input"
        make(path)
    args = ["replay", "--verify", str(path)] if command == "replay" else [command, str(path)]

    result = _referee(*args)

    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"referee: error: {path}") and said in line, line


CONFIG_HEAD = "name: t\ngames: [ticblock]\nplayers:\n  - {name: a, command: random}\n"
# A setting that would take the machine or the tournament with it, and what the line says.
CONFIG_CASES = {
    "a billion rounds": ("rounds: 1000000000", "rounds: the schedule has 2000000000 matches"),
    "memory beyond the machine": (
        "limits: {memory_mb: 99999999999999}",
        "limits: limit memory_mb must be at most",
    ),
    "10^20 processes": (
        "limits: {processes: 100000000000000000000}",
        "limit processes must be at most 4194304",
    ),
    "a clock of 10^20 ms": ("play_clock: 100000000000000000000", "must be at most 86400000 ms"),
    "a 50-digit seed": ("seed: " + "1234567890" * 5, "seed: must be less than or equal to"),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_a_config_beyond_what_can_be_honoured_is_refused_before_anything_starts(
    tmp_path: Path, case: str
) -> None:
    setting, said = CONFIG_CASES[case]
    path = tmp_path / "t.yaml"
    path.write_text(f"{CONFIG_HEAD}  - {{name: b, command: random}}\n{setting}\n")

    result = _referee("tournament", str(path))

    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"referee: error: {path}:") and said in line, line
    assert not (tmp_path / "results").exists(), "nothing started"


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--memory-mb", "99999999999999"], "limit memory_mb must be at most"),
        (["--play-clock", "100000000000000000000"], "play clock must be at most 86400000 ms"),
        (["--seed", "1234567890" * 5], "Invalid value for '--seed'"),
    ],
    ids=["memory", "clock", "seed"],
)
def test_play_options_beyond_what_can_be_honoured_are_refused(
    tmp_path: Path, option: list[str], said: str
) -> None:
    out = tmp_path / "m.json"
    seats = ["-p", "xcplayer=random", "-p", "obplayer=random"]
    result = _referee("play", "ticblock", *seats, *option, "--out", str(out))
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("referee: error:") and said in line, line
    assert not out.exists()
