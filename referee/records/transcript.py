"""The record of a match: dataclasses written atomically as one JSON document, and read back.

The schema is documented in `docs/transcripts.md`; `SCHEMA_VERSION` changes with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic_core import to_json

from referee.errors import (
    FaultKind,
    GameFault,
    SchemaVersionError,
    StateLimitFault,
    TranscriptError,
)
from referee.games import Game, GdlGame, StateLimits
from referee.games.base import CHANCE_ROLE
from referee.policy import Policy, forfeits
from referee.protocol import EndReason
from referee.records.files import field_path, read_text, write_atomic
from referee.records.signing import SIGNATURE_FIELD, SignatureCheck, SigningKey, check_signature

SCHEMA = "referee-transcript"
SCHEMA_VERSION = 2
# The origin of a match another game manager played, imported from its GGP match JSON.
GGP_ORIGIN = "ggp"
# The end reason of such a match that its manager was still playing when it wrote the
# record: no end, no goals, its steps checked as far as they go. No `end` line says it.
UNFINISHED = "unfinished"
# The end reason of a match the tournament's `max_steps` ended before the game did: the
# goals are those the rules give its last state. Its players are told `terminal`, the
# protocol's word for an end by the rules.
ADJUDICATED = "adjudicated"
# The command recorded for a seat a person played.
HUMAN_COMMAND = ("human",)


# A field the schema does not have is refused: nothing unread may hide in a record.
_STRICT = ConfigDict(extra="forbid")
# What a file cut in the middle of a value ends with: part of a literal or of a number.
_CUT_VALUE = re.compile(r"t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?|[-+0-9.eE]+")


@dataclass(frozen=True)
class Seat:
    """Who played a role: the player's name, its command, and where its log went.

    `fingerprint` is a hash of what the command runs (its words, the contents of the files it
    names, its environment); `files` the SHA-256 of each of those files. A tournament plays a
    match again when its player's fingerprint has changed since. `clocks` are the seat's own
    (start, play, bank), where they are not the match's: a tournament player's own clocks.
    """

    __pydantic_config__ = _STRICT

    role: str
    player: str
    command: list[str]
    log: str | None
    fingerprint: str | None = None
    files: dict[str, str] | None = None
    clocks: dict[str, int] | None = None

    @property
    def human(self) -> bool:
        """Whether a person played the seat."""
        return tuple(self.command) == HUMAN_COMMAND

    @property
    def ggp(self) -> bool:
        """Whether a GGP player played the seat: its command is the player's address."""
        return len(self.command) == 1 and self.command[0].startswith("http://")


@dataclass(frozen=True)
class Fault:
    """A failed request (step 0 is the start); `replacement` is the random move played for it.

    `time_ms` is how long the answer took when one came: a late one, or one that was not an
    acceptable answer.
    """

    __pydantic_config__ = _STRICT

    step: int
    role: str
    kind: FaultKind
    detail: str
    replacement: str | None = None
    time_ms: float | None = None

    def __str__(self) -> str:
        """`obplayer: timeout at step 6, no answer within 200 ms`: the seat, the fault and its
        step, and what the player did, as recorded."""
        at = f"step {self.step}" if self.step else "the start (step 0)"
        detail = f", {self.detail}" if self.detail else ""
        return f"{self.role}: {self.kind} at {at}{detail}"


@dataclass(frozen=True)
class Step:
    """A joint move applied, and how long each role whose own move was played took to answer:
    in wall time, and in the CPU time its processes used meanwhile (where it was counted)."""

    __pydantic_config__ = _STRICT

    step: int
    moves: dict[str, str]
    times_ms: dict[str, float] = field(default_factory=dict)
    # When the joint move was decided, in ms since the match began (None in older records).
    at_ms: float | None = None
    cpu_ms: dict[str, float] = field(default_factory=dict)
    # In a game of imperfect information, what each role was told it perceives after the
    # joint move, beside its own move (None in other games, where each is told every move).
    percepts: dict[str, list[str]] | None = None


@dataclass(frozen=True)
class Signature:
    """Who signed a transcript (an Ed25519 public key) and the signature, base64."""

    __pydantic_config__ = _STRICT

    public_key: str
    value: str


@dataclass(frozen=True)
class Rulesheet:
    """The GDL rules a match was played under: where they came from, their hash, their text."""

    __pydantic_config__ = _STRICT

    path: str
    sha256: str
    text: str


@dataclass(frozen=True)
class BookLine:
    """An opening from a book: the file it came from (as the config named it), its line
    there, and the joint moves of its steps, each in role order."""

    __pydantic_config__ = _STRICT

    source: str
    line: int
    steps: list[list[str]]


@dataclass(frozen=True)
class RulesFault:
    """Where the rules failed a match: the state (0 the first; `step` the state after that
    step) they could not compute, why, and the limits each state had when the game was
    reasoned about one state at a time."""

    __pydantic_config__ = _STRICT

    step: int
    detail: str
    # Which limit the state passed ("memory", "time"); None for a fault of the rules as
    # written (no legal move, no goal), or a grounder's failure.
    limit: str | None = None
    state_memory_mb: int | None = None
    state_seconds: float | None = None

    def __str__(self) -> str:
        """The state the rules could not compute, and what failed."""
        after = f"after step {self.step}" if self.step else "the first state"
        return f"the rules fail at state {self.step} ({after}): {self.detail}"


@dataclass(frozen=True)
class Transcript:
    """Everything about one match; `goals` is None when the match was aborted or is
    unfinished. `end_reason` is an `EndReason`, UNFINISHED or ADJUDICATED."""

    __pydantic_config__ = _STRICT

    match_id: str
    game: str
    seed: int
    seats: list[Seat]
    clocks: dict[str, int]
    policy: str
    started_at: str
    ended_at: str
    start_times_ms: dict[str, float]
    steps: list[Step]
    faults: list[Fault]
    end_reason: str
    goals: dict[str, int] | None
    # Kept with the match so that a replay checks it under the exact rules it was played under.
    rulesheet: Rulesheet | None = None
    # How many steps the referee played before the players chose: at random from the seed,
    # or the steps of `book`.
    opening: int = 0
    book: BookLine | None = None
    # The step at which the match was to be adjudicated, if its game did not end before.
    max_steps: int | None = None
    # How many times a tournament's worker died while it played this match, each attempt
    # lost with it; this is the match played again from scratch.
    lost_attempts: int = 0
    # None for a match this referee played; "ggp" for one another game manager played,
    # imported from its match JSON: its answer times and its own random moves are unknown.
    origin: str | None = None
    # Set when the match ended because the rules could not compute a state (then it is
    # aborted, with no goals): a fault of the game, no player's.
    rules_fault: RulesFault | None = None
    # The limits each state had, for a GDL game computed one state at a time (None for
    # others): a replay computes the states within them, as the match did.
    state_memory_mb: int | None = None
    state_seconds: float | None = None
    # The CPU time each role's processes used to answer `start` (where it was counted).
    start_cpu_ms: dict[str, float] = field(default_factory=dict)
    # How late an answer could come and still be in time (0: exactly), for every seat.
    time_margin_ms: int = 0
    signature: Signature | None = None

    def clocks_of(self, seat: Seat) -> dict[str, int]:
        """The clocks a seat played by: its own, else the match's."""
        return self.clocks if seat.clocks is None else seat.clocks

    def to_json(self) -> dict[str, Any]:
        """The transcript as JSON-ready data, schema fields first."""
        # By the schema's own serializer: a fifteenth of `asdict`'s time, and the same data.
        data = _ADAPTER.dump_python(self, mode="json")
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **data}

    @property
    def complete(self) -> bool:
        """Whether the match reached its end (by the rules or by a forfeit)."""
        return self.goals is not None and self.end_reason != "aborted"

    @property
    def settled(self) -> bool:
        """Whether playing the match again could change nothing: it reached its end, or the
        rules failed it (then it has no result, and playing it again fails the same way)."""
        return self.complete or self.rules_fault is not None

    @property
    def forfeit_step(self) -> int | None:
        """The step a forfeit ended the match at (None: it was not forfeited): the one asked
        after the last played, which `steps` does not hold since no joint move was completed
        there, or the start (0) for a match that failed to start."""
        if self.end_reason != EndReason.FORFEIT:
            return None
        last = len(self.steps)
        return 0 if last == 0 and any(fault.step == 0 for fault in self.faults) else last + 1

    @property
    def forfeit_faults(self) -> list[Fault]:
        """The faults that ended a forfeited match: those at its forfeit step that forfeit
        under its policy (under `random`, only a resignation does)."""
        step = self.forfeit_step
        if step is None or self.policy not in set(Policy):
            return []
        policy = Policy(self.policy)
        return [f for f in self.faults if f.step == step and forfeits(policy, f.kind)]

    @property
    def last_step(self) -> int:
        """The last step a replay shows: the forfeit's, else the last played (0: the start)."""
        forfeited = self.forfeit_step
        return len(self.steps) if forfeited is None else forfeited

    def why_ended(self) -> str | None:
        """What ended a match that its rules did not end, as a person reads it: the faults of
        its forfeit, or the state its rules could not compute; None for any other end."""
        if self.rules_fault is not None:
            return str(self.rules_fault)
        return "; ".join(str(fault) for fault in self.forfeit_faults) or None


_ADAPTER = TypeAdapter(Transcript)
# The fields that say what a file is, before the transcript itself.
_HEADER = ("schema", "schema_version")


def rulesheet_of(game: Game) -> Rulesheet | None:
    """The rulesheet record of a GDL game; None for a built-in one."""
    if not isinstance(game, GdlGame):
        return None
    return Rulesheet(game.path, game.sha256, game.rules)


def state_limits(game: Game) -> StateLimits | None:
    """The limits each state of a game is computed within; None when its states are not
    computed under limits (a built-in game, a GDL game whose whole program is compiled)."""
    return game.state_limits if isinstance(game, GdlGame) else None


def rules_fault(game: Game, step: int, fault: GameFault) -> RulesFault:
    """The record of the rules failing at state `step`, with the limits its states had."""
    limit = str(fault.limit) if isinstance(fault, StateLimitFault) and fault.limit else None
    limits = state_limits(game)
    if limits is None:
        return RulesFault(step, str(fault), limit)
    return RulesFault(step, str(fault), limit, limits.memory_mb, limits.seconds)


def utc_now() -> str:
    """The current time, UTC, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tournament_match_id(game: str, round_: int, players: Sequence[str], again: int = 0) -> str:
    """The id of a scheduled match: its game, round and players in seat order, and which of
    the pair's matches in those seats it is (from 0) where a round has more than one. It
    names the match and nothing else, so that it stays the same when the field around it
    changes."""
    repeat = f".{again}" if again else ""
    return f"{game}-r{round_}{repeat}-{'-vs-'.join(players)}"


def seats_disagree(transcript: Transcript) -> bool:
    """Whether a tournament match's id names other players, or another order, than its seats."""
    found = re.fullmatch(
        rf"{re.escape(transcript.game)}-r(\d+)(?:\.(\d+))?-.*-vs-.*", transcript.match_id
    )
    if found is None:
        return False  # not a scheduled match
    # Named by its players alone: chance, the referee's seat, is in every match of its game.
    players = [seat.player for seat in transcript.seats if seat.role != CHANCE_ROLE]
    expected = tournament_match_id(transcript.game, int(found[1]), players, int(found[2] or 0))
    return transcript.match_id != expected


def write_transcript(
    path: Path, transcript: Transcript, key: SigningKey | None, sync: bool = True
) -> None:
    """Write a transcript atomically as indented JSON, signed with `key` if there is one; on
    the disk when it returns with `sync`, else whole in its file (`files.sync_files`)."""
    write_atomic(path, transcript_text(transcript, key), sync)


def transcript_text(transcript: Transcript, key: SigningKey | None) -> str:
    """A transcript as the file holds it: indented JSON, signed with `key` if there is one."""
    data = transcript.to_json()
    if key is not None:
        data[SIGNATURE_FIELD] = key.sign(data)
    # The same JSON as the standard library's, in a tenth of its time (whose indented output
    # is written in Python); characters beyond ASCII are written as UTF-8, not escaped.
    return to_json(data, indent=2).decode() + "\n"


def transcript_files(directory: Path) -> list[Path]:
    """The transcripts of a results directory: its `*.json` files, in name order."""
    return sorted(directory.glob("*.json"))


def read_transcript(path: Path) -> Transcript:
    """Read and check a transcript file; TranscriptError says precisely what is wrong with it."""
    return _read(path)[0]


def read_signed(path: Path, expected_key: str | None) -> tuple[Transcript, SignatureCheck]:
    """Read a transcript and check its signature (made with `expected_key`, if given)."""
    transcript, data = _read(path)
    return transcript, check_signature(data, expected_key)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _read(path: Path) -> tuple[Transcript, dict[str, Any]]:
    data = read_json(path)
    return transcript_of(data, str(path)), data


def read_json(path: Path) -> Any:
    """The JSON document of a record file; TranscriptError saying precisely why not."""
    text = read_text(path, TranscriptError)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise TranscriptError(f"{path}: JSON nested too deeply") from None
    except json.JSONDecodeError as error:
        if not text.strip():
            raise TranscriptError(f"{path}: the file is empty") from None
        rest = text[error.pos :].rstrip()
        if not rest or _CUT_VALUE.fullmatch(rest) or error.msg.startswith("Unterminated string"):
            raise TranscriptError(
                f"{path}: line {error.lineno} column {error.colno}: the file ends early"
                " (truncated?)"
            ) from None
        raise TranscriptError(
            f"{path}: line {error.lineno} column {error.colno}: not valid JSON: {error.msg}"
        ) from None
    except ValueError as error:
        raise TranscriptError(f"{path}: not valid JSON: {error}") from None


def transcript_of(data: Any, path: str) -> Transcript:
    """The transcript a JSON document holds; TranscriptError naming `path` and the field."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise TranscriptError(f'{path}: not a referee transcript (no "schema": "{SCHEMA}")')
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path}: schema version {version!r}; this referee reads version {SCHEMA_VERSION}"
        )
    try:
        # Strict: a transcript that says "7" where 7 belongs has been edited by hand.
        body = {key: value for key, value in data.items() if key not in _HEADER}
        return _ADAPTER.validate_json(json.dumps(body), strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        where = field_path(first["loc"]) or "top level"
        raise TranscriptError(f"{path}: {where}: {first['msg']}") from None
