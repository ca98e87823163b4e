"""The 4x4 crossing board of blocker-parallel and of ticblock's second phase.

Cell (x, y), x the column and y the row, is bit 4*(x-1) + (y-1) of a mask, so each
column is one 4-bit nibble and a bridge search is a few shifts per column:

    y\\x  1 2 3 4
     1   . . . .      X crosser cell
     2   . . . .      # blk (blocker) cell
     3   . . . .      . blank
     4   . . . .
"""

from referee.games.boards.picture import Board

SIZE = 4
CELLS = tuple((x, y) for x in range(1, SIZE + 1) for y in range(1, SIZE + 1))
FULL = (1 << len(CELLS)) - 1
_COLUMN = (1 << SIZE) - 1


def bit(x: int, y: int) -> int:
    """The bit index of cell (x, y)."""
    return SIZE * (x - 1) + (y - 1)


def has_bridge(crosser: int) -> bool:
    """Whether crosser cells, one per column, link column 1 to 4 with steps of at most one row."""
    reach = crosser & _COLUMN
    for column in range(1, SIZE):
        column_cells = (crosser >> (SIZE * column)) & _COLUMN
        reach = (reach | reach << 1 | reach >> 1) & column_cells
    return reach != 0


def mark(crosser: int, blocked: int, crosser_bit: int, blocker_bit: int) -> tuple[int, int]:
    """Both roles' marks on one board: the blocker's cell is blk and wins a collision."""
    blocked |= 1 << blocker_bit
    if crosser_bit != blocker_bit:
        crosser |= 1 << crosser_bit
    return crosser, blocked


def board(crosser: int, blocked: int, title: str) -> Board:
    """The board, under a title."""

    def symbol(x: int, y: int) -> str:
        b = 1 << bit(x, y)
        return "X" if crosser & b else "#" if blocked & b else "."

    columns = tuple(str(x) for x in range(1, SIZE + 1))
    rows = tuple(
        (str(y), tuple(symbol(x, y) for x in range(1, SIZE + 1))) for y in range(1, SIZE + 1)
    )
    return Board(title, columns, rows, corner="y\\x")
