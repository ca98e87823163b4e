"""Unpacking submissions: hostile archives refused with one line naming the member and the
problem, nothing written outside the directory; good ones unpacked exactly; `pack`."""

from __future__ import annotations

import os
import socket
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from referee.arena.intake.archive import MAX_DEPTH, Caps, pack, unpack
from referee.errors import SubmissionError
from tests.support.archives import Entry, compressed, patched, tar, zip_of, zip_with_sizes

CAPS = Caps(max_bytes=1024 * 1024, max_files=50)
FILE = stat.S_IFREG | 0o644
MEGABYTES_OF_ZEROS = b"\0" * (20 * 1024 * 1024)


def refuse(tmp_path: Path, data: bytes, *words: str, caps: Caps = CAPS) -> str:
    """Unpack `data`, expect a refusal in one line holding `words`, and find nothing written
    anywhere: not in the directory (removed), not beside it, not above it."""
    archive = tmp_path / "submission"
    archive.write_bytes(data)
    place = tmp_path / "bots"
    place.mkdir()
    with pytest.raises(SubmissionError) as refused:
        unpack(archive, place / "1", caps)
    message = str(refused.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    assert list(place.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bots", "submission"]
    return message


def unpacked(tmp_path: Path, data: bytes, caps: Caps = CAPS) -> dict[str, tuple[bytes, int]]:
    """What `data` unpacks to: each file's contents and mode, each directory's mode."""
    archive = tmp_path / "submission"
    archive.write_bytes(data)
    into = tmp_path / "bot"
    written = unpack(archive, into, caps)
    found: dict[str, tuple[bytes, int]] = {}
    for path in sorted(into.rglob("*")):
        status = path.lstat()
        contents = path.read_bytes() if stat.S_ISREG(status.st_mode) else b"<dir>"
        found[path.relative_to(into).as_posix()] = (contents, stat.S_IMODE(status.st_mode))
    files = sorted(name for name, (data, _) in found.items() if data != b"<dir>")
    assert sorted(p.as_posix() for p in written) == files
    return found


# Path tricks.


@pytest.mark.parametrize("compress", ["gz", ""])
def test_an_absolute_path_is_refused(tmp_path: Path, compress: str) -> None:
    data = tar([Entry("bot.yaml", b"x"), Entry("/tmp/evil", b"x")], compress)
    refuse(tmp_path, data, "'/tmp/evil'", "absolute")


@pytest.mark.parametrize("name", ["../evil", "a/../../evil", "./../evil", "a/b/../../../evil"])
def test_a_path_going_up_is_refused(tmp_path: Path, name: str) -> None:
    refuse(tmp_path, tar([Entry(name, b"x")]), repr(name), "goes up")


def test_a_zip_slip_is_refused(tmp_path: Path) -> None:
    data = zip_of([("bot.yaml", b"x", FILE), ("../../evil", b"x", FILE)])
    refuse(tmp_path, data, "'../../evil'", "goes up")


def test_an_absolute_zip_member_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, zip_of([("/evil", b"x", FILE)]), "'/evil'", "absolute")


@pytest.mark.parametrize("make", ["tar", "zip"])
def test_a_backslash_path_is_refused(tmp_path: Path, make: str) -> None:
    name = "..\\..\\evil"
    data = tar([Entry(name, b"x")]) if make == "tar" else zip_of([(name, b"x", FILE)])
    refuse(tmp_path, data, "evil", "backslash")


def test_a_name_with_a_control_character_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, tar([Entry("a\nb", b"x")]), "'a\\nb'", "control character")


def test_a_name_of_4096_bytes_is_refused(tmp_path: Path) -> None:
    name = "/".join(["d" * 200] * 20)[:4096]
    message = refuse(tmp_path, tar([Entry(name, b"x")]), "longer than 1024 bytes")
    assert len(message) < 300


def test_a_part_of_300_bytes_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, tar([Entry("a" * 300, b"x")]), "aaaa", "longer than 255 bytes")


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    name = "/".join(["d"] * (MAX_DEPTH + 1))
    refuse(tmp_path, tar([Entry(name, b"x")]), "'d/d/d", f"nested more than {MAX_DEPTH} deep")


def test_a_name_that_is_not_utf8_is_refused_in_a_tar(tmp_path: Path) -> None:
    name = b"bad\xff.py".decode("utf-8", "surrogateescape")
    refuse(tmp_path, tar([Entry(name, b"x")]), "bad\\xff.py", "not valid UTF-8")


def test_a_name_that_is_not_utf8_is_refused_in_a_zip(tmp_path: Path) -> None:
    data = patched(zip_of([("badX.py", b"x", FILE)]), b"badX.py", b"bad\xff.py")
    refuse(tmp_path, data, "bad", "not valid UTF-8")


def test_a_zip_name_with_a_nul_is_refused(tmp_path: Path) -> None:
    # zipfile cuts a name at a NUL, so this one would be unpacked as `evil` unchecked.
    data = patched(zip_of([("evilX../x", b"x", FILE)]), b"evilX../x", b"evil\0../x")
    refuse(tmp_path, data, "evil\\x00", "NUL")


# Links.


def test_a_symlink_leading_out_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("passwd", kind=tarfile.SYMTYPE, link="/etc/passwd")])
    refuse(tmp_path, data, "'passwd'", "link", "/etc/passwd")


def test_a_symlink_inside_is_refused_too(tmp_path: Path) -> None:
    data = tar([Entry("a", b"x"), Entry("b", kind=tarfile.SYMTYPE, link="a")])
    refuse(tmp_path, data, "'b'", "links are refused")


def test_a_hard_link_leading_out_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("shadow", kind=tarfile.LNKTYPE, link="/etc/shadow")])
    refuse(tmp_path, data, "'shadow'", "link", "/etc/shadow")


def test_a_hard_link_to_an_earlier_member_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("a", b"x"), Entry("b", kind=tarfile.LNKTYPE, link="a")])
    refuse(tmp_path, data, "'b'", "link")


def test_a_symlink_then_a_file_through_it_is_refused(tmp_path: Path) -> None:
    escape = tmp_path / "outside"
    data = tar([Entry("d", kind=tarfile.SYMTYPE, link=str(escape)), Entry("d/evil", b"x")])
    refuse(tmp_path, data, "'d'", "link")
    assert not escape.exists()


def test_a_chain_of_symlinks_is_refused(tmp_path: Path) -> None:
    data = tar(
        [
            Entry("a/up", kind=tarfile.SYMTYPE, link=".."),
            Entry("a/x", kind=tarfile.SYMTYPE, link="up/.."),
            Entry("a/x/evil", b"x"),
        ]
    )
    refuse(tmp_path, data, "'a/up'", "link")


def test_a_zip_symlink_leading_out_is_refused(tmp_path: Path) -> None:
    data = zip_of([("passwd", b"/etc/passwd", stat.S_IFLNK | 0o777)])
    refuse(tmp_path, data, "'passwd'", "link")


# Special files.


@pytest.mark.parametrize(
    ("kind", "word"), [(tarfile.CHRTYPE, "device"), (tarfile.BLKTYPE, "device")]
)
def test_a_device_is_refused(tmp_path: Path, kind: bytes, word: str) -> None:
    refuse(tmp_path, tar([Entry("null", kind=kind)]), "'null'", word)


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, tar([Entry("pipe", kind=tarfile.FIFOTYPE)]), "'pipe'", "fifo")


def test_a_member_of_unknown_type_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, tar([Entry("odd", kind=b"Q")]), "'odd'", "unknown type")


@pytest.mark.parametrize(
    ("kind", "word"),
    [(stat.S_IFIFO, "fifo"), (stat.S_IFSOCK, "socket"), (stat.S_IFCHR, "device")],
)
def test_special_zip_members_are_refused(tmp_path: Path, kind: int, word: str) -> None:
    refuse(tmp_path, zip_of([("odd", b"", kind | 0o644)]), "'odd'", word)


def test_an_encrypted_zip_member_is_refused(tmp_path: Path) -> None:
    data = bytearray(zip_of([("secret", b"x", FILE)], zipfile.ZIP_STORED))
    # The flag bits, in the local header (offset 6) and the central directory (offset 8).
    data[6] |= 1
    central = data.rfind(b"PK\x01\x02")
    data[central + 8] |= 1
    refuse(tmp_path, bytes(data), "'secret'", "encrypted")


# Sizes and counts.


def test_more_members_than_the_cap_are_refused(tmp_path: Path) -> None:
    data = tar([Entry(f"f{i}", b"x") for i in range(6)])
    refuse(tmp_path, data, "'f5'", "more than 5 members", caps=Caps(1024, 5))


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("big", b"x" * 2000)])
    refuse(tmp_path, data, "'big'", "more than 1000 bytes", caps=Caps(1000, 5))


def test_files_adding_up_over_the_cap_are_refused(tmp_path: Path) -> None:
    data = tar([Entry(f"f{i}", b"x" * 300) for i in range(4)])
    refuse(tmp_path, data, "'f3'", "more than 1000 bytes", caps=Caps(1000, 5))


@pytest.mark.parametrize("compress", ["gz", "bz2", "xz"])
def test_a_compression_bomb_is_stopped_at_the_cap(tmp_path: Path, compress: str) -> None:
    data = tar([Entry("zeros", MEGABYTES_OF_ZEROS)], compress)
    assert len(data) < 100_000
    refuse(tmp_path, data, "'zeros'", f"more than {CAPS.max_bytes} bytes")


def test_a_header_claiming_a_huge_record_is_stopped_at_the_cap(tmp_path: Path) -> None:
    # A pax record that tarfile would read whole, at the size its header claims.
    data = tar([Entry("huge", MEGABYTES_OF_ZEROS, kind=tarfile.XHDTYPE)], fmt=tarfile.GNU_FORMAT)
    refuse(tmp_path, data, "expands to more than")


def test_a_zip_bomb_is_stopped_at_the_cap(tmp_path: Path) -> None:
    data = zip_of([("zeros", MEGABYTES_OF_ZEROS, FILE)])
    assert len(data) < 100_000
    refuse(tmp_path, data, "'zeros'", f"more than {CAPS.max_bytes} bytes")


def test_a_zip_bomb_whose_headers_claim_little_is_refused(tmp_path: Path) -> None:
    # Read as far as it claims, its check sum then fails: never more than claimed is written.
    data = zip_with_sizes("zeros", MEGABYTES_OF_ZEROS, 100)
    refuse(tmp_path, data, "'zeros'", "corrupt")


def test_a_zip_claiming_more_than_it_holds_unpacks_what_it_holds(tmp_path: Path) -> None:
    # The claim is never trusted: the bytes written are those its deflated data holds.
    data = zip_with_sizes("small", b"hello" * 100, 10_000_000)
    assert unpacked(tmp_path, data, Caps(1000, 5)) == {"small": (b"hello" * 100, 0o644)}


def test_an_archive_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("noise", os.urandom(200_000))])
    refuse(tmp_path, data, "larger than", caps=Caps(1000, 5))


# Duplicates.


@pytest.mark.parametrize("make", ["tar", "zip"])
def test_duplicate_members_are_refused(tmp_path: Path, make: str) -> None:
    if make == "tar":
        data = tar([Entry("bot.py", b"good"), Entry("bot.py", b"evil")])
    else:
        data = zip_of([("bot.py", b"good", FILE), ("bot.py", b"evil", FILE)])
    refuse(tmp_path, data, "'bot.py'", "second member")


def test_a_file_then_a_directory_of_its_name_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("a", b"x"), Entry("a/b", b"y")])
    refuse(tmp_path, data, "'a/b'", "'a' is a file")


def test_a_directory_then_a_file_of_its_name_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("a/b", b"x"), Entry("a", b"y")])
    refuse(tmp_path, data, "'a'", "a file and a directory")


# Not archives.


def test_an_empty_archive_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, tar([]), "empty")


def test_an_empty_zip_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, zip_of([]), "empty")


def test_a_file_that_is_no_archive_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, b"#!/bin/sh\necho not an archive\n", "not an archive")


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, b"", "not an archive")


def test_a_truncated_tar_gz_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("a", os.urandom(50_000))])
    refuse(tmp_path, data[: len(data) // 2], "'a'", "truncated or corrupt")


def test_a_truncated_tar_is_refused(tmp_path: Path) -> None:
    data = tar([Entry("a", b"x" * 5000)], "")
    refuse(tmp_path, data[:2000], "'a'", "truncated or corrupt")


def test_a_truncated_zip_is_refused(tmp_path: Path) -> None:
    data = zip_of([("a", os.urandom(5000), FILE)])
    refuse(tmp_path, data[: len(data) - 30], "truncated or corrupt")


def test_compressed_garbage_is_refused(tmp_path: Path) -> None:
    refuse(tmp_path, compressed(os.urandom(4000), "gz"), "truncated or corrupt")


# Good archives.

BOT = b"name: good\nrun: python3 bot.py\n"


def test_a_tar_gz_unpacks_exactly(tmp_path: Path) -> None:
    data = tar(
        [
            Entry("./", kind=tarfile.DIRTYPE, mode=0o700),
            Entry("./bot.yaml", BOT, mode=0o600),
            Entry("./bin/run", b"#!/bin/sh\n", mode=0o700),
            Entry("./lib/", kind=tarfile.DIRTYPE, mode=0o700),
            Entry("./lib/util.py", b"x = 1\n", mode=0o666),
        ]
    )
    assert unpacked(tmp_path, data) == {
        "bin": (b"<dir>", 0o755),
        "bin/run": (b"#!/bin/sh\n", 0o755),
        "bot.yaml": (BOT, 0o644),
        "lib": (b"<dir>", 0o755),
        "lib/util.py": (b"x = 1\n", 0o644),
    }


def test_setuid_setgid_and_sticky_bits_are_cleared(tmp_path: Path) -> None:
    data = tar([Entry("su", b"x", mode=0o6755), Entry("t", b"y", mode=0o1644)])
    assert unpacked(tmp_path, data) == {"su": (b"x", 0o755), "t": (b"y", 0o644)}


@pytest.mark.parametrize("compress", ["", "bz2", "xz"])
def test_every_tar_compression_unpacks(tmp_path: Path, compress: str) -> None:
    data = tar([Entry("top/bot.yaml", BOT)], compress)
    assert unpacked(tmp_path, data) == {"top": (b"<dir>", 0o755), "top/bot.yaml": (BOT, 0o644)}


def test_a_zip_unpacks_exactly(tmp_path: Path) -> None:
    data = zip_of(
        [
            ("bot/", b"", stat.S_IFDIR | 0o700),
            ("bot/bot.yaml", BOT, FILE),
            ("bot/run.sh", b"#!/bin/sh\n", stat.S_IFREG | 0o4750),
        ]
    )
    assert unpacked(tmp_path, data) == {
        "bot": (b"<dir>", 0o755),
        "bot/bot.yaml": (BOT, 0o644),
        "bot/run.sh": (b"#!/bin/sh\n", 0o755),
    }


def test_an_archive_is_known_by_its_bytes_not_its_name(tmp_path: Path) -> None:
    archive = tmp_path / "bot.tar.gz"
    archive.write_bytes(zip_of([("bot.yaml", BOT, FILE)]))
    unpack(archive, tmp_path / "bot", CAPS)
    assert (tmp_path / "bot" / "bot.yaml").read_bytes() == BOT


def test_unpacking_never_reuses_a_directory(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    archive = tmp_path / "a.tgz"
    archive.write_bytes(tar([Entry("bot.yaml", BOT)]))
    with pytest.raises(SubmissionError, match="cannot be made"):
        unpack(archive, tmp_path / "bot", CAPS)


# Packing a directory.


def test_a_packed_directory_unpacks_to_the_same_files(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "lib").mkdir(parents=True)
    (source / "bot.yaml").write_bytes(BOT)
    (source / "lib" / "x.py").write_bytes(b"x = 1\n")
    (source / "run").write_bytes(b"#!/bin/sh\n")
    (source / "run").chmod(0o700)
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_bytes(b"ref\n")
    found = unpacked(tmp_path, pack(source, CAPS))
    assert found == {
        ".git": (b"<dir>", 0o755),
        ".git/HEAD": (b"ref\n", 0o644),
        "bot.yaml": (BOT, 0o644),
        "lib": (b"<dir>", 0o755),
        "lib/x.py": (b"x = 1\n", 0o644),
        "run": (b"#!/bin/sh\n", 0o755),
    }


def test_packing_refuses_a_link(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(SubmissionError, match=r"src/passwd: a link"):
        pack(tmp_path / "src", CAPS)


def test_packing_refuses_a_fifo_and_a_socket(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    os.mkfifo(tmp_path / "src" / "pipe")
    with pytest.raises(SubmissionError, match=r"src/pipe: a fifo"):
        pack(tmp_path / "src", CAPS)
    (tmp_path / "src" / "pipe").unlink()
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "src" / "sock"))
        with pytest.raises(SubmissionError, match=r"src/sock: a socket"):
            pack(tmp_path / "src", CAPS)


def test_packing_refuses_more_than_the_caps(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for i in range(3):
        (tmp_path / "src" / f"f{i}").write_bytes(b"x" * 600)
    with pytest.raises(SubmissionError, match=r"src/f1: the files add up to more than 1000"):
        pack(tmp_path / "src", Caps(1000, 10))
    with pytest.raises(SubmissionError, match=r"src/f2: more than 2 files"):
        pack(tmp_path / "src", Caps(10_000, 2))


def test_packing_refuses_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="not a directory"):
        pack(tmp_path / "nowhere", CAPS)
