"""Archives made in memory for the arena's tests: good ones, and hostile ones made from bytes."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import stat
import tarfile
import warnings
import zipfile
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One member: a file with `data`, a directory, or a member of another tar `kind`."""

    name: str
    data: bytes = b""
    mode: int = 0o644
    kind: bytes = tarfile.REGTYPE
    link: str = ""
    size: int | None = None  # the size its header claims, if not its data's


def tar(entries: list[Entry], compress: str = "gz", fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """A tar archive of `entries`, compressed by `compress` ("", "gz", "bz2", "xz")."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt, encoding="utf-8") as archive:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type = entry.kind
            info.mode = entry.mode
            info.linkname = entry.link
            info.size = len(entry.data) if entry.size is None else entry.size
            archive.addfile(info, io.BytesIO(entry.data) if info.size else None)
    return compressed(buffer.getvalue(), compress)


def compressed(data: bytes, how: str) -> bytes:
    if how == "gz":
        return gzip.compress(data)
    if how == "bz2":
        return bz2.compress(data)
    if how == "xz":
        return lzma.compress(data)
    return data


def zip_of(entries: list[tuple[str, bytes, int]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip archive of (name, data, unix mode with its file type) members."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicate name is what some tests want
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = mode << 16
            info.compress_type = method
            if stat.S_ISDIR(mode):
                info.external_attr |= 0x10
            archive.writestr(info, data)
    return buffer.getvalue()


def patched(data: bytes, old: bytes, new: bytes) -> bytes:
    """`data` with every `old` replaced by `new`, of the same length (a name in both a zip's
    local header and its central directory)."""
    assert len(old) == len(new) and old in data
    return data.replace(old, new)


def zip_with_sizes(name: str, data: bytes, claimed: int) -> bytes:
    """A zip of one deflated member whose headers claim it unpacks to `claimed` bytes."""
    good = zip_of([(name, data, stat.S_IFREG | 0o644)])
    real = len(data).to_bytes(4, "little")
    fake = claimed.to_bytes(4, "little")
    # The uncompressed size sits right after the compressed size in both headers.
    archive = zipfile.ZipFile(io.BytesIO(good))
    packed = archive.infolist()[0].compress_size.to_bytes(4, "little")
    return patched(good, packed + real, packed + fake)
