"""An idle seat frozen as a whole: by the machine's freezer cgroup, and by signals without one."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.clock import IDLE_CPU_ALLOWANCE_S
from referee.players.base import PlayerSpec
from referee.players.process import ProgramPlayer
from referee.sandbox import isolation
from referee.sandbox.cgroups import FreezerCgroup, Freezing, freezer_parents
from referee.sandbox.isolation import Protections, machine_protections
from referee.sandbox.leftovers import kind_prefix
from referee.sandbox.limits import Limits
from referee.sandbox.proc import own_cpu_s
from referee.sandbox.process import ConfinedProcess
from tests.support.facilities import missing
from tests.support.referees import bot_copy, process_state

FREEZABLE = Path(__file__).resolve().parent / "players" / "freezable.py"
# The program, two children and two grandchildren (see freezable.py).
FAMILY = 5
START = "start m ticblock xcplayer 5000 1000"
PATIENCE_S = 10.0


# Each freezer cgroup the machine offers (a machine may have both versions), then signals.
FREEZERS = {FreezerCgroup.freezing(parent): parent for parent in freezer_parents()}


def _freezing(mechanism: Freezing, monkeypatch: pytest.MonkeyPatch) -> Protections:
    """The machine's protections, with players frozen by `mechanism`."""
    if mechanism is not Freezing.SIGNALS and mechanism not in FREEZERS:
        reason = f"no writable {mechanism} on this machine (see `referee doctor`)"
        missing(reason)
    protections = replace(machine_protections(), freezer=FREEZERS.get(mechanism))
    monkeypatch.setattr("referee.sandbox.spawn.machine_protections", lambda: protections)
    monkeypatch.setattr("referee.sandbox.isolation.machine_protections", lambda: protections)
    return protections


@pytest.fixture(params=[*FREEZERS, Freezing.SIGNALS], ids=str)
def freezing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Protections:
    return _freezing(request.param, monkeypatch)


@pytest.fixture(params=list(FREEZERS) or [Freezing.CGROUP_V2], ids=str)
def freezer_cgroup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Protections:
    return _freezing(request.param, monkeypatch)


def _bot(tmp_path: Path) -> Path:
    return bot_copy(tmp_path, "freezable_bot.py", FREEZABLE)


def _player(bot: Path, mode: str, tmp_path: Path) -> ProgramPlayer:
    return ProgramPlayer(PlayerSpec("bot", (sys.executable, str(bot), mode)), tmp_path / "bot.log")


def _processes(bot: Path) -> list[int]:
    """The living processes running `bot` (the program and its forks, not the jail's)."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
        except OSError:
            continue
        if argv[1:2] == [str(bot).encode()] and process_state(int(entry.name)) not in (None, "Z"):
            found.append(int(entry.name))
    return found


def _cpu(pids: list[int]) -> dict[int, float | None]:
    return {pid: own_cpu_s(pid) for pid in pids}


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + PATIENCE_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.01)


async def _family(bot: Path) -> list[int]:
    """The bot's processes, once all of them run."""
    await _until(lambda: len(_processes(bot)) == FAMILY, "the bot's family did not start")
    return _processes(bot)


async def _frozen_as_a_whole(player: ProgramPlayer, family: list[int]) -> None:
    """Pause the player: none of its processes gains CPU time; resumed, each does."""
    player.pause()
    # A busy process stopped in any way is out of the run state (D, S or T by the mechanism).
    await _until(lambda: all(process_state(p) != "R" for p in family), "still running")
    frozen = _cpu(family)
    await asyncio.sleep(0.3)
    assert _cpu(family) == frozen
    player.resume()
    await _until(
        lambda: all((own_cpu_s(p) or 0) > (frozen[p] or 0) for p in family), "still frozen"
    )


def test_a_paused_player_and_all_its_forks_gain_no_cpu_time_until_resumed(
    tmp_path: Path, freezing: Protections
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> str:
        player = _player(bot, "family", tmp_path)
        await player.start()
        try:
            await player.request(START, 5.0)
            family = await _family(bot)
            # One child left the process group and the session: the pids cgroup holds it.
            assert any(os.getsid(pid) == pid for pid in family)
            await _frozen_as_a_whole(player, family)
            reply = await player.request("go", 5.0)
            assert reply is not None
            return reply.text
        finally:
            await player.close()

    said = asyncio.run(scenario())
    # By its cgroup, the program was never signalled; by signals it was, and could tell.
    if freezing.freezing is Freezing.SIGNALS:
        assert said != "done 0"
    else:
        assert said == "done 0"


def test_a_player_that_continues_its_own_processes_is_frozen_by_its_cgroup(
    tmp_path: Path, freezer_cgroup: Protections
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> None:
        player = _player(bot, "tricks", tmp_path)
        await player.start()
        try:
            await player.request(START, 5.0)
            await _frozen_as_a_whole(player, await _family(bot))
        finally:
            await player.close()

    asyncio.run(scenario())


def _cgroup_directories() -> list[Path]:
    """The cgroups this referee has made, in every hierarchy."""
    return [
        path
        for hierarchy in Path("/sys/fs/cgroup").iterdir()
        for path in hierarchy.glob(f"referee-*-{os.getpid()}-*")
        if path.is_dir()
    ]


@pytest.mark.parametrize("ended_by", ["kill", "close"])
def test_a_frozen_player_that_is_ended_leaves_no_process_and_no_cgroup(
    tmp_path: Path, freezing: Protections, ended_by: str
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> tuple[list[int], list[Path]]:
        before = set(_cgroup_directories())
        if ended_by == "close":
            player = _player(bot, "family", tmp_path)
            await player.start()
            await player.request(START, 5.0)
            family = await _family(bot)
            player.pause()
            made = [path for path in _cgroup_directories() if path not in before]
            await player.close()
            return family, made
        process = ConfinedProcess.start(
            (sys.executable, str(bot), "family"), None, {}, Limits(), None, lambda end: None
        )
        assert process.popen.stdin is not None and process.popen.stdout is not None
        process.popen.stdin.write(f"{START}\n".encode())
        process.popen.stdin.flush()
        assert process.popen.stdout.readline() == b"ready\n"
        family = await _family(bot)
        process.freeze()
        await _until(lambda: all(process_state(p) != "R" for p in family), "still running")
        made = [path for path in _cgroup_directories() if path not in before]
        await process.kill()
        return family, made

    family, made = asyncio.run(scenario())
    assert [pid for pid in family if process_state(pid) is not None] == []
    assert _processes(bot) == []
    if freezing.cgroups is not None:
        assert made, "the player had cgroups"
    assert [path for path in made if path.exists()] == []


def test_a_paused_player_whose_input_is_full_still_takes_a_line_and_is_paused_again(
    tmp_path: Path, freezing: Protections
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> None:
        player = _player(bot, "sleep", tmp_path)
        await player.start()
        try:
            await player.request(START, 5.0)
            player.pause()
            await _until(lambda: player.frozen, "not frozen after the grace")
            # Frozen, it reads nothing: the pipe fills (64 KiB on Linux).
            for _ in range(1000):
                taken = player.post("moves " + "x" * 4000, 5.0)
                if taken is not None:
                    break
            assert taken is not None, "the pipe never filled"
            await taken
            assert player.alive
            await _until(lambda: player.frozen, "not frozen again")
            reply = await player.request("go", 5.0)
            assert reply is not None and reply.text.startswith("done")
        finally:
            await player.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(("mode", "low", "high"), [("burn", 100.0, None), ("sleep", 0.0, 50.0)])
def test_a_paused_player_answers_a_request_with_the_cpu_time_it_used(
    tmp_path: Path, freezing: Protections, mode: str, low: float, high: float | None
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> list[float | None]:
        player = _player(bot, mode, tmp_path)
        await player.start()
        spent = []
        try:
            await player.request(START, 5.0)
            for _ in range(3):
                player.pause()
                reply = await player.request("go", 5.0)
                assert reply is not None and reply.text.startswith("done")
                spent.append(reply.cpu_ms)
        finally:
            await player.close()
        return spent

    for cpu_ms in asyncio.run(scenario()):
        assert cpu_ms is not None and cpu_ms >= low, cpu_ms
        assert high is None or cpu_ms < high, cpu_ms


def test_a_frozen_player_left_by_a_killed_referee_is_killed_by_the_next(
    freezer_cgroup: Protections,
) -> None:
    # A referee that was killed left a player frozen in its cgroup (under v1, SIGKILL alone
    # would not end it), named for the referee's pid, which no process has any more.
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert freezer_cgroup.freezer is not None
    path = freezer_cgroup.freezer / f"{kind_prefix('freezer')}{gone.pid}-abc"
    path.mkdir()
    left = FreezerCgroup(path)
    player = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        (left.path / "cgroup.procs").write_text(str(player.pid))
        left.freeze()

        isolation.remove_left_behind()

        assert player.wait(PATIENCE_S) == -9
        assert not left.path.exists()
    finally:
        player.kill()
        player.wait()
        left.remove()


def test_doctor_says_how_an_idle_seat_is_frozen_here() -> None:
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.stdout) if r["protection"] == "frozen while not asked"]
    protections = machine_protections()
    assert row["active"] is (protections.freezer is not None)
    assert str(protections.freezing) in row["how"]


def test_a_paused_player_that_waits_for_its_input_is_frozen_only_once_the_grace_is_over(
    tmp_path: Path, freezing: Protections
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> None:
        player = _player(bot, "sleep", tmp_path)
        await player.start()
        try:
            await player.request(START, 5.0)
            for _ in range(3):
                player.pause()
                # Asked again before the grace is over, it would cost no freeze and no thaw.
                assert not player.frozen
                await _until(lambda: player.frozen, "not frozen after the grace")
                reply = await player.request("go", 5.0)
                assert reply is not None and reply.text.startswith("done")
            assert not player.watched, "a player that used no CPU time while paused"
        finally:
            await player.close()

    asyncio.run(scenario())


def test_a_player_seen_using_cpu_time_while_paused_is_frozen_at_once_from_then_on(
    tmp_path: Path, freezing: Protections
) -> None:
    bot = _bot(tmp_path)

    async def scenario() -> None:
        player = _player(bot, "family", tmp_path)
        await player.start()
        try:
            await player.request(START, 5.0)
            family = await _family(bot)
            # Running, not only started: on a busy machine a process may wait for a core
            # longer than the grace lasts.
            await _until(
                lambda: sum(own_cpu_s(p) or 0 for p in family) > 10 * IDLE_CPU_ALLOWANCE_S,
                "the bot's family did not run",
            )
            # Its busy processes run while it is paused, until, over the pauses of the match,
            # they have used more than a match allows: on a loaded machine one grace of a few
            # milliseconds may give them less than that.
            for _ in range(200):
                player.pause()
                assert not player.frozen
                await _until(lambda: player.frozen, "not frozen after the grace")
                await player.request("go", 5.0)
                if player.watched:
                    break
            assert player.watched, "never seen using CPU time while paused"
            for _ in range(2):
                player.pause()
                assert player.frozen
                await _frozen_as_a_whole(player, family)
                player.new_match()  # the allowance starts again; what it was seen doing stays
        finally:
            await player.close()

    asyncio.run(scenario())


LISTENER = """\
import sys, time
for line in sys.stdin:
    print(line.split()[0], time.monotonic(), file=sys.stderr, flush=True)
    if line.startswith("start"):
        print("ready", flush=True)
    elif line.startswith("go"):
        print("(mark 1 1)", flush=True)
"""


def test_a_paused_player_reads_the_lines_sent_meanwhile_only_with_its_next_request(
    tmp_path: Path,
) -> None:
    (tmp_path / "listener.py").write_text(LISTENER)
    bot, log = bot_copy(tmp_path, "listener_bot.py", tmp_path / "listener.py"), tmp_path / "log"
    player = ProgramPlayer(PlayerSpec("bot", (sys.executable, str(bot))), log)

    async def scenario() -> float:
        await player.start()
        try:
            await player.request(START, 5.0)
            player.pause()
            assert player.post("moves 1 (mark 1 1) noop", 5.0) is None
            # Long past the grace: unheld, it would have read the line while not asked.
            await asyncio.sleep(0.3)
            asked = time.monotonic()
            reply = await player.request("go 2 1000 (mark 1 1)", 5.0)
            assert reply is not None and reply.text == "(mark 1 1)"
            return asked
        finally:
            await player.close()

    asked = asyncio.run(scenario())
    heard = [line.split() for line in log.read_text().splitlines() if line[:1].isalpha()]
    assert [words[0] for words in heard] == ["start", "moves", "go", "quit"]
    assert float(heard[1][1]) >= asked, "the moves line reached it with its request, not before"
