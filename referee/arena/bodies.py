"""What a request's body may cost: read no further than its cap, and within a deadline,
whatever its length header says. The API's archives and the pages' forms alike."""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request

# An archive must arrive within this, however slowly its sender sends it.
BODY_SECONDS = 300
# A small body (a form, a reason) within this: a connection held open by a stranger sending
# a few bytes a minute is one the arena's bounded connections lack.
SMALL_BODY_SECONDS = 10


async def read_body(request: Request, limit: int, seconds: float = BODY_SECONDS) -> bytes:
    """The request's body, refused (413) past `limit` bytes, whatever its length header says,
    and (408) when it has not all come within `seconds`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise HTTPException(413, f"the body is larger than {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise HTTPException(408, f"the body did not arrive within {seconds:g} s") from None
    except ClientDisconnect:
        raise HTTPException(400, "the client went away mid-body") from None
    return b"".join(chunks)
