"""Files: those users hand the referee read with a one-line error, places in them named, and
records written so that no reader ever sees half of one."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from referee.errors import ConfigError, RefereeError

MIB = 1024 * 1024
# The largest file the referee reads: far above any config, transcript or reference file
# (the largest reference file is 2 MiB), far below what would strain the machine.
MAX_FILE_BYTES = 64 * MIB


def read_text(path: Path, error: type[RefereeError], limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes, or `error` saying why not.

    A FIFO, a device or a directory is refused before anything is read from it: reading
    `/dev/zero` would never end, nor would a FIFO nobody writes to.
    """
    try:
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as problem:
        raise error(f"{path}: cannot read: {problem.strerror}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise error(f"{path}: cannot read: {kind}")
        data = _read_at_most(descriptor, limit + 1)
    except OSError as problem:
        raise error(f"{path}: cannot read: {problem.strerror}") from None
    finally:
        os.close(descriptor)
    if len(data) > limit:
        size = f"{limit // MIB} MiB" if limit >= MIB else f"{limit} bytes"
        raise error(f"{path}: cannot read: larger than {size}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: cannot read: not UTF-8 text") from None


def _read_at_most(descriptor: int, size: int) -> bytes:
    chunks = []
    while size > 0 and (chunk := os.read(descriptor, min(size, MIB))):
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def yaml_problem(error: Exception) -> tuple[str, str | None]:
    """Where a YAML parser failed (`:LINE`, or nothing when it does not say) and its problem,
    if it names one."""
    mark = getattr(error, "problem_mark", None)
    return (f":{mark.line + 1}" if mark else ""), getattr(error, "problem", None)


def field_path(location: Sequence[int | str]) -> str:
    """A location in nested data as a reader of the file would write it: `players[2].name`."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def check_writable(path: Path, what: str = "a transcript file") -> None:
    """Make sure `what` can be written at `path` before anything is played for it."""
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not {what}")
    if path.exists() and not path.is_file():
        raise ConfigError(f"{path}: is not a regular file, so not {what}")
    check_writable_dir(path.parent, str(path))


def check_writable_dir(directory: Path, where: str, what: str = "") -> None:
    """Create `directory` if need be and make sure files can be written in it, by writing one.

    The error names `where` the directory was asked for, and `what` it is for, if anything.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"{where}: cannot create {what}{directory}: {error.strerror}") from None
    # A permission check is not enough: root may write anywhere but in /proc or /sys.
    try:
        descriptor, probe = tempfile.mkstemp(dir=directory, prefix=".referee-probe-")
    except OSError as error:
        raise ConfigError(f"{where}: cannot write in {what}{directory}: {error.strerror}") from None
    os.close(descriptor)
    os.unlink(probe)


def write_atomic(path: Path, text: str | bytes, sync: bool = True) -> None:
    """Write a file so that no reader ever sees half of it: a temporary file, then a rename.
    With `sync`, its data is on the disk before the rename; without, `sync_files` puts it
    there later (a killed process loses nothing either way: the kernel has the file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        os.fchmod(descriptor, 0o644)  # mkstemp makes it private; a record is for everyone to read
        with os.fdopen(descriptor, "wb") as file:
            file.write(text.encode() if isinstance(text, str) else text)
            file.flush()
            if sync:
                os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def sync_files(paths: Iterable[Path]) -> None:
    """Put files written without `sync`, and their names, on the disk: each file, then each
    directory once. The first flush carries the others' names in the same journal commit, so
    many files cost little more than one."""
    directories: dict[Path, None] = {}
    for path in paths:
        _sync(path, os.O_RDONLY)
        directories[path.parent] = None
    for directory in directories:
        _sync(directory, os.O_RDONLY | os.O_DIRECTORY)


def _sync(path: Path, flags: int) -> None:
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
