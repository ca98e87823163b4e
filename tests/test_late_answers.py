"""Late answers with real programs: counted and dropped, never taken for a later request,
nor for a reused process's next match."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.clock import Clocks
from referee.errors import ConfigError
from referee.games import get_game
from referee.policy import Policy
from referee.records.transcript import Transcript
from referee.tournaments.config import load_config
from tests.support.matches import RANDOM, assert_nothing_left, program, run
from tests.support.referees import bot_copy
from tests.support.tournaments import run as run_tournament
from tests.support.tournaments import seeded, transcripts, write_config

# Every transcript these tests write must replay and verify (issue: replay).
pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

LATE = Path(__file__).resolve().parent / "players" / "late.py"
# A late answer is late by construction (written after the referee went on), and a prompt one
# is written at once: a clock of a second is seconds ahead of it on a loaded machine.
CLOCKS = Clocks(start_ms=5_000, play_ms=1_000)


def asked(game_id: str, steps: list[dict], role: str) -> dict[int, str]:
    """The steps at which `role` had a choice, and so was asked, with its last legal move."""
    game = get_game(game_id)
    index = game.roles.index(role)
    state, found = game.initial_state(), {}
    for step in steps:
        legal = game.legal_moves(state, index)
        if len(legal) > 1:
            found[step["step"]] = str(legal[-1])
        state = game.next_state(state, [step["moves"][r] for r in game.roles])
    return found


def test_two_late_answers_in_a_row_then_prompt_ones_are_judged_on_the_prompt_ones(
    tmp_path: Path,
) -> None:
    # Its answers to its first two requests come together with its answer to the third.
    copy = bot_copy(tmp_path, "late.py", LATE)
    late = program("late", copy, "2", "go")
    transcript, players = run(
        tmp_path, "ticblock", [late, program("random", RANDOM)], Policy.RANDOM, CLOCKS
    )
    role = "xcplayer"
    steps = {step["step"]: step for step in transcript["steps"]}
    own = asked("ticblock", transcript["steps"], role)
    first, second, *later = own
    faults = [(f["step"], f["role"], f["kind"]) for f in transcript["faults"]]
    assert faults == [(first, role, "timeout"), (second, role, "timeout")]
    assert len(later) > 3 and transcript["end_reason"] == "terminal"
    for number in later:
        assert steps[number]["moves"][role] == own[number], steps[number]
        assert role in steps[number]["times_ms"]
    assert_nothing_left(players, copy)


@pytest.mark.parametrize(("until", "kept"), [("end", True), ("never", False)])
def test_a_reused_process_late_at_a_matchs_last_step_starts_its_next_match_clean(
    tmp_path: Path, until: str, kept: bool
) -> None:
    # Late at its first request as the first role, under forfeit: the match ends there, with
    # its late answer owed. Its late answer comes when the end is told, or never.
    command = f"{sys.executable} {LATE} 1 {until} --as xcplayer"
    players = {"late": command, "b": seeded(2)}
    config = load_config(write_config(tmp_path, players, games="[ticblock]", play_clock=1000))
    run_tournament(config)
    found = sorted(transcripts(config.output).values(), key=lambda t: t.started_at)
    assert len(found) == 2
    roles = [next(s.role for s in t.seats if s.player == "late") for t in found]
    assert roles == ["xcplayer", "obplayer"], "the late match must come first"
    first, second = found
    assert [(f.step, f.role, f.kind) for f in first.faults] == [(1, "xcplayer", "timeout")]
    assert first.end_reason == "forfeit"
    # The next match starts clean: `ready` in time, no fault, and its own moves.
    assert not second.faults and second.end_reason == "terminal"
    steps = [asdict(step) for step in second.steps]
    for number, move in asked("ticblock", steps, "obplayer").items():
        assert steps[number - 1]["moves"]["obplayer"] == move
    # The same process when its late answer came, a fresh one when it did not.
    ids = [_process_id(t) for t in found]
    assert (ids[0] == ids[1]) is kept


def _process_id(transcript: Transcript) -> str:
    """The id the late player's process gave itself, from its log of this match."""
    (seat,) = [seat for seat in transcript.seats if seat.player == "late"]
    assert seat.log is not None
    (line,) = [line for line in Path(seat.log).read_text().splitlines() if "playing" in line]
    return line.split("=")[1]


MISBEHAVING = Path(__file__).resolve().parent / "players" / "misbehaving.py"


def _odds_config(directory: Path, margin_ms: int) -> Path:
    """A tournament at ticblock whose `slow` answers every `go` after 500 ms on the game's
    clock of 200 ms, and whose `quick` has clocks of its own; a margin of `margin_ms`."""
    path = directory / "odds.yaml"
    path.write_text(
        f"name: odds\nseed: 5\ngames: [ticblock]\nstart_clock: 5000\nplay_clock: 200\n"
        f"time_margin: {margin_ms}\npolicy: forfeit\nplayers:\n"
        f"  - name: slow\n    command: {sys.executable} {MISBEHAVING} late --at 0 --delay-ms 500\n"
        f"  - name: quick\n    command: {seeded(2)}\n    play_clock: 1000\n    time_bank: 500\n"
    )
    return path


# 500 ms against a clock of 200: late on any machine without a margin; with one of 3 s, in
# time on any machine that runs the tests.
@pytest.mark.parametrize("margin_ms", [0, 3_000])
def test_a_tournaments_margin_and_time_odds_decide_the_late_answers_and_are_recorded(
    tmp_path: Path, margin_ms: int
) -> None:
    config = load_config(_odds_config(tmp_path, margin_ms))
    run_tournament(config)
    found = transcripts(config.output)
    assert len(found) == 2
    for transcript in found.values():
        assert transcript.time_margin_ms == margin_ms
        assert transcript.clocks == {"start_ms": 5000, "play_ms": 200, "time_bank_ms": 0}
        own = {seat.player: seat.clocks for seat in transcript.seats}
        assert own == {
            "slow": None,
            "quick": {"start_ms": 5000, "play_ms": 1000, "time_bank_ms": 500},
        }
        slow = next(seat.role for seat in transcript.seats if seat.player == "slow")
        if margin_ms:
            assert not transcript.faults and transcript.end_reason == "terminal"
            times = [step.times_ms[slow] for step in transcript.steps if slow in step.times_ms]
            assert times and min(times) >= 500
        else:
            assert [(f.role, f.kind) for f in transcript.faults] == [(slow, "timeout")]
            assert transcript.end_reason == "forfeit"
    # The standings say the clocks and the margin, under the table.
    result = CliRunner().invoke(app, ["standings", str(config.output)])
    assert result.exit_code == 0, result.output
    margin = f"; time margin {margin_ms} ms" if margin_ms else ""
    assert result.stdout.endswith(
        f"\nClocks (start/play/bank, ms): quick 5000/1000/500, slow 5000/200/0{margin}\n"
    )
    data = json.loads(CliRunner().invoke(app, ["standings", str(config.output), "--json"]).stdout)
    assert data["time_margins_ms"] == [margin_ms]
    assert data["clocks"]["quick"] == [{"start_ms": 5000, "play_ms": 1000, "time_bank_ms": 500}]


def test_results_played_under_other_clocks_or_margin_are_refused(tmp_path: Path) -> None:
    config = load_config(_odds_config(tmp_path, 3_000))
    run_tournament(config)
    with pytest.raises(ConfigError, match="played with a time margin of 3000 ms, not 0;"):
        run_tournament(load_config(_odds_config(tmp_path, 0)))
    path = _odds_config(tmp_path, 3_000)
    path.write_text(path.read_text().replace("play_clock: 1000", "play_clock: 900"))
    with pytest.raises(ConfigError, match="played with different clocks for quick;"):
        run_tournament(load_config(path))
