"""A player's private directory (HOME, TMPDIR) in the jail: a file system of `disk_mb`, which
a program that writes past it meets as a full disk, and which every match of a tournament
starts empty, whether its process is fresh or reused."""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from referee.errors import ConfigError
from referee.players.process import ProgramPlayer
from referee.sandbox.isolation import machine_protections
from referee.sandbox.limits import Limits
from referee.sandbox.process import ConfinedProcess, ProcessEnd, can_wake_idle
from referee.tournaments.config import load_config
from referee.tournaments.pool import PlayerPool
from tests.support.facilities import missing, needs
from tests.support.tournaments import run, seeded, transcripts, write_config

pytestmark = [
    pytest.mark.jail,
    needs(
        machine_protections().jail is None,
        f"no jail on this machine: {machine_protections().why_not}",
    ),
]

# A player that says on standard error, at each start, who it is (a name drawn when its
# process starts), what its TMPDIR holds and how its write of 16 MiB there went; the tidy
# one writes 1 MiB and removes it at once. It imports nothing of the referee.
WRITER = r"""import os, random, re, sys
me = os.urandom(6).hex()
tidy = sys.argv[1] == "tidy"
place = os.environ["TMPDIR"]
chunk = b"x" * (1 << 20)

def moves(text):
    found, depth = [], 0
    for token in re.finditer(r"[()]|[^\s()]+", text):
        if depth == 0:
            begin = token.start()
        depth += {"(": 1, ")": -1}.get(token[0], 0)
        if depth == 0:
            found.append(text[begin:token.end()])
    return found

for line in sys.stdin:
    words = line.split(maxsplit=3)
    if not words:
        continue
    if words[0] == "start":
        held = len(os.listdir(place))
        said = "wrote"
        try:
            with open(os.path.join(place, "scratch"), "wb") as out:
                for _ in range(1 if tidy else 16):
                    out.write(chunk)
                    out.flush()
        except OSError as error:
            said = os.strerror(error.errno)
        if tidy:
            os.remove(os.path.join(place, "scratch"))
        sys.stderr.write(f"{me} {held} {said}\n")
        sys.stderr.flush()
        print("ready", flush=True)
    elif words[0] == "go":
        print(random.choice(moves(words[3])), flush=True)
    elif words[0] == "quit":
        break
"""


def _confined(command: str, limits: Limits) -> tuple[str, bool]:
    """What a jailed shell line says on its standard error, and whether its private
    directory held files while it waited at its end."""

    async def play() -> tuple[str, bool]:
        ended: asyncio.Future[ProcessEnd] = asyncio.get_running_loop().create_future()
        process = ConfinedProcess.start(
            ("/bin/sh", "-c", f"{command}; echo done >&2; read line"),
            None,
            {},
            limits,
            None,
            lambda end: ended.done() or ended.set_result(end),
        )
        try:
            assert process.popen.stderr is not None
            stderr = process.popen.stderr
            lines = []
            while not lines or lines[-1] != "done":
                line = await asyncio.to_thread(stderr.readline)
                assert line, f"it ended first: {lines}"
                lines.append(line.decode().strip())
            holds = process.private_holds_files()
            # Outside the jail its directory is a mount point, empty whatever it wrote.
            assert list(process.private.iterdir()) == []
            return "\n".join(lines), holds
        finally:
            await process.kill()

    return asyncio.run(play())


def test_a_write_past_the_disk_limit_fails_with_a_full_disk() -> None:
    said, holds = _confined(
        "head -c 20971520 /dev/zero > $TMPDIR/big || echo failed >&2; du -k $TMPDIR/big >&2",
        Limits(disk_mb=8),
    )
    assert "No space left on device" in said and "failed" in said
    kept = next(line for line in said.splitlines() if line.endswith("/big"))
    assert int(kept.split()[0]) == 8 * 1024
    assert holds


def test_home_and_tmpdir_are_the_capped_directory() -> None:
    said, _ = _confined('df -k "$HOME" "$TMPDIR" | tail -n 2 >&2', Limits(disk_mb=12))
    sizes = [line.split()[1] for line in said.splitlines()[:2]]
    assert sizes == ["12288", "12288"]


def test_an_empty_directory_is_told_from_one_that_holds_a_file_or_a_deleted_open_one() -> None:
    assert _confined("true", Limits()) == ("done", False)
    assert _confined(": > $TMPDIR/empty", Limits())[1]
    # Deleted, but held open by the shell: the space is still taken.
    assert _confined("exec 3>$TMPDIR/held; echo x >&3; rm $TMPDIR/held", Limits())[1]


def test_the_disk_limit_is_set_in_a_tournament_config_and_checked(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, extra="limits: {disk_mb: 8}\n")
    assert load_config(path).players[0].spec.limits.disk_mb == 8
    too_much = "limits: {disk_mb: 100000000}\n"
    path = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, extra=too_much)
    with pytest.raises(ConfigError, match="disk_mb must be at most"):
        load_config(path)


def test_every_match_starts_with_an_empty_directory_and_a_filler_is_stopped_by_the_cap(
    tmp_path: Path,
) -> None:
    script = tmp_path / "bots" / "writer.py"
    script.parent.mkdir()
    script.write_text(WRITER)
    players = {
        "filler": f"{sys.executable} {script} fill",
        "tidy": f"{sys.executable} {script} tidy",
    }
    extra = "rounds: 2\nlimits: {disk_mb: 8}\n"
    config = load_config(write_config(tmp_path, players, games="[ticblock]", extra=extra))
    run(config)
    found = list(transcripts(config.output).values())
    assert len(found) == 4
    starts: dict[str, list[list[str]]] = defaultdict(list)
    for transcript in found:
        assert transcript.end_reason == "terminal" and not transcript.faults
        for seat in transcript.seats:
            assert seat.log is not None
            (line,) = Path(seat.log).read_text().splitlines()
            starts[seat.player].append(line.split(maxsplit=2))
    # Every match, each found its directory empty; the filler's write stopped at the cap.
    assert {held for _, held, _ in starts["filler"] + starts["tidy"]} == {"0"}
    assert {said for _, _, said in starts["filler"]} == {"No space left on device"}
    assert {said for _, _, said in starts["tidy"]} == {"wrote"}
    # The filler left its file: a fresh process each match. The tidy one is reused.
    assert len({me for me, _, _ in starts["filler"]}) == 4
    assert len({me for me, _, _ in starts["tidy"]}) == 1


def test_a_process_that_left_files_is_replaced_by_one_started_ahead(tmp_path: Path) -> None:
    if not can_wake_idle():
        missing(
            "only root can wake a process of the idle class: no spares here",
            under_ci="CI runs as root, who can wake a spare",
        )
    script = tmp_path / "bots" / "litter.py"
    script.parent.mkdir()
    script.write_text(
        "import os, sys\n"
        "open(os.path.join(os.environ['TMPDIR'], 'litter'), 'w').close()\n"
        "for line in sys.stdin:\n    pass\n"
    )
    players = {"litter": f"{sys.executable} {script}", "b": seeded(2)}
    config = load_config(write_config(tmp_path, players))

    async def scenario() -> None:
        pool = PlayerPool(config.players)
        try:
            first = await pool.acquire("litter", tmp_path / "logs" / "1.log")
            assert isinstance(first, ProgramPlayer)
            for _ in range(200):
                if first.left_files():
                    break
                await asyncio.sleep(0.05)
            await pool.release("litter", first)
            # Its replacement is started at once, not when the next match asks for it.
            ahead = await pool._spares["litter"]
            assert ahead is not None and ahead is not first and ahead.alive
            second = await pool.acquire("litter", tmp_path / "logs" / "2.log")
            assert second is ahead
        finally:
            await pool.close()

    asyncio.run(scenario())
