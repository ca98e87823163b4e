"""blocker-parallel: collisions, bridges and the goal table, on hand-made positions."""

from __future__ import annotations

import pytest

from referee.errors import IllegalMoveError
from referee.games import get_game
from referee.games.blocker_parallel import State
from referee.games.boards import crossing
from tests.support.boards import crossing_masks, play

game = get_game("blocker-parallel")
EMPTY = ".... .... .... ...."


def position(board1: str, board2: str) -> State:
    (c1, b1), (c2, b2) = crossing_masks(board1), crossing_masks(board2)
    return State((c1, c2), (b1, b2))


def test_collision_on_one_board_goes_to_the_blocker() -> None:
    state = play(game, [("(mark 1 1 1 1)", "(mark 1 1 2 2)")])
    assert state == position(
        "#... .... .... ....",
        "X... .#.. .... ....",
    )


def test_collision_on_both_boards_leaves_the_crosser_nothing() -> None:
    state = play(game, [("(mark 2 3 4 4)", "(mark 2 3 4 4)")])
    assert state == position(
        ".... .... .#.. ....",
        ".... .... .... ...#",
    )
    assert len(game.legal_moves(state, 0)) == 15 * 15


def test_naming_a_taken_cell_is_illegal_and_says_which() -> None:
    state = play(game, [("(mark 1 1 1 1)", "(mark 2 2 3 3)")])
    with pytest.raises(
        IllegalMoveError, match=r"blocker cannot play '\(mark 4 4 3 3\)': cell \(3, 3\) of board 2"
    ):
        game.next_state(
            state, (game.parse_move("(mark 1 2 1 2)"), game.parse_move("(mark 4 4 3 3)"))
        )


@pytest.mark.parametrize(
    "picture",
    [
        "XXXX .... .... ....",  # straight along row 1
        "X... .X.. ..X. ...X",  # diagonal steps down
        ".X.X X.X. .... ....",  # zigzag between rows 1 and 2
        "...X ..X. .X.. X...",  # diagonal steps up
        ".... XX.. ..XX ....",  # one step in the middle
        "X..X XX.X X.X. ....",  # extra crosser cells around a bridge
    ],
)
def test_bridges(picture: str) -> None:
    crosser, _ = crossing_masks(picture)
    assert crossing.has_bridge(crosser)


@pytest.mark.parametrize(
    "picture",
    [
        "X... .... .XXX ....",  # a jump of two rows between columns 1 and 2
        "XX.X .... .... ....",  # column 3 missing
        "X... X... X... X...",  # a whole column, no crossing
        "X... .X.. .... ..XX",  # a jump of two rows between columns 2 and 3
        "XX.. XX.. .... ..XX",  # columns 2 and 3 two rows apart at best
    ],
)
def test_non_bridges(picture: str) -> None:
    crosser, _ = crossing_masks(picture)
    assert not crossing.has_bridge(crosser)


FULL_NO_BRIDGE = "XX## XX## XX## XX##"


@pytest.mark.parametrize(
    ("board1", "board2", "goals"),
    [
        ("XXXX .... .... ....", EMPTY, (50, 0)),
        ("X... .X.. ..X. ...X", "XXXX #### .... ....", (100, 0)),
        (FULL_NO_BRIDGE, "X... .... .... ....", (0, 50)),
        (FULL_NO_BRIDGE, FULL_NO_BRIDGE, (0, 100)),
        ("XXXX .... .... ....", FULL_NO_BRIDGE, (50, 50)),
        ("XXXX #### #### ####", EMPTY, (50, 0)),
    ],
)
def test_goal_table(board1: str, board2: str, goals: tuple[int, int]) -> None:
    state = position(board1, board2)
    assert game.is_terminal(state)
    assert game.goals(state) == goals
    assert game.legal_moves(state, 0) == ()


def test_neither_bridge_nor_full_board_goes_on() -> None:
    state = position("XXX. #### #### ###.", "XX## XX## XX## XX#.")
    assert not game.is_terminal(state)
    assert game.legal_moves(state, 1) == ("(mark 4 1 4 4)", "(mark 4 4 4 4)")


def test_a_bridge_made_in_play_ends_the_game() -> None:
    moves = [
        ("(mark 1 1 1 1)", "(mark 1 4 2 4)"),
        ("(mark 2 2 2 1)", "(mark 2 4 3 4)"),
        ("(mark 3 3 3 1)", "(mark 3 4 1 4)"),
    ]
    state = play(game, moves)
    assert not game.is_terminal(state)
    state = play(game, [("(mark 4 2 4 1)", "(mark 4 4 4 4)")], state)
    assert game.is_terminal(state)
    assert game.goals(state) == (100, 0)
