"""What each built-in game's boards say beyond their cells: the cells that decided the game,
and the legend naming each symbol and the role it belongs to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from referee.games import Move, get_game
from referee.games.boards.picture import Board
from referee.games.gdl.game import GdlGame, load_rulesheet
from tests.support.boards import alternate, play, winning
from tests.support.paths import EXAMPLES, RULES


def owners(board: Board) -> dict[str, str | None]:
    return {key.symbol: key.role for key in board.legend}


def test_double_tictactoe_marks_the_line_of_the_finished_board_only() -> None:
    game = get_game("double-tictactoe")
    x = ["(mark1 1 1)", "(mark1 1 2)", "(mark1 1 3)"]
    o = ["(mark2 1 1)", "(mark2 2 2)"]
    first, second = game.boards(play(game, alternate(x, o)))
    assert winning(first) == {("1", "1"), ("1", "2"), ("1", "3")}
    assert winning(second) == set()
    assert owners(first) == {"X": "xplayer", "O": "oplayer", ".": None}


def test_ticblock_marks_the_tictactoe_line_then_the_bridge_not_its_dead_ends() -> None:
    game = get_game("ticblock")
    x = ["(mark 2 1)", "(mark 2 2)", "(mark 2 3)"]  # the middle row: m is the row
    o = ["(mark 1 1)", "(mark 3 3)"]
    state = play(game, alternate(x, o))
    assert winning(game.boards(state)[0]) == {("2", "1"), ("2", "2"), ("2", "3")}
    state = play(game, [("reset", "reset")], state)
    assert winning(game.boards(state)[0]) == set()
    # Phase 2, (x, y) with x the column: (3, 4) is the crosser's but on no bridge.
    crosser = ["(mark 3 4)", "(mark 1 1)", "(mark 2 2)", "(mark 3 2)", "(mark 4 3)"]
    blocker = ["(mark 1 4)", "(mark 2 4)", "(mark 4 4)", "(mark 1 2)", "(mark 1 3)"]
    state = play(game, list(zip(crosser, blocker, strict=True)), state)
    assert game.is_terminal(state)
    (board,) = game.boards(state)
    # Rows are y, columns x.
    assert winning(board) == {("1", "1"), ("2", "2"), ("2", "3"), ("3", "4")}
    assert owners(board) == {"X": "xcplayer", "#": "obplayer", ".": None}


def test_blocker_parallel_marks_every_cell_on_some_bridge() -> None:
    game = get_game("blocker-parallel")
    # Board 1: crosser on row 1 and on (2, 2): both (2, 1) and (2, 2) lie on a bridge.
    crosser = ["(mark 1 1 1 1)", "(mark 2 1 2 1)", "(mark 2 2 1 2)", "(mark 3 1 3 3)"]
    crosser += ["(mark 4 1 4 4)"]
    blocker = ["(mark 1 4 4 1)", "(mark 2 4 4 2)", "(mark 3 4 4 3)", "(mark 4 4 3 1)"]
    blocker += ["(mark 1 3 3 2)"]
    state = play(game, list(zip(crosser, blocker, strict=True)))
    assert game.is_terminal(state)
    first, second = game.boards(state)
    assert winning(first) == {("1", "1"), ("1", "2"), ("2", "2"), ("1", "3"), ("1", "4")}
    assert winning(second) == set()


def test_quad_marks_the_square_of_the_winner() -> None:
    game = get_game("quad")
    x = ["(mark r2 c3)", "(mark r3 c2)", "(mark r3 c4)", "(mark r4 c3)"]  # a tilted square
    o = ["(mark r6 c6)", "(mark r5 c5)", "(mark r2 c2)"]
    state = play(game, alternate(x, o))
    assert game.goals(state) == (100, 0)
    (board,) = game.boards(state)
    assert winning(board) == {("r2", "c3"), ("r3", "c2"), ("r3", "c4"), ("r4", "c3")}
    assert owners(board) == {"x": "x", "o": "o", "W": None, ".": None}


def test_hex_pie_marks_the_chain_and_its_legend_follows_the_swap() -> None:
    game = get_game("hex-pie")
    # player1 opens on a1; player2 swaps and so plays red, down column 1 from a1.
    player1 = ["(place e 5)", *[f"(place {row} 9)" for row in "abcdefg"]]
    player2 = ["swap", *[f"(place {row} 1)" for row in "bcdefghi"]]
    opening = ["(place a 1)"]
    state = play(game, opening + alternate(player2, player1))
    assert game.is_terminal(state) and game.goals(state) == (0, 100)
    (board,) = game.boards(state)
    assert winning(board) == {(row, "1") for row in "abcdefghi"}
    assert owners(board) == {"X": "player2", "O": "player1", ".": None}
    unswapped = game.boards(play(game, ["(place a 1)", "(place b 2)"]))[0]
    assert owners(unswapped) == {"X": "player1", "O": "player2", ".": None}
    assert winning(unswapped) == set()


def gdl_start(path: Path) -> tuple[GdlGame, Any]:
    game = load_rulesheet(path)
    return game, game.initial_state()


@pytest.mark.corpus
def test_a_chess_like_board_has_its_files_as_columns_and_rank_8_on_top() -> None:
    game, state = gdl_start(RULES / "pawnToQueen.kif")  # chess's board and pawns, quicker to load
    (board,) = game.boards(state)
    assert board.columns == tuple("abcdefgh")
    assert [label for label, _ in board.rows] == [str(rank) for rank in range(8, 0, -1)]
    pawns = {
        (label, column): symbol
        for label, cells in board.rows
        for column, symbol in zip(board.columns, cells, strict=True)
        if symbol != "b"
    }
    assert pawns == {("2", "c"): "wp", ("2", "e"): "wp", ("7", "d"): "bp", ("7", "f"): "bp"}
    # What is not a cell is shown as facts beside the board.
    assert game.other_facts(state) == ["(control white)"]


@pytest.mark.corpus
def test_a_connect_four_board_has_x_as_its_column_and_y_1_at_the_bottom() -> None:
    game, state = gdl_start(RULES / "connectFour.kif")
    for _ in range(4):  # both drop in the first column, in turn
        joint = [
            next((m for m in game.legal_moves(state, r) if m.startswith("(drop 1")), "noop")
            for r in range(len(game.roles))
        ]
        state = game.next_state(state, [Move(m) for m in joint])
    (board,) = game.boards(state)
    # The whole board the rules define, (x 1)..(x 8) by (y 1)..(y 6), though only four of
    # its cells are facts.
    assert [label for label, _ in board.rows] == ["6", "5", "4", "3", "2", "1"]
    assert board.columns == tuple("12345678")
    assert [cells[0] for _, cells in board.rows] == [".", ".", "black", "red", "black", "red"]
    assert all(cells[1:] == (".",) * 7 for _, cells in board.rows)
    assert {key.symbol: key.role for key in board.legend if key.symbol != "."} == {
        "red": "red",
        "black": "black",
    }


@pytest.mark.corpus
def test_a_board_is_drawn_whole_from_the_start_where_empty_cells_are_no_facts() -> None:
    game, state = gdl_start(RULES / "connectFour.kif")
    (board,) = game.boards(state)
    assert len(board.rows) == 6 and board.columns == tuple("12345678")
    assert {cell for _, cells in board.rows for cell in cells} == {"."}


def test_a_tictactoe_board_has_m_as_its_row_and_names_its_marks_roles() -> None:
    game, state = gdl_start(EXAMPLES / "tictactoe.kif")
    state = game.next_state(state, [Move("(mark 1 3)"), Move("noop")])
    (board,) = game.boards(state)
    assert [label for label, _ in board.rows] == ["1", "2", "3"]
    assert board.rows[0][1] == ("b", "b", "x")
    assert {key.symbol: key.role for key in board.legend} == {"b": None, "x": "xplayer"}
