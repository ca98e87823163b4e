"""Replays kept as files (`DIR/replays/`): a finished match's transcript never changes, so
what a replay of it showed is kept and read back rather than replayed again, by any
process of the arena and across restarts.

A file is named by everything its replay depended on: the transcript's sha256, the arena's
public key, what the replay was for and its links, and the arena's code (`code_version`):
a transcript rewritten, or an arena upgraded, names other files, so a file that no longer
applies is never read. Each file also says what it was made from and holds the sha256 of
its record: a file that does not say so, torn or altered, is replayed again. Files are
written whole (a temporary file renamed), and the oldest are removed past `LIMIT_BYTES`.
The directory may be removed at any time: it costs replays, nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import referee
from referee.arena.replays.work import Kind, Replayed

# The files kept, at most, in bytes: the oldest go past it.
LIMIT_BYTES = 256 * 2**20
# The layout of a file; another is never read.
FORMAT = 1
_SUFFIX = ".json"


def code_version() -> str:
    """The arena's code as it renders and replays: the sha256 of its package's files
    (sources, templates, assets), so that an upgrade, even one that kept the version
    number, never reads what the code before it made."""
    package = Path(referee.__file__).parent
    hashed = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            hashed.update(str(path.relative_to(package)).encode() + b"\0")
            hashed.update(path.read_bytes())
    return hashed.hexdigest()


class ReplayCache:
    """The replays kept in `directory`, at most `limit_bytes` of them, for the arena's code
    as it is (`code_version`)."""

    def __init__(self, directory: Path, limit_bytes: int = LIMIT_BYTES) -> None:
        self.directory = directory
        self.limit_bytes = limit_bytes
        self.code = code_version()
        # What the files take, as far as this process has written them since it counted
        # them (None: not yet counted): a count of the directory at every page written
        # would cost the arena's process a file status for every page kept.
        self._taken: int | None = None
        self._counting = threading.Lock()

    def entry(
        self, kind: Kind, transcript: str, public_key: str, bot_pages: Mapping[str, str]
    ) -> str:
        """The name of the file that keeps a replay of these: the sha256 of all it
        depended on."""
        links = sorted(bot_pages.items())
        made_from = [FORMAT, self.code, str(kind), transcript, public_key, links]
        return hashlib.sha256(json.dumps(made_from).encode()).hexdigest()

    def path(self, entry: str) -> Path:
        return self.directory / f"{entry}{_SUFFIX}"

    def get(self, entry: str) -> Replayed | None:
        """The replay kept as `entry`, or None: none kept, or a file that is not whole and
        made for this entry."""
        try:
            data = json.loads(self.path(entry).read_bytes())
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                return None
            if data.get("entry") != entry or data.get("sha256") != _sha256(data.get("replayed")):
                return None
            return Replayed.from_json(data["replayed"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None

    def put(self, entry: str, replayed: Replayed) -> None:
        """Keep `replayed` as `entry`, whole or not at all; then the oldest files past the
        bound are removed. A disk that refuses is no error: the replay is shown, not kept."""
        record = replayed.to_json()
        data = {"format": FORMAT, "entry": entry, "sha256": _sha256(record), "replayed": record}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".", suffix=".part", dir=self.directory)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as file:
                    json.dump(data, file)
                    written = file.tell()
                os.replace(temporary, self.path(entry))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError:
            return
        with self._counting:
            if self._taken is not None:
                self._taken += written
            if self._taken is None or self._taken > self.limit_bytes:
                self._taken = self.trim()

    def trim(self) -> int:
        """Remove the oldest files until those left take `limit_bytes` at most: what they
        take, as counted."""
        files: list[tuple[float, int, Path]] = []
        try:
            with os.scandir(self.directory) as listing:
                for found in listing:
                    with contextlib.suppress(OSError):
                        status = found.stat(follow_symlinks=False)
                        files.append((status.st_mtime, status.st_size, Path(found.path)))
        except OSError:
            return 0
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.limit_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
            total -= size
        return total


def _sha256(record: Any) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()
