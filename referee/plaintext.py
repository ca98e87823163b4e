"""Text fitted to a width: tables and lines of prose as a terminal of that many columns
shows them, or whole where there is no width (a file, a pipe, a page that scrolls). The
command line gives its terminal's width; the arena gives a page's."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from tabulate import MIN_PADDING, tabulate


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`1 step`, `2 steps`, `1 match`: a count and its noun, whose plural is `plural` or
    the regular one."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {plural or noun + 's'}"


def versus(first: str, second: str) -> str:
    """`mcts-a vs mcts-b`: two players who meet. Names may hold `-` but never a space, so
    ` vs ` between them reads one way only, where `mcts-a-mcts-b` does not."""
    return f"{first} vs {second}"


# A column is wrapped no narrower than this; a table that would need narrower ones is a list.
NARROWEST_COLUMN = 20
_GAP = 2  # spaces between the columns of tabulate's plain format


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    width: int | None,
    disable_numparse: bool = False,
) -> str:
    """Rows under their headers, fit to `width`: as they are where they fit (or where there
    is no width); else with the widest columns' cells wrapped, each column as wide as the
    width leaves it; else, where that would be narrower than NARROWEST_COLUMN, one
    `header: value` block a row. With `disable_numparse` every cell is text as it is (a
    number is not aligned as one, and `+12` keeps its sign)."""
    # tabulate makes a column wider than its header by MIN_PADDING.
    natural = [
        max([len(header) + MIN_PADDING, *(len(line) for c in cells for line in str(c).split("\n"))])
        for header, *cells in zip(headers, *rows, strict=True)
    ]
    if width is None or sum(natural) + _GAP * (len(headers) - 1) <= width:
        return tabulate(rows, headers=headers, disable_numparse=disable_numparse)
    cap = _widest_fitting(natural, width - _GAP * (len(headers) - 1))
    if cap < NARROWEST_COLUMN:
        return "\n\n".join(_row_block(headers, row, width) for row in rows)
    wrapped = [
        [_wrapped(str(cell), cap) if natural[i] > cap else cell for i, cell in enumerate(row)]
        for row in rows
    ]
    return tabulate(wrapped, headers=headers, disable_numparse=disable_numparse)


def laid_out(
    headers: Sequence[str], rows: Sequence[Sequence[object]], style: str, width: int | None
) -> str:
    """Rows under their headers as text in tabulate's `style`, every cell as it is: fit to
    `width` (`table`) if given."""
    if width is None:
        return tabulate(rows, headers=headers, tablefmt=style, disable_numparse=True)
    return table(headers, rows, width, disable_numparse=True)


def elo_text(value: float) -> str:
    """Whole Elo with a sign; no `-0`."""
    return f"{round(value) or 0:+d}"


def fit(line: str, width: int | None) -> str:
    """A long line of prose wrapped to `width`, its continuations indented; whole where
    there is no width, as tables are."""
    if width is None or len(line) <= width:
        return line
    return textwrap.fill(line, width, subsequent_indent="    ", break_on_hyphens=False)


def _widest_fitting(natural: Sequence[int], room: int) -> int:
    """The widest a column may be for all of them to fit in `room`, narrower ones as they are."""
    narrow: list[int] = []
    wide = sorted(natural)
    while wide and wide[0] * len(wide) <= room - sum(narrow):
        narrow.append(wide.pop(0))
    return (room - sum(narrow)) // len(wide) if wide else room


def _wrapped(text: str, width: int) -> str:
    return "\n".join(
        "\n".join(textwrap.wrap(line, width) or [""]) for line in text.splitlines() or [""]
    )


def _row_block(headers: Sequence[str], row: Sequence[object], width: int) -> str:
    """A row as `header: value` lines, each value wrapped under its header, indented."""
    return "\n".join(
        textwrap.fill(f"{header}: {cell}", width, subsequent_indent="    ")
        for header, cell in zip(headers, row, strict=True)
    )
