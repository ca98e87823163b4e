"""What a benchmark's --help says: its docstring, whole."""

from __future__ import annotations

import argparse
from typing import Any


def described(doc: str | None) -> dict[str, Any]:
    """An ArgumentParser's description and epilog from a script's docstring: its first
    paragraph as one line, then every paragraph after it but its usage (argparse writes
    its own), as written."""
    first, *rest = (doc or "").strip().split("\n\n")
    return {
        "description": " ".join(first.split()),
        "epilog": "\n\n".join(part for part in rest if not part.startswith("Usage:")),
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
