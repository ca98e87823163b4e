"""How standings can be printed: a module of its own, so that the command line can offer the
choice (`--format`) without importing the standings' arithmetic."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    """How standings are printed."""

    TABLE = "table"
    MARKDOWN = "markdown"
    CSV = "csv"
    JSON = "json"
