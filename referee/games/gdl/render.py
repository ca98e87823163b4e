"""A GDL state as text: a grid for each board-like relation, then every other fact."""

from __future__ import annotations

from collections import defaultdict

from referee.games.gdl.syntax import parse_terms


def render_facts(facts: list[str]) -> str:
    """A grid per relation of `(name x y value)` facts that has enough of them; the rest listed."""
    boards: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)
    others: list[str] = []
    for fact in facts:
        term = parse_terms(fact, "state")[0][0]
        if isinstance(term, tuple) and len(term) == 4 and all(isinstance(t, str) for t in term):
            boards[str(term[0])][(str(term[1]), str(term[2]))] = str(term[3])
        else:
            others.append(fact)
    lines: list[str] = []
    for name, cells in sorted(boards.items()):
        if len(cells) < 4:
            others.extend(f"({name} {x} {y} {v})" for (x, y), v in sorted(cells.items()))
            continue
        xs = sorted({x for x, _y in cells}, key=_order)
        ys = sorted({y for _x, y in cells}, key=_order)
        width = max(len(v) for v in cells.values()) + 1
        lines.append(f"{name}:")
        lines.append("    " + "".join(y.rjust(width) for y in ys))
        for x in xs:
            row = "".join(cells.get((x, y), ".").rjust(width) for y in ys)
            lines.append(x.rjust(4) + row)
    lines.extend(sorted(others))
    return "\n".join(lines)


def _order(text: str) -> tuple[int, int | str]:
    return (0, int(text)) if text.isdigit() else (1, text)
