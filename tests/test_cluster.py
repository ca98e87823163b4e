"""Tournaments on Dask: local workers give the results one process gives; a worker killed
mid-match loses nothing; workers in network namespaces of their own play across a network;
a worker refuses a tournament whose players differ from the coordinator's."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import ClusterError
from referee.players.base import fingerprint
from referee.records.signing import results_key
from referee.records.transcript import Transcript
from referee.sandbox.cores import CORES_VARIABLE
from referee.tournaments.cluster import Workers, on_cluster
from referee.tournaments.config import load_config
from referee.tournaments.host import Job, MatchHost, MatchOrder, Played
from referee.tournaments.runner import Observer, run_tournament
from referee.tournaments.schedule import ScheduledMatch, schedule
from referee.tournaments.withdrawal import withdrawal
from tests.support.facilities import missing
from tests.support.referees import bot_copy
from tests.support.tournaments import (
    Recorder,
    referee_processes,
    run,
    seeded,
    transcripts,
    write_config,
)

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("every_transcript_verifies")]
runner = CliRunner()
MACHINE = sorted(os.sched_getaffinity(0))
PATIENCE_S = 240
SCHEDULER = (sys.executable, "-m", "distributed.cli.dask_scheduler")
WORKER = (sys.executable, "-m", "distributed.cli.dask_worker")


def standings_of(results: Path) -> dict[str, Any]:
    shown = runner.invoke(app, ["standings", str(results), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    return {part: data[part] for part in ("overall", "games", "head_to_head", "faults")}


def moves_of(results: Path) -> dict[str, Any]:
    return {
        name: ([[move for move in step.moves] for step in found.steps], found.goals)
        for name, found in transcripts(results).items()
    }


def test_local_workers_give_the_results_of_one_process(tmp_path: Path) -> None:
    players = {"a": seeded(1), "b": seeded(2), "c": seeded(3)}
    for name in ("alone", "spread"):
        (tmp_path / name).mkdir()
    alone = load_config(write_config(tmp_path / "alone", players, extra="rounds: 2\n"))
    spread = load_config(write_config(tmp_path / "spread", players, extra="rounds: 2\n"))
    run(alone)
    recorder = Recorder()
    key, _ = results_key(spread.output, None)
    asyncio.run(run_tournament(spread, key, recorder, venue=on_cluster(Workers(2))))
    assert sorted(recorder.played) == sorted(match.match_id for match in schedule(spread))
    assert moves_of(spread.output) == moves_of(alone.output)
    assert standings_of(spread.output) == standings_of(alone.output)
    assert all(found.lost_attempts == 0 for found in transcripts(spread.output).values())
    # The seeded players write nothing: no log, and none named.
    assert all(seat.log is None for t in transcripts(spread.output).values() for seat in t.seats)


class _Begins(Observer):
    """When the coordinator is told each match begins."""

    def __init__(self) -> None:
        self.began: dict[str, float] = {}

    def started(self, match: ScheduledMatch) -> None:
        assert match.match_id not in self.began, f"{match.match_id} said to begin twice"
        self.began[match.match_id] = time.time()


def test_each_match_of_a_batch_is_said_to_begin_when_its_worker_begins_it(
    tmp_path: Path,
) -> None:
    """A worker plays a job's matches one after the other: the coordinator is told each one
    begins as it does, not all of them when the job is sent (the arena's ladder shows only
    the matches being played as running)."""
    bot = bot_copy(tmp_path)
    players = {name: f"{bot} late --at 0 --delay-ms 20" for name in ("a", "b")}
    config = load_config(write_config(tmp_path, players, "[ticblock]", "rounds: 2\n"))
    matches = schedule(config)[:3]
    key, _ = results_key(config.output, None)
    prints = {entrant.name: fingerprint(entrant.spec) for entrant in config.players}
    told = _Begins()

    async def played() -> list[Transcript]:
        venue = await on_cluster(Workers(1))(config, key, prints, told, {})
        try:
            return await venue.play(matches)
        finally:
            await venue.close()

    done = asyncio.run(played())
    assert list(told.began) == [match.match_id for match in matches]
    # Each match after the first begins once the one before it has ended on the worker (the
    # transcripts' moments are this machine's clock, to the millisecond, rounded down).
    for before, match in zip(done, matches[1:], strict=False):
        ended = dt.datetime.fromisoformat(before.ended_at).timestamp()
        assert told.began[match.match_id] >= ended, (match.match_id, before.ended_at)


def children(pid: int) -> list[int]:
    """A process's children, those of each of its threads."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def command_of(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def busy_worker(coordinator: int, player: Path) -> int | None:
    """A local worker process of the coordinator with player processes: in a match."""
    for child in children(coordinator):
        started = [command_of(grandchild) for grandchild in children(child)]
        if b"spawn_main" in command_of(child) and any(str(player).encode() in c for c in started):
            return child
    return None


def test_a_worker_killed_mid_match_loses_no_result_and_leaves_no_player(tmp_path: Path) -> None:
    bot = bot_copy(tmp_path)
    # Slow enough to be caught in a match; without reuse, a worker has players only then.
    players = {name: f"{bot} late --at 0 --delay-ms 40" for name in ("a", "b")}
    path = write_config(tmp_path, players, "[ticblock]", "rounds: 6\nreuse: false\n")
    config = load_config(path)
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee", "tournament", str(path), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + PATIENCE_S
    victim = None
    while victim is None and referee.poll() is None and time.monotonic() < deadline:
        victim = busy_worker(referee.pid, bot)
        time.sleep(0.01)
    assert victim is not None, "no worker was seen in a match"
    os.kill(victim, signal.SIGKILL)
    _, stderr = referee.communicate(timeout=PATIENCE_S)
    assert referee.returncode == 0, stderr.decode()
    assert re.search(r"the worker died; played again from the start", stderr.decode())
    found = transcripts(config.output)
    assert sorted(found) == sorted(match.match_id for match in schedule(config))
    assert all(transcript.complete for transcript in found.values())
    assert sum(transcript.lost_attempts for transcript in found.values()) >= 1
    assert referee_processes(tmp_path) == []


def test_an_unreachable_scheduler_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"a": "random", "b": "random"})
    result = runner.invoke(app, ["tournament", str(path), "--cluster", "tcp://127.0.0.1:9"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "referee: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9"
    )


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--workers", "2", "--cluster", "tcp://127.0.0.1:9"], "give --workers or --cluster"),
        (["--workers", "2", "--trace", "t.log"], "a trace follows players in this process"),
    ],
)
def test_workers_refuse_what_they_cannot_do(
    tmp_path: Path, options: list[str], problem: str
) -> None:
    path = write_config(tmp_path, {"a": "random", "b": "random"})
    result = runner.invoke(app, ["tournament", str(path), *options])
    assert result.exit_code == 2
    assert problem in result.output


def on_a_host(job: Job) -> list[Played]:
    """What a worker's referee, without the worker, plays of a job: its cores, its pools."""
    local = tempfile.mkdtemp(prefix="referee-test-worker-")

    async def hosted() -> list[Played]:
        plugin = MatchHost()
        worker: Any = SimpleNamespace(address="tcp://test-worker:1", local_directory=local)
        plugin.setup(worker)
        try:
            played = await plugin.play(job)
            assert isinstance(played, list)
            return played
        finally:
            await plugin.teardown(worker)

    try:
        return asyncio.run(hosted())
    finally:
        shutil.rmtree(local, ignore_errors=True)


def job_of(path: Path, matches: tuple[MatchOrder, ...], digests: dict[str, str]) -> Job:
    return Job(str(path), path.read_text(), matches, digests)


def orders(path: Path) -> tuple[MatchOrder, ...]:
    return tuple(MatchOrder.of(match) for match in schedule(load_config(path)))


def test_a_worker_plays_its_matches_and_sends_back_what_the_coordinator_writes(
    tmp_path: Path,
) -> None:
    bot = bot_copy(tmp_path)
    path = write_config(tmp_path, {"a": f"{bot} cores", "b": seeded(2)}, "[ticblock]")
    config = load_config(path)
    ids = [match.match_id for match in schedule(config)]
    played = on_a_host(job_of(path, orders(path), {}))
    assert [result.transcript.match_id for result in played] == ids
    assert all(result.transcript.complete and result.error is None for result in played)
    # Each seat's log, as it was written: the bot says its cores, the seeded player nothing.
    for result in played:
        said = {seat.player: result.logs.get(seat.role) for seat in result.transcript.seats}
        assert said["a"] is not None and b"cores=" in said["a"] and said["b"] is None
    assert not config.output.exists()


def test_a_worker_does_not_start_a_player_its_job_says_is_withdrawn(tmp_path: Path) -> None:
    bot = bot_copy(tmp_path)
    path = write_config(tmp_path, {"a": f"{bot} cores", "b": seeded(2)}, "[ticblock]")
    job = replace(job_of(path, orders(path), {}), withdrawn={"a": withdrawal(3)})
    played = on_a_host(job)
    assert [result.transcript.match_id for result in played] == [
        order.match_id for order in job.matches
    ]
    for result in played:
        transcript = result.transcript
        role = next(seat.role for seat in transcript.seats if seat.player == "a")
        [fault] = transcript.faults
        assert (fault.role, fault.step, fault.detail) == (role, 0, withdrawal(3))
        assert transcript.end_reason == "forfeit"
        # Its program never ran: it wrote no log (a started bot says its cores in it).
        assert role not in result.logs


def test_a_worker_refuses_players_that_are_not_the_coordinators(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, "[ticblock]")
    with pytest.raises(ClusterError) as error:
        on_a_host(job_of(path, orders(path)[:1], {"a": "0" * 64}))
    assert str(error.value) == (
        "worker tcp://test-worker:1: player a: its command or program files here are not those"
        " of the coordinator's machine"
    )
    stranger = MatchOrder("ticblock-r1-a-vs-z", "ticblock", ("a", "z"), 1, 7, 0)
    with pytest.raises(ClusterError, match=r"ticblock-r1-a-vs-z is not a match of .*: no player z"):
        on_a_host(job_of(path, (stranger,), {}))
    other_game = replace(stranger, match_id="quad-r1-a-vs-b", game_id="quad", players=("a", "b"))
    with pytest.raises(ClusterError, match=r"quad-r1-a-vs-b is not a match of .*: no game quad"):
        on_a_host(job_of(path, (other_game,), {}))


# Workers in network namespaces of their own, each joined to the scheduler's by a veth pair.


@dataclass(frozen=True)
class Host:
    namespace: str
    veth: str  # its end in the scheduler's namespace
    address: str  # the scheduler, as this host reaches it
    own: str  # this host's address


def _ip(*words: str, namespace: str | None = None) -> None:
    inside = ["ip", "netns", "exec", namespace] if namespace else []
    subprocess.run([*inside, "ip", *words], check=True, capture_output=True, timeout=30)


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    reason = None
    if os.geteuid() != 0:
        reason = "network namespaces and veth pairs need root"
    elif shutil.which("ip") is None:
        reason = "no ip command (iproute2) to make network namespaces"
    if reason:
        missing(reason)
    tag = os.getpid() % 100_000
    made: list[Host] = []
    try:
        for index in (1, 2):
            host = Host(
                f"referee-{tag}-{index}",
                f"rf{tag}h{index}",
                f"10.231.{index}.1",
                f"10.231.{index}.2",
            )
            _ip("netns", "add", host.namespace)
            made.append(host)
            inner = f"rf{tag}n{index}"
            _ip("link", "add", host.veth, "type", "veth", "peer", "name", inner)
            _ip("link", "set", inner, "netns", host.namespace)
            _ip("addr", "add", f"{host.address}/24", "dev", host.veth)
            _ip("link", "set", host.veth, "up")
            _ip("addr", "add", f"{host.own}/24", "dev", inner, namespace=host.namespace)
            _ip("link", "set", inner, "up", namespace=host.namespace)
            _ip("link", "set", "lo", "up", namespace=host.namespace)
    except (OSError, subprocess.SubprocessError) as error:
        for host in made:
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        said = getattr(error, "stderr", b"") or b""
        reason = f"cannot make network namespaces here: {said.decode().strip() or error}"
        missing(reason)
    yield made
    for host in made:
        subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", host.veth], capture_output=True)


def inside(host: Host) -> tuple[str, ...]:
    """A command in a host's network namespace alone: `ip netns exec` would also mount a
    /sys of its own, without the cgroups that pin and cap the players."""
    return ("nsenter", f"--net=/run/netns/{host.namespace}")


def one_core(host: Host) -> tuple[str, ...]:
    """A worker's options: on its own address, one match at a time, on one core."""
    return ("--host", host.own, "--nthreads", "1", "--resources", "cores=1", "--no-dashboard")


def _traffic(veth: str) -> int:
    statistics = Path("/sys/class/net", veth, "statistics")
    return sum(int((statistics / name).read_text()) for name in ("rx_bytes", "tx_bytes"))


def test_workers_in_their_own_network_namespaces_play_across_the_network(
    tmp_path: Path, hosts: list[Host]
) -> None:
    schedule_file = tmp_path / "scheduler.json"
    file = ("--scheduler-file", str(schedule_file))
    quiet = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "error"}
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(
            subprocess.Popen(
                [*SCHEDULER, *("--host", "0.0.0.0", "--port", "0", "--no-dashboard"), *file],
                env=quiet,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + PATIENCE_S
        while not schedule_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        port = json.loads(schedule_file.read_text())["address"].rsplit(":", 1)[1]
        for host, core in zip(hosts, (MACHINE[0], MACHINE[-1]), strict=True):
            started.append(
                subprocess.Popen(
                    [*inside(host), *WORKER, f"tcp://{host.address}:{port}", *one_core(host)],
                    env={**quiet, CORES_VARIABLE: str(core)},
                    stderr=subprocess.DEVNULL,
                )
            )
        before = {host.veth: _traffic(host.veth) for host in hosts}
        bot = bot_copy(tmp_path)
        players = {name: f"{bot} cores" for name in ("a", "b")}
        path = write_config(tmp_path, players, "[quad]", "rounds: 8\n")
        config = load_config(path)
        address = f"tcp://{hosts[0].address}:{port}"
        played = subprocess.run(
            [sys.executable, "-m", "referee", "tournament", str(path), "--cluster", address],
            capture_output=True,
            timeout=PATIENCE_S,
        )
        assert played.returncode == 0, played.stderr.decode()
        found = transcripts(config.output)
        assert sorted(found) == sorted(match.match_id for match in schedule(config))
        assert all(transcript.complete for transcript in found.values())
        # Each seat's log where it would be without workers, and named there.
        for name, transcript in found.items():
            for seat in transcript.seats:
                assert seat.log == str(config.output / "logs" / f"{name}.{seat.role}.log")
                assert "cores=" in Path(seat.log).read_text()
        # Both workers played: each pins its players to its own core.
        said = "".join(log.read_text() for log in (config.output / "logs").glob("*.log"))
        assert set(re.findall(r"^cores=(\S+)$", said, re.M)) == {str(MACHINE[0]), str(MACHINE[-1])}
        assert all(_traffic(host.veth) > before[host.veth] for host in hosts)
        # The workers live on; the players they kept for the tournament do not.
        assert referee_processes(tmp_path) == []
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert referee_processes(tmp_path) == []
