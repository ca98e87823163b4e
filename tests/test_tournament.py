"""Tournaments: the whole schedule played, processes reused and restarted, resumed after a kill."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.cli.present import finished_line
from referee.errors import ConfigError, FaultKind
from referee.players.builtin import player_spec
from referee.players.process import ProgramPlayer
from referee.records.signing import results_key
from referee.records.transcript import (
    RulesFault,
    Transcript,
    write_transcript,
)
from referee.sandbox.process import can_wake_idle, group_members
from referee.tournaments.config import Entrant, load_config
from referee.tournaments.runner import PlayerPool
from referee.tournaments.schedule import schedule as schedule_of
from referee.tournaments.standings import compute
from tests.support.facilities import missing
from tests.support.paths import EXAMPLES
from tests.support.referees import bot_copy
from tests.support.tournaments import (
    referee_processes,
    result,
    run,
    seeded,
    transcripts,
    write_config,
)

# Every transcript these tests write must replay and verify (issue: replay).
pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

HERE = Path(__file__).resolve().parent
MISBEHAVING = HERE / "players" / "misbehaving.py"
runner = CliRunner()


def test_every_scheduled_match_has_one_complete_transcript(tmp_path: Path) -> None:
    config = load_config(
        write_config(tmp_path, {"a": seeded(1), "b": seeded(2), "c": "random"}, extra="rounds: 2\n")
    )
    schedule = schedule_of(config)
    recorder = run(config)
    assert recorder.plan == (len(schedule), 0) == (3 * 2 * 2 * 2, 0)
    assert sorted(recorder.played) == sorted(m.match_id for m in schedule)
    found = transcripts(config.output)
    assert sorted(found) == sorted(m.match_id for m in schedule)
    for match in schedule:
        transcript = found[match.match_id]
        assert transcript.complete and transcript.end_reason == "terminal"
        assert tuple(seat.player for seat in transcript.seats) == match.players
        assert transcript.seed == match.seed
        for seat in transcript.seats:
            # Players that write nothing leave no log, and none is named.
            assert seat.log is None
            assert not (config.output / "logs" / f"{match.match_id}.{seat.role}.log").exists()


def test_running_again_plays_only_what_is_missing(tmp_path: Path) -> None:
    config = load_config(
        write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, extra="rounds: 2\n")
    )
    run(config)
    first = transcripts(config.output)
    ids = sorted(first)
    # An interrupted match, a damaged file and a lost file are played again; the rest is kept.
    aborted = first[ids[0]]
    write_transcript(
        config.output / f"{ids[0]}.json",
        Transcript(**{**aborted.__dict__, "end_reason": "aborted", "goals": None}),
        results_key(config.output, None)[0],
    )
    (config.output / f"{ids[1]}.json").write_text("{")
    (config.output / f"{ids[2]}.json").unlink()
    (config.output / f".{ids[3]}.json.x1y2.tmp").write_text("half a transc")
    recorder = run(config)
    assert recorder.plan == (len(ids), len(ids) - 3)
    assert sorted(recorder.played) == ids[:3]
    assert len(recorder.replays) == 1 and "the file ends early" in recorder.replays[0]
    again = transcripts(config.output)
    assert sorted(again) == ids
    assert all(t.complete for t in again.values())
    assert again[ids[4]] == first[ids[4]]
    assert not list(config.output.glob(".*.tmp"))
    # Deterministic players and seeds: a replayed match is the same match.
    assert [s.moves for s in again[ids[0]].steps] == [s.moves for s in first[ids[0]].steps]
    assert run(config).played == []


def test_results_of_another_config_are_refused(tmp_path: Path) -> None:
    # b says something on standard error: its logs go where its matches go.
    talker = f"{bot_copy(tmp_path)} environment"
    config = load_config(write_config(tmp_path, {"a": seeded(1), "b": talker}))
    run(config)
    games = "[{id: ticblock, play_clock: 999}, double-tictactoe]"
    longer = write_config(tmp_path, {"a": seeded(1), "b": talker}, games)
    with pytest.raises(ConfigError, match="played with different clocks; run with --restart"):
        run(load_config(longer))
    # A player replaced by another: its matches are set aside, not mixed in, and not lost.
    renamed = write_config(tmp_path, {"a": seeded(1), "z": seeded(2)})
    recorder = run(load_config(renamed))
    aside = next((config.output / "set-aside").iterdir())
    assert recorder.changes == [
        f"player b: no longer in the config; its 4 matches are set aside in {aside}",
        "player z: new in the field; 4 matches to play",
    ]
    assert recorder.plan == (4, 0)
    assert len(list(aside.glob("*-b*.json"))) == 4 and len(list(aside.glob("logs/*.log"))) == 4
    assert all("-z" in name or "z-" in name for name in transcripts(load_config(renamed).output))
    recorder = run(load_config(renamed), restart=True)
    assert recorder.plan == (4, 0) and not (config.output / "set-aside").exists()


def test_a_changed_or_unsigned_transcript_stops_the_resume(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}))
    run(config)
    path = sorted(config.output.glob("*.json"))[0]
    data = json.loads(path.read_text())
    data["goals"] = dict.fromkeys(data["goals"], 100)
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="signature: invalid: the content is not what was signed"):
        run(config)
    del data["signature"]
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="signature: unsigned: the results must be signed with"):
        run(config)
    # Another key for the same directory is refused before anything is played.
    other = tmp_path / "other.key"
    with pytest.raises(ConfigError, match="the results here are signed with"):
        results_key(config.output, other)
    assert not other.exists()
    path.unlink()  # what every test here leaves must verify


def test_a_crashing_player_is_restarted_for_its_next_match(tmp_path: Path) -> None:
    crasher = f"{sys.executable} {MISBEHAVING} exit --at 1"
    config = load_config(
        write_config(tmp_path, {"crasher": crasher, "b": seeded(2)}, extra="rounds: 2\n")
    )
    run(config)
    found = transcripts(config.output)
    assert len(found) == 8
    for transcript in found.values():
        (fault,) = transcript.faults
        role = next(seat.role for seat in transcript.seats if seat.player == "crasher")
        assert (fault.role, fault.kind, fault.detail) == (role, "crash", "exited with code 3")
        assert transcript.end_reason == "forfeit"


def test_a_player_of_one_match_per_process_has_a_fresh_one_for_each_match(
    tmp_path: Path,
) -> None:
    bot = f"{sys.executable} {MISBEHAVING} scheduling"
    extra = "rounds: 3\nreuse: false\n"
    config = load_config(
        write_config(tmp_path, {"fresh": bot, "b": seeded(2)}, games="[ticblock]", extra=extra)
    )
    run(config)
    found = list(transcripts(config.output).values())
    assert len(found) == 6
    births, plays = [], []
    for transcript in found:
        (seat,) = [seat for seat in transcript.seats if seat.player == "fresh"]
        assert seat.log is not None
        # What it wrote as it started, before its match was known, is in its match's log.
        born, playing = Path(seat.log).read_text().splitlines()
        births.append(born.split())
        plays.append(playing.split())
    # A process of its own for every match, which plays as every player does.
    assert len({me for _, me, _ in births}) == 6
    assert [me for _, me, _ in births] == [me for _, me, _ in plays]
    assert {policy for _, _, policy in plays} == {f"policy={os.SCHED_OTHER}"}


def test_a_spare_process_waits_in_the_idle_class_and_plays_as_every_player(
    tmp_path: Path,
) -> None:
    if not can_wake_idle():
        missing(
            "only root can wake a process of the idle class: no spares here",
            under_ci="CI runs as root, who can wake a spare",
        )
    spec = player_spec(seeded(1), "p")
    pool = PlayerPool([Entrant(spec, reuse=False)])

    async def acquire_twice() -> None:
        try:
            first = await pool.acquire("p", tmp_path / "1.log")
            # Started for the next match as soon as this one has its player, and idle.
            spare = await pool._spares["p"]
            assert isinstance(first, ProgramPlayer) and spare is not None and spare is not first
            assert spare.pid is not None and os.sched_getscheduler(spare.pid) == os.SCHED_IDLE
            # A program that runs, waiting for its match: not one that ended at its start.
            assert first.alive and spare.alive
            await pool.release("p", first)
            assert first.pid is not None and os.sched_getscheduler(first.pid) == os.SCHED_IDLE
            second = await pool.acquire("p", tmp_path / "2.log")
            assert second is spare and os.sched_getscheduler(spare.pid) == os.SCHED_OTHER
        finally:
            await pool.close()

    asyncio.run(acquire_twice())


def test_matches_at_once_leave_one_spare_of_a_player_not_one_each(tmp_path: Path) -> None:
    if not can_wake_idle():
        missing(
            "only root can wake a process of the idle class: no spares here",
            under_ci="CI runs as root, who can wake a spare",
        )
    pool = PlayerPool([Entrant(player_spec(seeded(1), "p"), reuse=False)])

    async def at_once() -> None:
        try:
            logs = [tmp_path / f"{index}.log" for index in range(3)]
            players = await asyncio.gather(*(pool.acquire("p", log) for log in logs))
            assert len({id(player) for player in players}) == 3
            await pool._spares["p"]
            # Three in their matches and the one spare: no process started for nobody.
            assert len(pool._live) == 4
        finally:
            await pool.close()

    asyncio.run(at_once())


def test_a_pool_keeps_its_most_idle_processes_the_one_idle_longest_ending(
    tmp_path: Path,
) -> None:
    """A field of thousands keeps no process of each player idle: past `idle_most`, the
    process idle longest ends, and its player's next match starts a fresh one."""
    names = ("p", "q", "r")
    pool = PlayerPool([Entrant(player_spec(seeded(1), n), reuse=True) for n in names], idle_most=2)

    async def in_turn() -> None:
        try:
            played = {}
            for name in names:
                played[name] = await pool.acquire(name, tmp_path / f"{name}.log")
                await pool.release(name, played[name])
            await asyncio.gather(*pool._leaving)
            assert not played["p"].alive and played["q"].alive and played["r"].alive
            again = {name: await pool.acquire(name, tmp_path / f"{name}2.log") for name in names}
            assert again["q"] is played["q"] and again["r"] is played["r"]
            assert again["p"] is not played["p"] and again["p"].alive
        finally:
            await pool.close()

    asyncio.run(in_turn())


def test_a_flooding_player_costs_its_own_steps_and_no_other_match_a_moment(
    tmp_path: Path,
) -> None:
    # From its first move on, a thread of the flooder writes blank lines without end; its
    # process is reused, so it floods between matches too.
    flooder = f"{sys.executable} {MISBEHAVING} flood"
    players = {"flooder": flooder, "a": seeded(1), "b": seeded(2)}
    extra = "policy: random\nconcurrency: 2\n"
    # A clock the other players meet on a machine the rest of the suite loads: the suite's
    # whole session, this referee in it, weighs as one process against each seat (the
    # kernel's autogroup), and beside two busy loops an answer once took 1087 ms of 1000. A
    # flood that held the referee up would still cost them far more.
    path = write_config(tmp_path, players, games="[ticblock]", extra=extra, play_clock=2000)
    config = load_config(path)
    run(config)
    found = transcripts(config.output).values()
    assert len(found) == 6 and all(t.complete for t in found)
    for transcript in found:
        names = {seat.role: seat.player for seat in transcript.seats}
        kinds = {(names[fault.role], fault.kind) for fault in transcript.faults}
        # Nobody but the flooder has a fault, and the flooder only for its output.
        assert kinds <= {("flooder", "protocol")}, transcript.faults
        if "flooder" not in names.values():
            assert not transcript.faults


def test_the_pool_reuses_a_live_process_and_replaces_a_dead_one(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"keeps": seeded(1), "fresh": seeded(2)}, extra=""))
    fresh_config = load_config(
        write_config(tmp_path, {"keeps": seeded(1), "fresh": seeded(2)}, extra="reuse: false\n")
    )

    async def scenario() -> None:
        pool = PlayerPool(config.players)
        first = await pool.acquire("keeps", tmp_path / "1.log")
        await pool.release("keeps", first)
        second = await pool.acquire("keeps", tmp_path / "2.log")
        assert second is first and second.log.path == tmp_path / "2.log"
        assert isinstance(second, ProgramPlayer)
        os.kill(second.pid, signal.SIGKILL)
        await asyncio.sleep(0.3)
        await pool.release("keeps", second)
        third = await pool.acquire("keeps", tmp_path / "3.log")
        assert third is not second and third.alive
        await pool.close()
        assert not third.alive and group_members(third.pid) == []

        pool = PlayerPool(fresh_config.players)
        one = await pool.acquire("fresh", tmp_path / "4.log")
        await pool.release("fresh", one)  # it ends in the background
        two = await pool.acquire("fresh", tmp_path / "5.log")
        assert two is not one and two.alive
        await pool.close()
        assert isinstance(one, ProgramPlayer) and isinstance(two, ProgramPlayer)
        for ended in (one, two):
            assert not ended.alive and group_members(ended.pid) == []

    asyncio.run(scenario())


def test_a_pool_given_new_entrants_keeps_the_processes_of_those_that_stay(
    tmp_path: Path,
) -> None:
    # A ladder's field changes: "stays" is in both, "goes" leaves, "changed" comes back with
    # another command, "joins" is new.
    before = load_config(
        write_config(tmp_path, {"stays": seeded(1), "goes": seeded(2), "changed": seeded(3)})
    )
    after = load_config(
        write_config(tmp_path, {"stays": seeded(1), "changed": seeded(4), "joins": seeded(5)})
    )

    async def scenario() -> None:
        pool = PlayerPool(before.players)
        try:
            played = {}
            for name in ("stays", "goes", "changed"):
                played[name] = await pool.acquire(name, tmp_path / f"{name}.log")
            # Back from its match while the field changes: "changed" is not kept.
            await pool.release("stays", played["stays"])
            await pool.release("goes", played["goes"])
            pool.admit(after.players)
            await pool.release("changed", played["changed"])
            again = await pool.acquire("stays", tmp_path / "stays-2.log")
            assert again is played["stays"], "kept across the change"
            changed = await pool.acquire("changed", tmp_path / "changed-2.log")
            assert changed is not played["changed"]
            now = next(entrant.spec for entrant in after.players if entrant.name == "changed")
            assert isinstance(changed, ProgramPlayer) and changed.spec == now
            joins = await pool.acquire("joins", tmp_path / "joins.log")
            assert isinstance(joins, ProgramPlayer) and joins.alive
            with pytest.raises(KeyError):
                await pool.acquire("goes", tmp_path / "goes-2.log")
            # Ended in the background.
            for gone in (played["goes"], played["changed"]):
                assert isinstance(gone, ProgramPlayer)
                for _ in range(200):
                    if not gone.alive:
                        break
                    await asyncio.sleep(0.05)
                assert not gone.alive
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_a_program_that_cannot_start_forfeits_its_matches(tmp_path: Path) -> None:
    script = tmp_path / "bot.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    # Tried in every match: withdrawn after more failures than it has matches.
    players = {"a": seeded(1), "b": "./bot.sh"}
    config = load_config(write_config(tmp_path, players, extra="withdraw_after: 10\n"))
    script.chmod(0o644)  # broken after the config was checked
    run(config)
    for transcript in transcripts(config.output).values():
        (fault,) = transcript.faults
        assert (fault.step, fault.kind) == (0, "crash")
        assert "Permission denied" in fault.detail
        assert transcript.goals and transcript.goals[fault.role] == 0


def test_tournament_command_prints_progress_and_standings(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, extra="concurrency: 2\n")
    result = runner.invoke(app, ["tournament", str(config), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "[4/4] " in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("game,player,elo,elo_low,elo_high,los_next,matches,wins")
    assert sum(line.startswith("all,") for line in lines) == 2
    again = runner.invoke(app, ["tournament", str(config), "--json"])
    assert "4 of 4 matches already played" in again.stderr
    assert json.loads(again.stdout)["matches"] == 4


def test_the_progress_line_of_a_match_gives_goals_or_why_there_are_none() -> None:
    played = result("quad", "ann", "bob", (100, 0), faults=((1, (3, FaultKind.TIMEOUT)),))
    assert finished_line(played) == "quad-ann-bob: ann 100, bob 0 (terminal, 1 fault)"
    aborted = result("quad", "ann", "bob", None, reason="aborted")
    assert finished_line(aborted) == "quad-ann-bob: ann, bob (aborted)"
    failed = replace(aborted, rules_fault=RulesFault(4, "quad: state 4 does not ground"))
    assert finished_line(failed) == "quad-ann-bob: ann, bob (aborted at state 4 by the rules)"


@pytest.mark.parametrize(
    ("games", "rounds"),
    [
        ("[ticblock, double-tictactoe, quad]", 3),
        # A three-role GDL game: three players, each in each seat, every round.
        (f"[{EXAMPLES / 'three-in-a-row.kif'}]", 4),
    ],
    ids=["built-in", "gdl-3-players"],
)
@pytest.mark.slow
def test_a_tournament_killed_with_sigkill_resumes_to_the_same_standings(
    tmp_path: Path, games: str, rounds: int
) -> None:
    players = {"a": seeded(1), "b": seeded(2), "c": seeded(3)}
    killed = write_config(
        tmp_path, players, games, f"rounds: {rounds}\nconcurrency: 2\n", name="killed"
    )
    whole = write_config(tmp_path, players, games, f"rounds: {rounds}\n", name="whole")
    output = tmp_path / "results" / "killed"
    total = len(schedule_of(load_config(killed)))
    command = [sys.executable, "-m", "referee", "tournament", str(killed)]

    referee = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list(output.glob("*.json"))) < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert referee_processes(tmp_path), "the players are running"
    referee.send_signal(signal.SIGKILL)
    referee.wait()
    done_at_kill = len(list(output.glob("*.json")))
    assert 5 <= done_at_kill < total, "the kill must come in the middle of the tournament"
    time.sleep(0.5)
    assert referee_processes(tmp_path) == [], "players must die with the referee"

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done_at_kill} of {total} matches already played" in resumed.stderr
    found = transcripts(output)
    assert sorted(found) == sorted(m.match_id for m in schedule_of(load_config(killed)))
    assert all(t.complete for t in found.values())

    assert runner.invoke(app, ["tournament", str(whole)]).exit_code == 0
    standings = [
        json.loads(
            runner.invoke(app, ["standings", str(tmp_path / "results" / name), "--json"]).stdout
        )
        for name in ("killed", "whole")
    ]
    assert standings[0]["matches"] == total
    assert standings[0] == standings[1]


@pytest.mark.slow
def test_sigterm_stops_a_tournament_cleanly_and_it_resumes(tmp_path: Path) -> None:
    players = {"a": seeded(1), "b": seeded(2)}
    config = write_config(tmp_path, players, "[ticblock, quad]", "rounds: 10\nconcurrency: 2\n")
    output = tmp_path / "results" / "cup"
    command = [sys.executable, "-m", "referee", "tournament", str(config)]
    referee = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(list(output.glob("*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    referee.send_signal(signal.SIGTERM)
    _, stderr = referee.communicate(timeout=30)
    assert referee.returncode == 130
    assert stderr.splitlines()[-1] == (
        "referee: error: interrupted; run the same command again to play the remaining matches"
    )
    assert referee_processes(tmp_path) == []
    found = transcripts(output)
    assert 3 <= len(found) < 40
    assert {t.end_reason for t in found.values()} <= {"terminal", "aborted"}
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    finished = transcripts(output)
    assert len(finished) == 40 and all(t.complete for t in finished.values())


def test_an_output_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a directory")
    config = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, extra="output: taken/cup\n")
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"referee: error: {config}: cannot create output {tmp_path / 'taken' / 'cup'}:"
        " Not a directory\n"
    )


def test_a_bot_that_cannot_start_is_named_at_once_and_withdrawn_after_three(
    tmp_path: Path,
) -> None:
    players = {
        "a": seeded(1),
        "b": seeded(2),
        "nobot": f"{sys.executable} /no_such_dir/no_such_bot.py",
    }
    config = load_config(write_config(tmp_path, players, games="[ticblock]", extra="rounds: 3\n"))
    schedule = schedule_of(config)
    recorder = run(config)
    found = transcripts(config.output)
    assert sorted(found) == sorted(m.match_id for m in schedule)
    # In schedule order (concurrency 1): its first match names it, with its own words.
    order = [m.match_id for m in schedule if "nobot" in m.players]
    assert recorder.notes[0].startswith(f"nobot ({players['nobot']}) could not start in {order[0]}")
    assert "can't open file" in recorder.notes[0]
    assert "there is no file" in recorder.notes[0]
    assert recorder.notes[1] == (
        "nobot withdrawn after 3 matches in a row in which its program did not start"
        " (withdraw_after): its remaining matches are forfeits, not tried"
    )
    assert len(recorder.notes) == 2
    for number, match_id in enumerate(order, start=1):
        transcript = found[match_id]
        [fault] = transcript.faults
        assert (fault.step, fault.kind, transcript.end_reason) == (0, FaultKind.CRASH, "forfeit")
        withdrawn = fault.detail.startswith("withdrawn: its program failed to start in 3")
        assert withdrawn is (number > 3), fault.detail
    # Every other match is played to its end.
    for match in schedule:
        if "nobot" not in match.players:
            assert found[match.match_id].end_reason == "terminal"
    # The standings, read from the transcripts alone, say so.
    standings = compute(found.values())
    assert {record.player for record in standings.overall if record.withdrawn} == {"nobot"}
    # A resumed run plays nothing again, and still knows it withdrawn.
    again = run(config)
    assert again.played == [] and again.notes == []


def test_portable_records_name_no_path_of_the_machine_that_played_them(tmp_path: Path) -> None:
    """An arena's tournaments (`portable_records`): a seat's files from its directory, its log
    from the results directory, a rulesheet from outside the config's folder by its name."""
    rules = tmp_path / "elsewhere" / "tictactoe.kif"
    rules.parent.mkdir()
    rules.write_text((EXAMPLES / "tictactoe.kif").read_text())
    cup = tmp_path / "cup"
    bot_copy(cup)
    command = f"{sys.executable} zoo_bot.py scheduling"
    (cup / "cup.yaml").write_text(
        f"name: cup\nseed: 5\nstart_clock: 5000\nplay_clock: 2000\ngames: [{rules}]\n"
        "output: results\nplayers:\n"
        + "".join(f"  - {{name: {n}, command: {command}, cwd: bots}}\n" for n in "ab")
    )
    config = load_config(cup / "cup.yaml")
    run(replace(config, portable_records=True))
    written = transcripts(config.output)
    assert len(written) == 2
    for recorded in written.values():
        assert recorded.rulesheet is not None and recorded.rulesheet.path == "tictactoe.kif"
        for seat in recorded.seats:
            assert seat.command == [sys.executable, "zoo_bot.py", "scheduling"]
            assert seat.files is not None and "zoo_bot.py" in seat.files
            assert seat.log == f"logs/{recorded.match_id}.{seat.role}.log"
            assert (config.output / seat.log).is_file()
        assert str(tmp_path) not in json.dumps(asdict(recorded))
