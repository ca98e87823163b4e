"""A match's moves as it is played, for those who watch it: a small file beside the results
(`live/MATCH_ID.jsonl`), written by the process that plays the match, one line per step,
each line appended and flushed, the file removed once the match ends.

The first line names the run (a random id: a match played again after a stop is another
run, in a new file), the match and the game's roles; each further line is a step and its
joint move, in role order. Whoever reads it (the arena) takes it as untrusted text: lines
past a size, a line too long, or one that is no step in order end what is read, and a last
line without its newline (still being written) is left for the next read.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from referee.games import Move

LIVE = "live"
# What a reader takes of one file: a match whose moves are longer than this is followed no
# further (its transcript shows it all once it ends).
MAX_BYTES = 4 * 1024 * 1024
# The longest line a reader takes: a step of a game of many roles with long moves.
MAX_LINE = 64 * 1024


def live_path(output: Path, match_id: str) -> Path:
    """The live file of a match of the results directory `output`."""
    return output / LIVE / f"{match_id}.jsonl"


class LiveMoves:
    """The live file of one match, written step by step; nothing happens if it cannot be
    written (a worker that does not share the results' disk): watching is never worth a
    match."""

    def __init__(self, path: Path, match_id: str, roles: Sequence[str]) -> None:
        self._path = path
        self._file: IO[str] | None = None
        header = {"run": secrets.token_hex(8), "match": match_id, "roles": list(roles)}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A new file, never the old one truncated: a reader that knew the old one sees
            # another file, not the old one shrunk under it.
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            self._file = path.open("x", encoding="utf-8")
            self._write(header)
        except OSError:
            self.close()

    def step(self, step: int, joint: Sequence[Move], _state: Hashable) -> None:
        """A step played (the match's `on_step`)."""
        self._write({"step": step, "moves": list(joint)})

    def close(self) -> None:
        """The match has ended: the file goes."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        with contextlib.suppress(OSError):
            self._path.unlink()

    def _write(self, line: dict[str, Any]) -> None:
        if self._file is None:
            return
        try:
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError:
            self.close()


@dataclass(frozen=True)
class LiveStep:
    """A step read from a live file: its number and joint move, in role order."""

    step: int
    moves: tuple[str, ...]


class LiveReader:
    """Reads one live file as it grows: each `read` gives the steps written since the last.
    A file replaced (another run of the match) starts again from its first line; `run` is
    the run read, `problem` why reading stopped for good (the file is then read no more)."""

    def __init__(self, path: Path, roles: Sequence[str]) -> None:
        self._path = path
        self._roles = list(roles)
        self._identity: tuple[int, int] | None = None
        self.offset = 0
        self.run: str | None = None
        self.last_step = 0
        self.problem: str | None = None

    def read(self) -> tuple[bool, list[LiveStep]]:
        """Whether the file is another run than the one read so far (the steps before are
        then void), and the new steps."""
        try:
            with self._path.open("rb") as file:
                status = os.fstat(file.fileno())
                identity = (status.st_dev, status.st_ino)
                restarted = self._identity is not None and (
                    identity != self._identity or status.st_size < self.offset
                )
                if self._identity is None or restarted:
                    self._identity = identity
                    self.offset, self.run, self.last_step, self.problem = 0, None, 0, None
                if self.problem is not None:
                    return restarted, []
                file.seek(self.offset)
                data = file.read(max(0, MAX_BYTES - self.offset))
        except OSError:
            return False, []  # not written yet, or already removed
        steps = self._lines(data)
        if self.problem is None and status.st_size > MAX_BYTES:
            self.problem = f"its moves are longer than {MAX_BYTES // 1024 // 1024} MiB"
        return restarted, steps

    def _lines(self, data: bytes) -> list[LiveStep]:
        steps: list[LiveStep] = []
        start = 0
        while self.problem is None:
            end = data.find(b"\n", start, start + MAX_LINE + 1)
            if end < 0:
                if len(data) - start > MAX_LINE:
                    self.problem = f"a line longer than {MAX_LINE // 1024} KiB"
                break  # the last line, still being written: read again next time
            found = self._line(data[start:end])
            start = end + 1
            if found is not None:
                steps.append(found)
        self.offset += start
        return steps

    def _line(self, line: bytes) -> LiveStep | None:
        """The step of a line, or None for the header; a line that is neither sets `problem`."""
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            self.problem = "a line that is not a JSON object"
            return None
        if self.run is None:
            run = data.get("run")
            if not isinstance(run, str) or data.get("roles") != self._roles:
                self.problem = "its first line does not name this match's run and roles"
                return None
            self.run = run[:64]
            return None
        step, moves = data.get("step"), data.get("moves")
        if type(step) is not int or step != self.last_step + 1 or not isinstance(moves, list):
            self.problem = f"step {self.last_step + 1} is not there as a step"
            return None
        if len(moves) != len(self._roles) or not all(isinstance(m, str) for m in moves):
            self.problem = f"step {step} does not have a move for each role"
            return None
        self.last_step = step
        return LiveStep(step, tuple(moves))
