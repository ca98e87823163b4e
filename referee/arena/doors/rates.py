"""Requests kept to a rate for each client. One who asks again and again is answered 429 at
once, before any route reads the database or renders a page for them. So no client takes
more than its share of the process the ladder referees its matches in.

A client is the credential its requests carry (`auth.credential`: a bearer token, or the
sign-in cookie), and its address as `doors` counts it (an IPv6 /64 as one), whose bucket is
ADDRESS_SHARE clients' (a stranger making up a token for each request is still one
address). A local proxy's address is not counted: its clients cannot be told apart here.
Each client has a bucket of `Rate.burst` requests, filled at `Rate.per_s` a second: a page
and its script's first calls come at once, then a few a second. The assets are not counted:
they are files, and a browser asks for them with every page.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import OrderedDict

from starlette.types import ASGIApp, Receive, Scope, Send

from referee.arena.accounts.auth import credential
from referee.arena.doors.connections import LOCAL_PROXIES, client_of
from referee.arena.store.config import Rate

# The clients whose buckets are kept at most: the least recently seen is forgotten (and
# starts again full), so that a stranger's many addresses or made-up tokens cost bounded
# memory.
MOST_CLIENTS = 10_000
# An address's bucket is this many clients' (authors behind one address share it): what it
# bounds is one stranger making up credentials.
ADDRESS_SHARE = 4
# Not counted: the pages' files.
FREE_PREFIXES = ("/assets/", "/favicon.ico")


class Buckets:
    """Each client's bucket of requests, filled at its rate since it was last seen."""

    def __init__(self, rate: Rate, most: int = MOST_CLIENTS) -> None:
        self.rate = rate
        self._most = most
        self._lock = threading.Lock()
        # Each client's requests left, and when that was so.
        self._left: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, client: str, now: float | None = None) -> float:
        """One request of `client`'s: 0 if it may make it now, else the seconds until it may
        (and then it is not taken)."""
        now = time.monotonic() if now is None else now
        rate = self.rate
        with self._lock:
            left, at = self._left.pop(client, (float(rate.burst), now))
            left = min(float(rate.burst), left + (now - at) * rate.per_s)
            wait = 0.0 if left >= 1.0 else (1.0 - left) / rate.per_s
            self._left[client] = (left - 1.0 if wait == 0.0 else left, now)
            while len(self._left) > self._most:
                self._left.popitem(last=False)
        return wait

    def give_back(self, client: str) -> None:
        """Return the request `take` just took of `client`'s: another bucket refused it."""
        with self._lock:
            kept = self._left.get(client)
            if kept is not None:
                self._left[client] = (min(float(self.rate.burst), kept[0] + 1.0), kept[1])


def clients(scope: Scope) -> tuple[str | None, str | None]:
    """Whose buckets a request takes from: its credential's, and its address's (None for
    no credential, or a local proxy's address). The credential is kept only as a digest:
    the buckets hold no token."""
    sent = credential(scope)
    by_credential = None
    if sent:
        by_credential = hashlib.blake2b(sent.encode(), digest_size=16).hexdigest()
    address = scope.get("client")
    by_address = None
    if address and address[0] not in LOCAL_PROXIES:
        by_address = client_of(str(address[0]))
    return by_credential, by_address


class Limit:
    """ASGI middleware: a request past its client's rate is answered 429, with Retry-After,
    in one line of JSON."""

    def __init__(self, app: ASGIApp, rate: Rate) -> None:
        self.app = app
        self.rate = rate
        self.credentials = Buckets(rate)
        share = ADDRESS_SHARE
        self.addresses = Buckets(Rate(rate.per_s * share, rate.burst * share))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith(FREE_PREFIXES):
            await self.app(scope, receive, send)
            return
        credential, address = clients(scope)
        # A request refused takes from no bucket: a client's refused flood leaves its
        # address's allowance to the others behind it.
        wait, whose = 0.0, self.credentials
        if credential is not None:
            wait = self.credentials.take(credential)
        if wait == 0.0 and address is not None:
            wait, whose = self.addresses.take(address), self.addresses
            if wait > 0.0 and credential is not None:
                self.credentials.give_back(credential)
        if wait == 0.0:
            await self.app(scope, receive, send)
            return
        seconds = max(1, math.ceil(wait))
        rate = whose.rate
        client = "one client" if whose is self.credentials else "one address"
        said = (
            f"too many requests: at most {rate.burst} at once and {rate.per_s:g} a second"
            f" from {client}; try again in {seconds} s"
        )
        body = json.dumps({"error": said}, separators=(",", ":")).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(seconds).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
