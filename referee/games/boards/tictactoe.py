"""The 3x3 tic-tac-toe board of ticblock's first phase and of double-tictactoe.

Cell (m, n), m the row and n the column, is bit 3*(m-1) + (n-1) of a mask:

    m\\n 1 2 3
     1  . . .
     2  . . .
     3  . . .
"""

from collections.abc import Sequence

from referee.games.boards.picture import EMPTY, Board, Cell, Key

CELLS = tuple((m, n) for m in range(1, 4) for n in range(1, 4))
FULL = (1 << len(CELLS)) - 1


def bit(m: int, n: int) -> int:
    """The bit index of cell (m, n)."""
    return 3 * (m - 1) + (n - 1)


def _line_mask(cells: list[tuple[int, int]]) -> int:
    return sum(1 << bit(m, n) for m, n in cells)


LINES = tuple(
    [_line_mask([(m, n) for n in range(1, 4)]) for m in range(1, 4)]
    + [_line_mask([(m, n) for m in range(1, 4)]) for n in range(1, 4)]
    + [_line_mask([(1, 1), (2, 2), (3, 3)]), _line_mask([(1, 3), (2, 2), (3, 1)])]
)
# One lookup per test in the hot path of every playout, instead of eight mask tests.
_HAS_LINE = tuple(any(mask & line == line for line in LINES) for mask in range(FULL + 1))


def has_line(marks: int) -> bool:
    """Whether these marks fill a row, a column or a diagonal."""
    return _HAS_LINE[marks]


def line_cells(marks: int) -> tuple[tuple[int, int], ...]:
    """The cells (m, n) of every row, column or diagonal these marks fill."""
    full = 0
    for line in LINES:
        if marks & line == line:
            full |= line
    return tuple(cell for b, cell in enumerate(CELLS) if full >> b & 1)


def finished(x: int, o: int) -> bool:
    """A board is finished on a line of either mark or when no cell is blank."""
    return _HAS_LINE[x] or _HAS_LINE[o] or (x | o) == FULL


def scores(x: int, o: int) -> tuple[int, int]:
    """The (x, o) scores of a board: a line 50 and 0, a full board with no line 25 each."""
    if _HAS_LINE[x]:
        return 50, 0
    if _HAS_LINE[o]:
        return 0, 50
    if (x | o) == FULL:
        return 25, 25
    return 0, 0


def board(x: int, o: int, title: str, roles: Sequence[str]) -> Board:
    """The board, under a title, its lines marked; `roles` play X and O."""

    def symbol(m: int, n: int) -> str:
        b = 1 << bit(m, n)
        return "X" if x & b else "O" if o & b else "."

    rows = tuple((str(m), tuple(symbol(m, n) for n in range(1, 4))) for m in range(1, 4))
    winning: tuple[Cell, ...] = tuple((m - 1, n - 1) for m, n in line_cells(x) + line_cells(o))
    legend = (
        Key("X", f"{roles[0]}'s mark", roles[0]),
        Key("O", f"{roles[1]}'s mark", roles[1]),
        Key(EMPTY, "blank"),
    )
    return Board(title, ("1", "2", "3"), rows, corner="m\\n", winning=winning, legend=legend)
