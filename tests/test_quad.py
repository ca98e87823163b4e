"""quad: blocks keep control, squares of every size and tilt, and every kind of ending."""

from __future__ import annotations

import pytest

from referee.errors import IllegalMoveError
from referee.games import NOOP, get_game, quad
from tests.support.boards import alternate, play

game = get_game("quad")
CORNERS = {(1, 1), (1, 7), (7, 1), (7, 7)}
CELLS = {(r, c) for r in range(1, 8) for c in range(1, 8)} - CORNERS


def squares(cells: set[tuple[int, int]]) -> set[frozenset[tuple[int, int]]]:
    """Every square with all four corners in `cells`, found by turning each side a quarter turn."""
    found = set()
    for p in cells:
        for q in cells:
            if p != q:
                dr, dc = q[0] - p[0], q[1] - p[1]
                corners = frozenset({p, q, (q[0] - dc, q[1] + dr), (p[0] - dc, p[1] + dr)})
                if corners <= cells:
                    found.add(corners)
    return found


def engine_squares() -> set[frozenset[tuple[int, int]]]:
    return {
        frozenset((r, c) for r, c in CELLS if mask >> (7 * (r - 1) + c - 1) & 1)
        for mask in quad.SQUARES
    }


def test_exactly_175_squares_on_the_board() -> None:
    lattice = {(r, c) for r in range(1, 8) for c in range(1, 8)}
    assert len(squares(lattice)) == 196
    on_board = squares(CELLS)
    assert len(on_board) == 175
    axis_aligned = [s for s in on_board if len({r for r, _ in s}) == 2]
    assert (len(axis_aligned), len(on_board) - len(axis_aligned)) == (70, 105)
    assert engine_squares() == on_board
    assert len(quad.SQUARES) == 175


def test_a_block_keeps_control_and_a_mark_passes_it() -> None:
    state = play(game, ["(block r4 c4)"])
    assert game.legal_moves(state, 1) == (NOOP,)
    assert len(game.legal_moves(state, 0)) == 88
    state = play(game, ["(mark r1 c2)"], state)
    assert game.legal_moves(state, 0) == (NOOP,)
    assert len(game.legal_moves(state, 1)) == 86


def test_whites_run_out_after_five_blocks() -> None:
    blocks = [f"(block r2 c{c})" for c in range(1, 6)]
    state = play(game, blocks)
    legal = game.legal_moves(state, 0)
    assert len(legal) == 40 and all(move.startswith("(mark") for move in legal)
    with pytest.raises(IllegalMoveError, match="no white left"):
        play(game, ["(block r3 c3)"], state)


def test_a_missing_corner_is_no_cell() -> None:
    with pytest.raises(IllegalMoveError):
        game.next_state(game.initial_state(), ("(mark r1 c1)", "noop"))


def marks(*cells: tuple[int, int]) -> list[str]:
    return [f"(mark r{r} c{c})" for r, c in cells]


O_APART = marks((1, 2), (1, 6), (7, 3))


@pytest.mark.parametrize(
    "corners",
    [
        [(3, 2), (2, 4), (5, 3), (4, 5)],  # tilted: sides (-1, 2) and (2, 1)
        [(1, 4), (4, 7), (7, 4), (4, 1)],  # tilted diamond touching all four edges
        [(2, 2), (2, 6), (6, 2), (6, 6)],  # axis-aligned, side 4
        [(3, 3), (3, 4), (4, 3), (4, 4)],  # axis-aligned, side 1
    ],
)
def test_x_wins_with_any_square(corners: list[tuple[int, int]]) -> None:
    state = play(game, alternate(marks(*corners[:3]), O_APART))
    assert not game.is_terminal(state)
    state = play(game, marks(corners[3]), state)
    assert game.is_terminal(state)
    assert game.goals(state) == (100, 0)


def test_o_wins_with_a_square() -> None:
    o_square = marks((6, 5), (6, 6), (7, 5), (7, 6))
    x_apart = marks((1, 2), (1, 4), (1, 6), (3, 3))
    state = play(game, alternate(x_apart, o_square))
    assert game.is_terminal(state)
    assert game.goals(state) == (0, 100)


def test_three_corners_and_a_missing_corner_are_no_square() -> None:
    state = play(game, alternate(marks((6, 6), (6, 7), (7, 6)), O_APART))
    assert not game.is_terminal(state)


# An end of the game with all 24 quads placed, no square of either role and no open quad.
NO_SQUARE = """
-xW.xx-
.o.oox.
..o.W.x
WxWWooo
.Wo.xxo
..ooox.
-.xxx.-
"""
# The same with x's r1 c2 piece on r2 c1: three corners of a tilted square whose fourth
# corner, r6 c2, is empty.
OPEN_QUAD = """
-.W.xx-
xo.oox.
..o.W.x
WxWWooo
.Wo.xxo
..ooox.
-.xxx.-
"""
# The same, with a white on that fourth corner instead.
CLOSED_QUAD = OPEN_QUAD.replace("..ooox.\n-", ".Wooox.\n-")


def ending(picture: str, whites_left: tuple[int, int]) -> quad.State:
    """A final position from a picture: x and o pieces, W whites, - the missing corners."""
    cells = {
        (r, c): symbol
        for r, row in enumerate(picture.split(), start=1)
        for c, symbol in enumerate(row, start=1)
    }
    assert {cell for cell, symbol in cells.items() if symbol == "-"} == CORNERS

    def mask(symbol: str) -> int:
        return sum(1 << (7 * (r - 1) + c - 1) for (r, c), s in cells.items() if s == symbol)

    return quad.State((mask("x"), mask("o")), mask("W"), (0, 0), whites_left, 0, None)


def open_quads(picture: str) -> int:
    """How many squares have three x corners and an empty fourth, by the independent count."""
    cells = {
        (r, c): symbol
        for r, row in enumerate(picture.split(), start=1)
        for c, symbol in enumerate(row, start=1)
    }
    xs = {cell for cell, s in cells.items() if s == "x"}
    os = {cell for cell, s in cells.items() if s == "o"}
    assert len(xs) == len(os) == 12
    assert not any(square <= xs or square <= os for square in squares(CELLS))
    return sum(
        1
        for square in squares(CELLS)
        if len(square & xs) == 3 and all(cells[c] == "." for c in square - xs)
    )


@pytest.mark.parametrize(
    ("picture", "whites_left", "goals"),
    [
        (OPEN_QUAD, (1, 3), (95, 5)),
        (NO_SQUARE, (3, 1), (90, 10)),
        (NO_SQUARE, (2, 2), (50, 50)),
        (NO_SQUARE, (1, 3), (10, 90)),
        (CLOSED_QUAD, (2, 2), (50, 50)),
    ],
)
def test_endings_without_a_square(picture: str, whites_left: tuple[int, int], goals) -> None:
    assert open_quads(picture) == (1 if picture == OPEN_QUAD else 0)
    state = ending(picture, whites_left)
    assert game.is_terminal(state)
    assert game.goals(state) == goals
