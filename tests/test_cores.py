"""Cores of their own for each match, and for each seat where seats think at once: the sets
dealt out, the players pinned to them, and a concurrency above what the cores allow capped
with a note."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from referee.errors import ConfigError, RefereeError
from referee.players.base import PlayerSpec
from referee.players.process import ProgramPlayer
from referee.records.signing import results_key
from referee.sandbox.cores import (
    CORES_VARIABLE,
    CorePool,
    available_cores,
    current_core,
    format_cores,
    parse_cores,
    split_cores,
)
from referee.sandbox.isolation import machine_protections
from referee.sandbox.process import group_members
from referee.tournaments.config import load_config
from referee.tournaments.playing import _shares
from referee.tournaments.runner import run_tournament
from referee.tournaments.schedule import schedule
from tests.support.facilities import missing
from tests.support.referees import bot_copy
from tests.support.tournaments import Recorder, transcripts, write_config

MACHINE = sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("text", "cores"),
    [("0", (0,)), ("0-3", (0, 1, 2, 3)), ("6,0-1", (0, 1, 6)), (" 2 , 3-4", (2, 3, 4))],
)
def test_a_list_of_cores_reads_as_the_kernel_writes_it(text: str, cores: tuple[int, ...]) -> None:
    assert parse_cores(text) == cores
    assert parse_cores(format_cores(cores)) == cores


@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "1-", "0,,1"])
def test_a_list_that_names_no_cores_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cores(text)


def test_format_writes_runs_of_cores() -> None:
    assert format_cores([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"


def test_cores_split_into_runs_as_even_as_they_go() -> None:
    assert split_cores((0, 1, 2, 3, 4), 2) == [(0, 1, 2), (3, 4)]
    assert split_cores((0, 1), 2) == [(0,), (1,)]


def test_the_variable_gives_a_worker_its_share_of_the_machine() -> None:
    assert available_cores({}) == tuple(MACHINE)
    assert available_cores({CORES_VARIABLE: str(MACHINE[-1])}) == (MACHINE[-1],)
    with pytest.raises(RefereeError, match=f"{CORES_VARIABLE}='x': expected a list of cores"):
        available_cores({CORES_VARIABLE: "x"})
    with pytest.raises(RefereeError, match="may not run on cores 4096"):
        available_cores({CORES_VARIABLE: "4096"})


def test_a_pool_deals_each_core_to_one_match_at_a_time() -> None:
    pool = CorePool((0, 1, 2, 3, 4))
    assert pool.capacity(2) == 2
    first, second = pool.take(2), pool.take(2)
    assert first == {0, 1} and second == {2, 3}
    with pytest.raises(RefereeError, match="no 2 free cores among cores 0-4"):
        pool.take(2)
    pool.give(first)
    assert pool.take(2) == {0, 1}


def test_a_match_that_needs_more_cores_is_never_passed_over_by_later_ones() -> None:
    async def dealt() -> list[str]:
        pool = CorePool((0, 1))
        order: list[str] = []
        first = await pool.acquire(1)

        async def match(name: str, count: int) -> None:
            cores = await pool.acquire(count)
            order.append(f"{name}={format_cores(cores)}")
            await asyncio.sleep(0)
            pool.give(cores)

        both = asyncio.create_task(match("both", 2))
        await asyncio.sleep(0)
        # A core is free, but the match that asked for two came first.
        later = asyncio.create_task(match("later", 1))
        await asyncio.sleep(0)
        assert order == []
        pool.give(first)
        await asyncio.gather(both, later)
        return order

    assert asyncio.run(dealt()) == ["both=0-1", "later=0"]


def test_a_match_called_off_while_it_waits_for_cores_takes_none() -> None:
    async def left() -> frozenset[int]:
        pool = CorePool((0, 1))
        first = await pool.acquire(2)
        waiting = asyncio.create_task(pool.acquire(1))
        await asyncio.sleep(0)
        waiting.cancel()
        pool.give(first)
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return await pool.acquire(2)

    assert asyncio.run(left()) == {0, 1}


def run_cores(
    tmp_path: Path, extra: str, games: str = "[quad]"
) -> tuple[Recorder, list[dict[str, str]]]:
    """A tournament of two players that say their cores at each match; what each log says,
    in match order, each match's roles in order."""
    bot = bot_copy(tmp_path)
    players = {name: f"{bot} cores" for name in ("a", "b")}
    config = load_config(write_config(tmp_path, players, games, f"rounds: 4\n{extra}"))
    recorder = Recorder()
    key, _ = results_key(config.output, None)
    asyncio.run(run_tournament(config, key, recorder))
    said = []
    for match in transcripts(config.output):
        for log in sorted((config.output / "logs").glob(f"{match}.*.log")):
            said.append(dict(re.findall(r"^(cores|widened)=(\S+)$", log.read_text(), re.M)))
    assert len(said) == 16
    return recorder, said


def test_each_match_runs_on_a_core_of_its_own_that_its_players_cannot_widen(
    tmp_path: Path,
) -> None:
    if machine_protections().cpuset is None:
        missing("no writable cpuset cgroup: a player could widen its CPU affinity")
    recorder, said = run_cores(tmp_path, "concurrency: 2\nreuse: true\n")
    allowed = min(2, len(MACHINE))
    assert recorder.notes == []
    for log in said:
        assert log["cores"] == log["widened"]
        assert parse_cores(log["cores"])[0] in MACHINE and len(parse_cores(log["cores"])) == 1
    # Both players of a match on its core, a reused process moved there too.
    for first, second in zip(said[::2], said[1::2], strict=True):
        assert first["cores"] == second["cores"]
    assert len({log["cores"] for log in said}) == allowed


@pytest.mark.parametrize(
    ("games", "extra"),
    [("[ticblock]", "cores_per_match: 1\n"), ("[quad]", "ponder: true\n")],
    ids=["simultaneous moves", "ponder"],
)
def test_seats_that_think_at_once_each_run_on_cores_of_their_own(
    tmp_path: Path, games: str, extra: str
) -> None:
    if machine_protections().cpuset is None or len(MACHINE) < 2:
        missing("no writable cpuset cgroup, or one core: seats cannot have cores apart")
    recorder, said = run_cores(tmp_path, f"concurrency: 2\nreuse: true\n{extra}", games)
    capped = (
        f"concurrency 2 is more than the {len(MACHINE)} cores allow at 2 per match: 1 at a time"
    )
    assert recorder.notes == ([] if len(MACHINE) >= 4 else [capped])
    for log in said:
        assert log["cores"] == log["widened"]
        assert len(parse_cores(log["cores"])) == 1
    # The two seats of a match on two different cores, a reused process moved there too.
    for first, second in zip(said[::2], said[1::2], strict=True):
        assert first["cores"] != second["cores"]


def test_a_reused_process_keeps_its_share_of_a_match_whichever_seat_it_plays(
    tmp_path: Path,
) -> None:
    config = load_config(write_config(tmp_path, {"a": "random", "b": "random"}, "[ticblock]"))
    match = schedule(config)[0]
    first, second = match.game.roles
    cores = frozenset({4, 7})
    low, high = frozenset({4}), frozenset({7})
    assert _shares(config, match, cores, {}) == {first: low, second: high}
    # Players swap seats from one round to the next: each stays where it is.
    assert _shares(config, match, cores, {first: high, second: low}) == {first: high, second: low}
    assert _shares(config, match, cores, {first: high, second: None}) == {
        first: high,
        second: low,
    }
    # A share no longer the match's, or two processes on one share: dealt in order.
    assert _shares(config, match, cores, {first: frozenset({5}), second: low}) == {
        first: high,
        second: low,
    }
    assert _shares(config, match, cores, {first: high, second: high}) == {
        first: low,
        second: high,
    }


def test_seats_the_cores_cannot_part_share_them_in_a_simultaneous_game_with_a_note(
    tmp_path: Path,
) -> None:
    config = load_config(
        write_config(
            tmp_path, {"a": "random", "b": "random"}, "[ticblock]", "cores_per_seat: 1024\n"
        )
    )
    key, _ = results_key(config.output, None)
    recorder = Recorder()
    asyncio.run(run_tournament(config, key, recorder))
    assert recorder.notes == [
        f"ticblock: there are {len(MACHINE)} (cores {format_cores(MACHINE)}), too few to give"
        " each of its 2 seats 1024 of its own: they share 1"
    ]
    assert len(recorder.played) == 2


def test_without_cores_per_match_players_run_where_the_system_puts_them(tmp_path: Path) -> None:
    recorder, said = run_cores(tmp_path, "concurrency: 5\ncores_per_match: 0\n")
    assert recorder.notes == []
    assert {log["cores"] for log in said} == {format_cores(MACHINE)}


def test_a_concurrency_above_the_cores_is_capped_with_a_note(tmp_path: Path) -> None:
    recorder, _ = run_cores(tmp_path, f"concurrency: {len(MACHINE) + 3}\n")
    assert recorder.notes == [
        f"concurrency {len(MACHINE) + 3} is more than the {len(MACHINE)} cores allow at 1 per"
        f" match: {len(MACHINE)} at a time"
    ]
    assert len(recorder.played) == 8


@pytest.mark.parametrize(
    ("extra", "wanted"),
    [
        ("cores_per_match: 1024\n", "cores_per_match: 1024 cores for each match"),
        (
            "ponder: true\ncores_per_seat: 1024\n",
            "cores_per_seat: 1024 cores for each of the 2 seats of a match (ponder: true)",
        ),
    ],
    ids=["cores_per_match", "cores_per_seat"],
)
def test_more_cores_per_match_than_the_machine_has_is_one_line(
    tmp_path: Path, extra: str, wanted: str
) -> None:
    config = load_config(write_config(tmp_path, {"a": "random", "b": "random"}, extra=extra))
    key, _ = results_key(config.output, None)
    with pytest.raises(ConfigError) as error:
        asyncio.run(run_tournament(config, key, Recorder()))
    assert str(error.value) == (
        f"{config.path}: {wanted}, but there are {len(MACHINE)} (cores {format_cores(MACHINE)})"
    )


def allowed_of(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(
        line.split()[1] for line in status.splitlines() if line.startswith("Cpus_allowed_list")
    )


def test_a_reused_process_moves_with_all_its_processes_to_its_next_match_cores(
    tmp_path: Path,
) -> None:
    if len(MACHINE) < 2:
        missing("one core: a process cannot be moved to another")
    first, last = frozenset(MACHINE[:1]), frozenset(MACHINE[-1:])
    # A shell that forks a child that lives on: the child must move too.
    argv = ("/bin/sh", "-c", "sleep 300 & echo ready; read line; read line")

    async def moved() -> tuple[set[str], set[str]]:
        player = ProgramPlayer(PlayerSpec("forker", argv), tmp_path / "logs" / "f.log", cores=first)
        await player.start()
        try:
            reply = await player.request("start", 20.0)
            assert reply is not None and reply.text == "ready"
            assert player.pid is not None
            members = [pid for pid, _, state in group_members(player.pid) if state != "Z"]
            before = {allowed_of(pid) for pid in members}
            player.pin(last)
            after = {allowed_of(pid) for pid in members}
        finally:
            await player.close()
        return before, after

    before, after = asyncio.run(moved())
    assert before == {format_cores(first)}
    assert after == {format_cores(last)}


def test_the_core_this_thread_runs_on_is_one_it_may_run_on() -> None:
    assert current_core() in os.sched_getaffinity(0)
