"""Names that say which referee made a thing, so that the next referee removes what a killed
one left behind: player directories and cgroups, named `referee-KIND-PID-...`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def kind_prefix(kind: str) -> str:
    """The start of the name of a `kind` of thing any referee makes."""
    return f"referee-{kind}-"


def owned_prefix(kind: str) -> str:
    """The start of the name of a `kind` of thing this referee process makes."""
    return f"{kind_prefix(kind)}{os.getpid()}-"


def processes_in(directories: Sequence[Path]) -> list[int]:
    """The processes (of this user's, as far as /proc lets it see) that have one of these
    directories as their HOME, TMPDIR or working directory: what a player left running."""
    if not directories:
        return []
    names = [str(directory) for directory in directories]
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(entry.path, "environ").read_bytes().split(b"\0")
            cwd = os.readlink(Path(entry.path, "cwd"))
        except OSError:
            continue
        homes = [
            value.split(b"=", 1)[1].decode(errors="replace")
            for value in environ
            if value.startswith((b"HOME=", b"TMPDIR="))
        ]
        places = (*homes, cwd)
        if any(place == name or place.startswith(name + "/") for place in places for name in names):
            found.append(int(entry.name))
    return found


def left_by_killed_referees(directory: Path, kind: str) -> list[Path]:
    """The things of this `kind` in `directory` whose referee is no longer running."""
    left = []
    for entry in directory.glob(f"{kind_prefix(kind)}*-*"):
        owner = entry.name.removeprefix(kind_prefix(kind)).split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            left.append(entry)
    return left
