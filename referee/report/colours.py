"""Each role's colour in the report: one rule for its pieces on the boards, their legend and
its line in the answer-time chart. The colours themselves are classes of the style sheet
(`assets/report.css`), never style attributes, which a strict Content-Security-Policy
refuses."""

from __future__ import annotations

from collections.abc import Sequence

# The colours the style sheet has a class for, `colour-NAME`: a GDL game's role or piece
# named by one of them is drawn in it (connect four's red and black).
NAMED = ("red", "black", "white", "blue", "green", "yellow", "orange", "purple", "brown")
# The classes of the roles that name no colour, in the rules' role order; any further one is
# `other` (grey).
IN_ORDER = ("first", "second")
OTHER = "other"


def role_colour(role: str, roles: Sequence[str]) -> str:
    """The class of a role's colour: the colour its name names (3pConnectFour's `yellow`),
    else the first role's (red) or the second's (blue), else grey."""
    named = _named(role)
    if named is not None:
        return named
    index = roles.index(role) if role in roles else len(IN_ORDER)
    return IN_ORDER[index] if index < len(IN_ORDER) else OTHER


def symbol_colour(symbol: str, role: str | None, roles: Sequence[str]) -> str | None:
    """The class a board's symbol is drawn in: its role's colour when it is that role's piece
    (so hex-pie's stones follow the swap), else the colour it names; None for any other
    symbol, which the board draws as it is (a blocker's cell, a word)."""
    if role is not None:
        return role_colour(role, roles)
    return _named(symbol)


def _named(word: str) -> str | None:
    lowered = word.lower()
    return f"colour-{lowered}" if lowered in NAMED else None
