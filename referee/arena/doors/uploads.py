"""The upload slots: the archives the API reads at once, each held in memory up to its cap
until it is stored. A slot is held only while its archive comes at the pace (`bodies.Pace`),
and an author holds one at most: a stranger with a token cannot keep other authors' archives
out by sending slowly, and a stall is the stalled author's (the API records it, and it counts
in the author's hourly cap: `submissions`)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request

from referee.arena.doors.bodies import BODY_SECONDS, Pace, read_body

# Archives read at once.
SLOTS = 4
# What a busy author is told to wait before sending again (`arena submit` does).
RETRY_AFTER_S = 5


class Uploads:
    """The slots, and the authors (by id) whose archive is arriving in one."""

    def __init__(self, slots: int = SLOTS, pace: Pace | None = None) -> None:
        self.slots = slots
        self.pace = pace or Pace()
        self._arriving: set[int] = set()

    async def read(self, request: Request, author_id: int, limit: int) -> bytes:
        """The archive in the request's body (`bodies.read_body`, at the pace), read in a
        slot; 503 at once if the author's other archive is arriving, or every slot is held."""
        if author_id in self._arriving:
            raise HTTPException(
                503,
                "your other archive is still arriving; send this one once it is in",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        if len(self._arriving) >= self.slots:
            raise HTTPException(
                503,
                f"too many submissions arriving at once; try again in {RETRY_AFTER_S} s",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        # Taken and given back on the event loop, with no wait between the check and the take.
        self._arriving.add(author_id)
        try:
            return await read_body(request, limit, BODY_SECONDS, self.pace)
        finally:
            self._arriving.discard(author_id)
