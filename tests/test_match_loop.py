"""The match loop and the fault policy over scripted players: no process, milliseconds each."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.games import get_game
from referee.match import Match, MatchSetup
from referee.players.connection import ConnectedPlayer
from referee.policy import Policy
from referee.records.replay import replay
from referee.records.transcript import Transcript
from tests.support.fakes import Answer, Script, first_legal, scripted

FAST = Clocks(start_ms=200, play_ms=250)


def play(
    game_id: str, first: Script, second: Script, policy: Policy = Policy.FORFEIT
) -> tuple[Transcript, list[list[str]]]:
    """A match between two scripts; its transcript (which must verify) and the lines each got."""
    (p1, t1), (p2, t2) = scripted("one", first), scripted("two", second)
    setup = MatchSetup("m-fake", get_game(game_id), [p1, p2], FAST, policy, seed=3)
    transcript = asyncio.run(Match(setup).run())
    replayed = replay(transcript)
    assert replayed.problem is None, replayed.problem
    return transcript, [t1.written, t2.written]


def test_a_whole_match_runs_to_the_rules_end_and_every_player_follows_it() -> None:
    transcript, (lines, _) = play("ticblock", first_legal(), first_legal())
    assert transcript.end_reason == "terminal" and not transcript.faults
    game = get_game("ticblock")
    assert transcript.goals is not None
    assert sum(transcript.goals.values()) in (100, 125, 150)
    assert lines[0] == f"start m-fake ticblock {game.roles[0]} {FAST.start_ms} {FAST.play_ms}"
    assert sum(line.startswith("moves ") for line in lines) == len(transcript.steps)
    assert lines[-1].startswith("end ") and lines[-1].endswith(" terminal")


def test_garbage_under_forfeit_ends_the_match_with_the_forfeit_goals() -> None:
    transcript, _ = play("hex-pie", first_legal({3: "what?"}), first_legal())
    assert [(f.step, f.role, f.kind) for f in transcript.faults] == [(3, "player1", "protocol")]
    assert transcript.end_reason == "forfeit"
    assert transcript.goals == {"player1": 0, "player2": 100}


def test_a_late_answer_is_dropped_when_it_comes_and_never_taken_for_the_next() -> None:
    # player1 is late at step 3; it arrives while player2 thinks about step 4 (timers fire in
    # order, so always before player1's next request), and must not answer step 5.
    play_s = FAST.play_ms / 1000
    late = Answer("(place a 1)", delay_s=1.2 * play_s)
    thinking = Answer("(place b 1)", delay_s=0.5 * play_s)
    transcript, _ = play(
        "hex-pie", first_legal({3: late}), first_legal({4: thinking}), Policy.RANDOM
    )
    assert [(f.step, f.kind) for f in transcript.faults] == [(3, "timeout")]
    assert transcript.end_reason == "terminal"


def test_a_crash_under_random_takes_the_player_out_and_its_moves_are_drawn() -> None:
    crash = Answer(crash="exited with code 3")
    transcript, (lines, _) = play("quad", first_legal({3: crash}), first_legal(), Policy.RANDOM)
    assert [(f.step, f.kind, f.detail) for f in transcript.faults] == [
        (3, "crash", "exited with code 3")
    ]
    assert transcript.end_reason == "terminal"
    assert not [line for line in lines if line.startswith("go ") and int(line.split()[1]) > 3]


@pytest.mark.parametrize(
    ("policy", "end"), [(Policy.FORFEIT, "forfeit"), (Policy.RANDOM, "terminal")]
)
def test_a_player_that_does_not_get_ready_is_out_from_the_start(policy: Policy, end: str) -> None:
    def not_ready(line: str) -> list[str]:
        return ["ok"] if line.startswith("start") else []

    transcript, (lines, _) = play("ticblock", not_ready, first_legal(), policy)
    assert [(f.step, f.kind) for f in transcript.faults] == [(0, "protocol")]
    assert transcript.end_reason == end
    assert not any(line.startswith("go ") for line in lines)


def test_the_time_bank_is_drawn_on_and_shown_in_each_go(tmp_path: Path) -> None:
    slow = Answer("(mark 1 1)", delay_s=0.09)
    (p1, t1), (p2, _) = scripted("one", first_legal({1: slow})), scripted("two", first_legal())
    clocks = Clocks(start_ms=200, play_ms=60, time_bank_ms=100)
    setup = MatchSetup("m-bank", get_game("ticblock"), [p1, p2], clocks, Policy.FORFEIT)
    transcript = asyncio.run(Match(setup).run())
    assert not transcript.faults
    goes = [line for line in t1.written if line.startswith("go ")]
    assert goes[0].split()[2] == "160"
    assert int(goes[1].split()[2]) < 160


def test_a_late_answer_that_comes_after_the_next_request_costs_only_its_own_step() -> None:
    # Late at step 3 by half a clock: the late line arrives after the request of step 5,
    # followed at once by the answer to it, as a program answering in turn does.
    late = Answer("(place a 1)", delay_s=1.5 * FAST.play_ms / 1000)
    transcript, _ = play("hex-pie", first_legal({3: late}), first_legal(), Policy.RANDOM)
    assert [(f.step, f.kind) for f in transcript.faults] == [(3, "timeout")]


def test_a_line_begun_and_never_ended_costs_only_its_own_step() -> None:
    broken = Answer("(place", newline=False)
    transcript, _ = play("hex-pie", first_legal({3: broken}), first_legal(), Policy.RANDOM)
    assert len(transcript.faults) == 1 and transcript.faults[0].step == 3
    assert transcript.end_reason == "terminal"


def test_an_over_long_line_never_ended_costs_its_step_and_the_answer_that_ends_it() -> None:
    # Its rest is skipped to its end, as a slow writer may still be writing it; the next
    # answer ends it and is lost, but nothing after that (docs/protocol.md).
    broken = Answer("x" * 70_000, newline=False)
    transcript, _ = play("hex-pie", first_legal({3: broken}), first_legal(), Policy.RANDOM)
    assert [(f.step, f.kind) for f in transcript.faults] == [(3, "protocol"), (5, "timeout")]
    assert transcript.end_reason == "terminal"


def test_fuzzed_partial_lines_then_silence_cost_exactly_one_step() -> None:
    rng = random.Random(2026)
    for _ in range(25):
        step = rng.choice([1, 3, 5, 7])
        text = "".join(rng.choice("(place a1 )\r#x") for _ in range(rng.randrange(1, 40)))
        broken = Answer(text, delay_s=rng.random() * 0.5 * FAST.play_ms / 1000, newline=False)
        transcript, _ = play("hex-pie", first_legal({step: broken}), first_legal(), Policy.RANDOM)
        assert [f.step for f in transcript.faults] == [step], (text, transcript.faults)


def test_a_flood_of_blank_lines_is_a_protocol_fault_of_the_flooder_alone() -> None:
    flood = Answer("\n" * 100_000, newline=False)
    transcript, _ = play("ticblock", first_legal({3: flood}), first_legal(), Policy.RANDOM)
    assert [(f.step, f.role, f.kind) for f in transcript.faults] == [(3, "xcplayer", "protocol")]
    assert transcript.faults[0].detail.startswith("wrote more than 256 KiB or 4096 lines")


class _Pinned(ConnectedPlayer):
    """A scripted player said to run on `cores` alone."""

    def __init__(self, player: ConnectedPlayer, cores: frozenset[int]) -> None:
        super().__init__(player.spec, player.connection)
        self._cores = cores

    @property
    def cores(self) -> frozenset[int] | None:
        return self._cores


@pytest.mark.parametrize("here", [0, 1])
def test_seats_asked_at_once_are_written_to_the_one_on_the_referees_core_last(
    here: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("referee.match.current_core", lambda: here)
    written: list[tuple[str, str]] = []
    players = []
    for name, core in (("one", 0), ("two", 1)):
        player, transport = scripted(name, first_legal())
        write = transport.write

        def logged(data: bytes | bytearray | memoryview, name: str = name, write=write) -> None:
            written.extend((name, line) for line in bytes(data).decode().splitlines())
            write(data)

        transport.write = logged  # type: ignore[method-assign]
        players.append(_Pinned(player, frozenset({core})))
    setup = MatchSetup("m-fake", get_game("blocker-parallel"), players, FAST, Policy.FORFEIT, 3)
    transcript = asyncio.run(Match(setup).run())
    assert transcript.end_reason == "terminal"
    asked: dict[str, list[str]] = {}  # the seats each step's `go` went to, in write order
    for name, line in written:
        if line.startswith("go "):
            asked.setdefault(line.split()[1], []).append(name)
    both = [names for names in asked.values() if len(names) == 2]
    assert len(both) > 5
    assert all(names[-1] == ("one" if here == 0 else "two") for names in both), both
    # The record is in role order whatever the order of the writes.
    roles = get_game("blocker-parallel").roles
    for step in transcript.steps:
        assert list(step.times_ms) == [role for role in roles if role in step.times_ms]


def test_each_seat_is_told_and_timed_by_its_own_clocks_and_the_record_says_whose_differ() -> None:
    (p1, t1), (p2, t2) = scripted("one", first_legal()), scripted("two", first_legal())
    game = get_game("ticblock")
    # Clocks no loaded machine comes near: the scripted players answer at once.
    match = Clocks(start_ms=20_000, play_ms=25_000)
    own = Clocks(start_ms=30_000, play_ms=9_000, time_bank_ms=4_000)
    setup = MatchSetup(
        "m-odds", game, [p1, p2], match, Policy.FORFEIT, seed=3, seat_clocks=[match, own]
    )
    transcript = asyncio.run(Match(setup).run())
    assert not transcript.faults and replay(transcript).problem is None
    assert t1.written[0] == f"start m-odds ticblock {game.roles[0]} 20000 25000"
    assert t2.written[0] == f"start m-odds ticblock {game.roles[1]} 30000 9000"
    assert {line.split()[2] for line in t1.written if line.startswith("go ")} == {"25000"}
    assert {line.split()[2] for line in t2.written if line.startswith("go ")} == {"13000"}
    assert transcript.clocks == match.recorded() and transcript.time_margin_ms == 0
    assert [seat.clocks for seat in transcript.seats] == [None, own.recorded()]


@pytest.mark.parametrize(("margin_ms", "late"), [(0, True), (5_000, False)])
def test_an_answer_late_by_less_than_the_margin_is_in_time(margin_ms: int, late: bool) -> None:
    # 300 ms for a clock of 100: late whatever the machine's load, and within a margin of
    # 5 s on any machine that runs the tests. (Without the margin, the late answer also
    # holds up the answer to its next request.)
    slow = Answer("(mark 1 1)", delay_s=0.3)
    (p1, t1), (p2, _) = scripted("one", first_legal({1: slow})), scripted("two", first_legal())
    clocks = Clocks(start_ms=200, play_ms=100, margin_ms=margin_ms)
    setup = MatchSetup("m-margin", get_game("ticblock"), [p1, p2], clocks, Policy.RANDOM)
    transcript = asyncio.run(Match(setup).run())
    first = [(f.step, f.kind) for f in transcript.faults][:1]
    assert first == ([(1, "timeout")] if late else [])
    assert transcript.time_margin_ms == margin_ms
    # Told the clock, never the margin.
    assert next(line for line in t1.written if line.startswith("go ")).split()[2] == "100"
    assert replay(transcript).problem is None
