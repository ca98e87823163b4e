"""The starter bots: the same random player in eight languages, package data (starters/,
which a checkout also shows as players/), so that `referee new-bot` finds them wherever the
package is installed; and how each is built and run in a bot's directory."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePath

import yaml

from referee.errors import ConfigError

# The starters' sources, installed with the package.
STARTERS = Path(__file__).resolve().parent / "starters"


class Language(StrEnum):
    """The languages there is a starter bot in."""

    PYTHON = "python"
    C = "c"
    CPP = "cpp"
    GO = "go"
    JAVASCRIPT = "javascript"
    RUST = "rust"
    JAVA = "java"
    SHELL = "shell"


@dataclass(frozen=True)
class InBot:
    """A file of the bot's directory, in a command: written as a path from wherever the
    command runs."""

    name: str


Word = str | InBot


@dataclass(frozen=True)
class Starter:
    """A starter bot: its source here, the file it is in a bot's directory, the command that
    builds it there (if it needs building), the command that runs it, and what the build
    writes (for the bot's .gitignore)."""

    source: str
    file: str
    build: tuple[Word, ...] | None
    run: tuple[Word, ...]
    outputs: tuple[str, ...] = ()

    def text(self) -> str:
        """The starter's source as a bot's directory holds it, in `file`: the build and run
        commands its comments give name the files there (`go build -o bot bot.go`), not the
        starter's own (`random_player.go`)."""
        text = (STARTERS / self.source).read_text(encoding="utf-8")
        old, new = PurePath(self.source).stem, PurePath(self.file).stem
        return "".join(
            line.replace(old, new) if line.lstrip().startswith(("//", "#")) else line
            for line in text.splitlines(keepends=True)
        )


def _compiled(source: str, compiler: tuple[str, ...]) -> Starter:
    """A starter compiled into the program `bot`, as `COMPILER -o bot bot.SUFFIX`."""
    file = f"bot{PurePath(source).suffix}"
    return Starter(
        source, file, (*compiler, "-o", InBot("bot"), InBot(file)), (InBot("bot"),), ("/bot",)
    )


def _interpreted(source: str, interpreter: str) -> Starter:
    """A starter run from its source as `INTERPRETER bot.SUFFIX`."""
    file = f"bot{PurePath(source).suffix}"
    return Starter(source, file, None, (interpreter, InBot(file)))


STARTER_OF = {
    Language.PYTHON: _interpreted("random_player.py", "python3"),
    Language.C: _compiled("random_player.c", ("cc", "-O2")),
    Language.CPP: _compiled("random_player.cpp", ("c++", "-O2")),
    Language.GO: _compiled("random_player.go", ("go", "build")),
    Language.JAVASCRIPT: _interpreted("random_player.js", "node"),
    Language.RUST: _compiled("random_player.rs", ("rustc", "-O")),
    # Java names the file after its class, and runs the class from the directory it is in.
    Language.JAVA: Starter(
        "RandomPlayer.java",
        "RandomPlayer.java",
        ("javac", "-d", InBot("."), InBot("RandomPlayer.java")),
        ("java", "-cp", InBot("."), "RandomPlayer"),
        ("*.class",),
    ),
    Language.SHELL: _interpreted("random_player.sh", "sh"),
}


# A language may be named by its starter's suffix too (`js`), where that is another name.
SUFFIXES = {
    suffix: language
    for language, starter in STARTER_OF.items()
    if (suffix := PurePath(starter.source).suffix[1:]) != language
}


# The languages whose source must be built before it runs, by the suffix of a source file,
# and each one's name in a sentence.
_BUILT = {
    ".c": Language.C,
    ".cpp": Language.CPP,
    ".cc": Language.CPP,
    ".cxx": Language.CPP,
    ".go": Language.GO,
    ".rs": Language.RUST,
    ".java": Language.JAVA,
}
_NAMES = {Language.C: "C", Language.CPP: "C++", Language.GO: "Go", Language.RUST: "Rust"}


def build_first(source: Path, here: Path) -> str | None:
    """What to say of a command whose program is `source`, a source file that must be built
    before it runs (by its suffix, and with no `#!` line): how to build it as its language's
    starter is built, and the program to give instead, as commands run from `here`. None for
    any other file."""
    language = _BUILT.get(source.suffix)
    if language is None:
        return None
    try:
        with source.open("rb") as file:
            if file.read(2) == b"#!":
                return None
    except OSError:
        return None
    starter = STARTER_OF[language]
    assert starter.build is not None  # a language that is built
    stem = PurePath(starter.file).stem

    def renamed(word: Word) -> Word:
        if word == InBot(starter.file):
            return InBot(source.name)
        if word == InBot("bot"):
            return InBot(source.stem)
        return source.stem if word == stem else word

    shown = source.relative_to(here) if source.is_relative_to(here) else source
    build = command(tuple(map(renamed, starter.build)), shown.parent)
    run = command(tuple(map(renamed, starter.run)), shown.parent)
    name = _NAMES.get(language, language.value.capitalize())
    return f"{shown} is {name} source, which must be built first: {build}; then give {run}"


# The file in a bot's directory that says how to build and run it (`referee new-bot` writes
# it; an arena reads it: referee.arena.store.manifest).
BOT_YAML = "bot.yaml"


def not_a_command(name: str, here: Path) -> str | None:
    """What to say of a command whose program, `name`, is no program on the PATH but a file
    or a directory in `here`: how to run that file, or the bot in that directory, as a
    command given from `here`. None when `here` holds nothing of that name."""
    found = here / name
    if found.is_file():
        built = build_first(found, here)
        if built is not None:
            return built
        interpreter = _INTERPRETERS.get(found.suffix)
        through = f" or {shlex.join([interpreter, name])}" if interpreter else ""
        return (
            f"{name} is a file here, not a command on the PATH: give"
            f" {shlex.quote('./' + name)} (with a #! line and chmod +x){through}"
        )
    if not found.is_dir():
        return None
    run, build = _bot_yaml(found / BOT_YAML)
    if run is None:
        return f"{name} is a directory here, not a command: give the program in it to run"
    # Its files, and its program as a path (`./bot`, which its build may not have made yet),
    # named from here.
    words = tuple(
        InBot(str(PurePath(word)))
        if not PurePath(word).is_absolute()
        and ((found / word).exists() or (index == 0 and "/" in word))
        else word
        for index, word in enumerate(run)
    )
    built = f", once built there ({build}, in {name})" if build else ""
    return (
        f"{name} is a bot's directory, not a command: give the command its {BOT_YAML} runs,"
        f" from here{built}: {command(words, PurePath(name))}"
    )


# The interpreter that runs a script, by its suffix: the interpreted starters'.
_INTERPRETERS = {
    PurePath(starter.file).suffix: starter.run[0]
    for starter in STARTER_OF.values()
    if starter.build is None and isinstance(starter.run[0], str)
}


def _bot_yaml(path: Path) -> tuple[tuple[str, ...] | None, str | None]:
    """The run command of a bot.yaml, as words, and its build line; None for what it does
    not say (or when it cannot be read: the arena's own reading says why)."""
    try:
        found = yaml.safe_load(path.read_text(encoding="utf-8"))
        run = found.get("run") if isinstance(found, dict) else None
        words = tuple(shlex.split(run)) if isinstance(run, str) else ()
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
        return None, None
    build = found.get("build")
    return words or None, " ".join(build.split()) if isinstance(build, str) else None


def language_named(text: str) -> Language:
    """The language `text` names, by its name or its starter's suffix."""
    name = text.lower()
    if name in SUFFIXES:
        return SUFFIXES[name]
    try:
        return Language(name)
    except ValueError:
        raise ConfigError(
            f"unknown language {text!r}: choose {', '.join(Language)} (or {', '.join(SUFFIXES)})"
        ) from None


def command(
    words: tuple[Word, ...], directory: PurePath, program: Callable[[str], str] = str
) -> str:
    """`words` as one shell-style line, run from where `directory` is the bot's directory: its
    files as paths from there (the program as `./bot`, not a name PATH would look up, and a
    path starting with `-` as `./-x`, not an option), and a program named by name as `program`
    has it."""
    written = []
    for index, word in enumerate(words):
        if isinstance(word, InBot):
            path = directory / word.name
            relative = not path.is_absolute() and path.parts[:1] != ("..",)
            dotted = relative and (index == 0 or str(path).startswith("-"))
            written.append(f"./{path}" if dotted else str(path))
        else:
            written.append(program(word) if index == 0 else word)
    return shlex.join(written)
