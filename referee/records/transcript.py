"""The record of a match: dataclasses written atomically as one JSON document, and read back.

The schema is documented in `docs/transcripts.md`; `SCHEMA_VERSION` changes with it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from referee.errors import FaultKind, SchemaVersionError, TranscriptError
from referee.records.files import field_path, read_text, write_atomic

SCHEMA = "referee-transcript"
SCHEMA_VERSION = 1
# The command recorded for a seat a person played.
HUMAN_COMMAND = ("human",)


@dataclass(frozen=True)
class Seat:
    """Who played a role: the player's name, its command, and where its log went."""

    role: str
    player: str
    command: list[str]
    log: str | None

    @property
    def human(self) -> bool:
        """Whether a person played the seat."""
        return tuple(self.command) == HUMAN_COMMAND


@dataclass(frozen=True)
class Fault:
    """A failed request (step 0 is the start); `replacement` is the random move played for it."""

    step: int
    role: str
    kind: FaultKind
    detail: str
    replacement: str | None = None


@dataclass(frozen=True)
class Step:
    """A joint move applied, and how long each role that was asked took to answer."""

    step: int
    moves: dict[str, str]
    times_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Transcript:
    """Everything about one match; `goals` is None when the match was aborted."""

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

    def to_json(self) -> dict[str, Any]:
        """The transcript as JSON-ready data, schema fields first."""
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **asdict(self)}

    @property
    def complete(self) -> bool:
        """Whether the match reached its end (by the rules or by a forfeit)."""
        return self.goals is not None and self.end_reason != "aborted"


_ADAPTER = TypeAdapter(Transcript)


def utc_now() -> str:
    """The current time, UTC, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_transcript(path: Path, transcript: Transcript) -> None:
    """Write a transcript atomically as indented JSON."""
    write_atomic(path, json.dumps(transcript.to_json(), indent=2) + "\n")


def transcript_files(directory: Path) -> list[Path]:
    """The transcripts of a results directory: its `*.json` files, in name order."""
    return sorted(directory.glob("*.json"))


def read_transcript(path: Path) -> Transcript:
    """Read and check a transcript file; TranscriptError says precisely what is wrong with it."""
    text = read_text(path, TranscriptError)
    try:
        data = json.loads(text)
    except RecursionError:
        raise TranscriptError(f"{path}: not a transcript: JSON nested too deeply") from None
    except json.JSONDecodeError as error:
        if not text.strip():
            raise TranscriptError(f"{path}: the file is empty") from None
        if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
            raise TranscriptError(
                f"{path}: line {error.lineno} column {error.colno}: the file ends early"
                " (truncated?)"
            ) from None
        raise TranscriptError(
            f"{path}: line {error.lineno} column {error.colno}: not valid JSON: {error.msg}"
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise TranscriptError(f'{path}: not a referee transcript (no "schema": "{SCHEMA}")')
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path}: schema version {version!r}; this referee reads version {SCHEMA_VERSION}"
        )
    try:
        # Strict: a transcript that says "7" where 7 belongs has been edited by hand.
        return _ADAPTER.validate_json(text, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        where = field_path(first["loc"]) or "top level"
        raise TranscriptError(f"{path}: {where}: {first['msg']}") from None
