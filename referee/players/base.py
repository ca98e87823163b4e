"""What every player is to a match: a spec saying how to reach it, and the Player interface."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from referee.errors import ConfigError, PlayerCrashed
from referee.players.starter import build_first, not_a_command
from referee.records.transcript import HUMAN_COMMAND
from referee.sandbox.limits import Limits


class PlayerKind(StrEnum):
    """Who answers for a seat: a program in the sandbox, or the person at the terminal."""

    PROGRAM = "program"
    HUMAN = "human"
    # The referee itself, in the `random` role of a GDL game.
    CHANCE = "chance"
    # A GGP player: an HTTP server the referee sends the GGP protocol's messages.
    HTTP = "http"


# Suffixes of the scripts an interpreter in a player command runs: such an argument is a file
# that must exist, not a word for the program.
SCRIPT_SUFFIXES = frozenset(
    {".py", ".js", ".mjs", ".awk", ".sh", ".rb", ".pl", ".lua", ".jar", ".php", ".R", ".jl"}
)


@dataclass(frozen=True)
class PlayerSpec:
    """How to reach a player: a name for tables, its kind, and for a program its argv,
    environment and limits.

    `cwd` is the directory a program runs in; None gives it a private one, deleted when it ends.
    `files` are what a program reads besides the files its command names (in the jail it
    sees nothing else).
    """

    name: str
    argv: tuple[str, ...] = ()
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    kind: PlayerKind = PlayerKind.PROGRAM
    files: tuple[Path, ...] = ()
    url: str = ""

    @classmethod
    def human(cls, name: str = "human") -> PlayerSpec:
        """The person at the terminal."""
        return cls(name, kind=PlayerKind.HUMAN)

    @classmethod
    def http(cls, name: str, url: str) -> PlayerSpec:
        """A GGP player at `http://host:port`; ConfigError for any other kind of address."""
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(f"player {name}: {url!r} has no valid port") from None
        if parts.scheme != "http":
            raise ConfigError(f"player {name}: {url!r}: GGP players speak plain http://")
        if not parts.hostname or port is None or parts.path not in ("", "/") or parts.query:
            raise ConfigError(f"player {name}: {url!r} is not of the form http://HOST:PORT")
        return cls(name, kind=PlayerKind.HTTP, url=f"http://{parts.netloc}")

    @property
    def address(self) -> tuple[str, int]:
        """The host and port of a GGP player."""
        parts = urlsplit(self.url)
        assert parts.hostname is not None and parts.port is not None
        return parts.hostname, parts.port

    @classmethod
    def from_command(
        cls,
        name: str,
        command: str | Sequence[str],
        base: Path | None = None,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> PlayerSpec:
        """A spec from an argv list or a shell-style string (split, never run through a shell).

        Paths in the command are taken from `cwd`, else from `base` (by default the current
        directory), and made absolute, so that they still name the same files from a private
        working directory.
        """
        try:
            argv = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
        except ValueError as error:
            raise ConfigError(f"player {name}: cannot split command {command!r}: {error}") from None
        if not argv:
            raise ConfigError(f"player {name}: empty command")
        return cls(name, _absolute_paths(argv, cwd or base or Path.cwd()), cwd, dict(env or {}))

    @property
    def command(self) -> tuple[str, ...]:
        """What a transcript records as the seat's command: for a GGP player, its address."""
        if self.kind is PlayerKind.HTTP:
            return (self.url,)
        return tuple(HUMAN_COMMAND) if self.kind is PlayerKind.HUMAN else self.argv

    @property
    def recorded(self) -> tuple[str, ...]:
        """The command as a transcript records it: `command`, with each word that names
        something in the program's own directory (`cwd`) named from there, as its author
        wrote it (`bot.py`, `./bot`, `.`). A record so names no path of the machine it was
        played on, where that directory is an arena's `bots/12/` or a worker's cache. Other
        paths (the system's `/usr/bin/python3`) are kept as they are."""
        if self.kind is not PlayerKind.PROGRAM or self.cwd is None:
            return self.command
        return tuple(
            recorded_word(word, self.cwd, program=index == 0)
            for index, word in enumerate(self.command)
        )

    def missing_program(self) -> str | None:
        """Why the program cannot be run, or None when it can (a person or a server always can)."""
        if self.kind in (PlayerKind.HUMAN, PlayerKind.HTTP):
            return None
        program = self.argv[0]
        here = self.cwd or Path.cwd()
        if "/" in program:
            found = here / program
            if not found.is_file():
                return f"no such program: {found}"
            built = build_first(found, Path.cwd())
            if built is not None:
                return built
            if not os.access(found, os.X_OK):
                return f"not executable: {found} (run it through an interpreter, or chmod +x)"
        else:
            path = {**os.environ, **self.env}.get("PATH")
            if shutil.which(program, path=path) is None:
                told = not_a_command(program, here)
                return told or f"command {program!r} not found on PATH"
        # The script an interpreter runs: its first word that is no option, by its suffix.
        # One that exists was made absolute.
        script = next((word for word in self.argv[1:] if not word.startswith("-")), "")
        if Path(script).suffix in SCRIPT_SUFFIXES and not Path(script).is_absolute():
            return f"no such file: {script}"
        return None


def recorded_word(word: str, cwd: Path, program: bool = False) -> str:
    """A word of a command as a record names it: a path inside `cwd` named from there (the
    program's with `./` when it would otherwise be looked up on the PATH), any other word as
    it is. Paths are compared as written, as `from_command` made them."""
    path = Path(word)
    if not path.is_absolute() or not path.is_relative_to(cwd):
        return word
    inside = path.relative_to(cwd).as_posix()
    return f"./{inside}" if program and "/" not in inside else inside


def _absolute_paths(argv: tuple[str, ...], base: Path) -> tuple[str, ...]:
    """The program when it is a path, and each argument naming something in `base`, made absolute.

    Options and other words are left as they are.
    """
    program, *arguments = argv
    if "/" in program:
        program = str(base / program)
    return (
        program,
        *(
            str(base / word) if word[:1] not in ("", "-") and (base / word).exists() else word
            for word in arguments
        ),
    )


@dataclass(frozen=True)
class Fingerprint:
    """What a player's command runs, as a hash: `digest` changes when a word of the command,
    the contents of a file it names, or its environment changes; `files` maps each such
    file to its SHA-256. Paths count by their contents only, so that moving a tournament's
    directory changes nothing."""

    digest: str
    files: dict[str, str]


def fingerprint(spec: PlayerSpec, hashed: dict[str, str] | None = None) -> Fingerprint:
    """The fingerprint of a player as it would run now (the files are read and hashed).
    `hashed`: the files of its command hashed already, by path, which it adds to: the
    players of a field of thousands fingerprinted at once run one interpreter, hashed once."""
    files = {}
    words = []
    known = {} if hashed is None else hashed
    for word in spec.command:
        path = Path(word)
        if path.is_absolute() and path.is_file():
            if word not in known:
                known[word] = _sha256(path)
            files[word] = known[word]
            words.append(f"sha256:{files[word]}")
        elif spec.cwd is not None and path.is_absolute() and path.is_relative_to(spec.cwd):
            # A directory of its own (`java -cp .`): named from where it runs, so that its
            # copy elsewhere (a worker's, `bundles.py`) has the fingerprint of the original.
            words.append(f"cwd:{path.relative_to(spec.cwd).as_posix()}")
        else:
            words.append(word)
    extra = [_sha256(path) for path in spec.files if path.is_file()]
    what = {"kind": str(spec.kind), "command": words, "env": sorted(spec.env.items())}
    digest = hashlib.sha256(json.dumps([what, extra]).encode()).hexdigest()
    return Fingerprint(digest, files)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
    except OSError as error:
        # Unreadable now: the fingerprint says so, and will differ once it can be read.
        return f"unreadable ({error.strerror})"
    return digest.hexdigest()


@dataclass(frozen=True)
class Reply:
    """An answer line, the time from the request's write to the answer's read, and the CPU
    time the player's processes used meanwhile (None where it cannot be counted)."""

    text: str
    elapsed_ms: float
    cpu_ms: float | None = None


class Player(ABC):
    """Something that speaks the protocol: a program in the sandbox, or a person."""

    spec: PlayerSpec
    log_path: Path | None

    @abstractmethod
    async def start(self) -> None:
        """Get ready to receive lines."""

    @abstractmethod
    def new_match(self) -> None:
        """A match begins: per-match allowances start again."""

    @abstractmethod
    async def request(self, line: str, limit_s: float) -> Reply | None:
        """Send a line that needs an answer; the answer, or None when none came in `limit_s`.

        Raises the PlayerFault of a player that cannot answer (gone, or a line the protocol
        does not allow). Whether an answer came in time is the clock's to say.
        """

    @abstractmethod
    async def send(self, line: str, limit_s: float) -> None:
        """Send a line that needs no answer; the player must take it within `limit_s`."""

    async def gone_within(self, limit_s: float) -> PlayerCrashed | None:
        """Why the player is gone, if it goes within `limit_s`: a program that exits. A
        player with no process of its own never goes by itself."""
        return None

    def post(self, line: str, limit_s: float) -> Awaitable[None] | None:
        """`send`, begun now: what is left to await of it, if anything. A line sent to
        several players at once costs no task for those that take it at once."""
        return self.send(line, limit_s)

    @property
    def cores(self) -> frozenset[int] | None:
        """The only cores its processes run on here; None: not pinned, or none here."""
        return None

    def pause(self) -> None:
        """Stop all the player's processes until `resume` (or its next request, or its end):
        it is not asked, and may not think on another seat's time. A player with no process
        here cannot be paused."""
        return None

    def resume(self) -> None:
        """Let a paused player's processes run again."""
        return None

    @abstractmethod
    async def close(self) -> None:
        """Say `quit`, give the player a moment to leave, and end it."""

    @property
    @abstractmethod
    def alive(self) -> bool:
        """Whether the player can still be spoken to."""


class AbsentPlayer(Player):
    """A player whose program could not be started: every request to it fails as a crash."""

    def __init__(self, spec: PlayerSpec, reason: str) -> None:
        self.spec = spec
        self.log_path = None
        self.reason = reason

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        return None

    async def request(self, line: str, limit_s: float) -> Reply | None:
        raise PlayerCrashed(self.reason)

    async def send(self, line: str, limit_s: float) -> None:
        raise PlayerCrashed(self.reason)

    async def close(self) -> None:
        return None

    @property
    def alive(self) -> bool:
        return False


def quoted(text: str, limit: int = 80) -> str:
    """A player's text as a fault shows it: quoted, and cut at `limit` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")
