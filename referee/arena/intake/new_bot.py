"""A new bot: a starter written into a directory of its own with the bot.yaml an arena reads,
and the commands that build it and validate it from where its author is."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath

from referee.arena.store.manifest import MANIFEST, Manifest, bot_name, manifest_text
from referee.errors import ConfigError
from referee.players.starter import STARTER_OF, Language, command
from referee.players.startup import jail_program
from referee.records.files import check_writable_dir, write_atomic

GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class NewBot:
    """A bot written: its directory, the files written in it, and, each to run as it is from
    the current directory, the shell line that builds it (if it needs building) and the one
    that validates it."""

    directory: Path
    files: tuple[str, ...]
    build: str | None
    validate: str


def new_bot(language: Language, directory: Path) -> NewBot:
    """Write the starter bot in `language` into `directory`, new or empty, with its bot.yaml
    (named after the directory) and a .gitignore of its build's outputs, if it has any.

    ConfigError when `directory` holds anything already: nothing of an author's is overwritten.
    """
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory}: is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise ConfigError(f"{directory}: is not empty; new-bot writes into a new or empty one")
    starter = STARTER_OF[language]
    manifest = starter_manifest(language, bot_name(directory.resolve().name))
    files = {starter.file: starter.text(), MANIFEST: manifest_text(manifest)}
    if starter.outputs:
        files[GITIGNORE] = "".join(f"{output}\n" for output in starter.outputs)
    check_writable_dir(directory, "new-bot", "the bot's directory ")
    for name, text in files.items():
        write_atomic(directory / name, text)
    # Validate runs the program in the jail, where a version manager's shim cannot run.
    run = command(starter.run, directory, jail_program)
    return NewBot(
        directory,
        tuple(files),
        command(starter.build, directory) if starter.build is not None else None,
        f"referee validate {_shell_word(run)}",
    )


def starter_manifest(
    language: Language, name: str, program: Callable[[str], str] = str
) -> Manifest:
    """The bot.yaml of the starter in `language`, named `name`: its commands run in the bot's
    directory, on the arena's machine, a program named by name as `program` has it."""
    starter = STARTER_OF[language]
    here = PurePath(".")
    build = command(starter.build, here) if starter.build is not None else None
    return Manifest(name, command(starter.run, here, program), build)


def _shell_word(text: str) -> str:
    """`text` as one word of a shell line: bare when it needs no quotes, in double quotes when
    nothing in it is special there (as the docs write a command), else in shlex's quotes."""
    if shlex.quote(text) == text:
        return text
    if not any(special in text for special in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)
