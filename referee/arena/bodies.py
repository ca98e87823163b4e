"""What a request's body may cost: read no further than its cap, and within a deadline,
whatever its length header says. The API's archives and the pages' forms alike."""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request

# A body must arrive within this, however slowly its sender sends it.
BODY_SECONDS = 300


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (413) past `limit` bytes, whatever its length header says,
    and (408) when it has not all come within `BODY_SECONDS`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(BODY_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise HTTPException(413, f"the body is larger than {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise HTTPException(408, f"the body did not arrive within {BODY_SECONDS} s") from None
    except ClientDisconnect:
        raise HTTPException(400, "the client went away mid-body") from None
    return b"".join(chunks)
