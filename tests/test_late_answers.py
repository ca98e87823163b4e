"""Late answers with real programs: counted and dropped, never taken for a later request,
nor for a reused process's next match."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.games import get_game
from referee.policy import Policy
from tests.test_match import RANDOM, assert_nothing_left, program, run

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
    late = program("late", LATE, "2", "go")
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
    assert_nothing_left(players, LATE)
