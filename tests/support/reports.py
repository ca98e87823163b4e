"""Results directories for the report's tests: a copy with a transcript tampered with."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def tampered_copy(results: Path, copy: Path) -> Path:
    """A copy of a results directory in which a transcript's result was changed and a file
    is not a transcript at all; the tampered transcript's path."""
    shutil.copytree(results, copy)
    tampered = sorted(copy.glob("ticblock-*.json"))[0]
    data = json.loads(tampered.read_text())
    first = next(iter(data["goals"]))
    data["goals"][first] = 1 if data["goals"][first] != 1 else 2
    tampered.write_text(json.dumps(data, indent=2))
    (copy / "garbage.json").write_text("{ not json")
    return tampered
