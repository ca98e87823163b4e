"""ticblock: the tic-tac-toe scores, the reset step, the phase change and the final goals."""

from __future__ import annotations

import pytest

from referee.errors import IllegalMoveError
from referee.games import NOOP, get_game
from tests.support.boards import crossing_masks, play

game = get_game("ticblock")
RESET = ("reset", "reset")

X_LINE = ["(mark 1 1)", "(mark 2 1)", "(mark 1 2)", "(mark 2 2)", "(mark 1 3)"]
O_LINE = ["(mark 1 1)", "(mark 2 1)", "(mark 1 2)", "(mark 2 2)", "(mark 3 3)", "(mark 2 3)"]
# X O X / X O O / O X X: a full board without a line.
DRAW = [
    "(mark 1 1)", "(mark 1 2)", "(mark 1 3)", "(mark 2 2)", "(mark 2 1)",
    "(mark 3 1)", "(mark 3 2)", "(mark 2 3)", "(mark 3 3)",
]  # fmt: skip
BRIDGE = [
    ("(mark 1 1)", "(mark 1 4)"),
    ("(mark 2 1)", "(mark 2 4)"),
    ("(mark 3 2)", "(mark 3 4)"),
    ("(mark 4 2)", "(mark 4 4)"),
]
# xcplayer keeps to columns 1 and 2, obplayer to 3 and 4: the board fills without a bridge.
NO_BRIDGE = [
    (f"(mark {1 + i % 2} {1 + i // 2})", f"(mark {3 + i % 2} {1 + i // 2})") for i in range(8)
]


def test_phase_one_alternates_control_starting_with_xcplayer() -> None:
    state = game.initial_state()
    assert game.legal_moves(state, 1) == (NOOP,)
    state = play(game, ["(mark 2 2)"])
    assert game.legal_moves(state, 0) == (NOOP,)
    assert len(game.legal_moves(state, 1)) == 8


@pytest.mark.parametrize("moves", [X_LINE, O_LINE, DRAW], ids=["x-line", "o-line", "draw"])
def test_a_finished_tic_tac_toe_allows_only_reset_for_both(moves: list[str]) -> None:
    state = play(game, moves)
    assert not game.is_terminal(state)
    assert game.legal_moves(state, 0) == game.legal_moves(state, 1) == ("reset",)
    with pytest.raises(IllegalMoveError, match="only reset"):
        play(game, [("reset", "noop")], state)


def test_reset_is_illegal_before_the_tic_tac_toe_is_finished() -> None:
    with pytest.raises(IllegalMoveError):
        play(game, [("reset", "noop")])
    with pytest.raises(IllegalMoveError):
        play(game, [*X_LINE[:4], RESET])


def test_reset_starts_a_blank_simultaneous_4x4_board() -> None:
    state = play(game, [*X_LINE, RESET])
    moves = {f"(mark {x} {y})" for x in range(1, 5) for y in range(1, 5)}
    assert set(game.legal_moves(state, 0)) == set(game.legal_moves(state, 1)) == moves
    assert not game.is_terminal(state)


def test_phase_one_marks_only_the_3x3_board() -> None:
    with pytest.raises(IllegalMoveError, match="3x3"):
        play(game, ["(mark 4 1)"])


def test_phase_two_collision_goes_to_obplayer() -> None:
    state = play(game, [*X_LINE, RESET, ("(mark 2 3)", "(mark 2 3)"), ("(mark 1 1)", "(mark 4 4)")])
    assert (state.crosser, state.blocked) == crossing_masks("X... .... .#.. ...#")


@pytest.mark.parametrize(
    ("tic", "phase2", "goals"),
    [
        (X_LINE, BRIDGE, (100, 0)),
        (X_LINE, NO_BRIDGE, (50, 50)),
        (O_LINE, BRIDGE, (50, 50)),
        (O_LINE, NO_BRIDGE, (0, 100)),
        (DRAW, BRIDGE, (75, 25)),
        (DRAW, NO_BRIDGE, (25, 75)),
    ],
)
def test_goals_add_the_tic_tac_toe_and_the_blocker_scores(tic, phase2, goals) -> None:
    state = play(game, [*tic, RESET, *phase2[:-1]])
    assert not game.is_terminal(state)
    state = play(game, phase2[-1:], state)
    assert game.is_terminal(state)
    assert game.goals(state) == goals
