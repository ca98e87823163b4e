"""The arena's pages: small HTML shells, rendered from the templates in `templates/` with
every value escaped, that the arena's script (`assets/arena.js`) fills from the JSON API of
the same origin and keeps live by polling it. What a page shows is what the API gives its
viewer: a page holds nothing the viewer's token may not read. The match page is the
exception that is rendered here: the report's viewer (`match_viewer`) of the verified
transcript, which a replay worker makes (`replays`).

Sign-in takes a token from a form and begins a session (`sessions`), whose id, never the
token, goes in an HttpOnly cookie (`auth`) that the API then takes as it takes a bearer
token; sign-out ends the session on the server. Neither a token nor a session id ever goes
in a URL. Each sign-in, failed sign-in and sign-out is in the audit log (`audit`).
Nothing a page loads comes from another origin: its script and style are the arena's
(`/assets/`), and the Content-Security-Policy (`auth.SECURITY_HEADERS`) forbids anything
else.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

from referee.arena.accounts import audit, auth, sessions
from referee.arena.accounts.auth import Gate
from referee.arena.doors.bodies import SMALL_BODY_SECONDS, read_body
from referee.arena.intake import submissions
from referee.arena.ladder.final import published, report_page
from referee.arena.reading import views
from referee.arena.replays.facts import Kept
from referee.arena.replays.pool import Replays, requester
from referee.arena.replays.watching import Watching
from referee.arena.store.db import Author
from referee.arena.store.errors import Busy, Forbidden, NotFound, Unauthorised
from referee.arena.store.home import Arena
from referee.arena.store.manifest import BOT_NAME, MAX_BOT_NAME
from referee.arena.web.guide import ARCHIVE_TYPE, guide
from referee.errors import ArenaError
from referee.report import pages as report_pages

_ARENA_ASSETS = resources.files("referee.arena.web") / "assets"
_TYPES = {
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml",
}
# The assets a page may load: the arena's own, and the report's viewer's.
_OURS = (
    "arena.js",
    "arena.css",
    "accounts.js",
    "board.js",
    "live.js",
    "author.js",
    "favicon.svg",
    "disk.js",
)
_REPORTS = ("report.js", "report.css")
# The matches page's filters (`match_lists`), which its form shows as given.
_MATCH_FILTERS = ("bot", "opponent", "game", "result")
# A sign-in form: a token and where to go next. Anything longer is not one.
FORM_LIMIT = 4096
# Match pages kept as rendered: a finished match's transcript never changes, so a crowd that
# opens one match replays it once, not once each (replays take a core, a few at once).
SHOWN_MATCHES = 64
# Where a sign-in may send the browser: a path of this arena, never another site
# (`//host`, `/\\host` are other sites to a browser).
_LOCAL_PATH = re.compile(r"/(?![/\\])[A-Za-z0-9\-._~!$&'()*+,;=:@/%?#]{0,500}")
# The read model's refusals as a page shows them: the status the API gives each, what the
# page tells the script, and the line that says why. A page of a thing not found cannot be
# titled by it: it is titled "No such ...".
_REFUSALS: tuple[tuple[type[ArenaError], int, str, str], ...] = (
    (Forbidden, 403, "forbidden", "{error}"),
    (NotFound, 404, "missing", "{error}"),
    (Busy, 503, "missing", "Busy: {error}."),
)


@dataclass(frozen=True)
class _Viewer:
    """Who looks at a page, and the CSRF token their page's changes carry."""

    author: Author | None
    csrf: str

    @property
    def organiser(self) -> bool:
        return self.author is not None and self.author.organiser


@dataclass(frozen=True)
class _Rendered:
    """A match page's body: the report's viewer (`html`) and the seats whose logs it offers,
    or why the transcript does not verify."""

    html: Markup | None
    seats: tuple[tuple[str, str], ...]
    problem: str | None


_Handler = Callable[["_Pages", Request, _Viewer], Response]


def routes(
    arena: Arena, gate: Gate, facts: Kept, watching: Watching, replays: Replays
) -> list[Route]:
    """The pages' routes, served beside the API. The match pages find their matches in the
    API's `facts` and replay their transcripts in its `replays`, a few at once for each
    reader; a match not done is shown as far as it has been played, from its `watching`."""
    pages = _Pages(arena, gate, facts, replays, watching)
    return [
        Route("/", pages.leaderboard),
        Route("/signin", pages.signin_form, methods=["GET"]),
        Route("/signin", pages.signin, methods=["POST"]),
        Route("/signout", pages.signout, methods=["POST"]),
        Route("/submit", pages.submit),
        Route("/versions/{id:int}", pages.version),
        Route("/bots/{name}", pages.bot),
        Route("/matches", pages.matches),
        Route("/matches/{key}", pages.match),
        Route("/organiser", pages.organiser),
        Route("/organiser/audit", pages.audit),
        Route("/assets/{name}", pages.asset),
        Route("/write-a-bot", pages.write_a_bot),
        Route("/starters/{file}", pages.starter),
        Route("/me", pages.home),
        Route("/final", pages.final_index),
        Route("/final/{path:path}", pages.final),
        Route("/favicon.ico", pages.favicon),
        # Last: any other page asked for is a page not found.
        _Elsewhere("/{path:path}", pages.missing),
    ]


class _Elsewhere(Route):
    """A route for the pages no other route is: any path a browser GETs, but none of the
    API's (whose 404 is JSON), nor another method (refused as the router refuses it, and 405
    where another route has the path)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return Match.NONE, {}
        if scope["path"].startswith("/api/"):
            return Match.NONE, {}
        return super().matches(scope)


def landing(author: Author) -> str:
    """Where a sign-in that asked for no page goes: the organiser to their page, an author
    to their bots."""
    return "/organiser" if author.organiser else "/me"


def _mib(size: int) -> str:
    """A size as the pages say it, rounded down to a tenth of a MiB: a limit so said is
    never more than the arena takes."""
    return f"{math.floor(size / 2**20 * 10) / 10:g} MiB"


def local_path(target: str) -> str:
    """`target` if it is a path of this arena, else the leaderboard's: no open redirect."""
    return target if _LOCAL_PATH.fullmatch(target) else "/"


def _signed_in(handler: _Handler) -> Callable[[_Pages, Request], Response]:
    """A page for signed-in viewers only: anyone else is sent to the sign-in form, and from
    there back to this page."""

    @functools.wraps(handler)
    def page(pages: _Pages, request: Request) -> Response:
        viewer = pages.viewer(request)
        if viewer.author is None:
            here = local_path(request.url.path)
            return RedirectResponse(f"/signin?next={quote(here, safe='/')}", status_code=303)
        return handler(pages, request, viewer)

    return page


class _Pages:
    def __init__(
        self, arena: Arena, gate: Gate, facts: Kept, replays: Replays, watching: Watching
    ) -> None:
        self.arena = arena
        self.gate = gate
        self.facts = facts
        self.replays = replays
        self.watching = watching
        # Match pages as rendered, by key, the most recently shown last.
        self.shown: OrderedDict[str, _Rendered] = OrderedDict()
        self.shown_lock = threading.Lock()
        # The replay under way of each match page asked for, that the others wait for.
        self.flights: dict[str, threading.Lock] = {}

    def viewer(self, request: Request) -> _Viewer:
        author = auth.viewer(self.arena, request.scope)
        session_id = auth.cookie_session(request.headers, self.secure(request))
        # A page read with a bearer token needs no CSRF token: only a cookie's changes do.
        csrf = "" if author is None or session_id is None else self.gate.csrf(session_id)
        return _Viewer(author, csrf)

    def secure(self, request: Request) -> bool:
        return auth.over_https(request.scope, self.arena.config.public_url)

    def page(
        self,
        template: str,
        viewer: _Viewer,
        title: str,
        page: str,
        data: dict[str, str] | None = None,
        status: int = 200,
        report: bool = False,
        **context: Any,
    ) -> HTMLResponse:
        """A whole page of `template` in the arena's layout (`base.html`), given `context`:
        `page` and `data` tell the script what to fill in; `report` loads the report's
        viewer."""
        text = _TEMPLATES.get_template(template).render(
            arena=self.arena.config.tournament.name,
            # What checks the arena's transcripts (`referee replay --verify --key`).
            arena_key=self.arena.key.public,
            viewer=viewer,
            title=title,
            page=page,
            data=data or {},
            report=report,
            **context,
        )
        return HTMLResponse(text, status_code=status)

    def refused(
        self, viewer: _Viewer, title: str, error: ArenaError, what: str = "page"
    ) -> Response:
        """The page of a refusal (`_REFUSALS`), with the status the API gives the same
        refusal: titled `title`, or "No such `what`" for a thing not found."""
        status, page, line = next(row[1:] for row in _REFUSALS if isinstance(error, row[0]))
        titled = f"No such {what}" if isinstance(error, NotFound) else title
        problem = line.format(error=error)
        shown = self.page("problem.html", viewer, titled, page, status=status, problem=problem)
        if isinstance(error, Busy) and error.retry_after_s is not None:
            shown.headers["Retry-After"] = str(error.retry_after_s)
        return shown

    def leaderboard(self, request: Request) -> Response:
        viewer = self.viewer(request)
        try:
            auth.may_read_leaderboard(self.arena, viewer.author)
        except Unauthorised:
            return self.page("leaderboard.html", viewer, "Leaderboard", "closed", closed=True)
        final = published(self.arena)
        return self.page(
            "leaderboard.html", viewer, "Leaderboard", "leaderboard", closed=False, final=final
        )

    def final_index(self, request: Request) -> Response:
        return RedirectResponse("/final/", status_code=308)

    def final(self, request: Request) -> Response:
        """A page of the season's final report, as `referee arena final` wrote it: for those
        who may read the leaderboard."""
        viewer = self.viewer(request)
        try:
            auth.may_read_leaderboard(self.arena, viewer.author)
        except Unauthorised:
            here = local_path(request.url.path)
            return RedirectResponse(f"/signin?next={quote(here, safe='/')}", status_code=303)
        try:
            found = report_page(self.arena, request.path_params["path"])
            title, body = report_pages.title_and_body(found.read_text(encoding="utf-8"))
        except NotFound as error:
            return self.refused(viewer, "", error, what="page of the final")
        except (OSError, ValueError):
            # Replaced by a final played again while it was read: the next load finds it.
            refusal = Busy("the final's report is being written anew; load the page again")
            return self.refused(viewer, "The final", refusal)
        # The report's page in the arena's layout: the header, a way back and a sign-out.
        # Its body is the report's own HTML, escaped where the report made it.
        return self.page("final.html", viewer, title, "final", report=True, body=Markup(body))

    def signin_form(self, request: Request) -> Response:
        asked = request.query_params.get("next", "")
        target = local_path(asked) if asked else ""
        return self._signin_page(self.viewer(request), target)

    def _signin_page(
        self, viewer: _Viewer, target: str, refused: str = "", status: int = 200
    ) -> Response:
        """The sign-in form, and, if `refused`, the line that says why it was (`status`)."""
        return self.page(
            "signin.html",
            viewer,
            "Sign in",
            "signin",
            status=status,
            target=target,
            refused=refused,
        )

    async def signin(self, request: Request) -> Response:
        body = await read_body(request, FORM_LIMIT, SMALL_BODY_SECONDS)
        try:
            fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
        except ValueError:
            fields = {}
        token = fields.get("token", [""])[0].strip()
        asked = fields.get("next", [""])[0]
        target = local_path(asked) if asked else ""
        return await run_in_threadpool(self._sign_in, request, token, target)

    def _sign_in(self, request: Request, token: str, target: str) -> Response:
        database, address = self.arena.database, auth.address(request.scope)
        author = auth.author_of(self.arena, token)
        if author is None:
            # Recorded without what was given: a token mistyped is most of someone's token.
            wait = audit.signin_failed(database, address)
            if wait is not None:
                line = f"Too many failed sign-ins from your address: try again in {wait} s."
                limited = self._signin_page(_Viewer(None, ""), target, line, 429)
                limited.headers["Retry-After"] = str(wait)
                return limited
            line = "That token is no author's in this arena: check it and try again."
            return self._signin_page(_Viewer(None, ""), target, line, 401)
        # A session is always a new one, whatever cookie came with the form: one planted
        # before the sign-in is ended, never taken up.
        planted = auth.cookie_session(request.headers, self.secure(request))
        if planted is not None:
            sessions.end(database, planted)
        session_id = sessions.begin(database, author.id)
        audit.record(database, audit.Action.SIGNIN, author.name, address, f"author {author.name}")
        target = target or landing(author)
        response = RedirectResponse(target, status_code=303)
        response.headers["set-cookie"] = auth.cookie_header(session_id, self.secure(request))
        return response

    def signout(self, request: Request) -> Response:
        session_id = auth.cookie_session(request.headers, self.secure(request))
        name = None if session_id is None else sessions.end(self.arena.database, session_id)
        if name is not None:
            address = auth.address(request.scope)
            audit.record(self.arena.database, audit.Action.SIGNOUT, name, address, f"author {name}")
        response = RedirectResponse("/", status_code=303)
        response.headers["set-cookie"] = auth.cookie_header("", self.secure(request))
        return response

    @_signed_in
    def submit(self, request: Request, viewer: _Viewer) -> Response:
        caps = self.arena.config.submission
        archive = submissions.archive_limit(caps)
        data = {"archive-limit": str(archive)}
        with self.arena.database.session() as session:
            closed = submissions.closed(session)
        return self.page(
            "submit.html",
            viewer,
            "Submit a bot",
            "submit",
            data,
            archive=archive,
            unpacked=caps.max_bytes,
            files=caps.max_files,
            name_pattern=BOT_NAME.pattern,
            name_limit=MAX_BOT_NAME,
            closed=closed,
        )

    @_signed_in
    def home(self, request: Request, viewer: _Viewer) -> Response:
        return self.page("home.html", viewer, "My bots", "home")

    @_signed_in
    def version(self, request: Request, viewer: _Viewer) -> Response:
        version_id: int = request.path_params["id"]
        assert viewer.author is not None
        try:
            logs = views.version_logs_readable(self.arena, viewer.author, version_id)
        except NotFound as error:
            return self.refused(viewer, "", error, what="version")
        # The step logs are offered to those who may read them: its author, the organiser.
        data = {"version": str(version_id), "logs": "yes" if logs else "no"}
        return self.page("version.html", viewer, f"Version {version_id}", "version", data)

    @_signed_in
    def bot(self, request: Request, viewer: _Viewer) -> Response:
        name = request.path_params["name"]
        try:
            views.bot_exists(self.arena, name)
        except NotFound as error:
            return self.refused(viewer, "", error, what="bot")
        return self.page("bot.html", viewer, name, "bot", {"bot": name})

    @_signed_in
    def match(self, request: Request, viewer: _Viewer) -> Response:
        key = request.path_params["key"]
        assert viewer.author is not None
        try:
            facts = self.facts.of(key)
        except NotFound as error:
            return self.refused(viewer, key, error, what="match")
        bots = _bot_pages(facts.bots)
        live = self.watching.page(facts, viewer.author, bots.get)
        if live is not None:
            html = Markup(live.html)  # the report's viewer, escaped where made
            return self.page(
                "watch.html",
                viewer,
                key,
                "live",
                live.data,
                report=True,
                viewer_html=html,
                problem=live.problem,
            )
        try:
            asker = requester(viewer.author, auth.address(request.scope))
            shown = self.rendered(key, asker, bots)
        except (NotFound, Busy) as error:
            return self.refused(viewer, key, error, what="match")
        # The problem names the transcript's path on this machine: the organiser's.
        why = shown.problem if viewer.organiser else None
        report = shown.html is not None
        # The logs offered are those the viewer may read (their own bots', or all for the
        # organiser) that hold something; the seats whose bots wrote nothing are said so.
        readable = [
            (role, player) for role, player in shown.seats if role in facts.readable(viewer.author)
        ]
        written = views.seats_with_logs(self.arena, facts.key, [role for role, _ in readable])
        return self.page(
            "match.html",
            viewer,
            key,
            "match",
            {"match": key},
            shown=shown,
            why=why,
            report=report,
            logs=[(role, player) for role, player in readable if role in written],
            quiet=[(role, player) for role, player in readable if role not in written],
        )

    def rendered(self, key: str, asker: str, bot_pages: dict[str, str]) -> _Rendered:
        """A match's viewer, or why its transcript does not verify: replayed once (in
        `asker`'s turn), then kept (a finished match's transcript never changes). Who asks
        while it is replayed waits for that replay rather than start another: the watchers
        of a match that has just ended load its page at once, and past their turns
        (`replays`) they would be refused."""
        with self.shown_lock:
            flight = self.flights.setdefault(key, threading.Lock())
        try:
            with flight:
                return self._rendered(key, asker, bot_pages)
        finally:
            with self.shown_lock:
                if self.flights.get(key) is flight and not flight.locked():
                    del self.flights[key]

    def _rendered(self, key: str, asker: str, bot_pages: dict[str, str]) -> _Rendered:
        with self.shown_lock:
            shown = self.shown.get(key)
            if shown is not None:
                self.shown.move_to_end(key)
                return shown
        replayed = self.replays.page(asker, key, bot_pages)
        if replayed.verified:
            # The report's viewer escapes what it shows, as the templates do.
            shown = _Rendered(Markup(replayed.html), replayed.seats, None)
        else:
            shown = _Rendered(None, (), replayed.problem)
        with self.shown_lock:
            self.shown[key] = shown
            while len(self.shown) > SHOWN_MATCHES:
                self.shown.popitem(last=False)
        return shown

    @_signed_in
    def matches(self, request: Request, viewer: _Viewer) -> Response:
        # The filters as given, shown in the form; the script asks the API, which checks them.
        asked = {name: request.query_params.get(name, "")[:200] for name in _MATCH_FILTERS}
        # The games to choose from: the arena's, and one asked for that it no longer plays.
        games = [settings.game.id for settings in self.arena.config.tournament.games]
        if asked["game"] and asked["game"] not in games:
            games.append(asked["game"])
        return self.page("matches.html", viewer, "Matches", "matches", asked=asked, games=games)

    @_signed_in
    def organiser(self, request: Request, viewer: _Viewer) -> Response:
        if not viewer.organiser:
            refusal = Forbidden("This page is the organiser's: your token may not use it.")
            return self.refused(viewer, "Organiser", refusal)
        return self.page("organiser.html", viewer, "Organiser", "organiser")

    @_signed_in
    def audit(self, request: Request, viewer: _Viewer) -> Response:
        if not viewer.organiser:
            refusal = Forbidden("This page is the organiser's: your token may not use it.")
            return self.refused(viewer, "Audit log", refusal)
        return self.page("audit.html", viewer, "Audit log", "audit")

    def write_a_bot(self, request: Request) -> Response:
        facts = guide(self.arena.config)
        return self.page("guide.html", self.viewer(request), "Write a bot", "guide", guide=facts)

    def starter(self, request: Request) -> Response:
        """A starter bot's archive, made as it is asked for; only the starters the page
        offers are served."""
        offer = guide(self.arena.config).offered(request.path_params["file"])
        if offer is None:
            refusal = NotFound("This arena offers no starter bot of that name.")
            return self.refused(self.viewer(request), "Starter", refusal, what="starter bot")
        shown = f'attachment; filename="{offer.download_name}"'
        return Response(
            offer.archive(), media_type=ARCHIVE_TYPE, headers={"Content-Disposition": shown}
        )

    def missing(self, request: Request) -> Response:
        """Any path that is no page: a page saying so, in the arena's layout."""
        refusal = NotFound(f"nothing is at {request.url.path[:80]}: it is no page of this arena")
        return self.refused(self.viewer(request), "", refusal)

    def favicon(self, request: Request) -> Response:
        return RedirectResponse("/assets/favicon.svg", status_code=308)

    def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name in _OURS:
            text = (_ARENA_ASSETS / name).read_text("utf-8")
        elif name in _REPORTS:
            text = report_pages.asset(name)
        else:
            return Response("no such asset", status_code=404, media_type="text/plain")
        kind = _TYPES[name.rsplit(".", 1)[1]]
        # Revalidated each time: an upgraded arena's pages get its new script at once.
        return Response(text, media_type=kind, headers={"Cache-Control": "no-cache"})


def _bot_pages(bots: dict[str, str]) -> dict[str, str]:
    """Each player's bot page, by its name as a player."""
    return {player: f"/bots/{quote(bot, safe='')}" for player, bot in bots.items()}


def _to_fill(
    table_id: str, headers: Sequence[str], numeric: Collection[str] = (), classes: str = ""
) -> Markup:
    """An empty table that the script fills, its `numeric` columns aligned right: the
    report's table, which escapes its headers itself."""
    flags = [header in numeric for header in headers]
    attributes = f' id="{table_id}"' + (f' class="{classes}"' if classes else "")
    # In a box of its own that scrolls sideways, rather than the page, on a narrow screen.
    table = report_pages.table(headers, [], flags, attributes)
    return Markup(f'<div class="table-box">{table}</div>')


# Autoescaped whatever a template's name: every value a page shows is text, never markup,
# unless it is already Markup (the report's viewer, the tables, each escaped where made).
_TEMPLATES = Environment(
    loader=PackageLoader("referee.arena.web", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_TEMPLATES.globals["to_fill"] = _to_fill
_TEMPLATES.globals["mib"] = _mib
