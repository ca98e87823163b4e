"""Builds in the jail: a C bot built, failures named, time and network and other bots' files
out of reach, nothing left running, and what the build made readable to the bot's seat."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import socket
import stat
from pathlib import Path

import pytest

from referee.arena.intake import build as arena_build
from referee.arena.intake.build import BuildResult, build
from referee.arena.store.config import BuildLimits
from referee.players.starter import STARTERS
from referee.sandbox.isolation import machine_protections
from referee.sandbox.jail import SEAT_UIDS
from tests.support.facilities import missing

pytestmark = pytest.mark.jail
LIMITS = BuildLimits(seconds=60, memory_mb=512)


def jailed() -> None:
    """These tests are of the jail: without one, a failure under CI, else a skip."""
    if machine_protections().jail is None:
        reason = "no working bubblewrap here: builds are not jailed"
        missing(reason)


def run(directory: Path, command: str, limits: BuildLimits = LIMITS) -> BuildResult:
    jailed()
    return asyncio.run(build(directory, command, limits, directory.parent / "build.log"))


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    directory = tmp_path / "bots" / "1"
    directory.mkdir(parents=True)
    return directory


def test_a_c_bot_is_built_and_readable_to_any_seat(bot: Path) -> None:
    if shutil.which("cc") is None:
        missing("no cc: it is needed to build the C bot")
    shutil.copy(STARTERS / "random_player.c", bot)
    result = run(bot, "cc -O2 -o random_player random_player.c && echo compiled")
    assert result.passed, result
    assert result.verdict.startswith("built in ")
    assert result.log_tail == "compiled"
    built = (bot / "random_player").stat()
    # The referee's, read-only to the bot, runnable by every seat user.
    assert (built.st_uid, stat.S_IMODE(built.st_mode)) == (os.getuid(), 0o755)
    assert stat.S_IMODE((bot / "random_player.c").stat().st_mode) == 0o644
    assert (bot.parent / "build.log").read_text() == (
        "$ cc -O2 -o random_player random_player.c && echo compiled\ncompiled\n"
    )


def test_a_failing_build_gives_its_exit_status_and_tail(bot: Path) -> None:
    script = "for i in $(seq 1 30); do echo line $i; done; echo broken >&2; exit 3"
    result = run(bot, script)
    assert not result.passed
    assert result.verdict == "exit status 3"
    lines = result.log_tail.splitlines()
    assert len(lines) == 20
    assert lines[-1] == "broken" and lines[0] == "line 12"


def test_a_build_past_its_time_is_killed(bot: Path) -> None:
    result = run(bot, "echo started; sleep 600", BuildLimits(seconds=2, memory_mb=512))
    assert not result.passed
    assert result.verdict == "killed at the time limit of 2 s"
    assert result.log_tail == "started"


def test_a_build_reaches_no_network(bot: Path) -> None:
    # A server listening on this machine's loopback, outside the jail.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        program = (
            "import socket\n"
            f"for where in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
            "    try:\n"
            "        socket.create_connection(where, timeout=5)\n"
            "        print('reached', where)\n"
            "    except OSError as error:\n"
            "        print('refused', error.errno)"
        )
        script = f"python3 -c {shlex.quote(program)}"
        result = run(bot, script)
    assert result.passed, result
    lines = result.log_tail.splitlines()
    assert len(lines) == 2 and all(line.startswith("refused") for line in lines), lines


def test_a_build_sees_no_other_bot(bot: Path) -> None:
    other = bot.parent / "2"
    other.mkdir()
    (other / "secret.txt").write_text("other author's code")
    result = run(bot, f"cat {other}/secret.txt; ls {bot.parent}; exit 0")
    assert result.passed
    assert "other author's code" not in result.log_tail
    assert "No such file" in result.log_tail


def test_a_build_leaves_nothing_running(bot: Path) -> None:
    result = run(bot, "(setsid sleep 1000 &); nohup sleep 1001 >/dev/null 2>&1 & echo forked")
    assert result.passed, result
    assert result.log_tail == "forked"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            assert command not in (b"sleep\x001000\x00", b"sleep\x001001\x00")


def test_a_build_runs_as_a_seat_user_and_writes_only_its_directory(bot: Path) -> None:
    result = run(bot, "id -u; touch made; touch /usr/evil 2>/dev/null || echo no-usr")
    assert result.passed, result
    uid, refused = result.log_tail.splitlines()[-2:]
    if machine_protections().own_user:
        assert int(uid) in SEAT_UIDS
    assert refused == "no-usr"
    assert (bot / "made").stat().st_uid == os.getuid()
    assert not Path("/usr/evil").exists()


def test_a_link_out_left_by_the_build_fails_it(bot: Path) -> None:
    secret = bot.parent / "secret"
    secret.mkdir()
    result = run(bot, f"ln -s {secret} peek; ln -s /usr/bin/python3 python; mkfifo pipe")
    assert not result.passed
    assert result.verdict.startswith("'peek': the build left a link leading out")
    assert not (bot / "peek").is_symlink() and not (bot / "pipe").exists()
    assert (bot / "python").is_symlink()


def test_output_past_the_log_cap_is_cut_with_a_line(bot: Path) -> None:
    result = run(bot, "head -c 1000000 /dev/zero | tr '\\0' 'x'; echo; echo end")
    assert result.passed
    log = (bot.parent / "build.log").read_bytes()
    assert len(log) < 300 * 1024
    assert log.endswith(b"more bytes not kept]\n")
    assert result.log_tail.endswith("end")


def test_a_build_over_its_memory_is_killed_and_named(bot: Path) -> None:
    script = "python3 -c 'x = bytearray(400 * 1024 * 1024); x[::4096] = b\"y\" * len(x[::4096])'"
    result = run(bot, script, BuildLimits(seconds=60, memory_mb=100))
    assert not result.passed
    assert result.verdict == "killed at the memory limit of 100 MiB"


@pytest.mark.parametrize(
    ("where", "script"),
    [
        # Files each under the size limit of one file, and more of them than the cap in all.
        ("its directory", "i=0; while :; do head -c 4M /dev/zero > f$i; i=$((i+1)); done"),
        # Empty files take no blocks but an inode each.
        ("files", "i=0; while :; do : > e$i; i=$((i+1)); done"),
    ],
)
def test_a_build_filling_the_disk_is_killed_while_it_runs(
    bot: Path, monkeypatch: pytest.MonkeyPatch, where: str, script: str
) -> None:
    monkeypatch.setattr(arena_build, "DISK_MB", 32)
    monkeypatch.setattr(arena_build, "DISK_FILES", 2000)
    result = run(bot, script, BuildLimits(seconds=120, memory_mb=512))
    assert not result.passed
    assert result.verdict == "killed: it wrote more than 32 MiB or 2000 files", where


def test_a_build_filling_its_home_meets_a_full_disk(
    bot: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its HOME is a file system of the cap's size in the jail: the write past it fails.
    monkeypatch.setattr(arena_build, "DISK_MB", 32)
    # Two files, each under the size limit of one file.
    fill = 'head -c 20M /dev/zero > "$HOME/a" && head -c 20M /dev/zero > "$HOME/b"'
    script = f'{fill} || {{ du -sm "$HOME"; exit 9; }}'
    result = run(bot, script, BuildLimits(seconds=120, memory_mb=512))
    assert result.verdict == "exit status 9"
    assert "No space left on device" in result.log_tail
    assert re.search(r"^32\s", result.log_tail, re.MULTILINE), result.log_tail
