"""Untrusted players: limits, isolation, and a tournament of bots that break them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import PlayerCrashed, ResourceExceeded
from referee.players.base import PlayerSpec
from referee.players.process import ProgramPlayer
from referee.records.signing import results_key
from referee.records.transcript import read_transcript
from referee.sandbox import isolation as sandbox
from referee.sandbox.isolation import Protections, machine_protections
from referee.sandbox.jail import SEAT_UIDS
from referee.sandbox.limits import SAMPLE_EVERY_S, Limits, over_memory
from referee.sandbox.proc import ProcessTable, own_cpu_s
from referee.tournaments.config import load_config
from referee.tournaments.runner import Observer, run_tournament
from tests.support.facilities import missing
from tests.support.referees import bot_copy, process_state, referee_with_one_player, running

pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

HERE = Path(__file__).resolve().parent
MISBEHAVING = HERE / "players" / "misbehaving.py"
runner = CliRunner()


def _bot(tmp_path: Path) -> Path:
    return bot_copy(tmp_path)


# Players in the jail where the machine has one (marked `jail`), and without it.
@pytest.fixture(
    params=[
        pytest.param("as the machine allows", marks=pytest.mark.jail),
        "without jail or cgroups",
    ]
)
def watched(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Protections:
    """The protections players get: this machine's, and the same less the jail and cgroups
    (processes found by their process group, the network kept out by unshare)."""
    protections = machine_protections()
    if request.param == "without jail or cgroups":
        protections = replace(
            protections, jail=None, cgroups=None, memory=None, cpu=None, freezer=None, weight=None
        )
        monkeypatch.setattr("referee.sandbox.spawn.machine_protections", lambda: protections)
    return protections


@pytest.mark.slow
def test_a_tournament_of_misbehaving_players_ends_with_every_fault_named(
    tmp_path: Path, watched: Protections
) -> None:
    bot = _bot(tmp_path)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    modes = {
        "hog": "memory-hog --at 2",
        "bomb": "fork-bomb --at 2 --delay-ms 5",
        "spinner": "cpu-spinner --at 2",
        "stderr": "stderr-stream",
        "net": f"connect --port {port}",
        "orphan": "orphan --at 2",
    }
    entries = "".join(
        f"  - {{name: {name}, command: {sys.executable} {bot} {mode}}}\n"
        for name, mode in modes.items()
    )
    path = tmp_path / "zoo.yaml"
    path.write_text(
        "name: zoo\ngames: [ticblock]\npolicy: random\nconcurrency: 2\n"
        "start_clock: 5000\nplay_clock: 2000\n"
        "limits: {memory_mb: 128, cpu_s: 1, processes: 32}\n"
        f"players:\n  - {{name: random, command: random}}\n{entries}"
    )
    config = load_config(path)

    key, _ = results_key(config.output, None)
    asyncio.run(run_tournament(config, key, Observer(), restart=False))

    transcripts = [read_transcript(p) for p in sorted(config.output.glob("*.json"))]
    assert len(transcripts) == 7 * 6
    assert all(t.complete for t in transcripts)
    faults: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for transcript in transcripts:
        players = {seat.role: seat.player for seat in transcript.seats}
        for fault in transcript.faults:
            faults[players[fault.role]].append((fault.kind, fault.detail))
    out = {name: [f for f in found if f[0] != "timeout"] for name, found in faults.items()}
    ways_out = {
        "hog": {("resource", "exceeded its memory limit 128 MiB")},
        "bomb": {("resource", "exceeded its process limit 32 processes and threads")},
        "spinner": {("resource", "exceeded its CPU limit 1 s per match")},
    }
    if watched.cgroups is None and os.geteuid() != 0:
        # RLIMIT_NPROC, shared by all the user's processes, may refuse a fork before the
        # sampling sees the bomb: then the bomb fails by itself (docs/sandbox.md).
        ways_out["bomb"].add(("crash", "exited with code 1"))
    # Each bot misbehaves at its second move of each match, and is out of it from then on.
    for name, ways in ways_out.items():
        assert len(out[name]) == 12, faults[name]
        assert set(out[name]) <= ways, faults[name]
    assert set(faults["orphan"]) == {("crash", "exited with code 3")}
    assert len(faults["orphan"]) == 12
    # The random player, the stderr writer and the networker answer every move in time.
    assert not faults["random"] and not faults["stderr"] and not faults["net"]
    assert running(bot) == []
    if machine_protections().network:
        with pytest.raises(BlockingIOError):
            listener.accept()
        logs = sorted((config.output / "logs").glob("*.log"))
        said = [line for log in logs for line in log.read_text(errors="replace").splitlines()]
        assert any(line.startswith(f"could not connect to port {port}") for line in said)
        assert not any(line.startswith("connected") for line in said)
    listener.close()


async def _requests(spec: PlayerSpec, log: Path, *lines: str):
    """Start the player, send it these lines one by one, close it; the last reply, the player."""
    player = ProgramPlayer(spec, log)
    await player.start()
    try:
        player.new_match()
        for line in lines:
            reply = await player.request(line, 5.0)
        return reply, player
    finally:
        await player.close()


def _spec(tmp_path: Path, mode: str, limits: Limits) -> PlayerSpec:
    return PlayerSpec("bot", (sys.executable, str(_bot(tmp_path)), mode), limits=limits)


def test_a_program_over_its_memory_limit_is_named_for_it_even_when_it_exits_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It touches 96 MiB (under its 128 MiB address-space cap) and exits at once, printing as
    # it goes. The sampling is put out of the way: the kernel's peak at its exit must say it.
    monkeypatch.setattr("referee.sandbox.process.SAMPLE_EVERY_S", 3600.0)
    spec = PlayerSpec(
        "bot",
        (sys.executable, str(_bot(tmp_path)), "memory-spike", "--mb", "96"),
        limits=Limits(memory_mb=64),
    )
    lines = ("start m ticblock xcplayer 1000 1000", "go 1 1000 (mark 1 1) (mark 2 2)")
    with pytest.raises(ResourceExceeded, match=r"^exceeded its memory limit 64 MiB$"):
        asyncio.run(_requests(spec, tmp_path / "spike.log", *lines))


async def _first_fault(spec: PlayerSpec, log: Path, *lines: str) -> PlayerCrashed | None:
    """Send the lines; the fault that ends the player, at a request or within 50 samplings."""
    player = ProgramPlayer(spec, log)
    await player.start()
    try:
        player.new_match()
        for line in lines:
            await player.request(line, 5.0)
        deadline = time.monotonic() + 50 * SAMPLE_EVERY_S
        while player.connection.gone is None and time.monotonic() < deadline:
            await asyncio.sleep(SAMPLE_EVERY_S / 10)
        return player.connection.gone
    except PlayerCrashed as fault:
        return fault
    finally:
        await player.close()


async def _faulty_request(spec: PlayerSpec, log: Path, *lines: str) -> tuple[int, PlayerCrashed]:
    """Send the lines; which one (from 1) failed, and its fault."""
    player = ProgramPlayer(spec, log)
    await player.start()
    try:
        player.new_match()
        for number, line in enumerate(lines, start=1):
            try:
                await player.request(line, 10.0)
            except PlayerCrashed as fault:
                return number, fault
        raise AssertionError("no request failed")
    finally:
        await player.close()


@pytest.mark.parametrize(
    ("mode", "limits", "named"),
    [
        ("memory-hog", Limits(memory_mb=128), "exceeded its memory limit 128 MiB"),
        ("fork-bomb", Limits(processes=16), "exceeded its process limit 16 processes and threads"),
    ],
    ids=["memory-hog", "fork-bomb"],
)
@pytest.mark.slow
def test_a_hog_and_a_bomb_are_named_at_the_step_of_the_excess_every_time(
    tmp_path: Path, mode: str, limits: Limits, named: str
) -> None:
    # The excess is at the second move; with cgroups the kernel stops it there, whatever the
    # load. Without them, a bomb may answer before the sampling sees it (the test above).
    protections = machine_protections()
    if protections.cgroups is None or protections.memory is None:
        # A machine without them (a user that may not make cgroups) cannot keep this promise;
        # CI, as root, must.
        reason = "this machine gives no pids or memory cgroup (referee doctor)"
        missing(reason)
    spec = PlayerSpec(
        "bot", (sys.executable, str(_bot(tmp_path)), mode, "--at", "2"), limits=limits
    )
    lines = (
        "start m ticblock xcplayer 5000 5000",
        "go 1 5000 (mark 1 1) (mark 2 2)",
        "go 3 5000 (mark 1 2) (mark 3 3)",
    )
    for run in range(20):
        number, fault = asyncio.run(_faulty_request(spec, tmp_path / f"{run}.log", *lines))
        assert (number, type(fault), fault.detail) == (3, ResourceExceeded, named), run
    assert running(spec.argv[1]) == []


def test_a_fork_bomb_is_stopped_at_its_process_limit(tmp_path: Path, watched: Protections) -> None:
    spec = _spec(tmp_path, "fork-bomb", Limits(processes=16))
    log = tmp_path / "bomb.log"
    lines = ("start m ticblock xcplayer 1000 1000", "go 1 1000 (mark 1 1) (mark 2 2)")

    fault = asyncio.run(_first_fault(spec, log, *lines))

    over = (ResourceExceeded, "exceeded its process limit 16 processes and threads")
    assert fault is not None
    if watched.cgroups is not None:
        # The cgroup refuses the fork that would go over: the bomb never has more than 16,
        # and is out at the step it tried.
        assert (type(fault), fault.detail) == over
        (refused,) = [line for line in log.read_text().splitlines() if line.startswith("fork")]
        assert int(refused.split()[-1]) <= 15
    elif os.geteuid() == 0:
        # Only the sampling counts them: the bomb is out within a sampling period or two,
        # perhaps after it answered the step (docs/sandbox.md).
        assert (type(fault), fault.detail) == over
    else:
        # RLIMIT_NPROC may refuse a fork before the sampling sees the bomb: then it fails
        # by itself (docs/sandbox.md).
        assert (type(fault), fault.detail) in {over, (PlayerCrashed, "exited with code 1")}
    assert running(spec.argv[1]) == []


def test_a_process_that_leaves_the_group_is_killed_when_cgroups_or_the_jail_are_active(
    tmp_path: Path, watched: Protections
) -> None:
    bot = _bot(tmp_path)
    spec = PlayerSpec("bot", (sys.executable, str(bot), "escape"))

    async def escape() -> tuple[ProgramPlayer, int]:
        player = ProgramPlayer(spec, tmp_path / "e.log")
        await player.start()
        try:
            assert (await player.request("start m quad x 1000 1000", 5.0)).text == "ready"
            # The player's own session is led by its first process (bubblewrap, in the jail).
            escaped = [pid for pid in running(bot) if os.getsid(pid) == pid != player.pid]
            assert len(escaped) == 1, "the child left the session"
            return player, escaped[0]
        finally:
            await player.close()

    player, escaped = asyncio.run(escape())
    left = running(bot)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    # Without a cgroup or the jail's PID namespace, a process group is all the referee knows
    # of a player (`referee doctor`).
    contained = watched.cgroups is not None or watched.jail is not None
    assert left == ([] if contained else [escaped])
    assert player.ending is not None and player.ending.told_to_quit


# A parent that forks a child into a process group of its own, says the child's pid, and
# never reaps it: the child's end leaves a zombie in that group that is not ours to reap.
_UNREAPED = """import os, sys, time
child = os.fork()
if child == 0:
    os.setpgid(0, 0)
    os._exit(0)
print(child, flush=True)
time.sleep(120)
"""


def test_the_probe_does_not_wait_for_a_zombie_another_process_must_reap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As under a service manager or a test runner that is a subreaper: the jail's init, left
    # to it, stays a zombie in the probe's group; the probe once waited out its whole timeout
    # for it, at the start of every command.
    monkeypatch.setattr(sandbox, "_PROBE_TIMEOUT_S", 120.0)
    parent = subprocess.Popen([sys.executable, "-c", _UNREAPED], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        while process_state(child) != "Z":
            time.sleep(0.01)
        began = time.monotonic()
        sandbox._reap_group(child)
        assert time.monotonic() - began < 60
        assert process_state(child) == "Z"  # left for its parent
    finally:
        parent.kill()
        parent.wait()


def test_without_a_working_bubblewrap_players_run_unjailed_and_the_referee_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bubblewrap that may not make namespaces, as on a machine that forbids them.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    found = sandbox.machine_protections.__wrapped__()
    assert found.jail is None
    (warning,) = found.why_not
    assert "bubblewrap failed: bwrap: No permissions to create new namespace" in warning
    assert "players are not jailed" in warning
    rows = {name: active for name, active, _ in found.rows()}
    assert not rows["own PID namespace"] and not rows["own mount namespace"]

    def refused() -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr("referee.sandbox.isolation._unshare_network", refused)
    bare = sandbox.machine_protections.__wrapped__()
    assert not bare.network
    (warning,) = bare.why_not
    assert "cannot unshare a network namespace either" in warning, warning
    assert "can reach the network" in warning


def test_writing_a_file_over_the_limit_is_a_resource_fault(tmp_path: Path) -> None:
    # A program killed by SIGXFSZ. (Python ignores that signal: its write fails instead.)
    writer = 'exec head -c 4000000 /dev/zero > "$TMPDIR/big"'
    spec = PlayerSpec("writer", ("sh", "-c", writer), limits=Limits(file_size_mb=1))
    with pytest.raises(ResourceExceeded, match=r"^exceeded its file-size limit 1 MiB$"):
        asyncio.run(_requests(spec, tmp_path / "w.log", "start m ticblock xcplayer 1000 1000"))


def test_limits_are_set_in_the_child_before_it_runs(tmp_path: Path, watched: Protections) -> None:
    async def limits_of_running_player() -> str:
        spec = PlayerSpec(
            "sleeper", ("sleep", "30"), limits=Limits(memory_mb=100, open_files=40, file_size_mb=3)
        )
        player = ProgramPlayer(spec, tmp_path / "s.log")
        await player.start()
        try:
            return Path(f"/proc/{player.pid}/limits").read_text()
        finally:
            await player.close()

    table = {
        line[:26].strip(): line[26:].split()[:2]
        for line in asyncio.run(limits_of_running_player()).splitlines()[1:]
    }
    # Under a memory cgroup the address space is a backstop (64 GiB at least); else twice
    # the memory limit.
    address_space = 64 * 1024**3 if watched.memory_by_cgroup else 200 * 1024 * 1024
    assert table["Max address space"] == [str(address_space)] * 2
    assert table["Max open files"] == ["40", "40"]
    assert table["Max file size"] == [str(3 * 1024 * 1024)] * 2
    assert table["Max core file size"] == ["0", "0"]


def test_a_player_gets_a_minimal_environment_and_a_private_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFEREE_TEST_SECRET", "s3cret")
    spec = PlayerSpec(
        "bot",
        (sys.executable, str(_bot(tmp_path)), "environment"),
        env={"MY_SETTING": "1", "GOMEMLIMIT": "100MiB"},
        limits=Limits(memory_mb=300),
    )
    reply, _ = asyncio.run(
        _requests(spec, tmp_path / "bot.log", "start m ticblock xcplayer 1000 1000")
    )
    assert reply.text == "ready"
    environment = dict(
        line.split("=", 1) for line in (tmp_path / "bot.log").read_text().splitlines()
    )
    assert "REFEREE_TEST_SECRET" not in environment
    assert environment["MY_SETTING"] == "1"
    assert environment["PATH"] == os.environ["PATH"]
    # Runtimes are told the seat's memory, but a variable the player sets is its own.
    assert environment["JAVA_TOOL_OPTIONS"] == (
        "-XX:MaxRAM=300m -XX:MaxRAMPercentage=100 -XX:+DisplayVMOutputToStderr"
    )
    assert environment["NODE_OPTIONS"] == "--max-old-space-size=300"
    assert environment["DOTNET_GCHeapHardLimit"] == "12c00000"
    assert environment["GOMEMLIMIT"] == "100MiB"
    private = Path(environment["TMPDIR"])
    assert environment["HOME"] == str(private)
    assert environment["cwd"] == str(private)
    assert private.name.startswith("referee-player-")
    assert not private.exists(), "the private directory outlived the player"


def test_a_player_has_no_privileges_and_cannot_raise_its_priority(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "privileges", Limits())
    log = tmp_path / "privileges.log"
    reply, _ = asyncio.run(_requests(spec, log, "start m quad x 1000 1000"))
    assert reply.text == "ready"
    said = dict(line.replace(":\t", "=").split("=", 1) for line in log.read_text().splitlines())
    assert said["renice"] == "refused"
    assert said["CapEff"] == "0000000000000000"
    assert said["NoNewPrivs"] == "1"


def test_doctor_says_which_protections_are_active() -> None:
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["protection"]: row["active"] for row in json.loads(result.stdout)}
    assert rows["no network"] is machine_protections().network
    assert rows["per-user process limit"] is (os.geteuid() != 0)
    assert rows["memory limited by what it uses"] is (machine_protections().memory is not None)
    text = runner.invoke(app, ["doctor"]).stdout
    assert "no network" in text and ("yes" in text)


def test_a_shared_process_table_scans_once_per_period(tmp_path: Path) -> None:
    group = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        fresh, shared = ProcessTable(0.0), ProcessTable(60.0)
        deadline = time.monotonic() + 5
        while len(fresh.group(group.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = sorted(pid for pid, _ in shared.group(group.pid))
        assert len(before) == 3
        os.kill(max(before), signal.SIGKILL)
        while len(fresh.group(group.pid)) == 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(pid for pid, _ in fresh.group(group.pid)) == before[:2]
        assert sorted(pid for pid, _ in shared.group(group.pid)) == before, "one scan serves"
    finally:
        os.killpg(group.pid, signal.SIGKILL)
        group.wait()


@pytest.mark.parametrize("found_by", ["as the machine allows", "directory"])
def test_a_child_left_running_by_the_player_of_a_killed_referee_is_killed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    # A referee in a process of its own, without the jail, runs a player whose child leaves
    # its process group (setsid); the referee is killed with SIGKILL, and cannot clean up.
    bot = _bot(tmp_path)
    command = (sys.executable, str(bot), "escape")
    referee, player = referee_with_one_player(
        command, tmp_path / "s.log", "start m ticblock xcplayer 5000 1000", jailed=False
    )
    (child,) = [pid for pid in running(bot) if os.getsid(pid) == pid != player]
    referee.kill()
    referee.wait()
    assert process_state(child) not in (None, "Z"), (
        "the escaped child should outlive the killed referee"
    )
    if found_by == "directory":
        # Without cgroups, the child is known by the player directory it was given.
        protections = replace(
            machine_protections(), cgroups=None, memory=None, cpu=None, weight=None
        )
        monkeypatch.setattr("referee.sandbox.isolation.machine_protections", lambda: protections)

    sandbox.remove_left_behind()

    deadline = time.monotonic() + 5
    while process_state(child) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_state(child) in (None, "Z")


def test_what_a_killed_referee_left_behind_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid now names a referee that is no longer running
    killed = tmp_path / f"referee-player-{gone.pid}-abc"
    (killed / "work").mkdir(parents=True)
    # One it had leased to a seat user, as a root referee does in the jail.
    leased = tmp_path / f"referee-player-{gone.pid}-def"
    leased.mkdir()
    if os.geteuid() == 0:
        os.chown(leased, SEAT_UIDS.start, SEAT_UIDS.start)
    mine = sandbox.private_directory()
    other_kind = tmp_path / f"referee-notes-{gone.pid}-abc"
    other_kind.mkdir()
    parent = machine_protections().cgroups
    cgroup = parent / f"referee-pids-{gone.pid}-abc" if parent is not None else None
    if cgroup is not None:
        cgroup.mkdir()

    sandbox.remove_left_behind()

    assert not killed.exists() and not leased.exists()
    assert mine.parent == tmp_path and mine.name.startswith(f"referee-player-{os.getpid()}-")
    assert mine.exists() and other_kind.exists(), "only a killed referee's own leftovers go"
    assert cgroup is None or not cgroup.exists()


def test_a_peak_inherited_from_a_big_referee_is_not_the_players() -> None:
    # A child forked from a referee holding a big GDL game peaks at the referee's size
    # before it execs; only a peak above that is the program's own.
    limits = Limits(memory_mb=1024)
    gib = 1 << 30
    assert over_memory(2 * gib, limits, inherited_bytes=3 * gib) is None
    assert over_memory(2 * gib, limits, inherited_bytes=gib // 8) == "memory_mb"
    assert over_memory(gib // 2, limits) is None


def test_a_reused_process_keeps_its_cpu_rlimit_until_it_has_used_a_whole_allowance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import resource

    from referee.sandbox.cgroups import CpuCgroup
    from referee.sandbox.process import ConfinedProcess

    if machine_protections().cpu is None:
        missing("no CPU cgroup here (see `referee doctor`): a player's CPU time is not counted")

    async def scenario() -> list[int]:
        process = ConfinedProcess.start(
            ("sleep", "30"), None, {}, Limits(cpu_s=10), None, lambda end: None
        )
        soft: list[int] = []
        try:
            deadline = time.monotonic() + 10
            while process.pid not in process.pids():  # the jail's shell joins its cgroups
                assert time.monotonic() < deadline, "never joined its cgroups"
                await asyncio.sleep(0.01)
            process.new_match()
            # Two allowances ahead of what it has used, from its birth.
            soft.append(resource.prlimit(process.pid, resource.RLIMIT_CPU)[0])
            marked = (50, resource.RLIM_INFINITY)
            resource.prlimit(process.pid, resource.RLIMIT_CPU, marked)
            process.new_match()  # it has used next to nothing: its limit is left as it is
            soft.append(resource.prlimit(process.pid, resource.RLIMIT_CPU)[0])
            # A whole allowance used since: moved on.
            monkeypatch.setattr(CpuCgroup, "cpu_s", lambda self: 10.5)
            process.new_match()
            soft.append(resource.prlimit(process.pid, resource.RLIMIT_CPU)[0])
        finally:
            await process.kill()
        return soft

    assert asyncio.run(scenario()) == [21, 50, 21]


# Spins, and starts three more spinners, each in a session of its own: under the kernel's
# autogroup each of those would weigh as much as the referee's whole session.
SESSIONS_SPINNER = """
import os
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        break
while True:
    pass
"""


def test_a_players_processes_weigh_as_one_process_however_many_sessions_they_start() -> None:
    """On one core, against a spinner of the referee's at nice 0 in a session of its own, a
    player of four spinners in four sessions gets about as much CPU time (one process at
    nice 0's weight), not four times as much; a ratio, which the machine's load leaves as it
    is."""
    from referee.sandbox.process import ConfinedProcess

    if machine_protections().weight is None:
        missing(
            "no writable cgroup v1 cpu hierarchy here (see `referee doctor`): a player's"
            " processes are not weighed together"
        )
    core = min(os.sched_getaffinity(0))

    async def scenario() -> tuple[float, float]:
        process = ConfinedProcess.start(
            (sys.executable, "-c", SESSIONS_SPINNER),
            None,
            {},
            Limits(cpu_s=60),
            None,
            lambda end: None,
            cores=frozenset({core}),
        )
        ours = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        os.sched_setaffinity(ours.pid, {core})
        try:
            deadline = time.monotonic() + 10
            # Itself and its three, beside the jail's own.
            while len(process.pids()) < 4 + machine_protections().jail_processes:
                assert time.monotonic() < deadline, "its spinners never started"
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            before = (_cpu_s([ours.pid]), _cpu_s(process.pids()))
            await asyncio.sleep(2.0)
            after = (_cpu_s([ours.pid]), _cpu_s(process.pids()))
        finally:
            ours.kill()
            ours.wait()
            await process.kill()
        return after[0] - before[0], after[1] - before[1]

    referees, players = asyncio.run(scenario())
    assert 0.5 * referees < players < 2 * referees, (referees, players)


def _cpu_s(pids: list[int]) -> float:
    """The CPU seconds these processes have used so far, each alive."""
    used = [own_cpu_s(pid) for pid in pids]
    assert all(seconds is not None for seconds in used), "a process ended while measured"
    return sum(seconds for seconds in used if seconds is not None)
