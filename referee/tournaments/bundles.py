"""A player's directory on workers that do not share the coordinator's disk: packed into
one archive named by its SHA-256, sent with the first job of a worker that lacks it, checked
against its name and unpacked into the worker's cache, where the player then runs.

The coordinator packs each directory once (`pack`) and keeps the archive in a file. A job
names a player's archive by its hash; a worker that has not got it says which it lacks
(`host.Wanted`) and is sent the job again with their bytes (`cluster.py`). Bytes that do not
hash to their name are refused in one line, and nothing of them is kept.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from referee.errors import ClusterError

SUFFIX = ".tar"
# What a mode keeps: the permission bits, never setuid, setgid or sticky.
_PERMISSIONS = 0o777
_DIRECTORY = 0o755


@dataclass(frozen=True)
class Bundle:
    """A directory packed: the archive's SHA-256, and where the coordinator keeps it."""

    sha256: str
    path: Path

    def read(self) -> bytes:
        """The archive's bytes; ClusterError when they are not the ones it is named by."""
        try:
            data = self.path.read_bytes()
        except OSError as error:
            raise ClusterError(f"{self.path}: cannot be read: {error.strerror}") from None
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise ClusterError(f"{self.path}: changed since it was packed (not {self.sha256})")
        return data


def pack(directory: Path, into: Path) -> Bundle:
    """Pack `directory` into the file `into` (as `packed` does), written whole or not at all:
    streamed, not held in memory (a build may be as big as its limit lets it)."""
    into.parent.mkdir(parents=True, exist_ok=True)
    partial = into.with_name(into.name + ".partial")
    with partial.open("w+b") as stream:
        _write(directory, stream)
        stream.seek(0)
        sha = hashlib.file_digest(stream, "sha256").hexdigest()
    os.replace(partial, into)
    return Bundle(sha, into)


def packed(directory: Path) -> bytes:
    """The bundle of `directory`: its files, directories and links as they are, in the order
    of their names, with no owner and no time, so that the same tree packs to the same
    bytes."""
    buffer = io.BytesIO()
    _write(directory, buffer)
    return buffer.getvalue()


def _write(directory: Path, stream: BinaryIO) -> None:
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _walk(directory):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(directory).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            info.mode &= _PERMISSIONS
            if info.isreg():
                with path.open("rb") as file:
                    tar.addfile(info, file)
            elif info.isdir() or info.issym():
                tar.addfile(info)
            else:
                raise ClusterError(f"{path}: neither a file, a directory nor a link")


def _walk(directory: Path) -> Iterator[Path]:
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        path = Path(entry.path)
        yield path
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(path)


class BundleCache:
    """A worker's unpacked bundles, each in a directory named by its hash."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find(self, sha256: str) -> Path | None:
        path = self.root / sha256
        return path if _is_hash(sha256) and path.is_dir() else None

    def put(self, sha256: str, data: bytes, where: str) -> Path:
        """Check `data` against its name and unpack it; its directory. ClusterError, naming
        `where` (the worker), for bytes that are not the ones named, or cannot be unpacked."""
        found = self.find(sha256)
        if found is not None:
            return found
        if not _is_hash(sha256):
            raise ClusterError(f"{where}: {sha256[:80]!r} does not name a bundle")
        self.root.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f"{sha256}.", dir=self.root))
        try:
            unpack(data, sha256, partial, where)
            os.replace(partial, self.root / sha256)
        except (OSError, ClusterError):
            shutil.rmtree(partial, ignore_errors=True)
            if self.find(sha256) is not None:  # another task of the worker unpacked it first
                return self.root / sha256
            raise
        return self.root / sha256


def unpack(data: bytes, sha256: str, into: Path, where: str) -> None:
    """Check `data` against `sha256` and unpack it into the directory `into`, made or empty.
    ClusterError, naming `where`, for bytes that are not the ones named, or that cannot be
    unpacked."""
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise ClusterError(
            f"{where}: the bundle sent as {sha256} hashes to {got}: refused, not unpacked"
        )
    try:
        into.mkdir(exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            # The `tar` filter: no member outside the directory, through a link either, and
            # no setuid bit; links into the system stay (a virtual environment's).
            tar.extractall(into, filter="tar")
        # Read by the players' seat users, as the coordinator's copy is.
        os.chmod(into, _DIRECTORY)
    except (OSError, tarfile.TarError) as error:
        raise ClusterError(f"{where}: bundle {sha256}: cannot be unpacked: {error}") from None


def _is_hash(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)
