"""Submissions as archives: unpacked safely (zip or tar, gzip, bzip2 or xz, told apart by
their first bytes), and a directory packed for `referee arena submit`.

Every archive is an attacker's: each member is checked here, whatever the library would
allow, and its bytes are counted as they are written, never as its headers claim. Links of
any kind are refused, inside the directory or not: a bot's sources need none, and a link
that stays inside can still be a step out in a chain (`a/up -> ..`, then `a/x -> up/..`),
which only resolving every member against the disk would catch. Nothing an archive holds
is followed while writing: no link is ever made, and each file is created new (O_EXCL,
O_NOFOLLOW) in a directory made for it.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from referee.arena.store.outages import Trouble, trouble_of
from referee.errors import SubmissionError

# How deep a member may be, in directories, and how long its name, in bytes (a component
# is at most 255 bytes on Linux).
MAX_DEPTH = 32
MAX_NAME = 1024
_MAX_COMPONENT = 255
_CHUNK = 64 * 1024
# Beyond its members' bytes, a tar stream holds a header (and perhaps a long-name or pax
# record) per member, and its end: what the decompressed stream may hold besides them.
_TAR_OVERHEAD_PER_MEMBER = 4096
_TAR_OVERHEAD = 64 * 1024
# Shown of a hostile name in a message: enough to recognise it, one short line.
_SHOWN_NAME = 120
_ZIP_UTF8_FLAG = 0x800
_ZIP_ENCRYPTED_FLAG = 0x1
_ZIP_UNIX = 3
_EXECUTABLE = 0o755
_PLAIN = 0o644


@dataclass(frozen=True)
class Caps:
    """How much an archive may hold: `max_bytes` of its files' contents, once unpacked,
    and `max_files` members (directories count)."""

    max_bytes: int
    max_files: int


def mode_of(directory: bool, executable: bool) -> int:
    """The one mode rule of a bot's files: directories and files its owner could execute
    0755, the rest 0644; no setuid, setgid or sticky bit."""
    return _EXECUTABLE if directory or executable else _PLAIN


def unpack(archive: Path, into: Path, caps: Caps) -> list[Path]:
    """Unpack `archive` into the new directory `into`; the files written, relative to it.

    SubmissionError, one line naming the member and the reason, for anything refused; then
    `into` is removed whole.
    """
    try:
        source = archive.open("rb")
    except OSError as error:
        raise SubmissionError(f"{archive.name}: cannot be read: {error.strerror}") from None
    with source:
        limit = _stream_limit(caps)
        if os.fstat(source.fileno()).st_size > limit:
            # Its name alone: the author reads this, and the arena's paths are not theirs.
            raise SubmissionError(f"{archive.name}: larger than {limit} bytes")
        head = source.read(512)
        source.seek(0)
        try:
            into.mkdir(mode=_EXECUTABLE)
        except OSError as error:
            raise SubmissionError(f"{into}: cannot be made: {error.strerror}") from None
        writer = _Writer(into, caps)
        try:
            if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
                _unpack_zip(source, writer)
            else:
                _unpack_tar(_decompressed(head, source), writer, caps)
            if not writer.files and not writer.directories:
                raise SubmissionError("the archive is empty")
        except BaseException:
            shutil.rmtree(into, ignore_errors=True)
            raise
    return writer.files


def _decompressed(head: bytes, source: IO[bytes]) -> IO[bytes] | io.BufferedIOBase:
    """The tar stream inside `source`, by its first bytes; SubmissionError if none is."""
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=source, mode="rb")
    if head.startswith(b"BZh"):
        return bz2.BZ2File(source)
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(source)
    if head[257:262] == b"ustar":
        return source
    raise SubmissionError("not an archive: neither zip nor tar (plain, gzip, bzip2 or xz)")


class _Overflow(Exception):
    """The decompressed stream went past what the caps allow."""


class _Capped(io.RawIOBase):
    """A stream that refuses to give more than `limit` bytes: a compressed bomb is stopped
    as it expands, whatever a header claims (tarfile itself reads a long name or a pax
    record whole, at the size its header says)."""

    def __init__(self, inner: IO[bytes] | io.BufferedIOBase, limit: int) -> None:
        self._inner = inner
        self._limit = limit
        self._count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        allowed = self._limit - self._count + 1
        data = self._inner.read(allowed if size < 0 else min(size, allowed))
        self._count += len(data)
        if self._count > self._limit:
            raise _Overflow
        return data


class _Writer:
    """Writes members into `root`, checking each, counting files and bytes as written."""

    def __init__(self, root: Path, caps: Caps) -> None:
        self.root = root
        self.caps = caps
        self.files: list[Path] = []
        self.directories: set[PurePosixPath] = set()
        self._members = 0
        self._bytes = 0
        self._seen: set[PurePosixPath] = set()

    def member(self, name: str, shown: str) -> PurePosixPath:
        """The checked relative path of the next member called `name` (`shown` in messages)."""
        self._members += 1
        if self._members > self.caps.max_files:
            raise SubmissionError(f"{shown}: more than {self.caps.max_files} members")
        path = check_name(name, shown)
        if path in self._seen:
            raise SubmissionError(f"{shown}: a second member of the same name")
        self._seen.add(path)
        return path

    def directory(self, path: PurePosixPath, shown: str) -> None:
        if path == PurePosixPath("."):
            return
        self._make_parents(path, shown)
        target = self.root / path
        try:
            target.mkdir(mode=_EXECUTABLE)
        except FileExistsError:
            if path not in self.directories:
                raise SubmissionError(f"{shown}: a directory and a file of the same name") from None
        self.directories.add(path)

    def file(self, path: PurePosixPath, shown: str, data: IO[bytes], executable: bool) -> None:
        if path == PurePosixPath("."):
            raise SubmissionError(f"{shown}: a file in place of the top directory")
        self._make_parents(path, shown)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        mode = mode_of(False, executable)
        try:
            descriptor = os.open(self.root / path, flags, mode)
        except FileExistsError:
            raise SubmissionError(f"{shown}: a file and a directory of the same name") from None
        with os.fdopen(descriptor, "wb") as out:
            while chunk := data.read(_CHUNK):
                self._bytes += len(chunk)
                if self._bytes > self.caps.max_bytes:
                    raise SubmissionError(
                        f"{shown}: the files add up to more than {self.caps.max_bytes} bytes"
                    )
                out.write(chunk)
            # The umask may have taken bits the rule keeps.
            os.fchmod(out.fileno(), mode)
        self.files.append(Path(path))

    def _make_parents(self, path: PurePosixPath, shown: str) -> None:
        for parent in reversed(path.parents[:-1]):
            if parent in self.directories:
                continue
            try:
                (self.root / parent).mkdir(mode=_EXECUTABLE)
            except FileExistsError:
                raise SubmissionError(
                    f"{shown}: {show(str(parent))} is a file, not a directory"
                ) from None
            self.directories.add(parent)


def show(name: bytes | str) -> str:
    """A member's name as a message shows it: quoted, escaped (a byte that is not UTF-8 as
    `\\xff`), on one line, and short."""
    text = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name
    quoted = _ESCAPED_BYTE.sub(r"\\x\1", repr(text))
    if len(quoted) > _SHOWN_NAME:
        quoted = quoted[: _SHOWN_NAME - 4] + "...'"
    return quoted


# How repr shows a byte that was not UTF-8, decoded with surrogateescape.
_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def check_name(name: str, shown: str) -> PurePosixPath:
    """The relative path a member's name stands for; SubmissionError if it is one no member
    may have: not UTF-8, absolute, with `..`, a backslash or a control character, too long or
    too deep."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise SubmissionError(f"{shown}: the name is not valid UTF-8") from None
    if "\0" in name:
        raise SubmissionError(f"{shown}: the name holds a NUL byte")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise SubmissionError(f"{shown}: the name holds a control character")
    if "\\" in name:
        raise SubmissionError(f"{shown}: the name holds a backslash")
    if len(encoded) > MAX_NAME:
        raise SubmissionError(f"{shown}: the name is longer than {MAX_NAME} bytes")
    if name.startswith("/"):
        raise SubmissionError(f"{shown}: an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise SubmissionError(f"{shown}: the path goes up (..)")
    if any(len(part.encode("utf-8")) > _MAX_COMPONENT for part in parts):
        raise SubmissionError(f"{shown}: a part of the name is longer than {_MAX_COMPONENT} bytes")
    if len(parts) > MAX_DEPTH:
        raise SubmissionError(f"{shown}: nested more than {MAX_DEPTH} deep")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


_CORRUPT = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
)


def _stream_limit(caps: Caps) -> int:
    """The most bytes a tar stream (or any archive) within `caps` can take."""
    return caps.max_bytes + caps.max_files * _TAR_OVERHEAD_PER_MEMBER + _TAR_OVERHEAD


def _unpack_tar(stream: IO[bytes] | io.BufferedIOBase, writer: _Writer, caps: Caps) -> None:
    capped = _Capped(stream, _stream_limit(caps))
    current = "the first member"
    try:
        # Streaming ("r|"): members in order, nothing sought, each read once.
        with tarfile.open(fileobj=capped, mode="r|", encoding="utf-8") as tar:
            for info in _members(tar):
                current = show(info.name)
                _tar_member(tar, info, writer)
    except _Overflow:
        raise SubmissionError(
            f"{current}: the archive expands to more than {caps.max_bytes} bytes"
        ) from None
    except SubmissionError:
        raise
    except _CORRUPT as error:
        if trouble_of(error) is Trouble.FULL:
            raise  # the arena's disk, not the archive: the intake takes it up again
        raise SubmissionError(f"{current}: truncated or corrupt archive ({error})") from None


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    while (info := tar.next()) is not None:
        yield info


def _tar_member(tar: tarfile.TarFile, info: tarfile.TarInfo, writer: _Writer) -> None:
    # tarfile decodes names with surrogateescape: a surrogate is a byte that was not UTF-8.
    shown = show(info.name)
    path = writer.member(info.name, shown)
    if info.issym() or info.islnk():
        raise SubmissionError(f"{shown}: a link (to {show(info.linkname)}): links are refused")
    if info.ischr() or info.isblk():
        raise SubmissionError(f"{shown}: a device: refused")
    if info.isfifo():
        raise SubmissionError(f"{shown}: a fifo: refused")
    if info.isdir():
        writer.directory(path, shown)
        return
    if not info.isreg():
        raise SubmissionError(f"{shown}: a member of unknown type {info.type!r}: refused")
    data = tar.extractfile(info)
    if data is None:
        raise SubmissionError(f"{shown}: its contents cannot be read")
    with data:
        writer.file(path, shown, data, bool(info.mode & stat.S_IXUSR))


def _unpack_zip(source: IO[bytes], writer: _Writer) -> None:
    current = "the central directory"
    try:
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                raw = _zip_name(info)
                current = show(raw)
                _zip_member(archive, info, raw, writer)
    except SubmissionError:
        raise
    except _CORRUPT as error:
        if trouble_of(error) is Trouble.FULL:
            raise  # the arena's disk, not the archive: the intake takes it up again
        raise SubmissionError(f"{current}: truncated or corrupt archive ({error})") from None


def _zip_name(info: zipfile.ZipInfo) -> bytes:
    """A member's name as the bytes the archive holds: zipfile decodes a name without the
    UTF-8 flag as cp437, which any bytes are."""
    if info.flag_bits & _ZIP_UTF8_FLAG:
        return info.orig_filename.encode("utf-8", "surrogateescape")
    return info.orig_filename.encode("cp437")


def _zip_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, raw: bytes, writer: _Writer
) -> None:
    shown = show(raw)
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError(f"{shown}: the name is not valid UTF-8") from None
    path = writer.member(name, shown)
    if info.flag_bits & _ZIP_ENCRYPTED_FLAG:
        raise SubmissionError(f"{shown}: encrypted: refused")
    mode = info.external_attr >> 16 if info.create_system == _ZIP_UNIX else 0
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise SubmissionError(f"{shown}: a link: links are refused")
    if kind in (stat.S_IFCHR, stat.S_IFBLK):
        raise SubmissionError(f"{shown}: a device: refused")
    if kind == stat.S_IFIFO:
        raise SubmissionError(f"{shown}: a fifo: refused")
    if kind == stat.S_IFSOCK:
        raise SubmissionError(f"{shown}: a socket: refused")
    if info.is_dir() or kind == stat.S_IFDIR:
        writer.directory(path, shown)
        return
    with archive.open(info) as data:
        writer.file(path, shown, data, bool(mode & stat.S_IXUSR))


def pack(directory: Path, caps: Caps) -> bytes:
    """A tar.gz of everything in `directory`, named relative to it; SubmissionError, one line
    naming the file, for what `unpack` would refuse: a link, a device, a fifo or socket, a
    name no member may have, more than the caps."""
    if not directory.is_dir():
        raise SubmissionError(f"{directory}: not a directory")
    buffer = io.BytesIO()
    members = 0
    total = 0
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path in walk(directory):
            relative = path.relative_to(directory).as_posix()
            shown = f"{directory}/{relative}"
            members += 1
            if members > caps.max_files:
                raise SubmissionError(f"{shown}: more than {caps.max_files} files")
            check_name(relative, shown)
            status = path.lstat()
            kind = special_kind(status.st_mode)
            if kind is not None:
                raise SubmissionError(f"{shown}: {kind}: refused")
            info = tarfile.TarInfo(relative)
            info.mtime = int(status.st_mtime)
            if stat.S_ISDIR(status.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = _EXECUTABLE
                tar.addfile(info)
                continue
            info.size = status.st_size
            total += status.st_size
            if total > caps.max_bytes:
                raise SubmissionError(
                    f"{shown}: the files add up to more than {caps.max_bytes} bytes"
                )
            info.mode = mode_of(False, bool(status.st_mode & stat.S_IXUSR))
            with _open_plain(path, shown) as data:
                tar.addfile(info, _Exactly(data, status.st_size, shown))
    return buffer.getvalue()


def special_kind(mode: int) -> str | None:
    """What a file that no bot may hold is, or None for a plain file or directory."""
    if stat.S_ISLNK(mode):
        return "a link: links are refused"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "a special file"
    return None


def walk(directory: Path) -> Iterator[Path]:
    """Every entry under `directory`, parents first, in name order, links not followed; by
    a stack, not recursion, however deep it goes."""
    stack = [directory]
    while stack:
        below = []
        for entry in sorted(os.scandir(stack.pop()), key=lambda e: e.name):
            yield Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                below.append(Path(entry.path))
        stack.extend(reversed(below))


@contextlib.contextmanager
def _open_plain(path: Path, shown: str) -> Iterator[IO[bytes]]:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise SubmissionError(f"{shown}: cannot be read: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as data:
        yield data


class _Exactly(io.RawIOBase):
    """A file read as the size it had when listed: one that grows or shrinks meanwhile is
    refused, not packed torn."""

    def __init__(self, inner: IO[bytes], size: int, shown: str) -> None:
        self._inner = inner
        self._left = size
        self._shown = shown

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._inner.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(data)
        if (size != 0 and not data and self._left > 0) or (self._left == 0 and self._inner.read(1)):
            raise SubmissionError(f"{self._shown}: changed while it was packed")
        return data
