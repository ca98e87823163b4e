"""Verifying transcript files and results directories: each file's signature checked, then the
match replayed; a verdict per file, never an exception for a bad one."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from referee.errors import SchemaVersionError, TranscriptError
from referee.records.replay import replay
from referee.records.replayed import Replay
from referee.records.signing import SignatureCheck
from referee.records.transcript import Transcript, read_signed


class Outcome(StrEnum):
    """What verifying one file found."""

    VERIFIED = "verified"
    FAILED = "failed"
    OTHER_VERSION = "other schema version"
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class FileVerdict:
    """The verdict on one transcript file; `problem` says what is wrong unless it verified."""

    path: Path
    outcome: Outcome
    game: str | None = None
    problem: str | None = None
    replayed: Replay | None = None
    signature: SignatureCheck | None = None

    def to_json(self) -> dict[str, Any]:
        discrepancy = self.replayed.problem if self.replayed else None
        return {
            "file": str(self.path),
            "outcome": str(self.outcome),
            "game": self.game,
            "signature": self.signature.to_json() if self.signature else None,
            "problem": self.problem,
            "discrepancy": discrepancy.to_json() if discrepancy else None,
            "note": self.replayed.note if self.replayed else None,
            "end": _end_json(self.replayed.transcript) if self.replayed else None,
        }


def _end_json(transcript: Transcript) -> dict[str, Any]:
    """How a match ended: why, at which step (a forfeit's, else the last played), each role's
    goal (null: aborted), the faults that forfeited it, and what ended it as a person reads it
    (null: its rules, as played)."""
    return {
        "reason": transcript.end_reason,
        "step": transcript.last_step,
        "goals": transcript.goals,
        "faults": [asdict(fault) for fault in transcript.forfeit_faults],
        "why": transcript.why_ended(),
    }


def verify_file(path: Path, expected_key: str | None = None) -> FileVerdict:
    """Check a transcript file's signature, then replay it; never raises for a bad file.

    With `expected_key`, the transcript must be signed with that public key.
    """
    try:
        transcript, signature = read_signed(path, expected_key)
    except SchemaVersionError as error:
        return FileVerdict(path, Outcome.OTHER_VERSION, problem=str(error))
    except TranscriptError as error:
        return FileVerdict(path, Outcome.UNREADABLE, problem=str(error))
    replayed = replay(transcript)
    game = transcript.game
    if signature.fails:
        return FileVerdict(path, Outcome.FAILED, game, f"{path}: {signature}", replayed, signature)
    if replayed.problem is None:
        return FileVerdict(path, Outcome.VERIFIED, game, replayed=replayed, signature=signature)
    problem = f"{path}: {replayed.problem}"
    return FileVerdict(path, Outcome.FAILED, game, problem, replayed, signature)


@dataclass(frozen=True)
class DirectoryReport:
    """The verdicts on every transcript of a results directory."""

    directory: Path
    verdicts: list[FileVerdict]

    @property
    def failed(self) -> int:
        return sum(verdict.outcome is not Outcome.VERIFIED for verdict in self.verdicts)

    def by_game(self) -> list[tuple[str, int, int]]:
        """Per game (unreadable files under "-"): how many files verified and how many failed."""
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for verdict in self.verdicts:
            counts[verdict.game or "-"][verdict.outcome is not Outcome.VERIFIED] += 1
        return [(game, counts[game][0], counts[game][1]) for game in sorted(counts)]

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "verified": len(self.verdicts) - self.failed,
            "failed": self.failed,
            "by_game": [{"game": g, "verified": v, "failed": f} for g, v, f in self.by_game()],
            "files": [verdict.to_json() for verdict in self.verdicts],
        }


def verify_paths(
    directory: Path,
    paths: Sequence[Path],
    expected_key: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> DirectoryReport:
    """Verify the transcripts `paths` of a directory; `progress(done, total)` after each."""
    verdicts = []
    for done, path in enumerate(paths, start=1):
        verdicts.append(verify_file(path, expected_key))
        if progress is not None:
            progress(done, len(paths))
    return DirectoryReport(directory, verdicts)
