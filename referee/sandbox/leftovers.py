"""Names that say which referee made a thing, so that the next referee removes what a killed
one left behind: player directories and cgroups, named `referee-KIND-PID-...`."""

from __future__ import annotations

import os
from pathlib import Path


def owned_prefix(kind: str) -> str:
    """The start of the name of a `kind` of thing this referee process makes."""
    return f"referee-{kind}-{os.getpid()}-"


def left_by_killed_referees(directory: Path, kind: str) -> list[Path]:
    """The things of this `kind` in `directory` whose referee is no longer running."""
    left = []
    for entry in directory.glob(f"referee-{kind}-*-*"):
        owner = entry.name.removeprefix(f"referee-{kind}-").split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            left.append(entry)
    return left
