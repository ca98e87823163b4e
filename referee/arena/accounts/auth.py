"""Who a request is, whether it may change anything, and what it may read: the one home of
the arena's credentials as they arrive (a bearer token, or the sign-in cookie, which holds a
session's id and never the token: `sessions`), of the cross-site rules for the cookie, of
the Host a request may name, of the headers every response carries, and of the rule of who
reads a bot's private data (`may_read_private`).

A browser sends the cookie with every request to this host, including those another page
makes it send, so a request that the cookie authenticates may change nothing unless it
shows it came from one of the arena's own pages: an `X-CSRF-Token` header holding the
HMAC of the session id's hash under this process's secret (given to each page in
`<meta name="csrf-token">`, which another origin cannot read), and an `Origin`, when the
browser sends one, that is the arena's own. A bearer request is not a cookie request: no
other page can make a browser send an Authorization header here. Sign-in and sign-out are
plain forms, with no header to carry: they need a same-origin `Origin` instead.

The secret is made at each start and kept nowhere: nothing needs it to outlive the process
(every page reads its token afresh), and a secret that is never written cannot leak from
the arena's directory or its backups. A page opened before a restart is refused its next
change, with a line saying to reload it.

With a public URL configured (`arena: public_url`), the arena's own origin is that one,
not whatever a request's Host says: a request naming another Host is refused (421) before
any route sees it, so that no link, redirect or origin check is made from a Host a client
chose; and over https every response asks the browser to come back only over https (HSTS).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from starlette.datastructures import Headers
from starlette.requests import cookie_parser

from referee.arena.accounts import sessions
from referee.arena.store.db import Author
from referee.arena.store.errors import Unauthorised
from referee.arena.store.home import Arena
from referee.arena.store.tokens import MAX_TOKEN_CHARS, token_hash

# It holds a session's id (`sessions`), never a token.
COOKIE = "referee_session"
# Over https the cookie is a `__Host-` one: the browser keeps it only as set by this host,
# Secure, for every path, so a sibling subdomain cannot plant its own to sign a victim in
# as someone else.
SECURE_COOKIE = f"__Host-{COOKIE}"
CSRF_HEADER = "X-CSRF-Token"
# The forms that carry no CSRF header; each needs a same-origin Origin.
FORM_PATHS = frozenset({"/signin", "/signout"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_BEARER = "bearer "
# Nothing of a page may come from, go to, or be framed by another origin.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    # For browsers older than frame-ancestors.
    "X-Frame-Options": "DENY",
}
# When the public URL is https: a year, renewed by every response.
HSTS = ("Strict-Transport-Security", "max-age=31536000")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class Gate:
    """This process's CSRF secret, and the arena's public URL (an origin) if it has one."""

    secret: bytes
    public: str | None = None

    @classmethod
    def new(cls, public: str | None = None) -> Gate:
        return cls(secrets.token_bytes(32), public)

    def csrf(self, session_id: str) -> str:
        """The CSRF token of the pages of the session `session_id`: bound to that sign-in,
        so that it is worth nothing once the session ends."""
        hashed = token_hash(session_id)
        return hmac.new(self.secret, hashed.encode("ascii"), hashlib.sha256).hexdigest()

    def misdirected(self, scope: Scope) -> str | None:
        """Why a request must be refused for the Host it names (not the public URL's), or
        None."""
        if self.public is None:
            return None
        host = Headers(scope=scope).get("host", "").lower()
        wanted = self.public.split("://", 1)[1]
        if host != wanted:
            return f"this arena is {self.public}: Host {_shown(host)} is not its host"
        return None

    def refusal(self, scope: Scope) -> str | None:
        """Why an HTTP request must be refused as cross-site, or None."""
        if scope["method"] in SAFE_METHODS:
            return None
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        origin = None if origin is None else origin.lower()
        own = own_origin(scope, headers, self.public)
        if scope["path"] in FORM_PATHS:
            if origin != own:
                return f"cross-origin form refused: Origin {_shown(origin)} is not {own}"
            return None
        session_id = cookie_session(headers, over_https(scope, self.public))
        if "authorization" in headers or session_id is None:
            return None
        if origin is not None and origin != own:
            return f"cross-origin request refused: Origin {_shown(origin)} is not {own}"
        given = headers.get(CSRF_HEADER.lower(), "")
        if not hmac.compare_digest(
            given.encode("utf-8", "replace"), self.csrf(session_id).encode()
        ):
            return (
                f"this page is out of date (its {CSRF_HEADER} header is missing, or from"
                " before the arena last started): reload the page"
            )
        return None


class Guard:
    """ASGI middleware: refuses a cross-site change (403) before any route sees it, and puts
    the security headers on every response."""

    def __init__(self, app: App, gate: Gate) -> None:
        self.app = app
        self.gate = gate
        strict = gate.public is not None and gate.public.startswith("https://")
        hsts = [(HSTS[0].lower().encode(), HSTS[1].encode())] if strict else []
        self.headers = [*_RAW_HEADERS, *hsts]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *self.headers]
                # A page or an answer may hold an author's private data and the page's CSRF
                # token: kept by no cache, nor shown by the back button after a sign-out.
                # (The assets say their own.)
                if not any(name.lower() == b"cache-control" for name, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        misdirected = self.gate.misdirected(scope)
        refusal = misdirected or self.gate.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, secured)
            return
        body = json.dumps({"error": refusal}).encode()
        await secured(
            {
                "type": "http.response.start",
                "status": 403 if misdirected is None else 421,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await secured({"type": "http.response.body", "body": body})


_RAW_HEADERS = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]


def viewer(arena: Arena, scope: Scope) -> Author | None:
    """The author a request's headers name: by its bearer token, else by its cookie's
    session; None without either, or for a cookie of no session here (ended, expired, or
    another arena's on this host: the pages then offer to sign in). Unauthorised for a
    bearer header that is malformed, too long or no one's."""
    headers = Headers(scope=scope)
    header = headers.get("authorization")
    if header is not None:
        if len(header) > len(_BEARER) + MAX_TOKEN_CHARS or not header.lower().startswith(_BEARER):
            raise Unauthorised("the Authorization header must be: Bearer TOKEN")
        found = author_of(arena, header[len(_BEARER) :].strip())
        if found is None:
            raise Unauthorised("unknown token")
        return found
    session_id = cookie_session(headers, over_https(scope, arena.config.public_url))
    return None if session_id is None else sessions.author_of(arena.database, session_id)


def may_read_private(viewer: Author | None, author_id: int) -> bool:
    """The one rule: the author and the organiser read a bot's private data; no one else."""
    return viewer is not None and (viewer.organiser or viewer.id == author_id)


def may_read_leaderboard(arena: Arena, viewer: Author | None) -> None:
    """Everyone may, if the arena's leaderboard is public; else its authors: Unauthorised."""
    if viewer is None and not arena.config.public_leaderboard:
        raise Unauthorised("this arena's leaderboard is for its authors: give your token")


def author_of(arena: Arena, token: str) -> Author | None:
    """The author of `token`: one lookup by its hash (a revoked token has none)."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    with arena.database.session() as session:
        return session.scalar(select(Author).where(Author.token_hash == token_hash(token)))


def over_https(scope: Scope, public: str | None) -> bool:
    """Whether the request came over https (to this server, or to the proxy before it): as
    the public URL says, if there is one."""
    if public is not None:
        return public.startswith("https://")
    return bool(scope.get("scheme") == "https")


def address(scope: Scope) -> str:
    """The client's address, as the audit log keeps it (behind a local proxy, the one the
    proxy says in X-Forwarded-For, which uvicorn takes from it)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def cookie_name(secure: bool) -> str:
    return SECURE_COOKIE if secure else COOKIE


def credential(scope: Scope) -> str | None:
    """The credential a request carries, as sent and not yet checked: its Authorization
    header, else its sign-in cookie's value (under either of its names); None for neither.
    Whose request it is before `viewer` looks it up (`rates`)."""
    headers = Headers(scope=scope)
    cookies = cookie_parser("; ".join(headers.getlist("cookie")))
    return headers.get("authorization") or cookies.get(SECURE_COOKIE) or cookies.get(COOKIE)


def cookie_session(headers: Headers, secure: bool) -> str | None:
    """The sign-in cookie's session id, if one of an id's length is there: over https only
    the `__Host-` cookie's."""
    cookies = cookie_parser("; ".join(headers.getlist("cookie")))
    value = cookies.get(cookie_name(secure), "")
    return value if 0 < len(value) <= MAX_TOKEN_CHARS else None


def cookie_header(session_id: str, secure: bool) -> str:
    """The Set-Cookie value that signs a browser in to the session `session_id` (empty:
    signs it out). The browser keeps it as long as the session may last; the server ends
    the session itself, sooner if it is signed out or idle."""
    attributes = ["HttpOnly", "SameSite=Strict", "Path=/"]
    attributes += ["Secure"] if secure else []
    lasts = int(sessions.LIFETIME.total_seconds()) if session_id else 0
    attributes.append(f"Max-Age={lasts}")
    return "; ".join([f"{cookie_name(secure)}={session_id}", *attributes])


def own_origin(scope: Scope, headers: Headers, public: str | None) -> str:
    """This arena's origin: its public URL's, else as the request reached it (behind a
    proxy, its scheme is the one the proxy says in X-Forwarded-Proto, which uvicorn takes
    from a local proxy)."""
    if public is not None:
        return public
    host = headers.get("host", "")
    return f"{scope.get('scheme', 'http')}://{host}".lower()


def _shown(origin: str | None) -> str:
    return "(none)" if origin is None else repr(origin[:100])
