"""An arena's directory: its config, its database (or where it is), its signing key, its
results, the archives as submitted and the bots as built.

    DIR/arena.yaml          the config (docs/arena.md)
    DIR/arena.json          where the database is: null for DIR/arena.db (SQLite)
    DIR/signing.key         the key every transcript is signed with (0600)
    DIR/serve.lock          locked by the one `serve` of an arena on SQLite (`serving_lock`)
    DIR/results/            the transcripts and the bots' logs: the record
    DIR/replays/            what replays of the transcripts showed, kept (`replay_cache`)
    DIR/submissions/ID      each version's archive as received
    DIR/bots/ID/            each version unpacked and built; it runs there
    DIR/bundles/ID.tar      each version as built, packed for workers (`bot_bundles`)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from referee.arena.store.config import ArenaConfig, load_arena_config, parse_arena_config
from referee.arena.store.db import Author, Database, name_key, open_database
from referee.arena.store.errors import NotFound
from referee.arena.store.queries import storable
from referee.arena.store.tokens import new_token, token_hash
from referee.errors import ArenaError, ConfigError, RefereeError
from referee.games import is_rulesheet
from referee.records.signing import SigningKey, results_key
from referee.tournaments.bundles import SUFFIX
from referee.tournaments.config import Locator
from referee.tournaments.config_models import Location

CONFIG_FILE = "arena.yaml"
SETTINGS_FILE = "arena.json"
SQLITE_FILE = "arena.db"
KEY_FILE = "signing.key"
ORGANISER = "organiser"
# Authors' names are shown on pages and in tables: short, no markup, no spaces.
AUTHOR_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

DEFAULT_CONFIG = """\
# An arena: the games its bots play, their clocks and limits (the keys of a tournament
# config, docs/tournaments.md), and how the arena takes and rates bots (docs/arena.md).
name: {name}
games: [ticblock, hex-pie, double-tictactoe, quad]
start_clock: 10000
play_clock: 1000
policy: forfeit
openings: 2
arena:
  placement_matches: 10
  pairing: close
  submission: {{max_mb: 10, max_files: 2000, per_hour: 6}}
  build: {{seconds: 300, memory_mb: 2048}}
  validate: {{matches_per_role: 1}}
  suspend: {{after: 10, faults: 0.5}}
  public_leaderboard: true
"""


@dataclass(frozen=True)
class Arena:
    """An arena opened: its directory, config, database and key."""

    directory: Path
    config: ArenaConfig
    database: Database
    key: SigningKey

    @property
    def results(self) -> Path:
        return self.directory / "results"

    def archive(self, version_id: int) -> Path:
        return self.directory / "submissions" / f"{version_id}.archive"

    def bot_directory(self, version_id: int) -> Path:
        return self.directory / "bots" / str(version_id)

    def bundle(self, version_id: int) -> Path:
        return self.directory / "bundles" / f"{version_id}{SUFFIX}"

    def close(self) -> None:
        self.database.close()


def inside(root: Path, relative: str) -> Path:
    """`relative` under `root`, refused if it would lead out (the database is trusted, but a
    path read from it is still checked before it is opened). A NUL or a lone surrogate,
    which no file's name holds (a page's path asked for), names nothing there."""
    if not storable(relative):
        raise NotFound(f"{relative[:80]!r}: not in the arena")
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise NotFound(f"{relative[:80]!r}: not in the arena")
    return path


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{(directory / SQLITE_FILE).resolve()}"


def init_arena(directory: Path, config: Path | None = None, database: str | None = None) -> str:
    """Make an arena in `directory` (new or empty); the organiser's token, which is shown
    once and kept only as its hash."""
    if (directory / SETTINGS_FILE).exists():
        raise ArenaError(f"{directory}: already an arena ({SETTINGS_FILE} is there)")
    if directory.exists() and not directory.is_dir():
        raise ArenaError(f"{directory}: not a directory")
    if config is not None:
        try:
            text = config.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{config}: cannot read: {error}") from None
        # Checked where it is first, so that an error names the file given.
        parse_arena_config(config, text)
        named = _named_files(text)
        outside = [(n, loc) for n, loc in named if Path(os.path.normpath(n)).parts[0] == ".."]
        if outside:
            name, loc = outside[0]
            where = Locator(config, yaml.compose(text, Loader=yaml.SafeLoader))
            said = where.error(
                loc,
                f"{name}: outside the config's folder; the arena keeps its own copy of the"
                " files its config names: give this one by its absolute path",
            )
            raise ArenaError(str(said))
    else:
        named = []
        name = re.sub(r"[^A-Za-z0-9_.+-]", "-", directory.resolve().name).lstrip("-._+")
        text = DEFAULT_CONFIG.format(name=name or "arena")
    made = not directory.exists()
    try:
        for sub in ("results", "submissions", "bots"):
            (directory / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        (directory / CONFIG_FILE).write_text(text, encoding="utf-8")
        # The rulesheets and books it names beside it, as they are beside the config given.
        for name, _loc in named:
            assert config is not None
            target = directory / os.path.normpath(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(config.parent / name, target)
        # And where it now is: a relative rulesheet path is relative to the arena.
        load_arena_config(directory / CONFIG_FILE)
    except OSError as error:
        _unmake(directory, made)
        raise ArenaError(f"{directory}: cannot make the arena: {error.strerror}") from None
    except ConfigError:
        _unmake(directory, made)
        raise
    try:
        db = open_database(database or sqlite_url(directory))
    except RefereeError:
        _unmake(directory, made)
        raise
    try:
        results_key(directory / "results", directory / KEY_FILE)
        token = _add(db, ORGANISER, organiser=True)
    finally:
        db.close()
    settings = {"database": database}
    (directory / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n", "utf-8")
    return token


def _named_files(text: str) -> list[tuple[str, Location]]:
    """The files a checked arena config names by paths relative to its folder, rulesheets
    and opening books: each with its key's path in the config."""
    data = yaml.safe_load(text) or {}
    found: list[tuple[str, Location]] = []

    def book(value: object, loc: Location) -> None:
        if isinstance(value, dict) and isinstance(value.get("file"), str):
            found.append((value["file"], (*loc, "file")))

    book(data.get("openings"), ("openings",))
    for index, game in enumerate(data.get("games") or []):
        entry = game if isinstance(game, dict) else {"id": game}
        if isinstance(entry.get("id"), str) and is_rulesheet(entry["id"]):
            found.append((entry["id"], ("games", index, "id")))
        book(entry.get("openings"), ("games", index, "openings"))
    return [(name, loc) for name, loc in found if not os.path.isabs(name)]


def _unmake(directory: Path, made: bool) -> None:
    """Take back what a failed init made: the directory if it made it, else its files."""
    if made:
        shutil.rmtree(directory, ignore_errors=True)
        return
    for name in (CONFIG_FILE, SQLITE_FILE, f"{SQLITE_FILE}-wal", f"{SQLITE_FILE}-shm"):
        (directory / name).unlink(missing_ok=True)
    for sub in ("results", "submissions", "bots"):
        with contextlib.suppress(OSError):
            (directory / sub).rmdir()


def open_arena(directory: Path) -> Arena:
    """An arena made by `init_arena`, its database upgraded to this version's schema."""
    try:
        settings = json.loads((directory / SETTINGS_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArenaError(
            f"{directory}: not an arena (no {SETTINGS_FILE}); make one with referee arena init"
        ) from None
    except (OSError, ValueError) as error:
        raise ArenaError(f"{directory / SETTINGS_FILE}: cannot read: {error}") from None
    config = load_arena_config(directory / CONFIG_FILE)
    url = settings.get("database") or sqlite_url(directory)
    key, _ = results_key(directory / "results", directory / KEY_FILE)
    return Arena(directory, config, open_database(url), key)


def add_author(arena: Arena, name: str) -> str:
    """Add an author; their token, shown once."""
    if not AUTHOR_PATTERN.fullmatch(name) or name == ORGANISER:
        raise ArenaError(
            f"author {name!r}: use 1 to 64 letters, digits and _ . - (not {ORGANISER!r})"
        )
    return _add(arena.database, name)


def _add(db: Database, name: str, organiser: bool = False) -> str:
    token = new_token()
    try:
        # The name is unique in the database without regard to case, which refuses a second
        # one (`name_key`); the look-up before it is only for the line that names the first.
        with db.session() as session:
            taken = session.scalar(select(Author.name).where(Author.name_key == name_key(name)))
            if taken is not None:
                raise _taken(name, taken)
            session.add(Author(name=name, token_hash=token_hash(token), organiser=organiser))
    except IntegrityError:
        raise _taken(name, name) from None
    return token


def _taken(name: str, taken: str) -> ArenaError:
    if taken == name:
        return ArenaError(f"author {name!r} is already in this arena")
    return ArenaError(
        f"author {name!r}: {taken!r} is already in this arena (names must differ by more than case)"
    )
