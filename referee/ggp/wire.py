"""HTTP/1.0 as GGP managers and players speak it: one request per connection, read with bounds.

A manager POSTs a message with the headers ggp-base's server writes; a player answers
`200 OK` with the reply as the body, with or without Content-Length, and closes. Players
also take a message as the decoded path of a GET, and answer OPTIONS (a browser's question)
with an empty body. Every read here is bounded in bytes, so that the other side cannot make
this side hold more than a message's worth of what it sends; the caller bounds it in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote

# A status line or header line, and all the headers of one message together.
HEADER_LIMIT = 16 * 1024
# A reply: a move, `ready`, `done`; nothing a player says needs more.
REPLY_LIMIT = 64 * 1024
# A request: START carries a rulesheet (the largest of the GGP repository is 68 KB).
REQUEST_LIMIT = 4 * 1024 * 1024
_CHUNK = 64 * 1024


class Broken(Enum):
    """How a message failed to arrive."""

    CLOSED = "closed"  # the connection ended before the whole message
    TOO_BIG = "too big"
    MALFORMED = "malformed"


class WireError(Exception):
    """A message that did not arrive as HTTP/1.0 carries it: how, and what was wrong."""

    def __init__(self, broken: Broken, detail: str) -> None:
        super().__init__(detail)
        self.broken = broken
        self.detail = detail


@dataclass(frozen=True)
class Incoming:
    """A request a player received: its method, and the GGP message it carries ("" for OPTIONS)."""

    method: str
    message: str


def post(host: str, receiver: str, message: str) -> bytes:
    """A request carrying `message`, with the headers of ggp-base's server."""
    body = message.encode()
    head = (
        "POST / HTTP/1.0\r\n"
        "Accept: text/delim\r\n"
        f"Host: {host}\r\n"
        "Sender: GAMESERVER\r\n"
        f"Receiver: {receiver}\r\n"
        "Content-Type: text/acl\r\n"
        f"Content-Length: {len(body)}\r\n"
        "\r\n"
    )
    return head.encode() + body


def reply(message: str, status: str = "200 OK") -> bytes:
    """A player's answer; the CORS headers let a browser's page be a game manager too."""
    body = message.encode()
    head = (
        f"HTTP/1.0 {status}\r\n"
        "Content-Type: text/acl\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Access-Control-Allow-Origin: *\r\n"
        "Access-Control-Allow-Methods: POST, GET, OPTIONS\r\n"
        "Access-Control-Allow-Headers: Content-Type\r\n"
        "Access-Control-Allow-Age: 86400\r\n"
        "\r\n"
    )
    return head.encode() + body


async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to a player, its reader bounded to HEADER_LIMIT per line."""
    return await asyncio.open_connection(host, port, limit=HEADER_LIMIT)


async def serve(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str,
    port: int,
) -> asyncio.Server:
    """A listening player, each connection's reader bounded to HEADER_LIMIT per line."""
    return await asyncio.start_server(handle, host, port, limit=HEADER_LIMIT)


async def read_reply(reader: asyncio.StreamReader) -> str:
    """The body of a player's answer; WireError unless it is a whole `200` answer in bounds."""
    status = await _line(reader, "status line")
    parts = status.split(maxsplit=2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise WireError(Broken.MALFORMED, f"answered {status[:80]!r}, not an HTTP status line")
    if parts[1] != "200":
        raise WireError(Broken.MALFORMED, f"answered HTTP status {' '.join(parts[1:])[:80]}")
    length = await _headers(reader)
    return await _body(reader, length, REPLY_LIMIT, "answer")


async def read_request(reader: asyncio.StreamReader, limit: int = REQUEST_LIMIT) -> Incoming:
    """A request to a player: POST (the body), GET (the decoded path) or OPTIONS."""
    line = await _line(reader, "request line")
    method, _, rest = line.partition(" ")
    method = method.upper()
    if method == "GET":
        path = rest.rpartition(" ")[0] if " " in rest else rest
        await _headers(reader)
        return Incoming(method, unquote(path.removeprefix("/")).strip())
    if method == "OPTIONS":
        await _headers(reader)
        return Incoming(method, "")
    if method != "POST":
        raise WireError(Broken.MALFORMED, f"a {method[:20]!r} request; GGP uses POST")
    length = await _headers(reader)
    return Incoming(method, await _body(reader, length, limit, "request"))


async def _line(reader: asyncio.StreamReader, what: str) -> str:
    try:
        raw = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            raise WireError(Broken.CLOSED, f"closed the connection before its {what}") from None
        raise WireError(Broken.CLOSED, f"closed the connection within its {what}") from None
    except asyncio.LimitOverrunError:
        raise WireError(Broken.TOO_BIG, f"sent a {what} of over {HEADER_LIMIT} bytes") from None
    return raw.decode("latin-1").rstrip("\r\n")


async def _headers(reader: asyncio.StreamReader) -> int | None:
    """Read the headers to the blank line; the Content-Length, if one was given."""
    length: int | None = None
    total = 0
    while line := await _line(reader, "headers"):
        total += len(line) + 2
        if total > HEADER_LIMIT:
            raise WireError(Broken.TOO_BIG, f"sent headers of over {HEADER_LIMIT} bytes")
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            if not value.strip().isdigit():
                raise WireError(Broken.MALFORMED, f"a Content-Length of {value.strip()[:20]!r}")
            length = int(value)
    return length


async def _body(reader: asyncio.StreamReader, length: int | None, limit: int, what: str) -> str:
    if length is not None and length > limit:
        raise WireError(Broken.TOO_BIG, f"announced an {what} of {length} bytes, over {limit}")
    if length is not None:
        try:
            data = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise WireError(Broken.CLOSED, f"closed the connection within its {what}") from None
    else:
        # Without a length, the body ends where the connection does.
        buffer = bytearray()
        while chunk := await reader.read(_CHUNK):
            buffer += chunk
            if len(buffer) > limit:
                raise WireError(Broken.TOO_BIG, f"sent an {what} of over {limit} bytes")
        data = bytes(buffer)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise WireError(Broken.MALFORMED, f"an {what} that is not UTF-8") from None
