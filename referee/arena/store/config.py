"""An arena's config: a tournament config without players, plus an `arena:` section.

The keys a tournament has mean the same here (games, clocks, policy, limits, openings, cores)
and are checked by the tournament's own parser: the arena's text, its section blanked out line
for line so that every error keeps its line, with the bots of the moment appended as players.
That text is also what a cluster's workers are sent, as for any tournament.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.arena.store.manifest import bot_environment
from referee.errors import ConfigError
from referee.records.files import read_text, yaml_problem
from referee.tournaments.config import (
    MAX_CONFIG_BYTES,
    Locator,
    TournamentConfig,
    check_shape,
    parse_config,
)

SECTION = "arena"
# Why an arena takes no time margin: its ladder, its validation and its advice judge exactly.
_EXACT = "an arena judges every answer by its clocks exactly"
# Tournament keys an arena sets itself: its players are its bots, its results its own, and
# the ladder, not a format, chooses who plays whom.
_ARENA_OWNS = {
    "players": "an arena's players are the bots submitted to it",
    "output": "an arena keeps its results in its directory",
    "format": "the ladder chooses who plays whom",
    "rounds": "the ladder plays on without rounds",
    "challengers": "the ladder chooses who plays whom",
    "sprt": "the ladder chooses who plays whom",
    "anchor": "the ladder's ratings have their mean at 0",
    "rating_interval": "the ladder rates after every match",
    "trace": "an arena keeps each bot's log, not a trace",
    "live": "an arena writes every match's moves as it is played, for those who watch it",
    "time_margin": _EXACT,
}
# How long the arena waits for a database that does not answer before `serve` ends.
DATABASE_WAIT_S = 300
# The stand-ins that let the tournament keys be checked before any bot is submitted.
_STAND_INS = ("random", "random")


class PairingRule(StrEnum):
    """How the ladder picks an opponent: the closest rating (among a few, at random), or any."""

    CLOSE = "close"
    RANDOM = "random"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Submission(_Section):
    max_mb: Annotated[int, Field(gt=0, le=1024)] = 10
    max_files: Annotated[int, Field(gt=0, le=100_000)] = 2000
    per_hour: Annotated[int, Field(gt=0, le=10_000)] = 6


class _Build(_Section):
    seconds: Annotated[int, Field(gt=0, le=3600)] = 300
    memory_mb: Annotated[int, Field(ge=64, le=65536)] = 2048


class _Validate(_Section):
    matches_per_role: Annotated[int, Field(gt=0, le=20)] = 1


class _Intake(_Section):
    concurrency: Annotated[int, Field(gt=0, le=64)] = 1


class _Requests(_Section):
    per_s: Annotated[float, Field(gt=0, le=100_000)] = 10.0
    burst: Annotated[int, Field(gt=0, le=1_000_000)] = 50


class _Suspend(_Section):
    after: Annotated[int, Field(gt=0, le=10_000)] = 10
    faults: Annotated[float, Field(gt=0, le=1)] = 0.5


class _ArenaSection(_Section):
    placement_matches: Annotated[int, Field(ge=0, le=1000)] = 10
    pairing: Literal["close", "random"] = "close"
    submission: _Submission = Field(default_factory=_Submission)
    build: _Build = Field(default_factory=_Build)
    validate_: _Validate = Field(default_factory=_Validate, alias="validate")
    intake: _Intake = Field(default_factory=_Intake)
    suspend: _Suspend = Field(default_factory=_Suspend)
    public_leaderboard: bool = True
    public_url: Annotated[str, Field(max_length=300)] | None = None
    rating_centre: Annotated[float, Field(ge=-1_000_000, le=1_000_000)] = 1500.0
    database_wait_s: Annotated[int, Field(gt=0, le=86_400)] = DATABASE_WAIT_S
    requests: _Requests = Field(default_factory=_Requests)


@dataclass(frozen=True)
class Rate:
    """How many requests one client may make (`rates`): `burst` at once, then `per_s` a
    second."""

    per_s: float = 10.0
    burst: int = 50


@dataclass(frozen=True)
class SubmissionCaps:
    """What one submission may be: its unpacked size and files, and how often an author may
    submit."""

    max_bytes: int
    max_files: int
    per_hour: int


@dataclass(frozen=True)
class BuildLimits:
    """What a bot's build may take: wall time and memory."""

    seconds: int
    memory_mb: int


@dataclass(frozen=True)
class FieldPlayer:
    """A bot version as a tournament player: its name, the command it runs, where."""

    name: str
    command: str
    cwd: Path


@dataclass(frozen=True)
class ArenaConfig:
    """A checked arena config."""

    path: Path
    # The config's text with the arena section blanked out: the tournament keys.
    text: str
    # The tournament keys as checked, with stand-in players: games, clocks, policy, limits.
    tournament: TournamentConfig
    placement_matches: int
    pairing: PairingRule
    submission: SubmissionCaps
    build: BuildLimits
    validate_matches_per_role: int
    # How many versions the intake builds and validates at once.
    intake_concurrency: int
    # A bot that faulted in more than `suspend_faults` of its matches, once it has played
    # `suspend_after`, is suspended.
    suspend_after: int
    suspend_faults: float
    public_leaderboard: bool
    # The arena's origin as its users reach it (`https://arena.example.org`), or None to
    # answer whatever Host a request names (`public_origin`).
    public_url: str | None
    # Where the pages and the API centre the ratings, which the ladder fits with their mean
    # at 0: added as they are read, so that the database and the fits stay as they are.
    rating_centre: float
    # How long the ladder and the intake wait for a database that does not answer (lost, or
    # read-only) before `serve` ends; a full disk is waited out (`outages`).
    database_wait_s: int = DATABASE_WAIT_S
    # What one client may ask of the API and the pages (`rates`).
    requests: Rate = Rate()

    def field_config(self, players: Sequence[FieldPlayer], results: Path) -> TournamentConfig:
        """The tournament of the bots of the moment: what the venues play the ladder's
        matches with. Two stand-ins fill a field of fewer than two."""
        return self._played(_field_text(self.text, players, results))

    def final_config(
        self, players: Sequence[FieldPlayer], results: Path, fmt: str, rounds: int
    ) -> TournamentConfig:
        """The season's final (`ladder/final.py`): the tournament keys with `players`, its
        results directory, its `format` and `rounds`; ConfigError if it cannot be played."""
        return self._played(
            _field_text(self.text, players, results, {"format": fmt, "rounds": rounds})
        )

    def _played(self, text: str) -> TournamentConfig:
        """The tournament of `text`, whose transcripts name no path of this machine: its
        authors read them (`results.as_written`)."""
        return replace(parse_config(self.path, text), portable_records=True)


def load_arena_config(path: Path) -> ArenaConfig:
    """Read and check an arena config; ConfigError with file:line: key for any problem."""
    return parse_arena_config(path, read_text(path, ConfigError, MAX_CONFIG_BYTES))


def parse_arena_config(path: Path, text: str) -> ArenaConfig:
    try:
        check_shape(path, text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        line, problem = yaml_problem(error)
        raise ConfigError(f"{path}{line}: not valid YAML: {problem or error}") from None
    locate = Locator(path, root)
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{path}: expected a mapping of settings (name, games, arena, ...)")
    section: dict[str, Any] = {}
    lines = text.splitlines(keepends=True)
    blanked = list(lines)
    for key, value in root.value:
        if key.value in _ARENA_OWNS:
            raise locate.error((key.value,), f"not in an arena: {_ARENA_OWNS[key.value]}")
        if key.value != SECTION:
            continue
        first, last = key.start_mark.line, _last_line(value)
        others = [k for k, _ in root.value if k is not key and first <= k.start_mark.line <= last]
        if others:
            raise locate.error((SECTION,), "put the arena section on lines of its own")
        for number in range(first, last + 1):
            blanked[number] = "\n"
        section = yaml.safe_load("".join(lines[first : last + 1]))
        section = section.get(SECTION) or {}
    try:
        raw = _ArenaSection.model_validate(section)
    except ValidationError as error:
        first_error = error.errors()[0]
        raise locate.error((SECTION, *first_error["loc"]), _message(first_error)) from None
    try:
        public_url = None if raw.public_url is None else public_origin(raw.public_url)
    except ValueError as error:
        raise locate.error((SECTION, "public_url"), str(error)) from None
    tournament_text = "".join(blanked)
    tournament = parse_config(path, _field_text(tournament_text, (), None))
    for index, settings in enumerate(tournament.games):
        if settings.clocks.margin_ms:
            raise locate.error(("games", index, "time_margin"), f"not in an arena: {_EXACT}")
    return ArenaConfig(
        path=path,
        text=tournament_text,
        tournament=tournament,
        placement_matches=raw.placement_matches,
        pairing=PairingRule(raw.pairing),
        submission=SubmissionCaps(
            raw.submission.max_mb * 1024 * 1024, raw.submission.max_files, raw.submission.per_hour
        ),
        build=BuildLimits(raw.build.seconds, raw.build.memory_mb),
        validate_matches_per_role=raw.validate_.matches_per_role,
        intake_concurrency=raw.intake.concurrency,
        suspend_after=raw.suspend.after,
        suspend_faults=raw.suspend.faults,
        public_leaderboard=raw.public_leaderboard,
        public_url=public_url,
        rating_centre=raw.rating_centre,
        database_wait_s=raw.database_wait_s,
        requests=Rate(raw.requests.per_s, raw.requests.burst),
    )


def public_origin(url: str) -> str:
    """A public URL as an origin, `scheme://host[:port]` in lower case; ValueError for one
    that is not http or https, holds a user, a path, a query or a fragment."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme.lower() not in ("http", "https")
        or not parts.hostname
        or port == -1
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(
            f"must be the arena's origin, http(s)://HOST[:PORT] with no path, got {url[:80]!r}"
        )
    return f"{parts.scheme}://{parts.netloc}".lower()


def _field_text(
    text: str,
    players: Sequence[FieldPlayer],
    results: Path | None,
    keys: Mapping[str, str | int | bool] | None = None,
) -> str:
    """The tournament keys with `players` (stand-ins for those missing of two) and the
    results directory appended, with `keys` (by default `live`: the ladder's field): JSON
    strings are YAML's too, quoted whatever they hold."""
    lines = [text.rstrip("\n")]
    if results is not None:
        lines.append(f"output: {json.dumps(str(results))}")
        # By default the ladder's: its matches are watched as they are played.
        for key, value in (keys or {"live": True}).items():
            lines.append(f"{key}: {json.dumps(value)}")
    lines.append("players:")
    env = json.dumps(bot_environment())
    for player in players:
        lines.append(
            f"  - {{name: {json.dumps(player.name)}, command: {json.dumps(player.command)},"
            f" cwd: {json.dumps(str(player.cwd))}, env: {env}}}"
        )
    for index, stand_in in enumerate(_STAND_INS[len(players) :]):
        lines.append(f"  - {{name: stand-in-{index}, command: {stand_in}}}")
    return "\n".join(lines) + "\n"


def _last_line(node: yaml.Node) -> int:
    """The last line (from 0) a node's text is on: its end mark is just past it."""
    end = node.end_mark
    return end.line if end.column > 0 or end.line == node.start_mark.line else end.line - 1


def _message(error: Any) -> str:
    kind, loc, given = error["type"], error["loc"], error["input"]
    key = loc[-1] if loc else ""
    if kind == "missing":
        return f"missing key {key!r}"
    if kind == "extra_forbidden":
        return f"unknown key {key!r}"
    if kind in ("model_type", "dict_type"):
        # pydantic's words name the model class, which the config's writer never sees.
        return f"must be a mapping of keys to values, got {given!r}"
    if kind in ("int_type", "float_type") and isinstance(given, str | bool):
        number = "a whole number" if kind == "int_type" else "a number"
        if isinstance(given, bool):
            return f"must be {number}, not yes or no (YAML reads {str(given).lower()} as one)"
        return f"must be {number}, not the text {given!r}: write it without quotes"
    return str(error["msg"]).replace("Input should be", "must be") + f", got {given!r}"
