"""What the page "Write a bot" tells an author of this arena: its games and their roles, its
clocks, policy and limits, what a submission may be and what happens to it, all read from
the arena's config; and the starter bots, each as an archive ready to submit.

A starter is offered only when the programs its build and its run need are where the arena's
builds and bots can run them: in the system's directories the jail shows, found on the
arena's PATH. Its bot.yaml names such a program as the jail finds it: by name when the PATH
finds it there first, else by its path there (a per-user shim or install found first is not
in the jail). An archive is made the same way every time from the same starter and machine:
one directory, the bot's, with bot.yaml and the source, fixed times, owners and modes.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
from dataclasses import dataclass

from referee.arena.intake.new_bot import starter_manifest
from referee.arena.intake.submissions import archive_limit
from referee.arena.store.config import ArenaConfig, BuildLimits, SubmissionCaps
from referee.arena.store.manifest import MANIFEST, Manifest, manifest_text
from referee.games.gdl.game import GdlGame
from referee.players.starter import STARTER_OF, Language
from referee.policy import Policy
from referee.sandbox.jail import SYSTEM_DIRECTORIES, jail_path
from referee.sandbox.limits import Limits
from referee.tournaments.config import GameSettings

ARCHIVE_SUFFIX = ".tar.gz"
ARCHIVE_TYPE = "application/gzip"
# An archive's files are dated at the epoch: the same bytes at every download.
_MTIME = 0


@dataclass(frozen=True)
class StarterOffer:
    """A starter bot as this arena offers it: its language, the bot.yaml of its archive, and
    the programs it needs that this arena's jail lacks (then it is not offered)."""

    language: Language
    manifest: Manifest
    lacking: tuple[str, ...]

    @property
    def offered(self) -> bool:
        return not self.lacking

    @property
    def file(self) -> str:
        """The archive's name in its URL (`/starters/python.tar.gz`)."""
        return f"{self.language}{ARCHIVE_SUFFIX}"

    @property
    def download_name(self) -> str:
        """The name the archive is saved under: the bot's, as is the directory in it."""
        return f"{self.manifest.name}{ARCHIVE_SUFFIX}"

    def archive(self) -> bytes:
        """The archive, tar and gzip: the bot's directory, with bot.yaml and the source."""
        starter = STARTER_OF[self.language]
        files = {MANIFEST: manifest_text(self.manifest), starter.file: starter.text()}
        return _tar_gz(self.manifest.name, files)


@dataclass(frozen=True)
class Guide:
    """The facts of the page, from the arena's config and machine."""

    games: tuple[GameSettings, ...]
    # The ids of the games whose rules are a rulesheet, shown as it is written.
    rulesheets: frozenset[str]
    # The ids of the games of imperfect information (GDL-II), in the config's order: in
    # those a bot is sent `sees` lines, not `moves`.
    imperfect: tuple[str, ...]
    policy: Policy
    ponder: bool
    limits: Limits
    submission: SubmissionCaps
    archive_bytes: int
    build: BuildLimits
    validate_matches_per_role: int
    validation_matches: int
    placement_matches: int
    suspend_after: int
    suspend_faults: float
    system_directories: tuple[str, ...]
    starters: tuple[StarterOffer, ...]

    def offered(self, file: str) -> StarterOffer | None:
        """The starter offered at `/starters/FILE`, or None: a name is only ever looked up
        among the starters, never taken as a path."""
        return next((s for s in self.starters if s.offered and s.file == file), None)


def guide(config: ArenaConfig, search_path: str | None = None) -> Guide:
    """The page's facts for the arena of `config`, its starters looked for on `search_path`
    (the arena's PATH when not given)."""
    tournament = config.tournament
    path = os.environ.get("PATH", os.defpath) if search_path is None else search_path
    per_role = config.validate_matches_per_role
    return Guide(
        games=tournament.games,
        rulesheets=frozenset(s.game.id for s in tournament.games if isinstance(s.game, GdlGame)),
        imperfect=tuple(s.game.id for s in tournament.games if s.game.imperfect),
        policy=tournament.policy,
        ponder=tournament.ponder,
        # Every bot plays under the limits the config gives every player, as its stand-ins do.
        limits=tournament.players[0].spec.limits,
        submission=config.submission,
        archive_bytes=archive_limit(config.submission),
        build=config.build,
        validate_matches_per_role=per_role,
        # In each role of each game: the matches in one process, and one in a fresh one.
        validation_matches=sum(len(s.game.roles) * (per_role + 1) for s in tournament.games),
        placement_matches=config.placement_matches,
        suspend_after=config.suspend_after,
        suspend_faults=config.suspend_faults,
        system_directories=SYSTEM_DIRECTORIES,
        starters=tuple(starter_offer(language, path) for language in Language),
    )


def starter_offer(language: Language, search_path: str) -> StarterOffer:
    """The starter in `language` as an arena whose PATH is `search_path` offers it."""
    starter = STARTER_OF[language]
    commands = [c for c in (starter.build, starter.run) if c is not None]
    found = {
        words[0]: jail_word(words[0], search_path)
        for words in commands
        if isinstance(words[0], str)
    }
    lacking = tuple(program for program, word in found.items() if word is None)
    # The build's shell runs in the jail and finds its programs there by name; the run's
    # program is found on the arena's PATH, outside it, and named as the jail has it.
    named = starter_manifest(language, f"my-{language}-bot", lambda p: found[p] or p)
    return StarterOffer(language, named, lacking)


def jail_word(program: str, search_path: str) -> str | None:
    """How a bot.yaml names `program` for it to run in the jail: by name when `search_path`
    finds it first in a directory the jail shows, else by its path in the first such
    directory that holds it; None when none does."""
    shown = jail_path(search_path)
    inside = shutil.which(program, path=shown) if shown else None
    if inside is None:
        return None
    return program if shutil.which(program, path=search_path) == inside else inside


def _tar_gz(directory: str, files: dict[str, str]) -> bytes:
    """`files` in `directory`, as tar and gzip, with nothing of when or by whom it was made."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=_MTIME) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.USTAR_FORMAT) as tar,
    ):
        top = tarfile.TarInfo(directory)
        top.type, top.mode, top.mtime = tarfile.DIRTYPE, 0o755, _MTIME
        tar.addfile(top)
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{directory}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, _MTIME
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
