"""A GDL state as text: a grid for each board-like relation, then every other fact."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import replace

from referee.errors import RulesheetError
from referee.games.boards.picture import EMPTY, Board, Key
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


def render_facts(
    facts: list[str],
    cartesian: frozenset[str] = frozenset(),
    extent: Axes | None = None,
    roles: Sequence[str] = (),
) -> str:
    """A grid per relation of `(name x y value)` facts that has enough of them; the rest listed
    (`fact_boards`). Each grid's row labels take the room the longest needs."""
    boards, others = fact_boards(facts, cartesian, roles, extent)
    lines: list[str] = []
    for board in boards:
        width = max(len(v) for _, row in board.rows for v in [*row, *board.columns]) + 1
        margin = max(4, *(len(x) for x, _ in board.rows))
        lines.append(f"{board.title}:")
        lines.append(" " * margin + "".join(y.rjust(width) for y in board.columns))
        for x, row in board.rows:
            lines.append(x.rjust(margin) + "".join(v.rjust(width) for v in row))
    lines.extend(others)
    return "\n".join(lines)


# The most cells a board takes from the facts the rules can make (`board_extent`): past it,
# a relation of four arguments is a table of something other than a board.
_LARGEST_EXTENT = 4096

# Per relation, the labels of its first and of its second argument.
Axes = dict[str, tuple[frozenset[str], frozenset[str]]]


def board_extent(known: Sequence[str]) -> Axes:
    """The boards' whole axes, from every fact the rules can make (or have made so far): a
    board is drawn whole from the start, its empty rows and columns too, even where empty
    cells are no facts (connect four's first steps)."""
    grids, _others = _cells(known)
    extent: Axes = {}
    for name, cells in grids.items():
        firsts = frozenset(a for a, _b in cells)
        seconds = frozenset(b for _a, b in cells)
        if len(cells) >= 4 and len(firsts) * len(seconds) <= _LARGEST_EXTENT:
            extent[name] = (firsts, seconds)
    return extent


# A relation's `(name a b value)` facts: the values at each pair (a, b), in order.
Cells = dict[tuple[str, str], list[str]]


def _cells(facts: Sequence[str]) -> tuple[dict[str, Cells], list[str]]:
    """The `(name a b value)` facts as cells by relation, and the other facts."""
    grids: dict[str, Cells] = defaultdict(dict)
    others: list[str] = []
    for fact in facts:
        try:
            term = parse_terms(fact, "state")[0][0]
        except RulesheetError:  # nested deeper than a term is read: a fact, never a cell
            others.append(fact)
            continue
        if isinstance(term, tuple) and len(term) == 4 and all(isinstance(t, str) for t in term):
            grids[str(term[0])].setdefault((str(term[1]), str(term[2])), []).append(str(term[3]))
        else:
            others.append(fact)
    return grids, others


def fact_boards(
    facts: list[str],
    cartesian: frozenset[str] = frozenset(),
    roles: Sequence[str] = (),
    extent: Axes | None = None,
) -> tuple[list[Board], list[str]]:
    """The boards of a state's facts, one per relation of at least four `(name a b value)`
    facts or of the `extent` (`board_extent`), whose axes it spans (`.` where no fact
    says), and the other facts, sorted.

    A relation whose first argument is a role (blind tic-tac-toe's `(known ?r ?m ?n)`: the
    cells each role knows to be taken) is no board: it holds, for a role, any number of
    pairs, which a grid of role by m would draw over each other, one value to a cell. Its
    facts are listed, a row of its arguments each. A board's cell that facts give several
    values holds them all, joined by commas, so that no value hides another.

    Drawn the way the games' own pictures draw them (the GGP repository's stylesheets):
    with a letter axis and a numbered one (chess's `(cell a 1 wr)`), the letters are the
    columns and the highest number the top row; in the `cartesian` relations, whose rules
    name their coordinates x and y (connect four's `(cell ?x ?y ?player)`), a is the column
    and b the row, the highest on top; otherwise (tic-tac-toe's `(cell ?m ?n ?mark)`) a is
    the row from the top and b the column. Each board's legend lists its words, a word
    that names a role (`red`, or `x` of `xplayer`) as that role's.
    """
    grids, others = _cells(facts)
    axes = extent or {}
    named = {role.lower() for role in roles}
    boards = []
    for name in sorted(set(grids) | set(axes)):
        cells = grids.get(name, {})
        firsts, seconds = axes.get(name, (frozenset(), frozenset()))
        firsts |= {a for a, _b in cells}
        seconds |= {b for _a, b in cells}
        by_role = bool(firsts) and all(a.lower() in named for a in firsts)
        if by_role or (len(cells) < 4 and name not in axes):
            others.extend(
                f"({name} {a} {b} {v})" for (a, b), values in cells.items() for v in values
            )
            continue
        joined = {cell: ",".join(sorted(values, key=_order)) for cell, values in cells.items()}
        board = _grid(name, joined, _axis(firsts), _axis(seconds), name.lower() in cartesian)
        boards.append(replace(board, legend=_legend(board, roles)))
    return boards, sorted(others)


def _grid(
    name: str,
    cells: dict[tuple[str, str], str],
    firsts: list[str],
    seconds: list[str],
    cartesian: bool,
) -> Board:
    """One relation's cells as a board over its axes, the right way round."""
    if _numbered(seconds) and (cartesian or _lettered(firsts)):
        rows = tuple(
            (b, tuple(cells.get((a, b), EMPTY) for a in firsts)) for b in reversed(seconds)
        )
        return Board(name, tuple(firsts), rows)
    if _numbered(firsts) and _lettered(seconds):
        rows = tuple(
            (a, tuple(cells.get((a, b), EMPTY) for b in seconds)) for a in reversed(firsts)
        )
        return Board(name, tuple(seconds), rows)
    rows = tuple((a, tuple(cells.get((a, b), EMPTY) for b in seconds)) for a in firsts)
    return Board(name, tuple(seconds), rows)


def _legend(board: Board, roles: Sequence[str]) -> tuple[Key, ...]:
    words = sorted({word for _label, row in board.rows for word in row} - {EMPTY})
    keys = [Key(word, f"{board.title} {word}", _owner(word, roles)) for word in words]
    if any(EMPTY in row for _label, row in board.rows):
        keys.append(Key(EMPTY, f"no {board.title} fact"))
    return tuple(keys)


def _owner(word: str, roles: Sequence[str]) -> str | None:
    """The role a board's word is the piece of: its name, or its initial when the role is
    that letter and `player` (tic-tac-toe's `x` of `xplayer`)."""
    for role in roles:
        if word == role or role == f"{word}player":
            return role
    return None


# A relation's first two arguments as its rules name them: `(cell ?x ?y` and the like.
_COORDINATES = re.compile(r"\(\s*([^\s()?;]+)\s+\?([^\s()]+)\s+\?([^\s()]+)")


def cartesian_relations(rules: str) -> frozenset[str]:
    """The relations whose rules mostly name their first two arguments x and y (`?x ?y`,
    `?x1 ?y1`): coordinates as on a graph, x the column and y the row counted upwards."""
    votes: dict[str, int] = defaultdict(int)
    for name, first, second in _COORDINATES.findall(rules):
        xy = first[:1].lower() == "x" and second[:1].lower() == "y"
        votes[name.lower()] += 1 if xy else -1
    return frozenset(name for name, vote in votes.items() if vote > 0)


def _numbered(labels: Collection[str]) -> bool:
    return all(label.isdigit() for label in labels)


def _lettered(labels: Collection[str]) -> bool:
    return all(len(label) == 1 and "a" <= label <= "z" for label in labels)


def _axis(labels: Collection[str]) -> list[str]:
    """An axis's labels in order; numbered and lettered ones with the gaps filled, since a
    board whose empty cells are no facts (amazons) would otherwise lose its empty rows and
    columns."""
    if _numbered(labels):
        low, high = min(map(int, labels)), max(map(int, labels))
        if high - low < _WIDEST:
            return [str(i) for i in range(low, high + 1)]
    if _lettered(labels):
        return [chr(i) for i in range(ord(min(labels)), ord(max(labels)) + 1)]
    return sorted(labels, key=_order)


def _order(text: str) -> tuple[int, int | str]:
    return (0, int(text)) if text.isdigit() else (1, text)
