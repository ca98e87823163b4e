"""Hostile submissions, each a real archive taken through a real arena's intake: refused at
unpack, at bot.yaml, at the build or at validation with one line naming the member, step or
problem, or placed with what it tried contained.

One arena for them all, as in a class: a victim's bot is placed first, with a secret in its
directory, and the arena's database holds a secret of its own. After every submission, that
secret, the victim's and the arena's signing key appear in nothing the arena kept (steps,
verdicts, reasons, advice, the files of every other bot), the listener the test opened got no
connection, nothing a bot started still runs, and nothing was written where a bot may not.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import os
import socket
import stat
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from referee.arena.intake.pipeline import Intake
from referee.arena.store.db import Step, StepKind, StepState, Version, VersionState
from referee.arena.store.home import (
    KEY_FILE,
    SQLITE_FILE,
    Arena,
    add_author,
    init_arena,
    open_arena,
)
from referee.arena.store.manifest import MAX_MANIFEST_BYTES
from referee.sandbox.isolation import machine_protections
from tests.support.archives import Entry, compressed, patched, tar, zip_of, zip_with_sizes
from tests.support.facilities import missing
from tests.support.hostile_submissions import (
    PYTHON,
    RANDOM_PLAYER,
    attacker,
    bot_yaml,
    fair_bot,
    submit,
)

CONFIG = """\
name: hostile
games: [ticblock]
start_clock: 2000
play_clock: 1000
policy: forfeit
arena:
  submission: {max_mb: 1, max_files: 50, per_hour: 1000}
  build: {seconds: 10, memory_mb: 256}
  validate: {matches_per_role: 1}
"""
MAX_BYTES = 1024 * 1024
FILE = stat.S_IFREG | 0o644
# A generous wait for a state (the machine is shared and loaded).
DEADLINE_S = 60


class End(enum.Enum):
    """Where a submission ends: refused at a step, or placed with its attacks contained."""

    UNPACK = "unpack"
    MANIFEST = "bot.yaml"
    BUILD = "build"
    VALIDATE = "validate"
    PLACED = "placed"


@dataclass
class World:
    """The arena the hostile bots are submitted to, and what they must not reach."""

    arena: Arena
    listener: socket.socket
    victim: Path
    victim_secret: str
    database_secret: str
    key_text: str

    def targets(self, marker: str, **changes: Any) -> dict[str, Any]:
        """What an attacker aims at: the victim's files, the arena's database and key, by
        absolute and relative paths and through /proc; places to write; the test's
        listener and an outside address; the test's own PIDs."""
        directory = self.arena.directory
        port = self.listener.getsockname()[1]
        victim_id = self.victim.name
        aims: dict[str, Any] = {
            "read": [
                str(self.victim / "secret.txt"),
                str(self.victim),
                str(directory / SQLITE_FILE),
                str(directory / KEY_FILE),
                str(directory),
                f"../{victim_id}/secret.txt",
                f"../../{KEY_FILE}",
                f"/proc/1/root{directory / KEY_FILE}",
                f"/proc/{os.getpid()}/root{directory / KEY_FILE}",
                "/etc/shadow",
            ],
            "write": [str(path) for path in self.forbidden_writes(marker)],
            "connect": [["127.0.0.1", port], ["192.0.2.1", 80]],
            "pids": [os.getpid(), os.getppid()],
            "marker": marker,
            "link": "/etc/shadow",
        }
        return aims | changes

    def forbidden_writes(self, marker: str) -> list[Path]:
        directory = self.arena.directory
        return [
            directory / f"written-{marker}",
            directory / "bots" / f"written-{marker}",
            self.victim / f"written-{marker}",
            Path("/etc") / f"written-{marker}",
            Path("/tmp") / f"written-{marker}",
            # Where the path tricks of the archives aim.
            directory / marker,
            directory / "bots" / marker,
            directory.parent / marker,
            Path("/tmp") / marker,
        ]


@dataclass(frozen=True)
class Case:
    """A hostile submission: its archive (made for the world and a marker unique to it),
    where it ends, the words its one line of reason must hold, and what else to check."""

    id: str
    make: Callable[[World, str, str], bytes]
    end: End
    words: tuple[str, ...] = ()
    check: Callable[[World, int, str], None] | None = None


def jailed() -> None:
    """These cases are of the jail and its seat users: without them, a failure under CI."""
    protections = machine_protections()
    if protections.jail is None or os.geteuid() != 0:
        reason = "the hostile submissions need a working bubblewrap and a root referee"
        missing(reason)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    jailed()
    place = tmp_path_factory.mktemp("hostile")
    (place / "arena.yaml").write_text(CONFIG)
    init_arena(place / "arena", place / "arena.yaml")
    arena = open_arena(place / "arena")
    add_author(arena, "victim")
    add_author(arena, "mallory")
    victim_secret = f"victim-secret-{uuid.uuid4().hex}"
    database_secret = f"database-secret-{uuid.uuid4().hex}"
    arena.database.set_setting("hostile-test", database_secret)
    version_id = submit(
        arena, "victim", "victim", fair_bot("victim", Entry("secret.txt", victim_secret.encode()))
    )
    asyncio.run(Intake(arena).process(version_id))
    with arena.database.session() as session:
        assert session.get_one(Version, version_id).state == VersionState.PLACING
    key_text = (arena.directory / KEY_FILE).read_text().strip()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        yield World(
            arena, listener, arena.bot_directory(version_id), victim_secret, database_secret,
            key_text,
        )  # fmt: skip
    arena.close()


# The archives.


def plain(name: str, *extra: Entry) -> bytes:
    return tar([Entry("bot.yaml", bot_yaml(name, f"{PYTHON} bot.py")), *extra])


def manifest_only(text: bytes) -> Callable[[World, str, str], bytes]:
    return lambda w, name, marker: tar([Entry("bot.yaml", text)])


def with_run(run: Callable[[World], str]) -> Callable[[World, str, str], bytes]:
    """A bot.yaml alone, whose run command is made for the world."""
    return lambda w, name, marker: tar([Entry("bot.yaml", bot_yaml(name, run(w)))])


def attack(
    play: str | None = None, build: str | None = None, **changes: Any
) -> Callable[[World, str, str], bytes]:
    return lambda w, name, marker: attacker(name, play, build, w.targets(marker, **changes))


def zeros_tar(name: str, how: str) -> bytes:
    """A bomb: 20 MiB of zeros, a few KiB once compressed."""
    return compressed(
        tar([Entry("bot.yaml", bot_yaml(name, "./bot")), Entry("zeros", b"\0" * (20 << 20))], ""),
        how,
    )


def billion_laughs(name: str, levels: int = 9) -> bytes:
    """A bot.yaml whose run, expanded, would be 10 ** `levels` words."""
    lines = ["  - &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return (f"name: {name}\nbuild:\n" + "\n".join(lines) + f"\nrun: *a{levels - 1}\n").encode()


# What else to check of some.


def report_of(world: World, version_id: int) -> dict[str, Any]:
    return json.loads((world.arena.bot_directory(version_id) / "report.json").read_text())


def got_nothing(world: World, version_id: int, marker: str) -> None:
    """Every attempt the build reported was refused, or got nothing (a directory the jail
    made on the way to the bot's own, empty but for that)."""
    outcomes = report_of(world, version_id)
    assert outcomes, "the build reported no attempt"
    for what, (how, got) in outcomes.items():
        assert how == "refused" or got == "", (what, outcomes[what])


def killed_none(world: World, version_id: int, marker: str) -> None:
    """The SIGKILLs sent to the test's PIDs, its parent's and the jail's init went nowhere."""
    outcomes = report_of(world, version_id)
    for pid in (os.getpid(), os.getppid(), 1):
        assert outcomes[str(pid)][0] == "refused", (pid, outcomes)


def log_cut(world: World, version_id: int, marker: str) -> None:
    with world.arena.database.session() as session:
        step = session.scalar(
            select(Step).where(Step.version_id == version_id, Step.kind == StepKind.BUILD)
        )
        assert step is not None
        assert len(step.log) < 300 * 1024
        assert "cut here" in step.log


def not_setuid(world: World, version_id: int, marker: str) -> None:
    made = (world.arena.bot_directory(version_id) / "sush").stat()
    assert made.st_uid == os.getuid()
    assert not made.st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert report_of(world, version_id)["setuid"][0] == "ok"


def unpacked_not_followed(world: World, version_id: int, marker: str) -> None:
    """The archive in the archive is a file like any other: kept as it came, not opened."""
    directory = world.arena.bot_directory(version_id)
    assert (directory / "inner.tar.gz").is_file()
    assert sorted(p.name for p in directory.iterdir()) == [
        "bot.yaml",
        "inner.tar.gz",
        "random_player.py",
    ]


def shown_in_the_log(world: World, version_id: int, marker: str) -> None:
    """What the bot read and wrote to standard error is in its validation's log."""
    with world.arena.database.session() as session:
        step = session.scalar(
            select(Step).where(Step.version_id == version_id, Step.kind == StepKind.VALIDATE)
        )
        assert step is not None and "LEAKED targets.json" in step.log
        assert marker in step.log


def lifted(world: World, version_id: int, marker: str) -> None:
    """The top directory's contents were lifted whole, whatever their names."""
    assert (world.arena.bot_directory(version_id) / ".x.lifted" / "y").read_bytes() == b"y"


def link_kept_unreadable(world: World, version_id: int, marker: str) -> None:
    """The link into the system stays (a virtualenv's python is one), and gives nothing."""
    assert os.readlink(world.arena.bot_directory(version_id) / "leaked") == "/etc/shadow"


CASES = [
    # Archive tricks: refused at unpack, naming the member.
    Case("gzip-bomb", lambda w, n, m: zeros_tar(n, "gz"), End.UNPACK, ("'zeros'", "more than")),
    Case("bzip2-bomb", lambda w, n, m: zeros_tar(n, "bz2"), End.UNPACK, ("'zeros'", "more than")),
    Case("xz-bomb", lambda w, n, m: zeros_tar(n, "xz"), End.UNPACK, ("'zeros'", "more than")),
    Case(
        "zip-bomb",
        lambda w, n, m: zip_of(
            [("bot.yaml", bot_yaml(n, "./b"), FILE), ("z", b"\0" * (20 << 20), FILE)]
        ),
        End.UNPACK,
        ("'z'", "more than"),
    ),
    Case(
        "zip-lying-size",
        lambda w, n, m: zip_with_sizes("bot.yaml", b"y" * (2 << 20), 16),
        End.UNPACK,
        ("'bot.yaml'",),
    ),
    Case(
        "tar-lying-size",
        lambda w, n, m: compressed(tar([Entry("bot.yaml", b"#" * (1 << 19))], "")[:4096], "gz"),
        End.UNPACK,
        ("'bot.yaml'", "truncated"),
    ),
    Case(
        "too-large-raw",
        lambda w, n, m: tar([Entry("noise", os.urandom(2 << 20))], ""),
        End.UNPACK,
        ("larger than",),
    ),
    Case(
        "too-many-files",
        lambda w, n, m: tar([Entry(f"f{i}", b"x") for i in range(60)]),
        End.UNPACK,
        ("'f50'", "more than 50"),
    ),
    Case(
        "zip-slip",
        lambda w, n, m: zip_of(
            [("bot.yaml", bot_yaml(n, "./b"), FILE), (f"../../{m}", b"x", FILE)]
        ),
        End.UNPACK,
        ("goes up",),
    ),
    Case(
        "tar-dotdot",
        lambda w, n, m: plain(n, Entry(f"a/../../{m}", b"x")),
        End.UNPACK,
        ("goes up",),
    ),
    Case(
        "tar-absolute",
        lambda w, n, m: plain(n, Entry(f"/tmp/{m}", b"x")),
        End.UNPACK,
        ("absolute",),
    ),
    Case(
        "zip-absolute",
        lambda w, n, m: zip_of([(f"/tmp/{m}", b"x", FILE)]),
        End.UNPACK,
        ("absolute",),
    ),
    Case(
        "backslash",
        lambda w, n, m: plain(n, Entry("..\\..\\evil", b"x")),
        End.UNPACK,
        ("backslash",),
    ),
    Case(
        "symlink-out",
        lambda w, n, m: plain(
            n, Entry("key", kind=tarfile.SYMTYPE, link=str(w.arena.directory / KEY_FILE))
        ),
        End.UNPACK,
        ("'key'", "link"),
    ),
    Case(
        "symlink-to-victim",
        lambda w, n, m: plain(n, Entry("v", kind=tarfile.SYMTYPE, link=f"../{w.victim.name}")),
        End.UNPACK,
        ("'v'", "link"),
    ),
    Case(
        "symlink-then-through",
        lambda w, n, m: plain(
            n, Entry("d", kind=tarfile.SYMTYPE, link=str(w.victim)), Entry("d/planted", b"x")
        ),
        End.UNPACK,
        ("'d'", "link"),
    ),
    Case(
        "hardlink-shadow",
        lambda w, n, m: plain(n, Entry("shadow", kind=tarfile.LNKTYPE, link="/etc/shadow")),
        End.UNPACK,
        ("'shadow'", "link"),
    ),
    Case(
        "zip-symlink",
        lambda w, n, m: zip_of(
            [("bot.yaml", b"x", FILE), ("k", b"/etc/shadow", stat.S_IFLNK | 0o777)]
        ),
        End.UNPACK,
        ("'k'", "link"),
    ),
    Case(
        "char-device",
        lambda w, n, m: plain(n, Entry("mem", kind=tarfile.CHRTYPE)),
        End.UNPACK,
        ("'mem'", "device"),
    ),
    Case(
        "block-device",
        lambda w, n, m: plain(n, Entry("sda", kind=tarfile.BLKTYPE)),
        End.UNPACK,
        ("'sda'", "device"),
    ),
    Case(
        "fifo",
        lambda w, n, m: plain(n, Entry("p", kind=tarfile.FIFOTYPE)),
        End.UNPACK,
        ("'p'", "fifo"),
    ),
    Case(
        "zip-device",
        lambda w, n, m: zip_of([("null", b"", stat.S_IFCHR | 0o666)]),
        End.UNPACK,
        ("'null'", "device"),
    ),
    Case(
        "huge-name",
        lambda w, n, m: plain(n, Entry("/".join(["d" * 200] * 20), b"x")),
        End.UNPACK,
        ("longer than",),
    ),
    Case(
        "deep-nesting",
        lambda w, n, m: plain(n, Entry("d/" * 40 + "f", b"x")),
        End.UNPACK,
        ("nested",),
    ),
    Case(
        "name-not-utf8",
        lambda w, n, m: plain(n, Entry(b"bad\xff".decode("utf-8", "surrogateescape"), b"x")),
        End.UNPACK,
        ("bad\\xff", "UTF-8"),
    ),
    Case(
        "zip-name-nul",
        lambda w, n, m: patched(zip_of([("evilX../x", b"x", FILE)]), b"evilX../x", b"evil\0../x"),
        End.UNPACK,
        ("evil", "NUL"),
    ),
    Case(
        "name-control-char",
        lambda w, n, m: plain(n, Entry("a\x1b[2Jb", b"x")),
        End.UNPACK,
        ("control character",),
    ),
    Case(
        "duplicate-member",
        lambda w, n, m: plain(n, Entry("bot.py", b"1"), Entry("bot.py", b"2")),
        End.UNPACK,
        ("'bot.py'", "second member"),
    ),
    Case(
        "file-then-directory",
        lambda w, n, m: plain(n, Entry("x", b"1"), Entry("x/y", b"2")),
        End.UNPACK,
        ("'x/y'", "not a directory"),
    ),
    Case(
        "not-an-archive",
        lambda w, n, m: b"\x7fELF" + os.urandom(600),
        End.UNPACK,
        ("not an archive",),
    ),
    Case("empty-archive", lambda w, n, m: tar([]), End.UNPACK, ("empty",)),
    Case(
        "nested-archive-is-a-file",
        lambda w, n, m: fair_bot(
            n, Entry("inner.tar.gz", tar([Entry(f"../../{m}", b"x"), Entry("/etc/cron.d/x", b"x")]))
        ),
        End.PLACED,
        check=unpacked_not_followed,
    ),
    # Manifest tricks: refused at bot.yaml, naming the line and key.
    Case("no-manifest", lambda w, n, m: tar([Entry("bot.py", b"x")]), End.MANIFEST, ("not found",)),
    Case(
        "manifest-is-a-directory",
        lambda w, n, m: tar(
            [Entry("bot.yaml/", kind=tarfile.DIRTYPE, mode=0o755), Entry("x", b"")]
        ),
        End.MANIFEST,
        ("bot.yaml",),
    ),
    Case(
        "giant-manifest",
        manifest_only(b"name: x\nrun: y\n#" + b"x" * MAX_MANIFEST_BYTES),
        End.MANIFEST,
        ("larger than",),
    ),
    Case(
        "yaml-alias-bomb",
        lambda w, n, m: tar([Entry("bot.yaml", billion_laughs(n))]),
        End.MANIFEST,
        ("build must be text",),
    ),
    Case(
        "yaml-alias-run",
        lambda w, n, m: tar([Entry("bot.yaml", f"name: {n}\nx: &a [*a]\n".encode())]),
        End.MANIFEST,
    ),
    Case(
        "yaml-python-tag",
        lambda w, n, m: tar(
            [
                Entry(
                    "bot.yaml",
                    f"name: {n}\nrun: !!python/object/apply:os.system [touch /tmp/{m}]\n".encode(),
                )
            ]
        ),
        End.MANIFEST,
        ("run must be text",),
    ),
    Case(
        "manifest-not-utf8",
        lambda w, n, m: tar([Entry("bot.yaml", b"name: x\nrun: \xff\xfe\n")]),
        End.MANIFEST,
        (":2:", "UTF-8"),
    ),
    Case(
        "name-differs",
        lambda w, n, m: fair_bot("victim"),
        End.MANIFEST,
        ("'victim'", "not this bot's"),
    ),
    Case(
        "run-goes-up",
        with_run(lambda w: f"{PYTHON} ../{w.victim.name}/random_player.py"),
        End.MANIFEST,
        ("goes up",),
    ),
    Case(
        "run-absolute",
        with_run(lambda w: f"{PYTHON} {w.victim}/random_player.py"),
        End.MANIFEST,
        ("outside the bot",),
    ),
    Case(
        "run-proc-root",
        with_run(lambda w: f"/proc/1/root{w.victim}/random_player.py"),
        End.MANIFEST,
        ("outside the bot",),
    ),
    Case(
        "run-url",
        with_run(lambda w: "http://127.0.0.1:9147/"),
        End.MANIFEST,
        ("not a program",),
    ),
    Case("run-builtin", with_run(lambda w: "random"), End.MANIFEST, ("not a program",)),
    Case("run-human", with_run(lambda w: "human"), End.MANIFEST, ("not a program",)),
    Case(
        "lift-collision",
        lambda w, n, m: tar(
            [
                Entry("x/bot.yaml", bot_yaml(n, f"{PYTHON} random_player.py")),
                Entry("x/random_player.py", RANDOM_PLAYER.read_bytes()),
                Entry("x/.x.lifted/y", b"y"),
            ]
        ),
        End.PLACED,
        check=lifted,
    ),
    # Build tricks: stopped at the limit, or contained and placed.
    Case("build-fork-bomb", attack(build="forkbomb"), End.BUILD, ("process limit",)),
    Case("build-endless-loop", attack(build="loop"), End.BUILD, ("time limit of 10 s",)),
    Case("build-memory-hog", attack(build="hog"), End.BUILD, ("memory limit of 256 MiB",)),
    Case("build-output-flood", attack(build="outflood"), End.PLACED, check=log_cut),
    Case("build-network", attack(build="connect"), End.PLACED, check=got_nothing),
    Case("build-reads", attack(build="read"), End.PLACED, check=got_nothing),
    Case("build-lists", attack(build="list"), End.PLACED, check=got_nothing),
    Case("build-writes-outside", attack(build="write"), End.PLACED, check=got_nothing),
    Case("build-hardlinks", attack(build="hardlink"), End.PLACED, check=got_nothing),
    Case("build-signals", attack(build="signal"), End.PLACED, check=killed_none),
    Case("build-daemon", attack(build="linger"), End.PLACED),
    Case("build-setuid", attack(build="setuid"), End.PLACED, check=not_setuid),
    Case(
        "build-link-to-key",
        lambda w, n, m: attacker(
            n, None, "link", w.targets(m, link=str(w.arena.directory / KEY_FILE))
        ),
        End.BUILD,
        ("'leaked'", "link leading out"),
    ),
    Case(
        "build-link-to-victim",
        lambda w, n, m: attacker(
            n, None, "link", w.targets(m, link=f"../{w.victim.name}/secret.txt")
        ),
        End.BUILD,
        ("'leaked'", "link leading out"),
    ),
    Case("build-fifo", attack(build="fifo"), End.BUILD, ("'pipe'", "fifo")),
    Case(
        "build-link-to-shadow-then-read",
        lambda w, n, m: attacker(n, "read", "link", w.targets(m, read=["leaked", "/etc/shadow"])),
        End.PLACED,
        check=link_kept_unreadable,
    ),
    # Play-time tricks: validation fails them, or they are contained and placed.
    Case("play-stdout-flood", attack(play="outflood"), End.VALIDATE, ("validation: FAIL",)),
    Case("play-sleeps-past-clock", attack(play="sleep"), End.VALIDATE, ("validation: FAIL",)),
    Case("play-reads", attack(play="read"), End.PLACED),
    Case("play-lists", attack(play="list"), End.PLACED),
    # The control: what a bot does read (its own file) it shows, and validation fails it.
    Case(
        "play-reads-its-own-file",
        attack(play="read", read=["targets.json"]),
        End.VALIDATE,
        ("validation: FAIL",),
        check=shown_in_the_log,
    ),
    Case("play-network", attack(play="connect"), End.PLACED),
    Case("play-writes-outside", attack(play="write"), End.PLACED),
    Case("play-leaves-children", attack(play="linger"), End.PLACED),
    Case("play-signals", attack(play="signal"), End.PLACED),
    Case("play-kills-its-parent", attack(play="parricide"), End.PLACED),
    Case("play-stderr-flood", attack(play="errflood"), End.VALIDATE, ("stderr",)),
]


def secrets_of(world: World) -> list[str]:
    return [world.victim_secret, world.database_secret, world.key_text]


def kept_text(world: World) -> Iterator[tuple[str, str]]:
    """Everything the arena kept that an author may come to read: each version's reason and
    advice, each step's verdict and log, and the files of every bot but the victim's."""
    with world.arena.database.session() as session:
        for version in session.scalars(select(Version)):
            yield f"version {version.id}", f"{version.reason}\n{version.advice}"
            for step in version.steps:
                yield f"step {step.id}", f"{step.verdict}\n{step.log}"
    for path in (world.arena.directory / "bots").rglob("*"):
        if path.is_relative_to(world.victim) or path.is_symlink() or not path.is_file():
            continue
        yield str(path), path.read_bytes().decode("utf-8", "replace")


def running_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def nothing_runs(marker: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while (left := running_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"still running after the intake: {left}"


@pytest.mark.jail
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_hostile_submission_is_refused_or_contained(world: World, case: Case) -> None:
    marker = f"hostile-{case.id}-{uuid.uuid4().hex[:8]}"
    version_id = submit(world.arena, "mallory", case.id, case.make(world, case.id, marker))
    asyncio.run(Intake(world.arena).process(version_id))

    with world.arena.database.session() as session:
        version = session.get_one(Version, version_id)
        state, reason = version.state, version.reason
        failed = {step.kind for step in version.steps if step.state == StepState.FAILED}
    if case.end is End.PLACED:
        assert (state, failed) == (VersionState.PLACING, set()), reason
        assert reason == ""
    else:
        assert state == VersionState.FAILED
        kind = StepKind.UNPACK if case.end is End.MANIFEST else StepKind(case.end.value)
        assert failed == {kind}, reason
        assert reason and "\n" not in reason and "Traceback" not in reason
        assert len(reason) < 400, reason
        assert "tell the organiser" not in reason, reason
        assert reason.startswith("bot.yaml") == (case.end is End.MANIFEST), reason
        for word in case.words:
            assert word in reason, reason

    for where, text in kept_text(world):
        for secret in secrets_of(world):
            assert secret not in text, f"a secret in {where}"
    nothing_runs(marker)
    with pytest.raises(BlockingIOError):
        world.listener.accept()[0].close()
    for path in world.forbidden_writes(marker):
        assert not path.exists(), path
    if case.check is not None:
        case.check(world, version_id, marker)


def test_fifty_hostile_submissions_at_least() -> None:
    assert len(CASES) >= 50
    assert len({case.id for case in CASES}) == len(CASES)
