"""A board as data: what a terminal shows as text and the report draws as SVG.

A cell holds one symbol: `X` and `O` (or `x` and `o`) a role's pieces, `#` a blocker's
cell, `W` a white blocker, `.` an empty cell, and a space where the board has no cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.games.boards.render import grid

NO_CELL = " "
EMPTY = "."
# A cell of a board: its row's and its column's index, from the top left.
Cell = tuple[int, int]


@dataclass(frozen=True)
class Key:
    """One line of a board's legend: a symbol, what it means, and the role whose piece it
    is (None for a symbol of nobody's, such as a blocker's wall)."""

    symbol: str
    meaning: str
    role: str | None = None


@dataclass(frozen=True)
class Board:
    """A labelled grid of cells under a title; on a hexagonal board each row starts half a
    cell further right than the one above, which draws a hex rhombus."""

    title: str
    columns: tuple[str, ...]
    # (label, one symbol per column) from the top row down.
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    corner: str = ""
    hexagonal: bool = False
    # The cells that decided the game (or this board): a line, a square's corners, a chain.
    winning: tuple[Cell, ...] = ()
    legend: tuple[Key, ...] = ()

    def lines(self) -> list[str]:
        """The board as lines of text, its title (if any) first."""
        shift = 1 if self.hexagonal else 0
        drawn = grid(self.columns, self.rows, shift=shift, corner=self.corner)
        return [self.title, *drawn] if self.title else drawn
