"""The jail: hostile players attack the referee, their opponent and the machine, and fail;
and every protection `referee doctor` says is active holds, as root and as `nobody`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from referee.errors import ResourceExceeded
from referee.players.base import PlayerSpec
from referee.players.process import ProgramPlayer
from referee.records.transcript import read_transcript
from referee.sandbox import isolation
from referee.sandbox.cgroups import autogrouped
from referee.sandbox.isolation import machine_protections
from referee.sandbox.jail import SEAT_UIDS, SYSTEM_DIRECTORIES, Jail, Place, program_files
from referee.sandbox.limits import Limits
from referee.sandbox.process import group_members
from tests.support.facilities import missing, needs
from tests.support.referees import bot_copy, running

HOSTILE = Path(__file__).resolve().parent / "players" / "hostile.py"
SECRET = "keeper-secret-7f3a"
# A core of its own for a probe; it says the cores it may use, tries to use them all, says
# again, and once asked to start, is ready.
ALONE = max(os.sched_getaffinity(0))
PINNED_PROBE = """import os, sys
def allowed():
    lines = open("/proc/self/status").read().splitlines()
    return next(l.split()[1] for l in lines if l.startswith("Cpus_allowed_list"))
before = allowed()
try:
    os.sched_setaffinity(0, range(os.cpu_count()))
except OSError:
    pass
sys.stderr.write(before + " " + allowed() + "\\n")
sys.stderr.flush()
# Ready only once asked: a "ready" written before the start line is a line nobody asked for.
sys.stdin.readline()
print("ready", flush=True)
sys.stdin.readline()
"""
ROOT_ONLY = needs(
    os.geteuid() != 0,
    "a root referee gives each player a user of its own; this test needs root",
)

pytestmark = [
    pytest.mark.jail,
    needs(
        machine_protections().jail is None,
        f"no jail on this machine: {machine_protections().why_not}",
    ),
]


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def _program(pid: int) -> str:
    """The program a process runs, as its command line names it."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def _until(found: Callable[[], object], what: str, limit_s: float = 30) -> None:
    deadline = time.monotonic() + limit_s
    while not found():
        assert time.monotonic() < deadline, f"waited {limit_s} s for {what}"
        time.sleep(0.02)


class Attack:
    """One match, `referee play` in a process of its own, between a hostile bot and a keeper
    (which keeps a secret in its HOME); the hostile bot is told its targets once both run."""

    def __init__(self, tmp_path: Path, attack: str) -> None:
        self.hostile = bot_copy(tmp_path / "hostile", "hostile_bot.py", HOSTILE)
        self.keeper = bot_copy(tmp_path / "keeper", "keeper_bot.py", HOSTILE)
        self.targets = tmp_path / "targets"
        self.targets.mkdir()
        self.out = tmp_path / "results" / "match.json"
        self.out.parent.mkdir()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        hostile = f"{sys.executable} {self.hostile} {attack} {self.targets}"
        keeper = f"{sys.executable} {self.keeper} keeper"
        self.referee = subprocess.Popen(
            [sys.executable, "-m", "referee", "play", "ticblock", "-p", f"xcplayer={hostile}",
             "-p", f"obplayer={keeper}", "--start-clock", "30000", "--out", str(self.out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def play(self) -> tuple[str, str]:
        """Give the hostile bot its targets, and let the match end; what the referee printed
        and what the hostile bot said."""
        try:
            _until(lambda: self._keeper_home() is not None, "the keeper's secret")
            home = self._keeper_home()
            aim = {
                "referee": self.referee.pid,
                "opponent": running(self.keeper),
                "port": self.listener.getsockname()[1],
                "read": [
                    f"{home}/secret.txt",
                    str(home),
                    str(self.keeper),
                    str(self.keeper.parent),
                    str(self.out.parent),
                    str(self.out.with_name("match.obplayer.log")),
                ],
            }
            staged = self.targets / "staged"
            staged.write_text(json.dumps(aim))
            staged.rename(self.targets / "targets.json")
            stdout, stderr = self.referee.communicate(timeout=120)
        finally:
            self.referee.kill()
            self.referee.wait()
        assert self.referee.returncode == 0, stdout + stderr
        return stdout, self.out.with_name("match.xcplayer.log").read_text()

    def _keeper_home(self) -> Path | None:
        for pid in running(self.keeper):
            home = _environ(pid).get("HOME")
            # Its HOME is a file system of its jail's, seen here through its process.
            if home and Path(f"/proc/{pid}/root{home}", "secret.txt").exists():
                return Path(home)
        return None

    def connected(self) -> bool:
        try:
            self.listener.accept()[0].close()
        except BlockingIOError:
            return False
        return True


def _outcomes(said: str, attack: str) -> dict[str, str]:
    """What the hostile bot said of each of its tries: `ok ...` or `refused (...)`."""
    prefix = f"{attack} "
    return dict(
        line.removeprefix(prefix).split(": ", 1)
        for line in said.splitlines()
        if line.startswith(prefix)
    )


def _assert_the_rules_decided(attack: Attack) -> None:
    transcript = read_transcript(attack.out)
    assert transcript.complete
    assert transcript.faults == [], transcript.faults
    assert transcript.end_reason == "terminal"


@ROOT_ONLY
@pytest.mark.parametrize("attack", ["setns", "write", "escape", "read", "renice", "signal"])
def test_a_hostile_player_attack_fails_and_the_match_ends_as_the_rules_say(
    tmp_path: Path, attack: str
) -> None:
    match = Attack(tmp_path, attack)
    _, said = match.play()
    tried = _outcomes(said, attack)
    assert tried, said
    _assert_the_rules_decided(match)
    if attack == "escape":
        # It may leave its session and clear its death signal: neither takes it out of the
        # jail, which dies with its match. Its cgroups it cannot leave.
        assert {what for what, how in tried.items() if how.startswith("ok")} == {
            "leave a child in a session of its own"
        }, tried
        assert running(match.hostile) == []
    elif attack == "read":
        # In /tmp it sees its own private directory (and the way to its program), and
        # nothing of the keeper's or the referee's: the /tmp line lists what there is.
        listing = tried.pop("/tmp").split()
        assert listing[0] == "ok" and "pytest-of-root" in listing, listing
        assert len([name for name in listing if name.startswith("referee-")]) == 1, listing
        assert all(how.startswith("refused") for how in tried.values()), tried
        assert SECRET not in said and "root:" not in said
    else:
        assert all(how.startswith("refused") for how in tried.values()), tried
    if attack == "setns":
        assert not match.connected()
    match.listener.close()


def test_a_player_killed_with_its_referee_leaves_nothing_even_out_of_its_session(
    tmp_path: Path,
) -> None:
    from tests.support.referees import referee_with_one_player

    bot = bot_copy(tmp_path, "escaper.py", HOSTILE)
    referee, _ = referee_with_one_player(
        (sys.executable, str(bot), "escape"),
        tmp_path / "s.log",
        "start m ticblock xcplayer 5000 1000",
    )
    assert len(running(bot)) >= 4, "bubblewrap, its init, the bot and the bot's child"
    referee.kill()
    referee.wait()
    # Nothing for the next referee to clean up: the jail dies with its referee.
    _until(lambda: running(bot) == [], "the jail to die with its referee", 10)


# --- Every protection doctor says is active holds, as root and as an unprivileged user.


def _as_user(user: str, work: Callable[[], dict]) -> dict:
    """`work()`'s answer, computed in a process of this test's forked and become `user`."""
    if user == "root":
        return work()
    entry = pwd.getpwnam(user)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reading)
        code = 0
        try:
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            isolation.machine_protections.cache_clear()
            answer = work()
        except BaseException as error:
            answer, code = {"error": repr(error)}, 1
        with os.fdopen(writing, "w") as pipe:
            json.dump(answer, pipe)
        os._exit(code)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        text = pipe.read()
    os.waitpid(child, 0)
    answer = json.loads(text)
    assert "error" not in answer, answer["error"]
    return answer


@pytest.fixture
def shared_directory() -> Iterator[Path]:
    """A directory anyone may read, and write: the prober and its log, for `nobody` too."""
    directory = Path(tempfile.mkdtemp(prefix="jail-test-"))
    directory.chmod(0o777)
    try:
        yield directory
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)


def _probe_in_the_sandbox(directory: Path) -> dict:
    """The protections as the referee sees them, and what a probe sees of them from inside:
    run as the referee's user, whoever that is."""
    prober = directory / "prober.py"
    # The system's Python: the one running the tests may be where `nobody` cannot reach.
    argv = ("/usr/bin/python3", str(prober), "probe")
    logs = directory / f"logs-{os.geteuid()}"
    logs.mkdir()
    spinner = ("/usr/bin/python3", "-c", "while True: pass")

    async def probe() -> dict:
        player = ProgramPlayer(PlayerSpec("probe", argv), logs / "probe.log")
        await player.start()
        try:
            reply = await player.request("start m ticblock xcplayer 5000 1000", 20.0)
            assert reply is not None and reply.text == "ready"
            own = [pid for pid in running(prober) if _program(pid) == argv[0]]
            uids = sorted({Path(f"/proc/{pid}").stat().st_uid for pid in own})
            cgroups = Path(f"/proc/{own[0]}/cgroup").read_text()
        finally:
            await player.close()
        # Over its CPU limit, a spinner is stopped, with or without a CPU cgroup.
        spinner_player = ProgramPlayer(
            PlayerSpec("spin", spinner, limits=Limits(cpu_s=1)), logs / "spin.log"
        )
        await spinner_player.start()
        try:
            await spinner_player.request("start m ticblock xcplayer 5000 1000", 20.0)
            stopped = ""
        except ResourceExceeded as error:
            stopped = str(error)
        finally:
            await spinner_player.close()
        # Paused, a spinner gains no CPU time; resumed, it spins again.
        frozen_player = ProgramPlayer(PlayerSpec("frozen", spinner), logs / "frozen.log")
        await frozen_player.start()
        try:
            assert frozen_player.pid is not None
            await asyncio.sleep(0.3)
            frozen_player.pause()
            await asyncio.sleep(0.1)  # a freeze may take a moment to reach every process
            paused = _ticks(frozen_player.pid)
            await asyncio.sleep(0.5)
            still = _ticks(frozen_player.pid) == paused
            frozen_player.resume()
            await asyncio.sleep(0.5)
            freezing = (still, _ticks(frozen_player.pid) > paused)
        finally:
            await frozen_player.close()
        pinned_player = ProgramPlayer(
            PlayerSpec("pinned", ("/usr/bin/python3", "-c", PINNED_PROBE)),
            logs / "pinned.log",
            cores=frozenset({ALONE}),
        )
        await pinned_player.start()
        try:
            await pinned_player.request("start m ticblock xcplayer 5000 1000", 20.0)
        finally:
            await pinned_player.close()
        text = (logs / "probe.log").read_text()
        seen = json.loads(next(line for line in text.splitlines() if line.startswith("probe "))[6:])
        return {
            "rows": machine_protections().to_json(),
            "seen": seen,
            "uids_outside": uids,
            "spinner": stopped,
            "cgroups": cgroups,
            "pinned": (logs / "pinned.log").read_text().split(),
            "cpuset": machine_protections().cpuset is not None,
            "freezing": freezing,
            "killed_with_its_referee": _killed_with_its_referee(prober, logs),
            "program": str(directory),
            "referee": {
                "uid": os.geteuid(),
                "ipc": os.readlink("/proc/self/ns/ipc"),
                "uts": os.readlink("/proc/self/ns/uts"),
                "mnt": os.readlink("/proc/self/ns/mnt"),
                "net": os.readlink("/proc/self/ns/net"),
                "pid_ns": os.readlink("/proc/self/ns/pid"),
                "environment": sorted(os.environ),
            },
        }

    return asyncio.run(probe())


def _ticks(pgid: int) -> int:
    """The CPU time, in clock ticks, of the living processes of a process group."""
    total = 0
    for pid, _, _ in group_members(pgid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def _killed_with_its_referee(prober: Path, logs: Path) -> bool:
    """Whether a player dies with its referee, killed with SIGKILL: a referee forked here
    starts one, and is killed once it has answered."""
    reading, writing = os.pipe()
    referee = os.fork()
    if referee == 0:
        os.close(reading)

        async def hold() -> None:
            spec = PlayerSpec("held", ("/usr/bin/python3", str(prober), "keeper"))
            player = ProgramPlayer(spec, logs / "held.log")
            await player.start()
            await player.request("start m ticblock xcplayer 5000 1000", 20.0)
            os.write(writing, b"!")
            await asyncio.sleep(60)

        asyncio.run(hold())
        os._exit(0)
    os.close(writing)
    started = os.read(reading, 1) == b"!"
    os.close(reading)
    held = [pid for pid in running(prober) if _program(pid) == "/usr/bin/python3"]
    os.kill(referee, signal.SIGKILL)
    os.waitpid(referee, 0)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in held) and time.monotonic() < deadline:
        time.sleep(0.02)
    return started and bool(held) and not any(Path(f"/proc/{pid}").exists() for pid in held)


def _proofs(report: dict) -> dict[str, Callable[[], bool]]:
    """For each protection doctor lists, the observation that proves it where it is active."""
    seen, referee = report["seen"], report["referee"]
    private = seen["environment"]["HOME"]
    own_user = (
        seen["uid"] == seen["gid"] == report["uids_outside"][0]
        and report["uids_outside"][0] in SEAT_UIDS
        and seen["groups"] in ([], [seen["gid"]])
        if referee["uid"] == 0
        # A user namespace of its own: its uid is mapped, not the machine's whole range.
        else seen["uid_map"] != ["0", "0", "4294967295"]
    )
    return {
        "limits in each process": lambda: any(
            line.startswith("Max open files") and line.split()[3] == "256"
            for line in seen["limits"]
        ),
        "use of all its processes watched": lambda: "CPU limit 1 s" in report["spinner"],
        # Its processes are in cgroups of their own; test_sandbox's bombs and hogs show the
        # caps they hold to.
        "pids cgroup": lambda: "/referee-pids-" in report["cgroups"],
        # On its core from its start; with a cpuset, still there after it asked for them all.
        "pinned to its match's cores": lambda: (
            report["pinned"][0] == str(ALONE)
            and (report["pinned"][1] == str(ALONE) or not report["cpuset"])
        ),
        "memory cgroup": lambda: "/referee-memory-" in report["cgroups"],
        # In a memory cgroup, its address space only a backstop of 64 GiB or more.
        "memory limited by what it uses": lambda: (
            "/referee-memory-" in report["cgroups"]
            and any(
                line.startswith("Max address space") and int(line.split()[3]) >= 64 * 1024**3
                for line in seen["limits"]
            )
        ),
        "CPU cgroup": lambda: (
            "/referee-cpuacct-" in report["cgroups"] and "CPU limit 1 s" in report["spinner"]
        ),
        "per-user process limit": lambda: any(
            line.startswith("Max processes") and line.split()[2] != "unlimited"
            for line in seen["limits"]
        ),
        "a user of its own": lambda: bool(own_user),
        # Itself, and bubblewrap's init as PID 1.
        "own PID namespace": lambda: (
            len(seen["processes"]) <= 3 and seen["pid_ns"] != referee["pid_ns"]
        ),
        "own mount namespace": lambda: (
            seen["mnt"] != referee["mnt"]
            and not seen["write_system"]
            and not seen["write_program"]
            and not seen["write_tmp"]
            and not seen["write_root"]
            and not seen["write_dev"]
            and seen["write_shared_memory"]
            and seen["write_private"]
            # In /tmp: its private directory, and the way to its program's.
            and set(seen["tmp"]) == {Path(private).name, Path(report["program"]).name}
            and not {"root", "home", "work", "sys"} & set(seen["root"])
        ),
        "own IPC and UTS namespaces": lambda: (
            seen["ipc"] != referee["ipc"]
            and seen["uts"] != referee["uts"]
            and seen["hostname"] == "player"
        ),
        "no network": lambda: seen["net"] != referee["net"] and seen["interfaces"] == ["lo"],
        "private working directory": lambda: (
            seen["cwd"] == private == seen["environment"]["TMPDIR"]
            and Path(private).name.startswith("referee-player-")
            # A file system of its own, of disk_mb.
            and seen["private_bytes"] == Limits().disk_mb * 1024 * 1024
        ),
        "minimal environment": lambda: (
            set(seen["environment"])
            <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "HOME", "TMPDIR"}
            # What its runtime is told of its memory limit.
            | {"JAVA_TOOL_OPTIONS", "GOMEMLIMIT", "NODE_OPTIONS", "DOTNET_GCHeapHardLimit"}
        ),
        "killed with the referee": lambda: report["killed_with_its_referee"],
        "no privileges": lambda: (
            seen["cap_eff"] == "0000000000000000"
            and seen["no_new_privs"] == "1"
            and not seen["unshare"]
        ),
        # Where the kernel weighs each session as one (autogroup), nice holds only with its
        # processes weighed together in a cpu cgroup (cpu.shares: test_sandbox).
        "lower priority": lambda: (
            seen["nice"] == 5
            and not seen["renice"]
            and (not autogrouped() or re.search(r":cpu[,:].*/referee-cpu", report["cgroups"]))
        ),
        "frozen while not asked": lambda: list(report["freezing"]) == [True, True],
    }


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_every_protection_doctor_calls_active_holds(user: str, shared_directory: Path) -> None:
    if os.geteuid() != 0:
        missing(
            "proving them as root and as nobody needs root",
            under_ci="CI runs as root: this test proves the protections as root and nobody",
        )
    prober = shared_directory / "prober.py"
    prober.write_bytes(HOSTILE.read_bytes())
    prober.chmod(0o644)

    report = _as_user(user, lambda: _probe_in_the_sandbox(shared_directory))

    rows = {row["protection"]: row["active"] for row in report["rows"]}
    proofs = _proofs(report)
    assert set(rows) == set(proofs), "a protection without a proof, or a proof of nothing"
    unproven = [name for name, active in rows.items() if active and not proofs[name]()]
    assert unproven == [], (unproven, report["seen"])
    # What this machine gives each: as root everything; as nobody, no cgroups.
    expected_off = (
        {"per-user process limit"}
        if user == "root"
        else {
            "pids cgroup",
            "memory cgroup",
            "CPU cgroup",
            "memory limited by what it uses",
            # By signals alone, which a seat can notice: not the promise the freezer makes.
            "frozen while not asked",
            # Each session weighed as one by the kernel, and no cgroup to weigh it in.
            *({"lower priority"} if autogrouped() else set()),
        }
    )
    assert {name for name, active in rows.items() if not active} == expected_off


async def _answer_to_start(spec: PlayerSpec, log: Path) -> str | None:
    """Start a player, and what it answers to `start`; then end it."""
    player = ProgramPlayer(spec, log)
    await player.start()
    try:
        reply = await player.request("start m ticblock xcplayer 5000 1000", 10.0)
        return reply.text if reply else None
    finally:
        await player.close()


def test_the_results_directory_is_hidden_even_inside_a_directory_the_player_may_read(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    results = home / "results"
    results.mkdir(parents=True)
    (results / "earlier.json").write_text("{}")
    lister = ("/bin/sh", "-c", "ls -A >&2; ls -A results >&2; echo ready; read line")
    spec = PlayerSpec("lister", lister, cwd=home)

    assert asyncio.run(_answer_to_start(spec, results / "lister.log")) == "ready"
    # Its working directory it sees; the results in it, not at all.
    assert (results / "lister.log").read_text().split() == ["results"]


def test_a_command_naming_the_root_or_the_system_binds_only_the_system_read_only() -> None:
    argv = ["/bin/sh", "/", "/usr/bin", "/etc/passwd"]
    place = Place(Path("/tmp/p"), Path("/tmp/p"), tuple(program_files(argv, "/bin/sh", None)))
    command = Jail("/usr/bin/bwrap").command(argv, place, None)
    binds = [command[i + 1] for i, word in enumerate(command) if word == "--ro-bind"]
    assert binds and set(binds) <= set(SYSTEM_DIRECTORIES), binds
    # The private directory is a file system of its own, not the directory outside.
    assert "--bind" not in command and command[command.index("/tmp/p") - 1] == "--tmpfs"


def test_a_private_directory_outside_tmp_is_reachable_and_writable_in_the_jail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deep under a directory only root may enter: the jail makes the way to it.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir()
    writer = PlayerSpec("writer", ("/bin/sh", "-c", 'echo x > "$HOME/f" && echo ready; read l'))
    log = tmp_path / "w.log"
    assert asyncio.run(_answer_to_start(writer, log)) == "ready", log.read_text()


def test_a_referee_leaves_no_zombie_of_its_jails() -> None:
    # The jail's init outlives bubblewrap by a moment and is left to the referee (a
    # subreaper) to reap, the probe's included: in a long tournament they would pile up.
    script = (
        "import asyncio, os, time\n"
        "from pathlib import Path\n"
        "from referee.players.builtin import player_spec\n"
        "from referee.players.process import ProgramPlayer\n"
        "async def cycle(n):\n"
        "    player = ProgramPlayer(player_spec('random'), Path(f'/tmp/zombie-test-{n}.log'))\n"
        "    await player.start()\n"
        "    await player.request('start m ticblock xcplayer 5000 1000', 10)\n"
        "    await player.close()\n"
        "    Path(f'/tmp/zombie-test-{n}.log').unlink(missing_ok=True)\n"
        "for n in range(4):\n"
        "    asyncio.run(cycle(n))\n"
        "time.sleep(0.5)\n"
        "me = str(os.getpid())\n"
        "stats = []\n"
        "for entry in os.listdir('/proc'):\n"
        "    try:\n"
        "        stats.append(open(f'/proc/{entry}/stat').read().rsplit(')', 1)[1].split())\n"
        "    except OSError:\n"
        "        pass\n"
        "print(sum(1 for fields in stats if fields[:2] == ['Z', me]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "0", result.stdout + result.stderr
