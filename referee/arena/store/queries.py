"""What a query may hold: a whole number written in ASCII digits, and text every database can
keep.

`str.isdigit` takes digits that `int` refuses (`²`), and PostgreSQL refuses a NUL in any
text it is sent: either would be an error of the server (500) for a client's mistake. Text
that an author or a bot wrote (a name in a request, a build's output, a fault's detail) is
made keepable at one place, as every statement is sent (`kept_parameters`, which the
database's engine runs on each one's parameters): each NUL is kept as `NUL_SIGN` and each
lone surrogate, which no UTF-8 can hold, as U+FFFD, on SQLite as on PostgreSQL.
"""

from __future__ import annotations

import re
from typing import Any

# What a NUL is kept as: ␀ (U+2400, SYMBOL FOR NULL), which says what was there and is one
# character, as the NUL was, so that a column's length holds the text still.
NUL_SIGN = "\u2400"
REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def whole_number(text: str, digits: int) -> int | None:
    """`text` as a whole number if it is 1 to `digits` ASCII digits; None otherwise."""
    if not (0 < len(text) <= digits and text.isascii() and text.isdigit()):
        return None
    return int(text)


def storable(text: str) -> bool:
    """Whether every database can hold `text` as it is: no NUL, and UTF-8 (no lone surrogate)."""
    return kept(text) == text


def kept(text: str) -> str:
    """`text` as every database can keep it: each NUL as NUL_SIGN, each lone surrogate as
    U+FFFD; anything else as it is."""
    if "\x00" in text:
        text = text.replace("\x00", NUL_SIGN)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _SURROGATE.sub(REPLACEMENT, text)
    return text


def kept_parameters(parameters: Any) -> Any:
    """A statement's parameters (a mapping, a sequence, or a sequence of either for many
    rows), each text among them `kept`: the same object when none needs it, as nearly all
    do not (a season's million rows are seeded through here)."""
    if isinstance(parameters, str):
        return kept(parameters)
    if isinstance(parameters, dict):
        if all(kept_parameters(value) is value for value in parameters.values()):
            return parameters
        return {name: kept_parameters(value) for name, value in parameters.items()}
    if isinstance(parameters, list | tuple):
        if all(kept_parameters(value) is value for value in parameters):
            return parameters
        values = [kept_parameters(value) for value in parameters]
        return tuple(values) if isinstance(parameters, tuple) else values
    return parameters
