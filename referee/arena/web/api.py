"""The arena's JSON API: what the pages show, submissions, and the organiser's controls.

Every request names its author by a bearer token (`Authorization: Bearer TOKEN`) or the
pages' sign-in cookie, looked up once by its hash (`auth`, which also refuses a cookie's
cross-site changes); what each author may read is `auth.may_read_private`'s to say. The
pages (`web`) are served beside the API. Every
client is a stranger until its token is found, so what one request may cost is bounded:
a header is measured before it is hashed, an archive is read no further than its cap,
within a deadline and at a pace, a few archives at once and one an author (`uploads`), and a
page of matches is at most `match_lists.MAX_LIMIT`.
The endpoints that touch the database are plain functions, which Starlette runs in its
thread pool: the event loop, which the ladder and the intake share, never waits on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from referee.arena.accounts import audit, auth, credentials
from referee.arena.accounts.audit import Action
from referee.arena.doors.bodies import SMALL_BODY_SECONDS, Stalled, read_body
from referee.arena.doors.rates import Limit
from referee.arena.doors.uploads import Uploads
from referee.arena.intake import submissions
from referee.arena.intake.submissions import Refusal, SubmissionRefused
from referee.arena.ladder import final
from referee.arena.reading import match_lists, views
from referee.arena.reading.fresh import Fresh
from referee.arena.replays import downloads
from referee.arena.replays.facts import Kept
from referee.arena.replays.pool import Replays, requester
from referee.arena.replays.watching import Watching
from referee.arena.store.db import Author, Version
from referee.arena.store.disk_use import DiskMeter
from referee.arena.store.errors import Busy, Forbidden, NotFound, Unauthorised
from referee.arena.store.home import Arena
from referee.arena.store.queries import storable, whole_number
from referee.arena.web import pages
from referee.errors import ArenaError, SubmissionError

# The organiser's small JSON bodies (a reason).
SMALL_BODY = 4096
# The most rounds a final may have, as `referee arena final --rounds` allows.
MAX_ROUNDS = 1000
# How long the leaderboard and the lists of matches, once rendered, are served as they are
# (`fresh`). Ratings are refitted at most once a second, and a match is played in a few.
LEADERBOARD_S = 1.0
MATCHES_S = 1.0
BOTS_S = 1.0

_REFUSAL_STATUS = {
    Refusal.BAD_NAME: 400,
    Refusal.NOT_YOURS: 403,
    Refusal.TOO_OFTEN: 429,
    Refusal.TOO_LARGE: 413,
    Refusal.TAKEN: 409,
    Refusal.LOOK_ALIKE: 409,
    Refusal.CLOSED: 403,
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
    # Close submissions, pause the ladder and play the final (its format and rounds): its
    # status; ArenaError when it cannot be (`final_play`).
    play_final: Callable[[str, int], Mapping[str, Any]]
    # The final the arena is playing or has played, since it started.
    final_status: Callable[[], Mapping[str, Any]]


def create_app(
    arena: Arena, hooks: Hooks, uploads: Uploads | None = None, meter: DiskMeter | None = None
) -> Starlette:
    """The API of `arena`, its changes told to `hooks`, its archives read in `uploads`'
    slots (by default, `uploads.SLOTS` at `bodies.Pace()`), its disk measured by `meter` (by
    default, one that takes its first measure when first asked)."""
    api = _Api(arena, hooks, uploads or Uploads(), meter or DiskMeter(arena))
    gate = auth.Gate.new(arena.config.public_url)
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
        Route("/api/matches/{key}/transcript", api.transcript),
        Route("/api/matches/{key}/ggp", api.ggp_export),
        Route("/api/matches/{key}/live", api.live),
        Route("/api/running", api.running),
        Route("/api/final", api.final),
        Route("/api/final", api.play_final, methods=["POST"]),
        Route("/api/ladder/pause", api.pause, methods=["POST"]),
        Route("/api/ladder/resume", api.resume, methods=["POST"]),
        Route("/api/authors", api.authors),
        Route("/api/authors/{name}/token", api.replace_token, methods=["POST"]),
        Route("/api/authors/{name}/revoke", api.revoke_token, methods=["POST"]),
        Route("/api/authors/{name}/signout", api.sign_out_everywhere, methods=["POST"]),
        Route("/api/audit", api.audit),
        Route("/api/disk", api.disk),
        *pages.routes(arena, gate, api.facts, api.watching, api.replays),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Response | Awaitable[Response]]] = {
        HTTPException: _http_error,
        SubmissionRefused: _refused,
        ArenaError: _arena_error,
        500: _internal_error,
    }
    guard = Middleware(auth.Guard, gate=gate)
    # Inside the guard: a refusal for the rate carries the security headers too.
    limit = Middleware(Limit, rate=arena.config.requests)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            # The replays' workers end with the app, and the replays under way with them;
            # and a measure of the disk under way.
            await asyncio.to_thread(api.replays.close)
            await asyncio.to_thread(api.meter.close)

    return Starlette(
        routes=routes, exception_handlers=handlers, middleware=[guard, limit], lifespan=lifespan
    )


class _Api:
    def __init__(self, arena: Arena, hooks: Hooks, uploads: Uploads, meter: DiskMeter) -> None:
        self.arena = arena
        self.hooks = hooks
        # A bot's version numbers are counted in the database; one submission at a time is
        # stored, so that two of one bot never take the same number.
        self.storing = asyncio.Lock()
        self.uploads = uploads
        # The leaderboard's JSON and when it was rendered; None after an organiser's change.
        self.board = Fresh(LEADERBOARD_S)
        # The lists of matches, by what was asked: a list of 200 is a query of 200 matches
        # with their seats, which an author asking for it in a loop would make again and
        # again in the ladder's process.
        self.lists = Fresh(MATCHES_S)
        # Every bot with its newest version and the organiser's, the organiser's page's
        # list: a season's thousand bots, asked for every 1.5 s while the page is open.
        self.bot_list = Fresh(BOTS_S)
        # Every author and their sessions, the organiser's other list: a season's thousand.
        self.author_list = Fresh(BOTS_S)
        # The replays of the match pages, the GGP exports and the organiser's, in one pool of
        # workers, each requester in their turn.
        # The matches' facts that their pages, replays and live views ask for, finished
        # ones kept.
        self.facts = Kept(arena)
        self.replays = Replays(arena, self.facts)
        self.watching = Watching(arena, self.facts)
        # The disk by author, for the organiser: measured in a thread, kept a while.
        self.meter = meter

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
        shown = self.board.get("", lambda: _json(views.leaderboard(self.arena)))
        return Response(shown, media_type="application/json")

    def final(self, request: Request) -> Response:
        """The season's final: whether submissions are closed, and its standings and report
        once it has been played; for those who may read the leaderboard."""
        auth.may_read_leaderboard(self.arena, self.viewer(request))
        return JSONResponse(final.published(self.arena))

    def status(self, request: Request) -> Response:
        return JSONResponse(self._status(self.author(request)))

    async def play_final(self, request: Request) -> Response:
        """Close submissions and play the final (the organiser's): `{"format": ...,
        "rounds": N}`, both optional; 202 with the final's status."""
        organiser = await run_in_threadpool(self.organiser, request)
        fmt, rounds = _final_of(await read_body(request, SMALL_BODY, SMALL_BODY_SECONDS))
        status = await run_in_threadpool(self.hooks.play_final, fmt, rounds)
        await run_in_threadpool(
            self.noted, request, Action.FINAL, organiser, f"final ({fmt}, {rounds} rounds)"
        )
        self.board.clear()
        return JSONResponse(dict(status), status_code=202)

    def _status(self, viewer: Author) -> dict[str, Any]:
        status = {
            "ladder": dict(self.hooks.ladder_status(viewer.organiser)),
            "intake": views.intake_status(self.arena),
            "running": views.running(self.arena),
        }
        if viewer.organiser:
            status["final"] = dict(self.hooks.final_status())
        return status

    def bots(self, request: Request) -> Response:
        viewer = self.author(request)
        shown = self.bot_list.get("", lambda: _json(views.bots(self.arena, viewer)))
        return Response(shown, media_type="application/json")

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
        try:
            asked = match_lists.parse_query(request.query_params.multi_items())
        except match_lists.BadQuery as error:
            raise HTTPException(400, str(error)) from None
        shown = self.lists.get(asked, lambda: _json(views.matches(self.arena, viewer, asked)))
        return Response(shown, media_type="application/json")

    def match(self, request: Request) -> Response:
        viewer = self.author(request)
        return JSONResponse(views.match(self.arena, viewer, request.path_params["key"]))

    def seat_log(self, request: Request) -> Response:
        viewer = self.author(request)
        key, role = request.path_params["key"], request.path_params["role"]
        return JSONResponse(views.seat_log(self.arena, viewer, key, role))

    def transcript(self, request: Request) -> Response:
        self.author(request)
        return _download(downloads.transcript(self.arena, self.facts, request.path_params["key"]))

    def ggp_export(self, request: Request) -> Response:
        asker = requester(self.author(request), auth.address(request.scope))
        key = request.path_params["key"]
        return _download(downloads.ggp_export(self.replays, asker, key))

    def replay(self, request: Request) -> Response:
        organiser = self.organiser(request)
        asker = requester(organiser, auth.address(request.scope))
        verdict = self.replays.verdict(asker, request.path_params["key"])
        said = "verified" if verdict.verified else "does not verify"
        self.noted(request, Action.REPLAYED, organiser, f"match {request.path_params['key']}", said)
        shown = {
            "key": request.path_params["key"],
            "verified": verdict.verified,
            "problem": verdict.problem,
        }
        return JSONResponse(shown)

    def live(self, request: Request) -> Response:
        """A match as it is played: its state, and the frames of the steps after `after`."""
        author = self.author(request)
        text = request.query_params.get("after", "0")
        after = whole_number(text, 9)
        if after is None:
            raise HTTPException(400, f"after {text[:20]!r}: a step number (0: the start)")
        return JSONResponse(self.watching.live(request.path_params["key"], after, author))

    def running(self, request: Request) -> Response:
        """The matches being played, to watch."""
        self.author(request)
        return JSONResponse({"running": views.running(self.arena)})

    async def submit(self, request: Request) -> Response:
        author = await run_in_threadpool(self.author, request)
        name = request.path_params["name"]
        database, address = self.arena.database, auth.address(request.scope)
        try:
            version = await self._submit(request, author, name)
        except Stalled as error:
            # Recorded apart from the refusals: stalls count in the author's hourly cap.
            stalled = functools.partial(audit.record, database, Action.UPLOAD_STALLED, author.name)
            await run_in_threadpool(stalled, address, f"bot {name[:60]}", error.detail)
            raise
        except (ArenaError, HTTPException) as error:
            said = error.detail if isinstance(error, HTTPException) else str(error)
            refused = functools.partial(audit.submission_refused, database, author.name)
            await run_in_threadpool(refused, address, f"bot {name[:60]}", said)
            raise
        taken = functools.partial(audit.record, database, Action.SUBMITTED, author.name)
        await run_in_threadpool(taken, address, f"bot {name} v{version.number}")
        self.hooks.submitted(version.id)
        shown = {
            "id": version.id,
            "bot": name,
            "number": version.number,
            "state": version.state,
            "url": f"/api/versions/{version.id}",
        }
        return JSONResponse(shown, status_code=202)

    async def _submit(self, request: Request, author: Author, name: str) -> Version:
        # Refused before a byte of the archive is read: another's bot, one too many.
        await run_in_threadpool(submissions.check, self.arena, author, name)
        limit = submissions.archive_limit(self.arena.config.submission)
        data = await self.uploads.read(request, author.id, limit)
        if not data:
            raise HTTPException(400, "no archive: send its bytes as the request's body")
        async with self.storing:
            return await run_in_threadpool(submissions.accept, self.arena, author, name, data)

    async def suspend(self, request: Request) -> Response:
        organiser = await run_in_threadpool(self.organiser, request)
        reason = _reason(await read_body(request, SMALL_BODY, SMALL_BODY_SECONDS))
        name = request.path_params["name"]
        version = await run_in_threadpool(submissions.suspend, self.arena, name, reason)
        noted = functools.partial(self.noted, request, Action.SUSPENDED, organiser)
        await run_in_threadpool(noted, f"bot {name} v{version.number}", version.reason)
        self.board.clear()
        self.bot_list.clear()
        self.hooks.field_changed()
        return JSONResponse({"bot": name, "version": version.number, "state": version.state})

    def reinstate(self, request: Request) -> Response:
        organiser = self.organiser(request)
        name = request.path_params["name"]
        version = submissions.reinstate(self.arena, name)
        self.noted(request, Action.REINSTATED, organiser, f"bot {name} v{version.number}")
        self.board.clear()
        self.bot_list.clear()
        self.hooks.field_changed()
        return JSONResponse({"bot": name, "version": version.number, "state": version.state})

    def pause(self, request: Request) -> Response:
        return self._set_paused(request, True)

    def resume(self, request: Request) -> Response:
        return self._set_paused(request, False)

    def _set_paused(self, request: Request, paused: bool) -> Response:
        organiser = self.organiser(request)
        self.hooks.set_paused(paused)
        self.noted(request, Action.PAUSED if paused else Action.RESUMED, organiser, "ladder")
        return JSONResponse(self._status(organiser))

    def authors(self, request: Request) -> Response:
        self.organiser(request)
        shown = self.author_list.get("", self._authors)
        return Response(shown, media_type="application/json")

    def _authors(self) -> bytes:
        found = credentials.accounts(self.arena.database)
        return _json({"authors": [account.shown() for account in found]})

    def replace_token(self, request: Request) -> Response:
        organiser, name = self._account(request)
        token = credentials.replace_token(self.arena.database, name)
        self.noted(request, Action.TOKEN_REPLACED, organiser, f"author {name}")
        self.author_list.clear()
        # Shown once, here: the arena keeps only its hash.
        return JSONResponse({"author": name, "token": token})

    def revoke_token(self, request: Request) -> Response:
        organiser, name = self._account(request)
        ended = credentials.revoke_token(self.arena.database, name)
        self.noted(request, Action.TOKEN_REVOKED, organiser, f"author {name}", _ended(ended))
        self.author_list.clear()
        return JSONResponse({"author": name, "sessions_ended": ended})

    def sign_out_everywhere(self, request: Request) -> Response:
        organiser, name = self._account(request)
        ended = credentials.sign_out_everywhere(self.arena.database, name)
        self.noted(request, Action.SESSIONS_REVOKED, organiser, f"author {name}", _ended(ended))
        self.author_list.clear()
        return JSONResponse({"author": name, "sessions_ended": ended})

    def _account(self, request: Request) -> tuple[Author, str]:
        """The organiser, and the author whose account they change: not their own, which
        the command line changes (a slip here would lock the organiser out)."""
        organiser = self.organiser(request)
        name = request.path_params["name"]
        if name == organiser.name:
            raise ArenaError(
                "the organiser's own token is changed on the arena's machine:"
                f" referee arena author token DIR {organiser.name}"
            )
        return organiser, name

    def audit(self, request: Request) -> Response:
        self.organiser(request)
        limit = _number(request, "limit", audit.DEFAULT_LIMIT, audit.MAX_LIMIT)
        before = _number(request, "before", None, 2**31 - 1)
        found = audit.entries(self.arena.database, before, limit)
        # The cursor of the next page: the oldest row of this one, if there may be more.
        after = found[-1].id if len(found) == limit else None
        return JSONResponse({"entries": [entry.shown() for entry in found], "before": after})

    def disk(self, request: Request) -> Response:
        """What each author's bots take of the arena's disk (`disk_use`)."""
        self.organiser(request)
        return JSONResponse(self.meter.current().shown())

    def noted(
        self, request: Request, action: Action, who: Author, subject: str, detail: str = ""
    ) -> None:
        """An organiser's action, in the audit log."""
        address = auth.address(request.scope)
        audit.record(self.arena.database, action, who.name, address, subject, detail)


def _ended(count: int) -> str:
    return f"{count} session{'' if count == 1 else 's'} ended"


def _number(request: Request, name: str, default: int | None, most: int) -> Any:
    """A query's whole number from 1 to `most`, or `default` without it; 400 for another."""
    text = request.query_params.get(name)
    if text is None:
        return default
    number = whole_number(text, 10)
    if number is None or not 1 <= number <= most:
        raise HTTPException(400, f"{name} {text[:20]!r}: a number from 1 to {most}")
    return number


def _download(file: downloads.Download) -> Response:
    disposition = f'attachment; filename="{file.name}"'
    headers = {"Content-Disposition": disposition}
    return Response(file.data, media_type="application/json", headers=headers)


def _final_of(body: bytes) -> tuple[str, int]:
    """The format and rounds of an organiser's `{"format": "...", "rounds": N}`, each
    optional (a round robin of one round)."""
    shape = 'the body must be JSON: {"format": "round-robin" or "swiss", "rounds": N}'
    try:
        data = json.loads(body) if body.strip() else {}
    except (ValueError, RecursionError):
        raise HTTPException(400, shape) from None
    if not isinstance(data, dict) or set(data) - {"format", "rounds"}:
        raise HTTPException(400, shape)
    fmt, rounds = data.get("format", "round-robin"), data.get("rounds", 1)
    if fmt not in final.FORMATS:
        raise HTTPException(400, f"format: give one of {', '.join(final.FORMATS)}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise HTTPException(400, f"rounds: a whole number from 1 to {MAX_ROUNDS}")
    return fmt, rounds


def _reason(body: bytes) -> str:
    """The reason in an organiser's `{"reason": "..."}`, or none for an empty body."""
    if not body.strip():
        return ""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        # RecursionError: JSON nested past the parser's depth.
        raise HTTPException(400, 'the body must be JSON: {"reason": "..."}') from None
    # Any other key is a mistake (`reasons`, say), not a suspension without a reason.
    known = isinstance(data, dict) and set(data) <= {"reason"}
    reason = data.get("reason", "") if known else None
    if not isinstance(reason, str):
        raise HTTPException(400, 'the body must be JSON: {"reason": "..."}')
    if not storable(reason):
        raise HTTPException(400, "the reason must be text: no NUL, no lone surrogate")
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
    if isinstance(error, Busy) and error.retry_after_s is not None:
        headers = {"Retry-After": str(error.retry_after_s)}
    return _error(status, str(error), headers)


def _internal_error(_request: Request, _error_: Exception) -> Response:
    # Answered outside the middleware, which puts these on every other response.
    return _error(500, "internal error", auth.SECURITY_HEADERS)


def _json(shown: Any) -> bytes:
    return bytes(JSONResponse(shown).body)
