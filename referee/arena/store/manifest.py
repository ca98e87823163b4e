"""bot.yaml: what a submission says of its bot, its name and the commands that build and run it.

It sits at the archive's top, or in the archive's single top-level directory (an archive
made with `tar czf bot.tgz mybot/`, as most are): that directory's contents are then lifted
to the top (`lift`), so that a bot always runs at the top of its own directory, wherever it
was packed from.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from referee.arena.store.queries import storable
from referee.errors import SubmissionError
from referee.players.builtin import BUILTIN_PROGRAMS, HUMAN
from referee.players.starter import BOT_YAML
from referee.records.files import yaml_problem
from referee.sandbox.jail import SYSTEM_DIRECTORIES, jail_path

MANIFEST = BOT_YAML
MAX_MANIFEST_BYTES = 64 * 1024
# A bot's name: what it may hold, and how long it may be; it starts with a letter or digit.
_NAME_CHARACTERS = "A-Za-z0-9_-"
MAX_BOT_NAME = 40
BOT_NAME = re.compile(rf"[A-Za-z0-9][{_NAME_CHARACTERS}]{{0,{MAX_BOT_NAME - 1}}}")
_KEYS = ("name", "run", "build")
# What a newcomer who opens bot.yaml needs told: what it is for, and where the rest is.
_HEADER = """\
# What an arena reads of this bot (referee's docs/arena.md): its name on the ladder, the
# shell line that builds it (if it needs building) and the command that runs it, both in
# this directory.
"""


@dataclass(frozen=True)
class Manifest:
    """A bot's name, the command line that runs it (in its directory), and the shell line
    that builds it there, if it needs building."""

    name: str
    run: str
    build: str | None = None


def bot_name(text: str) -> str:
    """`text` made a bot's name: each run of what a name cannot hold a `-` (none at the end),
    starting with a letter or digit, at most 40 long; `bot` when nothing of it is left."""
    name = re.sub(f"[^{_NAME_CHARACTERS}]+", "-", text).lstrip("_-")[:MAX_BOT_NAME].rstrip("-")
    return name or "bot"


def manifest_text(manifest: Manifest) -> str:
    """The bot.yaml that says `manifest`, as read_manifest reads it back."""
    fields = {"name": manifest.name, "build": manifest.build, "run": manifest.run}
    kept = {key: value for key, value in fields.items() if value is not None}
    return _HEADER + yaml.safe_dump(kept, sort_keys=False, allow_unicode=True)


def lift(directory: Path) -> None:
    """Move the contents of `directory`'s single top-level directory up into it, when that
    directory, not the top, holds bot.yaml."""
    if (directory / MANIFEST).exists():
        return
    entries = list(directory.iterdir())
    if len(entries) != 1 or entries[0].is_symlink() or not entries[0].is_dir():
        return
    if not (entries[0] / MANIFEST).is_file():
        return
    # Renamed first, to a name none of its entries has: it may hold one of its own name.
    taken = {entries[0].name, *(entry.name for entry in entries[0].iterdir())}
    aside = directory / next(
        name for n in itertools.count() if (name := f".lifted-{n}") not in taken
    )
    entries[0].rename(aside)
    for entry in aside.iterdir():
        entry.rename(directory / entry.name)
    aside.rmdir()


def read_manifest(directory: Path) -> Manifest:
    """The bot.yaml at the top of `directory`; SubmissionError, as `bot.yaml:LINE: problem`
    where a line is known, for anything wrong with it."""
    path = directory / MANIFEST
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SubmissionError(
            f"{MANIFEST}: not found at the archive's top, nor in a single top-level directory"
        ) from None
    except OSError as error:
        raise SubmissionError(f"{MANIFEST}: cannot be read: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise SubmissionError(f"{MANIFEST}: not a file")
        data = os.read(descriptor, MAX_MANIFEST_BYTES + 1)
    except OSError as error:
        raise SubmissionError(f"{MANIFEST}: cannot be read: {error.strerror}") from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_MANIFEST_BYTES:
        raise SubmissionError(f"{MANIFEST}: larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SubmissionError(f"{MANIFEST}:{line}: not valid UTF-8") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        where, problem = yaml_problem(error)
        raise SubmissionError(
            f"{MANIFEST}{where}: not valid YAML: {problem or 'cannot be parsed'}"
        ) from None
    if not isinstance(root, yaml.MappingNode):
        where = f":{root.start_mark.line + 1}" if root is not None else ""
        raise SubmissionError(f"{MANIFEST}{where}: must be a mapping of name, run and build")
    values: dict[str, tuple[str, int]] = {}
    for key, value in root.value:
        line = key.start_mark.line + 1
        name = key.value if isinstance(key, yaml.ScalarNode) else None
        if name not in _KEYS:
            shown = name if isinstance(name, str) else "a key that is not text"
            raise SubmissionError(
                f"{MANIFEST}:{line}: unknown key {shown!r} (known: {', '.join(_KEYS)})"
            )
        if name in values:
            raise SubmissionError(f"{MANIFEST}:{line}: {name} given twice")
        if not isinstance(value, yaml.ScalarNode) or value.tag != "tag:yaml.org,2002:str":
            raise SubmissionError(f"{MANIFEST}:{line}: {name} must be text")
        values[name] = (value.value, value.start_mark.line + 1)
    for required in ("name", "run"):
        if required not in values:
            raise SubmissionError(f"{MANIFEST}: {required} is missing")
    name, line = values["name"]
    if not BOT_NAME.fullmatch(name):
        raise SubmissionError(
            f"{MANIFEST}:{line}: name {name!r} must be 1 to {MAX_BOT_NAME} letters, digits, _ or -,"
            " starting with a letter or digit"
        )
    run = _command(values["run"], "run", split=True)
    build = _command(values["build"], "build", split=False) if "build" in values else None
    return Manifest(name, run, build)


def _command(value: tuple[str, int], key: str, split: bool) -> str:
    """A command of bot.yaml, checked: not empty, and (`split`: the run command) one line
    that shlex can split."""
    text, line = value
    if "\0" in text:
        raise SubmissionError(f"{MANIFEST}:{line}: {key} holds a NUL byte")
    if not storable(text):
        # A YAML escape (`"\ud800"`) says what no UTF-8 holds, nor any command line.
        raise SubmissionError(
            f"{MANIFEST}:{line}: {key} holds text that is not UTF-8 (a lone surrogate)"
        )
    # The build is a shell script, which may take lines; the run command is one command.
    if split and ("\n" in text.strip() or "\r" in text):
        raise SubmissionError(f"{MANIFEST}:{line}: {key} must be one line")
    if not text.strip():
        raise SubmissionError(f"{MANIFEST}:{line}: {key} is empty")
    if split:
        try:
            words = shlex.split(text)
        except ValueError as error:
            raise SubmissionError(f"{MANIFEST}:{line}: {key} cannot be parsed: {error}") from None
        if not words:
            raise SubmissionError(f"{MANIFEST}:{line}: {key} is empty")
        problem = _outside(words)
        if problem:
            raise SubmissionError(f"{MANIFEST}:{line}: {key}: {problem}")
    return text.strip()


def _outside(words: list[str]) -> str | None:
    """Why a run command reaches outside its bot, or None. The jail lets a player read the
    directory of every file its command names: a path up or elsewhere would show it another
    bot's files. A URL, a person or a built-in player is not a submitted program."""
    first = words[0]
    if first.lower().startswith(("http://", "https://")) or first in (HUMAN, *BUILTIN_PROGRAMS):
        return f"{first!r} is not a program of the bot"
    system = [Path(name) for name in SYSTEM_DIRECTORIES]
    for word in words:
        path = PurePosixPath(word)
        if ".." in path.parts:
            return f"{word!r} goes up (..): name only the bot's own files"
        if path.is_absolute() and not any(path.is_relative_to(s) for s in system):
            return f"{word!r} is outside the bot and the system: name only the bot's own files"
    return None


def bot_environment() -> dict[str, str]:
    """What a bot's build and run are given of the arena's environment besides the jail's
    minimum: its PATH less the directories the jail does not show. A program bot.yaml names
    by name (`python3`) is then the system's, as the jail can run it, where the arena's PATH
    finds a version manager's shim first (pyenv's), which cannot run there."""
    return {"PATH": jail_path(os.environ.get("PATH", os.defpath))}
