"""What a request's query and path may hold before they reach the database: a whole number
written in ASCII digits, and text without a NUL.

`str.isdigit` takes digits that `int` refuses (`²`), and PostgreSQL refuses a NUL in any
text it is sent: either would be an error of the server (500) for a client's mistake.
"""

from __future__ import annotations


def whole_number(text: str, digits: int) -> int | None:
    """`text` as a whole number if it is 1 to `digits` ASCII digits; None otherwise."""
    if not (0 < len(text) <= digits and text.isascii() and text.isdigit()):
        return None
    return int(text)


def storable(text: str) -> bool:
    """Whether every database can hold `text`: no NUL, and UTF-8 (no lone surrogate)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
