"""Results directories as commands name them: the key their transcripts must be signed with,
and what to tell of the key that signs them."""

from __future__ import annotations

from pathlib import Path

from referee.errors import RefereeError
from referee.records.signing import PUBLIC_FILE, SigningKey, directory_key, pinned_key
from referee.records.transcript import transcript_files


def key_note(key: SigningKey, created: bool, directory: Path) -> str:
    """What to tell about the key that signed a directory's transcripts."""
    made = f"made {key.path} (keep it private)" if created else str(key.path)
    return f"signing key: {made}; public key {key.public} in {directory / PUBLIC_FILE}"


def expected_key(directory: Path, pinned: str | None) -> str | None:
    """The key transcripts must be signed with: the one pinned, else the directory's own."""
    return pinned_key(pinned) if pinned is not None else directory_key(directory)


def results_directory(results: Path) -> None:
    """A results directory a person named must be one and hold transcripts: an empty table or
    report of a mistyped one would look like a tournament of no matches."""
    if not results.is_dir():
        raise RefereeError(f"{results}: no such results directory")
    if not transcript_files(results):
        raise RefereeError(f"{results}: no transcripts in it (a *.json file for each match)")
