"""The 4x4 crossing board of blocker-parallel and of ticblock's second phase.

Cell (x, y), x the column and y the row, is bit 4*(x-1) + (y-1) of a mask, so each
column is one 4-bit nibble and a bridge search is a few shifts per column:

    y\\x  1 2 3 4
     1   . . . .      X crosser cell
     2   . . . .      # blk (blocker) cell
     3   . . . .      . blank
     4   . . . .
"""

from collections.abc import Sequence

from referee.games.boards.picture import EMPTY, Board, Key

SIZE = 4
CELLS = tuple((x, y) for x in range(1, SIZE + 1) for y in range(1, SIZE + 1))
FULL = (1 << len(CELLS)) - 1
_COLUMN = (1 << SIZE) - 1


def bit(x: int, y: int) -> int:
    """The bit index of cell (x, y)."""
    return SIZE * (x - 1) + (y - 1)


def _near(rows: int) -> int:
    """The rows of a column within one row of these."""
    return rows | rows << 1 | rows >> 1


def has_bridge(crosser: int) -> bool:
    """Whether crosser cells, one per column, link column 1 to 4 with steps of at most one row."""
    reach = crosser & _COLUMN
    for column in range(1, SIZE):
        reach = _near(reach) & (crosser >> (SIZE * column)) & _COLUMN
    return reach != 0


def bridge_cells(crosser: int) -> int:
    """The crosser cells on some bridge, as a mask: those reached from column 1 that also
    reach column 4; none without a bridge."""
    columns = [(crosser >> (SIZE * column)) & _COLUMN for column in range(SIZE)]
    reach = [columns[0]]
    for cells in columns[1:]:
        reach.append(_near(reach[-1]) & cells)
    on = [reach[-1]]
    for column in range(SIZE - 2, -1, -1):
        on.insert(0, reach[column] & _near(on[0]))
    return sum(rows << (SIZE * column) for column, rows in enumerate(on))


def mark(crosser: int, blocked: int, crosser_bit: int, blocker_bit: int) -> tuple[int, int]:
    """Both roles' marks on one board: the blocker's cell is blk and wins a collision."""
    blocked |= 1 << blocker_bit
    if crosser_bit != blocker_bit:
        crosser |= 1 << crosser_bit
    return crosser, blocked


def board(crosser: int, blocked: int, title: str, roles: Sequence[str]) -> Board:
    """The board, under a title, its bridge marked; `roles` are the crosser and the blocker."""

    def symbol(x: int, y: int) -> str:
        b = 1 << bit(x, y)
        return "X" if crosser & b else "#" if blocked & b else "."

    columns = tuple(str(x) for x in range(1, SIZE + 1))
    rows = tuple(
        (str(y), tuple(symbol(x, y) for x in range(1, SIZE + 1))) for y in range(1, SIZE + 1)
    )
    bridge = bridge_cells(crosser)
    winning = tuple((y - 1, x - 1) for x, y in CELLS if bridge >> bit(x, y) & 1)
    legend = (
        Key("X", f"{roles[0]}'s cell", roles[0]),
        Key("#", f"blocked by {roles[1]}", roles[1]),
        Key(EMPTY, "blank"),
    )
    return Board(title, columns, rows, corner="y\\x", winning=winning, legend=legend)
