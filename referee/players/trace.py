"""A protocol trace: every line exchanged with every player, as `--trace FILE` writes it.

One line of the file per line on a pipe, in the order the referee wrote or read them:

    12.345 ticblock-20261122T101500Z-1a2b xcplayer > go 3 1000 (mark 1 1) (mark 1 2)
    12.351 ticblock-20261122T101500Z-1a2b xcplayer < (mark 1 2)

the seconds since the first line, the match and the role (from the last `start` the player
was sent; its name before that), `>` for a line to the player and `<` for one from it. A
line the referee read but did not take as an answer says why, after `  #`. Control
characters a player wrote are shown as `\\xNN`. A player's
output reaches the trace only when the referee reads it, and what one request may read is
capped by the protocol's output budget, so a flood cannot make the trace grow without end.
"""

from __future__ import annotations

import re
import time
from enum import StrEnum
from pathlib import Path
from typing import TextIO

from referee.protocol import MessageError, Start, parse

# Control characters a player may write (a terminal escape, a carriage return), shown as \xNN:
# a trace is read in terminals, and a player must not be able to rewrite what they show.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


class Direction(StrEnum):
    TO_PLAYER = ">"
    FROM_PLAYER = "<"


class Trace:
    """The trace file of a run, shared by all its players."""

    def __init__(self, path: Path) -> None:
        # Line-buffered: what a killed referee had traced is in the file.
        self._file: TextIO = open(path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._began: float | None = None  # at the first line
        self.path = path

    def channel(self, player: str) -> TraceChannel:
        """Where one player's lines are traced, under `player` until its first `start`."""
        return TraceChannel(self, player)

    def write(self, who: str, direction: Direction, text: str, note: str = "") -> None:
        if self._file.closed:
            return
        if self._began is None:
            self._began = time.monotonic()
        seconds = time.monotonic() - self._began
        noted = f"  # {note}" if note else ""
        shown = _CONTROL.sub(lambda found: f"\\x{ord(found[0]):02x}", text)
        self._file.write(f"{seconds:.3f} {who} {direction} {shown}{noted}\n")

    def close(self) -> None:
        self._file.close()


def trace_channel(trace: Trace | None, player: str) -> TraceChannel | None:
    """The channel of `player` in `trace`, or None when nothing is traced."""
    return trace.channel(player) if trace is not None else None


class TraceChannel:
    """One player's side of the trace: it names the match and role the player is in."""

    def __init__(self, trace: Trace, player: str) -> None:
        self._trace = trace
        self._who = player

    def sent(self, line: str) -> None:
        try:
            message = parse(line)
        except MessageError:
            message = None
        if isinstance(message, Start):
            self._who = f"{message.match_id} {message.role}"
        self._trace.write(self._who, Direction.TO_PLAYER, line)

    def received(self, text: str, note: str = "") -> None:
        self._trace.write(self._who, Direction.FROM_PLAYER, text, note)
