"""A tournament config file's shape as pydantic models: its keys, their types and ranges,
and the formats it names; and a pydantic error about it in the words of a config file."""

from __future__ import annotations

import difflib
from dataclasses import replace
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.clock import MAX_CLOCK_MS, MAX_MARGIN_MS
from referee.games.gdl.limits import MEMORY_MB, SECONDS, STATE_MEMORY_MB, STATE_SECONDS
from referee.policy import MAX_SEED
from referee.sandbox.limits import Limits

# Names become parts of match ids and file names: no spaces, no slashes.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
# The longest opening: past it a match is more the referee's than the players'.
MAX_OPENING = 1000
# More cores than any machine a tournament runs on has.
MAX_CORES_PER_MATCH = 1024

Positive = Annotated[int, Field(gt=0)]
NonNegative = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
# A player's own clock, in ms: positive, at most a day.
OwnClock = Annotated[int, Field(gt=0, le=MAX_CLOCK_MS)]
OwnBank = Annotated[int, Field(ge=0, le=MAX_CLOCK_MS)]
# How late an answer may come and still be in time, in ms: 0 (exact) to a day.
Margin = Annotated[int, Field(ge=0, le=MAX_MARGIN_MS)]
# A key path in a config file: keys of mappings, indexes of lists.
Location = tuple[int | str, ...]


class TournamentFormat(StrEnum):
    """Who plays whom: every group of players, the challengers against the rest, two players
    until a sequential test decides, each round players of near score (Swiss), or a bracket
    whose winners go on (knockout)."""

    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"
    SPRT = "sprt"
    SWISS = "swiss"
    KNOCKOUT = "knockout"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GameEntry(_Strict):
    """A game of `games`: its id, and what it sets for itself."""

    id: str
    rounds: Positive | None = None
    start_clock: Positive | None = None
    play_clock: Positive | None = None
    time_bank: NonNegative | None = None
    time_margin: Margin | None = None
    openings: Any = None
    max_steps: Positive | None = None


class LimitsEntry(_Strict):
    """The `limits` of every player, or of one: those given over the ones below."""

    memory_mb: Positive | None = None
    cpu_s: Positive | None = None
    processes: Positive | None = None
    open_files: Positive | None = None
    file_size_mb: Positive | None = None
    disk_mb: Positive | None = None

    def over(self, limits: Limits) -> Limits:
        """`limits` with the ones given here in their place."""
        return replace(limits, **self.model_dump(exclude_none=True))


class SprtEntry(_Strict):
    """The `sprt` settings: the two hypotheses, and the errors allowed."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05


class PlayerEntry(_Strict):
    """A player of `players`: a command, or a GGP player's URL."""

    name: Name
    command: str | list[str] | None = None
    # A GGP player: http://host:port, instead of a command.
    url: str | None = None
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    reuse: bool | None = None
    limits: LimitsEntry = Field(default_factory=LimitsEntry)
    # A URL player: how many matches it takes at once.
    capacity: Positive | None = None
    # Its own clocks, over every game's, for its seats only (time odds).
    start_clock: OwnClock | None = None
    play_clock: OwnClock | None = None
    time_bank: OwnBank | None = None


class ConfigFile(_Strict):
    """The whole file, with the defaults of what it leaves out."""

    name: Name
    games: Annotated[list[GameEntry], Field(min_length=1)]
    players: Annotated[list[PlayerEntry], Field(min_length=2)]
    rounds: Positive = 1
    start_clock: Positive = 10_000
    play_clock: Positive = 1_000
    time_bank: NonNegative = 0
    time_margin: Margin = 0
    policy: Literal["forfeit", "random"] = "forfeit"
    concurrency: Positive = 1
    cores_per_match: Annotated[int, Field(ge=0, le=MAX_CORES_PER_MATCH)] = 1
    ponder: bool = False
    cores_per_seat: Annotated[int, Field(ge=0, le=MAX_CORES_PER_MATCH)] = 1
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    reuse: bool = True
    limits: LimitsEntry = Field(default_factory=LimitsEntry)
    output: str | None = None
    trace: bool = False
    format: Literal["round-robin", "gauntlet", "sprt", "swiss", "knockout"] = "round-robin"
    games_per_pairing: Positive | None = None
    tiebreak_games: NonNegative | None = None
    tiebreak: Literal["higher-seed", "draw"] | None = None
    # A Swiss: what ranks equal scores, in order (swiss.Tiebreak's values).
    tiebreaks: (
        list[Literal["buchholz", "buchholz-cut-1", "median-buchholz", "sonneborn-berger"]] | None
    ) = None
    # A knockout's seeding: the ratings of an earlier tournament's results directory.
    seeding: str | None = None
    challengers: Positive | None = None
    sprt: SprtEntry | None = None
    # Steps at random, or a book: checked by the config's builder, which says which in
    # one message.
    openings: Any = 0
    rating_interval: NonNegative = 0
    anchor: Name | None = None
    state_memory_mb: Annotated[int, Field(ge=MEMORY_MB[0], le=MEMORY_MB[1])] = STATE_MEMORY_MB
    state_seconds: Annotated[float, Field(gt=0, le=SECONDS)] = STATE_SECONDS
    withdraw_after: Positive = 3
    max_steps: Positive | None = None
    live: bool = False


def _key_hint(key: Any, parent: Location) -> str:
    models: dict[tuple[str, ...], type[_Strict]] = {
        (): ConfigFile,
        ("players",): PlayerEntry,
        ("games",): GameEntry,
        ("sprt",): SprtEntry,
        ("limits",): LimitsEntry,
        ("players", "limits"): LimitsEntry,
    }
    keys = tuple(part for part in parent if isinstance(part, str))
    if key == "time_margin" and keys == ("players",):
        return " (a margin is every seat's alike: set time_margin at the top or in a game)"
    model = models.get(keys, ConfigFile)
    close = difflib.get_close_matches(str(key), list(model.model_fields), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


_TYPE_NAMES = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "text",
    "bool_type": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "list_type": "a list",
}


# The keys in milliseconds, whose bound is a day.
_MS_KEYS = {"start_clock", "play_clock", "time_bank", "time_margin"}


def error_message(error: Any) -> str:
    """A pydantic error in the words of a config file."""
    kind, loc = error["type"], error["loc"]
    key = loc[-1] if loc else ""
    if kind == "missing":
        return f"missing key {key!r}"
    if kind == "extra_forbidden":
        return f"unknown key {key!r}{_key_hint(key, loc[:-1])}"
    if "str" in loc:
        return f"expected a command: text, or a list of words; got {error['input']!r}"
    if kind in _TYPE_NAMES:
        return f"expected {_TYPE_NAMES[kind]}, got {error['input']!r}"
    if kind == "string_pattern_mismatch":
        return f"{error['input']!r}: use letters, digits and _ . + - only, no spaces"
    if kind == "too_short" and loc == ("players",):
        return "a tournament needs at least two players"
    if kind == "too_short":
        return "must not be empty"
    if kind == "less_than_equal" and key in _MS_KEYS:
        return f"must be at most {error['ctx']['le']} ms (a day), got {error['input']!r}"
    return error["msg"].replace("Input should be", "must be") + f", got {error['input']!r}"
