"""A GDL state as text: a grid for each board-like relation, then every other fact."""

from __future__ import annotations

from collections import defaultdict

from referee.errors import RulesheetError
from referee.games.boards.picture import EMPTY, Board
from referee.games.gdl.syntax import parse_terms

# The most rows or columns a numbered axis is filled out to.
_WIDEST = 64


# How much of a state a fault's one line quotes: every fact of a board game's state, but
# never the megabytes a hostile rulesheet's state can hold (replay shows a state whole).
_QUOTED_FACT = 200
_QUOTED_STATE = 4000


def describe_facts(facts: list[str]) -> str:
    """A state on one line, as faults of the rules name it: its facts, each cut at 200
    characters and all at 4,000, saying how much is left out."""
    shown: list[str] = []
    size = 0
    for fact in facts:
        if len(fact) > _QUOTED_FACT:
            fact = f"{fact[:_QUOTED_FACT]}... of {len(fact):,} characters"
        size += len(fact) + 1
        if size > _QUOTED_STATE:
            break
        shown.append(fact)
    left = len(facts) - len(shown)
    return "state {" + " ".join(shown) + (f" ... {left:,} more facts" if left else "") + "}"


def render_facts(facts: list[str]) -> str:
    """A grid per relation of `(name x y value)` facts that has enough of them; the rest listed."""
    boards, others = fact_boards(facts)
    lines: list[str] = []
    for board in boards:
        width = max(len(v) for _, row in board.rows for v in row) + 1
        lines.append(f"{board.title}:")
        lines.append("    " + "".join(y.rjust(width) for y in board.columns))
        for x, row in board.rows:
            lines.append(x.rjust(4) + "".join(v.rjust(width) for v in row))
    lines.extend(others)
    return "\n".join(lines)


def fact_boards(facts: list[str]) -> tuple[list[Board], list[str]]:
    """The boards of a state's facts, one per relation of at least four `(name x y value)`
    facts (x the row, y the column, `.` where no fact says), and the other facts, sorted."""
    grids: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)
    others: list[str] = []
    for fact in facts:
        try:
            term = parse_terms(fact, "state")[0][0]
        except RulesheetError:  # nested deeper than a term is read: a fact, never a cell
            others.append(fact)
            continue
        if isinstance(term, tuple) and len(term) == 4 and all(isinstance(t, str) for t in term):
            grids[str(term[0])][(str(term[1]), str(term[2]))] = str(term[3])
        else:
            others.append(fact)
    boards = []
    for name, cells in sorted(grids.items()):
        if len(cells) < 4:
            others.extend(f"({name} {x} {y} {v})" for (x, y), v in sorted(cells.items()))
            continue
        xs = _axis({x for x, _y in cells})
        ys = tuple(_axis({y for _x, y in cells}))
        rows = tuple((x, tuple(cells.get((x, y), EMPTY) for y in ys)) for x in xs)
        boards.append(Board(name, ys, rows))
    return boards, sorted(others)


def _axis(labels: set[str]) -> list[str]:
    """An axis's labels in order; numbered ones with the gaps filled, since a board whose
    empty cells are no facts (amazons) would otherwise lose its empty rows and columns."""
    if all(label.isdigit() for label in labels):
        low, high = min(map(int, labels)), max(map(int, labels))
        if high - low < _WIDEST:
            return [str(i) for i in range(low, high + 1)]
    return sorted(labels, key=_order)


def _order(text: str) -> tuple[int, int | str]:
    return (0, int(text)) if text.isdigit() else (1, text)
