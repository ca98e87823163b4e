"""Files: those users hand the referee read with a one-line error, places in them named, and
records written so that no reader ever sees half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from referee.errors import ConfigError, RefereeError


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


def check_writable(path: Path) -> None:
    """Make sure a transcript can be written at `path` before a match is played for it."""
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a transcript file")
    check_writable_dir(path.parent, str(path))


def check_writable_dir(directory: Path, where: str, what: str = "") -> None:
    """Create `directory` if need be and make sure files can be written in it.

    The error names `where` the directory was asked for, and `what` it is for, if anything.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"{where}: cannot create {what}{directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK):
        raise ConfigError(f"{where}: cannot write in {what}{directory}")


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that no reader ever sees half of it: a temporary file, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        os.fchmod(descriptor, 0o644)  # mkstemp makes it private; a record is for everyone to read
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
