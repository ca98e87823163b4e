"""The arena's JSON API: what the pages show, submissions, and the organiser's controls.

Every request names its author by a bearer token (`Authorization: Bearer TOKEN`) or the
pages' sign-in cookie, looked up once by its hash (`auth`, which also refuses a cookie's
cross-site changes); what each author may read is `auth.may_read_private`'s to say. The
pages (`web`) are served beside the API. Every
client is a stranger until its token is found, so what one request may cost is bounded:
a header is measured before it is hashed, an archive is read no further than its cap and
within a deadline, a few archives at once, and a page of matches is at most `MAX_LIMIT`.
The endpoints that touch the database are plain functions, which Starlette runs in its
thread pool: the event loop, which the ladder and the intake share, never waits on them.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from referee.arena import auth, submissions, views, web
from referee.arena.bodies import SMALL_BODY_SECONDS, read_body
from referee.arena.db import Author
from referee.arena.errors import Busy, Forbidden, NotFound, Unauthorised
from referee.arena.home import Arena
from referee.arena.replays import Replays
from referee.arena.submissions import Refusal, SubmissionRefused
from referee.arena.watching import Watching
from referee.errors import ArenaError, SubmissionError
from referee.records.verify import Outcome

# Archives read at once: each is held in memory up to its cap until it is stored.
UPLOADS_AT_ONCE = 4
# The organiser's small JSON bodies (a reason).
SMALL_BODY = 4096
# How long the leaderboard, once rendered, is served as it is. Ratings are refitted at most
# once a second; a crowd reading it then costs a query per this, not one each.
LEADERBOARD_S = 0.5

_REFUSAL_STATUS = {
    Refusal.BAD_NAME: 400,
    Refusal.NOT_YOURS: 403,
    Refusal.TOO_OFTEN: 429,
    Refusal.TOO_LARGE: 413,
    Refusal.TAKEN: 409,
}
_ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (Unauthorised, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Busy, 503),
    (SubmissionError, 400),
    # A state that forbids it: suspending a bot that is not on the ladder.
    (ArenaError, 409),
)


@dataclass(frozen=True)
class Hooks:
    """What the API calls on the rest of the service."""

    # A version was queued (the intake's `notify`), with its id.
    submitted: Callable[[int], None]
    # The ladder's field may have changed: a bot suspended or reinstated.
    field_changed: Callable[[], None]
    # The ladder's state, JSON-ready; where its cluster is only if asked (for the organiser).
    ladder_status: Callable[[bool], Mapping[str, Any]]
    # Pause (True) or resume the ladder.
    set_paused: Callable[[bool], None]


def create_app(arena: Arena, hooks: Hooks) -> Starlette:
    """The API of `arena`, its changes told to `hooks`."""
    api = _Api(arena, hooks)
    gate = auth.Gate.new()
    routes = [
        Route("/api/me", api.me),
        Route("/api/leaderboard", api.leaderboard),
        Route("/api/status", api.status),
        Route("/api/bots", api.bots),
        Route("/api/bots/{name}", api.bot),
        Route("/api/bots/{name}/versions", api.submit, methods=["POST"]),
        Route("/api/bots/{name}/suspend", api.suspend, methods=["POST"]),
        Route("/api/bots/{name}/reinstate", api.reinstate, methods=["POST"]),
        Route("/api/versions/{id:int}", api.version),
        Route("/api/versions/{id:int}/steps/{kind}", api.step_log),
        Route("/api/matches", api.matches),
        Route("/api/matches/{key}", api.match),
        Route("/api/matches/{key}/logs/{role}", api.seat_log),
        Route("/api/matches/{key}/replay", api.replay, methods=["POST"]),
        Route("/api/matches/{key}/live", api.live),
        Route("/api/running", api.running),
        Route("/api/ladder/pause", api.pause, methods=["POST"]),
        Route("/api/ladder/resume", api.resume, methods=["POST"]),
        *web.routes(arena, gate, api.watching),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Response | Awaitable[Response]]] = {
        HTTPException: _http_error,
        SubmissionRefused: _refused,
        ArenaError: _arena_error,
        500: _internal_error,
    }
    guard = Middleware(auth.Guard, gate=gate)
    return Starlette(routes=routes, exception_handlers=handlers, middleware=[guard])


class _Api:
    def __init__(self, arena: Arena, hooks: Hooks) -> None:
        self.arena = arena
        self.hooks = hooks
        # A bot's version numbers are counted in the database; one submission at a time is
        # stored, so that two of one bot never take the same number.
        self.storing = asyncio.Lock()
        self.uploads = asyncio.Semaphore(UPLOADS_AT_ONCE)
        # The leaderboard's JSON and when it was rendered; None after an organiser's change.
        self.board: tuple[float, bytes] | None = None
        self.rendering = threading.Lock()
        self.replays = Replays(arena)
        self.watching = Watching(arena)

    def viewer(self, request: Request) -> Author | None:
        """The author whose token the request carries (`auth.viewer`)."""
        return auth.viewer(self.arena, request.scope)

    def author(self, request: Request) -> Author:
        """The author of the request, who must have given a token."""
        found = self.viewer(request)
        if found is None:
            raise Unauthorised("sign in, or give your token: Authorization: Bearer TOKEN")
        return found

    def organiser(self, request: Request) -> Author:
        found = self.author(request)
        if not found.organiser:
            raise Forbidden("only the organiser may do this")
        return found

    def me(self, request: Request) -> Response:
        return JSONResponse(views.me(self.arena, self.author(request)))

    def leaderboard(self, request: Request) -> Response:
        auth.may_read_leaderboard(self.arena, self.viewer(request))
        # Those that come while it is rendered wait for it, rather than render it again.
        with self.rendering:
            board = self.board
            if board is None or time.monotonic() - board[0] > LEADERBOARD_S:
                shown = JSONResponse(views.leaderboard(self.arena)).body
                board = self.board = (time.monotonic(), bytes(shown))
        return Response(board[1], media_type="application/json")

    def status(self, request: Request) -> Response:
        return JSONResponse(self._status(self.author(request)))

    def _status(self, viewer: Author) -> dict[str, Any]:
        return {
            "ladder": dict(self.hooks.ladder_status(viewer.organiser)),
            "intake": views.intake_status(self.arena),
            "running": views.running(self.arena),
        }

    def bots(self, request: Request) -> Response:
        return JSONResponse(views.bots(self.arena, self.author(request)))

    def bot(self, request: Request) -> Response:
        viewer = self.author(request)
        return JSONResponse(views.bot(self.arena, viewer, request.path_params["name"]))

    def version(self, request: Request) -> Response:
        viewer = self.author(request)
        return JSONResponse(views.version(self.arena, viewer, request.path_params["id"]))

    def step_log(self, request: Request) -> Response:
        viewer = self.author(request)
        found = views.step_log(
            self.arena, viewer, request.path_params["id"], request.path_params["kind"]
        )
        return JSONResponse(found)

    def matches(self, request: Request) -> Response:
        viewer = self.author(request)
        text = request.query_params.get("limit", str(views.DEFAULT_LIMIT))
        if not text.isdigit() or len(text) > 6 or int(text) < 1:
            raise HTTPException(400, f"limit {text[:20]!r}: a number from 1 to {views.MAX_LIMIT}")
        bot = request.query_params.get("bot")
        return JSONResponse(views.matches(self.arena, viewer, bot, int(text)))

    def match(self, request: Request) -> Response:
        viewer = self.author(request)
        return JSONResponse(views.match(self.arena, viewer, request.path_params["key"]))

    def seat_log(self, request: Request) -> Response:
        viewer = self.author(request)
        key, role = request.path_params["key"], request.path_params["role"]
        return JSONResponse(views.seat_log(self.arena, viewer, key, role))

    def replay(self, request: Request) -> Response:
        self.organiser(request)
        verdict = self.replays.verdict(request.path_params["key"])
        shown = {
            "key": request.path_params["key"],
            "verified": verdict.outcome is Outcome.VERIFIED,
            "problem": verdict.problem,
        }
        return JSONResponse(shown)

    def live(self, request: Request) -> Response:
        """A match as it is played: its state, and the frames of the steps after `after`."""
        self.author(request)
        text = request.query_params.get("after", "0")
        if not text.isdigit() or len(text) > 9:
            raise HTTPException(400, f"after {text[:20]!r}: a step number (0: the start)")
        return JSONResponse(self.watching.live(request.path_params["key"], int(text)))

    def running(self, request: Request) -> Response:
        """The matches being played, to watch."""
        self.author(request)
        return JSONResponse({"running": views.running(self.arena)})

    async def submit(self, request: Request) -> Response:
        author = await run_in_threadpool(self.author, request)
        name = request.path_params["name"]
        # Refused before a byte of the archive is read: another's bot, one too many.
        await run_in_threadpool(submissions.check, self.arena, author, name)
        limit = submissions.archive_limit(self.arena.config.submission)
        if self.uploads.locked():
            raise HTTPException(503, "too many submissions arriving at once; try again in a minute")
        async with self.uploads:
            data = await read_body(request, limit)
        if not data:
            raise HTTPException(400, "no archive: send its bytes as the request's body")
        async with self.storing:
            version = await run_in_threadpool(submissions.accept, self.arena, author, name, data)
        self.hooks.submitted(version.id)
        shown = {
            "id": version.id,
            "bot": name,
            "number": version.number,
            "state": version.state,
            "url": f"/api/versions/{version.id}",
        }
        return JSONResponse(shown, status_code=202)

    async def suspend(self, request: Request) -> Response:
        await run_in_threadpool(self.organiser, request)
        reason = _reason(await read_body(request, SMALL_BODY, SMALL_BODY_SECONDS))
        name = request.path_params["name"]
        version = await run_in_threadpool(submissions.suspend, self.arena, name, reason)
        self.board = None
        self.hooks.field_changed()
        return JSONResponse({"bot": name, "version": version.number, "state": version.state})

    def reinstate(self, request: Request) -> Response:
        self.organiser(request)
        name = request.path_params["name"]
        version = submissions.reinstate(self.arena, name)
        self.board = None
        self.hooks.field_changed()
        return JSONResponse({"bot": name, "version": version.number, "state": version.state})

    def pause(self, request: Request) -> Response:
        return self._set_paused(request, True)

    def resume(self, request: Request) -> Response:
        return self._set_paused(request, False)

    def _set_paused(self, request: Request, paused: bool) -> Response:
        organiser = self.organiser(request)
        self.hooks.set_paused(paused)
        return JSONResponse(self._status(organiser))


def _reason(body: bytes) -> str:
    """The reason in an organiser's `{"reason": "..."}`, or none for an empty body."""
    if not body.strip():
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        raise HTTPException(400, 'the body must be JSON: {"reason": "..."}') from None
    reason = data.get("reason", "") if isinstance(data, dict) else None
    if not isinstance(reason, str):
        raise HTTPException(400, 'the body must be JSON: {"reason": "..."}')
    return reason


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _http_error(_request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return _error(error.status_code, str(error.detail), error.headers)


def _refused(_request: Request, error: Exception) -> Response:
    assert isinstance(error, SubmissionRefused)
    headers = {}
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(error.retry_after_s)
    return _error(_REFUSAL_STATUS[error.why], str(error), headers)


def _arena_error(_request: Request, error: Exception) -> Response:
    status = next(code for kind, code in _ERROR_STATUS if isinstance(error, kind))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return _error(status, str(error), headers)


def _internal_error(_request: Request, _error_: Exception) -> Response:
    # Answered outside the middleware, which puts these on every other response.
    return _error(500, "internal error", auth.SECURITY_HEADERS)
