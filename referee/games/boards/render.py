"""Text layout of boards: labelled grids, side by side."""

from collections.abc import Sequence


def grid(
    columns: Sequence[str],
    rows: Sequence[tuple[str, Sequence[str]]],
    shift: int = 0,
    corner: str = "",
) -> list[str]:
    """Lines of a grid with column labels on top, a label before each row, `corner` above those.

    Each row starts `shift` characters further right than the one above, which draws a
    hex rhombus when `shift` is 1.
    """
    label_width = max(len(corner), *(len(label) for label, _ in rows))
    width = max(len(text) for text in columns)
    lines = [corner.rjust(label_width) + " " + " ".join(text.rjust(width) for text in columns)]
    for index, (label, cells) in enumerate(rows):
        indent = " " * (shift * index)
        lines.append(
            indent + label.rjust(label_width) + " " + " ".join(c.rjust(width) for c in cells)
        )
    return lines


def side_by_side(blocks: Sequence[Sequence[str]], gap: int = 4) -> list[str]:
    """Join blocks of lines left to right, each padded to its widest line."""
    height = max(len(block) for block in blocks)
    widths = [max(len(line) for line in block) for block in blocks]
    lines = []
    for i in range(height):
        parts = [
            (block[i] if i < len(block) else "").ljust(width)
            for block, width in zip(blocks, widths, strict=True)
        ]
        lines.append((" " * gap).join(parts).rstrip())
    return lines
