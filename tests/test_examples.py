"""The examples of the README and docs run as written: every command of their `sh` blocks,
in a copy of the checkout after the demo tournament (`make demo`), in the order a reader
meets them. A block that cannot run here (a server that runs until stopped, another
machine, the suite itself) says so just above it: `<!-- not run: the reason -->`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A generous bound for one command (a validation of every game, a tournament replayed on a
# loaded machine); a command that hangs fails here rather than stalling the suite.
COMMAND_SECONDS = 600
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>[^>]*\S)\s*-->")


@dataclass(frozen=True)
class Command:
    document: Path
    line: int  # where the command starts, counted from 1
    text: str

    def __str__(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}: {self.text}"


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # the line of its opening fence
    commands: tuple[Command, ...]
    not_run: str | None  # the reason it is not run, from the comment just above it


def blocks_of(document: Path) -> list[Block]:
    """The `sh` blocks of a Markdown document, each command a line or lines joined by `\\`."""
    lines = document.read_text().splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```sh":
            index += 1
            continue
        opening = index
        above = next((line for line in reversed(lines[:opening]) if line.strip()), "")
        found = NOT_RUN.search(above)
        commands: list[Command] = []
        index += 1
        while lines[index].strip() != "```":
            start, text = index, lines[index]
            while text.endswith("\\"):
                index += 1
                text = text[:-1] + lines[index]
            if text.strip():
                commands.append(Command(document, start + 1, text.strip()))
            index += 1
        blocks.append(Block(document, opening + 1, tuple(commands), found and found["reason"]))
        index += 1
    return blocks


def runnable(document: Path) -> list[Command]:
    return [
        command for block in blocks_of(document) if not block.not_run for command in block.commands
    ]


@pytest.fixture(scope="module")
def after_the_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files (what a clone has), with the demo tournament played."""
    copy = tmp_path_factory.mktemp("examples") / "referee"
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    demo = run(copy, "referee tournament matches/demo.yaml")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    return copy


def run(where: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A command as a reader types it, in a shell with the referee's environment active."""
    scripts = str(Path(sys.executable).parent)
    environment = {**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-c", command],
        cwd=where,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
    )


def test_the_examples_are_found_and_every_block_not_run_says_why() -> None:
    blocks = [block for document in DOCUMENTS for block in blocks_of(document)]
    assert len([block for block in blocks if not block.not_run]) >= 5
    readme = runnable(ROOT / "README.md")
    assert any(command.text.startswith("referee new-bot ") for command in readme)
    for document in DOCUMENTS:
        text = document.read_text()
        # A marker the pattern does not take (no reason, a typo) would run its block.
        assert text.count("<!-- not run") == len(NOT_RUN.findall(text)), document


@pytest.mark.parametrize(
    "document",
    [document for document in DOCUMENTS if runnable(document)],
    ids=lambda document: str(document.relative_to(ROOT)),
)
def test_every_command_of_a_document_runs_as_written(after_the_demo: Path, document: Path) -> None:
    for command in runnable(document):
        done = run(after_the_demo, command.text)
        said = (done.stdout + done.stderr).strip().splitlines()[-8:]
        assert done.returncode == 0, f"{command}\nexit {done.returncode}:\n" + "\n".join(said)
