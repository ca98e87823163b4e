"""The examples of the README and docs run as written: every command of their `sh` blocks,
in a copy of the checkout after the demo tournament (`make demo`), in the order a reader
meets them. A block that cannot run here (a server that runs until stopped, another
machine, the suite itself) says so just above it: `<!-- not run: the reason -->`. A block
that a reader is asked to save (a bot's source) says where: `<!-- file: bot.py -->`; it is
written there, in the copy, before the commands that follow it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A generous bound for one command (a validation of every game, a tournament replayed on a
# loaded machine); a command that hangs fails here rather than stalling the suite.
COMMAND_SECONDS = 600
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>[^>]*\S)\s*-->")
FILE = re.compile(r"<!-- file: (?P<path>[^\s>]+)\s*-->")


@dataclass(frozen=True)
class Command:
    document: Path
    line: int  # where the command starts, counted from 1
    text: str

    def __str__(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}: {self.text}"


@dataclass(frozen=True)
class File:
    path: str  # relative to the checkout
    text: str


@dataclass(frozen=True)
class Block:
    """A fenced block and what the comment just above it says of it."""

    line: int  # the line of its opening fence, counted from 1
    language: str
    body: tuple[str, ...]
    not_run: str | None  # why its commands are not run
    save_as: str | None  # where a reader saves it

    def commands(self, document: Path) -> list[Command]:
        """A `sh` block's commands, each a line or lines joined by `\\`."""
        commands: list[Command] = []
        index = 0
        while index < len(self.body):
            start, text = index, self.body[index]
            while text.endswith("\\"):
                index += 1
                text = text[:-1] + self.body[index]
            if text.strip():
                commands.append(Command(document, self.line + 1 + start, text.strip()))
            index += 1
        return commands


def blocks_of(document: Path) -> list[Block]:
    lines = document.read_text().splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if not lines[index].startswith("```"):
            index += 1
            continue
        opening = index
        above = next((line for line in reversed(lines[:opening]) if line.strip()), "")
        index += 1
        while not lines[index].startswith("```"):
            index += 1
        not_run, save_as = NOT_RUN.search(above), FILE.search(above)
        blocks.append(
            Block(
                opening + 1,
                lines[opening][3:].strip(),
                tuple(lines[opening + 1 : index]),
                not_run and not_run["reason"],
                save_as and save_as["path"],
            )
        )
        index += 1
    return blocks


def steps_of(document: Path) -> list[Command | File]:
    """What a reader does, in order: save the files it gives, run the commands it shows."""
    steps: list[Command | File] = []
    for block in blocks_of(document):
        if block.save_as:
            steps.append(File(block.save_as, "\n".join(block.body) + "\n"))
        elif block.language == "sh" and not block.not_run:
            steps.extend(block.commands(document))
    return steps


def runnable(document: Path) -> list[Command]:
    return [step for step in steps_of(document) if isinstance(step, Command)]


@pytest.fixture(scope="module")
def after_the_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files (what a clone has), with the demo tournament played."""
    copy = tmp_path_factory.mktemp("examples") / "referee"
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():
            (copy / name).symlink_to((ROOT / name).readlink())
        elif (ROOT / name).is_file():
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
    assert len([block for block in blocks if block.language == "sh" and not block.not_run]) >= 5
    readme = runnable(ROOT / "README.md")
    assert any(command.text.startswith("referee new-bot ") for command in readme)
    for document in DOCUMENTS:
        text = document.read_text()
        # A marker the pattern does not take (no reason, a typo) would run its block.
        assert text.count("<!-- not run") == len(NOT_RUN.findall(text)), document
        assert text.count("<!-- file") == len(FILE.findall(text)), document


@pytest.mark.parametrize(
    "document",
    [document for document in DOCUMENTS if runnable(document)],
    ids=lambda document: str(document.relative_to(ROOT)),
)
@pytest.mark.slow
def test_every_command_of_a_document_runs_as_written(after_the_demo: Path, document: Path) -> None:
    for step in steps_of(document):
        if isinstance(step, File):
            (after_the_demo / step.path).write_text(step.text)
            continue
        done = run(after_the_demo, step.text)
        said = (done.stdout + done.stderr).strip().splitlines()[-8:]
        assert done.returncode == 0, f"{step}\nexit {done.returncode}:\n" + "\n".join(said)
