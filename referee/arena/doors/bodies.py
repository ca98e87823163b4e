"""What a request's body may cost: read no further than its cap, within a deadline, and, for
an archive, at a pace, whatever its length header says. The API's archives and the pages'
forms alike."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request

# An archive must arrive within this, however slowly its sender sends it.
BODY_SECONDS = 300
# A small body (a form, a reason) within this: a connection held open by a stranger sending
# a few bytes a minute is one the arena's bounded connections lack.
SMALL_BODY_SECONDS = 10


@dataclass(frozen=True)
class Pace:
    """How fast a body must come: after `grace_s`, at least `bytes_per_s` on average since
    its start (`grace_s` and that rate after it: a sender that has sent much early may pause
    longer)."""

    bytes_per_s: int = 16 * 1024
    grace_s: float = 5.0

    def due(self, start: float, size: int) -> float:
        """When a body begun at `start` is late if no more than `size` bytes have come."""
        return start + self.grace_s + size / self.bytes_per_s


class Stalled(HTTPException):
    """A body that did not come within its deadline or at its pace: 408, and the connection
    closed after the answer (the rest of the body is not wanted)."""

    def __init__(self, detail: str) -> None:
        super().__init__(408, detail, headers={"Connection": "close"})


async def read_body(
    request: Request, limit: int, seconds: float = BODY_SECONDS, pace: Pace | None = None
) -> bytes:
    """The request's body, refused (413) past `limit` bytes, whatever its length header says,
    and (408, `Stalled`) when it has not all come within `seconds`, or, with a `pace`, when
    it comes slower."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    start = asyncio.get_running_loop().time()
    end = start + seconds

    def deadline() -> float:
        return end if pace is None else min(end, pace.due(start, size))

    try:
        async with asyncio.timeout_at(deadline()) as timer:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise HTTPException(413, f"the body is larger than {limit} bytes")
                chunks.append(chunk)
                timer.reschedule(deadline())
    except TimeoutError:
        if pace is not None and pace.due(start, size) < end:
            raise Stalled(
                f"the body came slower than {pace.bytes_per_s / 1024:g} KiB/s"
                f" ({size} bytes in {asyncio.get_running_loop().time() - start:.0f} s)"
            ) from None
        raise Stalled(f"the body did not arrive within {seconds:g} s") from None
    except ClientDisconnect:
        raise HTTPException(400, "the client went away mid-body") from None
    return b"".join(chunks)
