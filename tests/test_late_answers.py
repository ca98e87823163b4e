"""Late answers with real programs: counted and dropped, never taken for a later request,
nor for a reused process's next match."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from referee.clock import Clocks
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
