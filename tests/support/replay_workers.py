"""A replay worker's function that tells the tests what it does: the arena's own
(`replay_work.replayed`), after it has noted its process in a file beside the transcript,
and, if the test asked, held until the test lets it go. A test stands it in with
`monkeypatch.setattr(replay_work, "replayed", observed)`: the worker, another process,
finds it here by its name.

Beside the transcript `T.json`: `T.json.replays` has a line for each replay (the
worker's pid); a file `T.json.hold` holds each replay, busy on its core, until `T.json.go`
is there; `T.json.spun` is written once a held replay has taken SPIN_S of its core.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from referee.arena.replays.work import Kind, Replayed, replayed

# The CPU seconds a held replay has taken when it writes `T.json.spun`.
SPIN_S = 1.0
# How long a held replay waits to be let go, at most.
HOLD_S = 120.0


def observed(kind: Kind, path: str, public_key: str, bot_pages: Mapping[str, str]) -> Replayed:
    with open(f"{path}.replays", "a", encoding="utf-8") as noted:
        noted.write(f"{os.getpid()}\n")
    if Path(f"{path}.hold").exists():
        start, deadline = time.process_time(), time.monotonic() + HOLD_S
        # Busy, as a replay is: it takes its core, never the arena's.
        while not Path(f"{path}.go").exists() and time.monotonic() < deadline:
            if time.process_time() - start >= SPIN_S and not Path(f"{path}.spun").exists():
                Path(f"{path}.spun").write_text("spun\n")
    return replayed(kind, path, public_key, bot_pages)


def replays_of(transcript: Path) -> list[int]:
    """The process of each replay of `transcript` so far."""
    noted = Path(f"{transcript}.replays")
    return [int(line) for line in noted.read_text().split()] if noted.exists() else []


def hold(transcript: Path) -> None:
    """Hold each replay of `transcript` until `let_go`."""
    Path(f"{transcript}.hold").touch()


def let_go(transcript: Path) -> None:
    Path(f"{transcript}.go").touch()
