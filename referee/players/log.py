"""A player's log: what it writes to standard error and the referee's notes on it, capped."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

LOG_LIMIT = 1024 * 1024


# How the referee's notes begin, told from what the player wrote.
NOTE_PREFIX = "# referee: "


class PlayerLog:
    """One file per match, up to `limit` bytes each; what is over the cap is counted, not kept.

    The file is made when the first byte comes: a player that writes nothing leaves none, and
    a tournament of thousands of matches no thousands of empty files.
    """

    def __init__(self, path: Path | None, limit: int = LOG_LIMIT) -> None:
        self.limit = limit
        self.path: Path | None = None
        self._file: BinaryIO | None = None
        self._open = False
        self._logged = 0
        # What came while held, for the next file.
        self._held: bytearray | None = None
        if path is not None:
            self.switch(path)

    @property
    def full(self) -> bool:
        return self._logged > self.limit

    @property
    def written(self) -> Path | None:
        """The file of this match's log, once something has been written to it."""
        return self.path if self._file is not None else None

    def switch(self, path: Path) -> None:
        """Write to `path` from now on, with a fresh cap: a reused process keeps a log per match.
        What came while the log was held goes first."""
        held, self._held = self._held, None
        self.close()
        self.path = path
        self._open = True
        self._logged = 0
        if held:
            self.write(bytes(held))

    def hold(self) -> None:
        """Keep what comes in memory, up to the cap, until the log is given its file: a
        player started before its match is known."""
        self.close()
        self.path = None
        self._logged = 0
        self._held = bytearray()

    def write(self, data: bytes) -> None:
        """Append up to the cap; past it, one line says where the log was cut."""
        if self._held is not None:
            # One byte over the cap: the file then says where it was cut. Counted all the
            # same, so that a flood is read slowly (`full`) while it is held, too.
            self._held += data[: max(0, self.limit + 1 - len(self._held))]
            self._logged += len(data)
            return
        if not self._open or not data or self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Anew: a match played again after a stop writes its own log, not after the
            # aborted attempt's (whose transcript it replaces).
            self._file = open(self.path, "wb")  # noqa: SIM115 -- closed in close()
        room = max(0, self.limit - self._logged)
        kept = data[:room]
        self._file.write(kept)
        if len(kept) < len(data) and self._logged + len(kept) == self.limit:
            self._file.write(f"\n# referee: log cut at {self.limit} bytes\n".encode())
        self._file.flush()
        self._logged += len(data)

    def note(self, text: str) -> None:
        """A line from the referee about the player."""
        self.write(f"{NOTE_PREFIX}{text}\n".encode())

    def close(self) -> None:
        self._open = False
        if self._file is not None:
            self._file.close()
            self._file = None
