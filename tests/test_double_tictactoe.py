"""double-tictactoe: boards that finish at different times, and the summed goals."""

from __future__ import annotations

import pytest

from referee.errors import IllegalMoveError
from referee.games import NOOP, get_game
from tests.support.boards import play

game = get_game("double-tictactoe")

# x takes row 1 of board 1 while o builds on board 2.
X_WINS_BOARD_1 = ["(mark1 1 1)", "(mark2 1 1)", "(mark1 1 2)", "(mark2 1 2)", "(mark1 1 3)"]


def test_control_alternates_starting_with_xplayer() -> None:
    state = game.initial_state()
    assert game.legal_moves(state, 1) == (NOOP,)
    state = play(game, ["(mark2 2 2)"])
    assert game.legal_moves(state, 0) == (NOOP,)
    assert len(game.legal_moves(state, 1)) == 17


def test_a_finished_board_takes_no_more_marks_while_the_other_goes_on() -> None:
    state = play(game, X_WINS_BOARD_1)
    assert not game.is_terminal(state)
    legal = game.legal_moves(state, 1)
    assert legal and all(move.startswith("(mark2") for move in legal)
    assert len(legal) == 7
    with pytest.raises(IllegalMoveError, match="board 1 is finished"):
        play(game, ["(mark1 2 2)"], state)


def test_boards_finishing_at_different_times_add_their_scores() -> None:
    state = play(game, [*X_WINS_BOARD_1, "(mark2 1 3)"])  # o's row 1 of board 2
    assert game.is_terminal(state)
    assert game.goals(state) == (50, 50)


def test_a_full_board_without_a_line_scores_25_each() -> None:
    # Board 2: X O X / X O O / O X X, then x wins board 1 on its first row.
    board2 = ["(mark2 1 1)", "(mark2 1 2)", "(mark2 1 3)", "(mark2 2 2)", "(mark2 2 1)"]
    board2 += ["(mark2 3 1)", "(mark2 3 2)", "(mark2 2 3)", "(mark2 3 3)"]
    state = play(game, board2)
    assert not game.is_terminal(state)
    assert all(move.startswith("(mark1") for move in game.legal_moves(state, 1))
    state = play(
        game, ["(mark1 3 3)", "(mark1 1 1)", "(mark1 3 2)", "(mark1 1 2)", "(mark1 2 1)"], state
    )
    assert not game.is_terminal(state)
    state = play(game, ["(mark1 1 3)"], state)
    assert game.is_terminal(state)
    assert game.goals(state) == (75, 25)
