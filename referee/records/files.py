"""Files users hand the referee: read as text with a one-line error, places in them named."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from referee.errors import RefereeError


def read_text(path: Path, error: type[RefereeError]) -> str:
    """The UTF-8 text of a file, or `error` saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as problem:
        reason = problem.strerror if isinstance(problem, OSError) else "not UTF-8 text"
        raise error(f"{path}: cannot read: {reason}") from None


def field_path(location: Sequence[int | str]) -> str:
    """A location in nested data as a reader of the file would write it: `players[2].name`."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
