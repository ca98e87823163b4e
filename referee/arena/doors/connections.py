"""The API's doors: how long a connection may take to say what it wants, and how many
connections one client may hold, so that no stranger can hold the arena's connections.

uvicorn serves the API with its h11 protocol, subclassed here (`Doors.config` gives it to
uvicorn). Every connection is under one deadline at a time, by where its request is:
- its request line and headers must all have come within `header_s` of the connection, or
  of the end of the answer before it: a header sent a byte at a time does not extend it;
- what is left of a body the arena did not read (it answered first: a refusal, a 404) must
  have come within `body_s` of that answer; a body the arena reads is read by
  `bodies.read_body`, within its own deadline and pace;
- a kept-alive connection with no byte of a next request is closed after `idle_s`
  (uvicorn's keep-alive);
- while the arena works on a request, or answers it, the client is under no deadline.
Past its deadline a connection is closed, without an answer.

Connections are counted by client address (an IPv6 client by its /64, which one machine
commonly has whole). An address holds at most `per_address`: a new connection past them
closes the address's longest idle one (kept alive after an answer, no byte of a next
request yet), which browsers expect of kept-alive connections and send again on a new one,
or, if none is idle, is itself closed at once. (A connection that has had no answer is
never idle: its request may be on its way.)
The arena holds at most `in_all`. Past them a new connection takes the place of one the
arena is waiting on for a request's headers (half-sent, or kept alive idle), the longest
held of the address that holds the most, if that holds more than the new one's address
(one more, with the new one): a client that sends its request at once is served, while
strangers holding many connections from a few addresses do not shut one another's in turn.
Otherwise the new one is closed at once. A local proxy's
connections carry all its clients' requests (it names each in X-Forwarded-For), so the
proxy's addresses are counted in all only.
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass
from enum import Enum
from typing import Any, cast

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

# A local proxy, as uvicorn's own default: the addresses it believes X-Forwarded-For from.
LOCAL_PROXIES = frozenset({"127.0.0.1", "::1"})


@dataclass(frozen=True)
class Limits:
    """What a connection may take: seconds, and connections."""

    # From the connection, or the end of the previous answer, to a request's last header.
    header_s: float = 10.0
    # From an answer to the end of the body the arena did not read.
    body_s: float = 10.0
    # A kept-alive connection with no byte of a next request (whole seconds: uvicorn's).
    idle_s: int = 5
    per_address: int = 32
    # A half-sent connection costs a socket and a few KiB: enough that 32 addresses are
    # needed to fill them (`serve` raises its open files' limit to hold them).
    in_all: int = 1024
    proxies: frozenset[str] = LOCAL_PROXIES


class _Wait(Enum):
    """What the arena waits for on a connection."""

    HEAD = "a request's line and headers"
    REST = "the rest of a body it did not read"
    NOTHING = "nothing: it works on a request or answers it"


class Doors:
    """The limits of one server's connections, and the connections open, by address."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._open: dict[str, dict[_Door, None]] = {}

    def config(self, app: Any, **options: Any) -> uvicorn.Config:
        """uvicorn's config for `app` behind these doors; `options` are uvicorn's others."""
        protocol = type("ArenaDoor", (_Door,), {"doors": self})
        return uvicorn.Config(
            app,
            http=cast("type[asyncio.Protocol]", protocol),
            # The arena speaks no WebSocket: an upgraded connection would leave these doors
            # (its protocol replaced), uncounted and under no deadline.
            ws="none",
            # The cap in all is the doors' (`enter`): uvicorn's would answer 503 to every
            # request while half-sent ones held it.
            limit_concurrency=None,
            timeout_keep_alive=self.limits.idle_s,
            forwarded_allow_ips=sorted(self.limits.proxies),
            **options,
        )

    def enter(self, door: _Door, address: str) -> bool:
        """Count a new connection from `address`; False if it must be closed at once."""
        proxy = address in self.limits.proxies
        key = self._key(address)
        held = self._open.setdefault(key, {})
        if not proxy and len(held) >= self.limits.per_address:
            idle = next((other for other in held if other.idle), None)
            if idle is None:
                self._forget(key)
                return False
            del held[idle]
            idle.shut()
        full = sum(map(len, self._open.values())) >= self.limits.in_all
        if full and not self._make_room(0 if proxy else len(held)):
            self._forget(key)
            return False
        held[door] = None
        return True

    def leave(self, door: _Door, address: str) -> None:
        """A connection counted by `enter` has ended (or was shut by it)."""
        key = self._key(address)
        self._open.get(key, {}).pop(door, None)
        self._forget(key)

    def _key(self, address: str) -> str:
        """Whose connections `address`'s are counted with: a local proxy's its own, any
        other's its client's (`client_of`)."""
        return address if address in self.limits.proxies else client_of(address)

    def _make_room(self, share: int) -> bool:
        """Shut the connection waited on for headers longest of the address that holds the
        most, if it holds more than the new connection's address would (its `share` and the
        new one); False if none may give way. (A stranger's connection shut for another of
        the same few addresses would only be opened again at once, and shut another: the new
        one is refused instead.) A local proxy's connections, each another client's, are
        never the most, and its new one holds no share."""
        strangers = [key for key in self._open if key not in self.limits.proxies]
        for key in sorted(strangers, key=lambda key: len(self._open[key]), reverse=True):
            held = self._open[key]
            if len(held) <= share + 1:
                return False
            waiting = next((door for door in held if door.awaits_headers), None)
            if waiting is not None:
                del held[waiting]
                waiting.shut()
                self._forget(key)
                return True
        return False

    def _forget(self, key: str) -> None:
        if not self._open.get(key, True):
            del self._open[key]


class _Door(H11Protocol):
    """uvicorn's h11 protocol under the doors' deadlines and counts."""

    doors: Doors

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._address: str | None = None
        self._waiting = _Wait.NOTHING
        self._timer: asyncio.TimerHandle | None = None
        self._answered = False

    @property
    def awaits_headers(self) -> bool:
        """Whether the arena waits on it for a request's headers: none has come whole since
        it was made or since its last answer."""
        return self._waiting is _Wait.HEAD and not self.transport.is_closing()

    @property
    def idle(self) -> bool:
        """Whether it is kept alive after an answer, and no byte of a next request has come."""
        return self._answered and self._waiting is _Wait.HEAD and not self.conn.trailing_data[0]

    def shut(self) -> None:
        """Close it, without an answer."""
        self._disarm()
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else ""
        if not self.doors.enter(self, address):
            transport.close()
            return
        self._address = address
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._address is not None:
            self.doors.leave(self, self._address)
            self._address = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        self._answered = True
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Put the connection under the deadline of what the arena now waits for: a new
        deadline when that changes, the same one while it does not."""
        if self.transport.is_closing():
            self._disarm()
            return
        waiting = self._now_waiting()
        if waiting is self._waiting:
            return
        self._waiting = waiting
        self._disarm()
        seconds = {_Wait.HEAD: self.doors.limits.header_s, _Wait.REST: self.doors.limits.body_s}
        if waiting in seconds:
            self._timer = self.loop.call_later(seconds[waiting], self.shut)

    def _now_waiting(self) -> _Wait:
        theirs, ours = self.conn.their_state, self.conn.our_state
        if theirs is h11.IDLE and ours is h11.IDLE:
            return _Wait.HEAD
        if theirs is h11.SEND_BODY and ours is h11.DONE:
            return _Wait.REST
        return _Wait.NOTHING

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def client_of(address: str) -> str:
    """Whose connections are counted together: an IPv4 address (one mapped into IPv6 too),
    an IPv6 address's /64, or the text itself if it is neither."""
    try:
        host = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(host, ipaddress.IPv6Address):
        if host.ipv4_mapped is not None:
            return str(host.ipv4_mapped)
        return str(ipaddress.IPv6Network((host, 64), strict=False))
    return str(host)
