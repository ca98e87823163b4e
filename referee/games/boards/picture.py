"""A board as data: what a terminal shows as text and the report draws as SVG.

A cell holds one symbol: `X` and `O` (or `x` and `o`) a role's pieces, `#` a blocker's
cell, `W` a white blocker, `.` an empty cell, and a space where the board has no cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.games.boards.render import grid

NO_CELL = " "
EMPTY = "."


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

    def lines(self) -> list[str]:
        """The board as lines of text, its title (if any) first."""
        shift = 1 if self.hexagonal else 0
        drawn = grid(self.columns, self.rows, shift=shift, corner=self.corner)
        return [self.title, *drawn] if self.title else drawn
