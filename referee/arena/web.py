"""The arena's pages: small HTML shells, rendered here with every value escaped, that the
arena's script (`assets/arena.js`) fills from the JSON API of the same origin and keeps live
by polling it. What a page shows is what the API gives its viewer: a page holds nothing the
viewer's token may not read. The match page is the exception that is rendered here: the
report's viewer (`match_viewer`) of the verified transcript.

Sign-in takes a token from a form and keeps it in an HttpOnly cookie (`auth`), which the API
then takes as it takes a bearer token; a token never goes in a URL. Nothing a page loads
comes from another origin: its script and style are the arena's (`/assets/`), and the
Content-Security-Policy (`auth.SECURITY_HEADERS`) forbids anything else.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from referee.arena import auth, views
from referee.arena.auth import Gate
from referee.arena.bodies import SMALL_BODY_SECONDS, read_body
from referee.arena.db import Author
from referee.arena.home import Arena
from referee.records.transcript import Seat
from referee.records.verify import Outcome
from referee.report import pages as report_pages
from referee.report.site import match_viewer

_ARENA_ASSETS = resources.files("referee.arena") / "assets"
_TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}
# The assets a page may load: the arena's own, and the report's viewer's.
_OURS = ("arena.js", "arena.css")
_REPORTS = ("report.js", "report.css")
# A sign-in form: a token and where to go next. Anything longer is not one.
FORM_LIMIT = 4096
# Match pages kept as rendered: a finished match's transcript never changes, so a crowd that
# opens one match replays it once, not once each (replays take a core, a few at once).
SHOWN_MATCHES = 64
# Where a sign-in may send the browser: a path of this arena, never another site
# (`//host`, `/\\host` are other sites to a browser).
_LOCAL_PATH = re.compile(r"/(?![/\\])[A-Za-z0-9\-._~!$&'()*+,;=:@/%?#]{0,500}")


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
    """A match page's body: the viewer (`html`), or why the transcript does not verify."""

    html: str | None
    problem: str | None


def routes(arena: Arena, gate: Gate) -> list[Route]:
    """The pages' routes, served beside the API. The match pages replay their transcripts a
    few at once, apart from the organiser's replays (the API's), which a crowd of readers
    thus never keeps waiting."""
    pages = _Pages(arena, gate, views.Replays(arena))
    return [
        Route("/", pages.leaderboard),
        Route("/signin", pages.signin_form, methods=["GET"]),
        Route("/signin", pages.signin, methods=["POST"]),
        Route("/signout", pages.signout, methods=["POST"]),
        Route("/submit", pages.submit),
        Route("/versions/{id:int}", pages.version),
        Route("/bots/{name}", pages.bot),
        Route("/matches/{key}", pages.match),
        Route("/organiser", pages.organiser),
        Route("/assets/{name}", pages.asset),
    ]


def local_path(target: str) -> str:
    """`target` if it is a path of this arena, else the leaderboard's: no open redirect."""
    return target if _LOCAL_PATH.fullmatch(target) else "/"


class _Pages:
    def __init__(self, arena: Arena, gate: Gate, replays: views.Replays) -> None:
        self.arena = arena
        self.gate = gate
        self.replays = replays
        # Match pages as rendered, by key, the most recently shown last.
        self.shown: OrderedDict[str, _Rendered] = OrderedDict()
        self.shown_lock = threading.Lock()

    def viewer(self, request: Request) -> _Viewer:
        author = auth.viewer(self.arena, request.scope)
        csrf = "" if author is None else self.gate.csrf(author.token_hash)
        return _Viewer(author, csrf)

    def page(
        self,
        viewer: _Viewer,
        title: str,
        body: str,
        page: str,
        data: dict[str, str] | None = None,
        status: int = 200,
        report: bool = False,
    ) -> HTMLResponse:
        """A whole page in the arena's layout: its header, then `body`; `page` and `data`
        tell the script what to fill in; `report` loads the report's viewer."""
        name = escape(self.arena.config.tournament.name)
        attributes = "".join(
            f' data-{key}="{escape(value)}"'
            for key, value in {"page": page, **(data or {})}.items()
        )
        head = [
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)} · {name}</title>",
        ]
        if viewer.author is not None:
            head.append(f'<meta name="csrf-token" content="{escape(viewer.csrf)}">')
        if report:
            head += [
                '<link rel="stylesheet" href="/assets/report.css">',
                '<script src="/assets/report.js"></script>',
            ]
        head += [
            '<link rel="stylesheet" href="/assets/arena.css">',
            '<script src="/assets/arena.js" defer></script>',
        ]
        links = ['<a href="/">Leaderboard</a>']
        if viewer.author is not None:
            links.append('<a href="/submit">Submit a bot</a>')
        if viewer.organiser:
            links.append('<a href="/organiser">Organiser</a>')
        if viewer.author is None:
            who = '<a class="button" href="/signin">Sign in</a>'
        else:
            who = (
                f'<span>signed in as <strong id="me">{escape(viewer.author.name)}</strong></span>'
                '<form method="post" action="/signout"><button type="submit">Sign out</button>'
                "</form>"
            )
        header = (
            f'<header class="top"><a class="brand" href="/">{name}</a>'
            f"<nav>{''.join(links)}</nav>"
            f'<div class="who">{who}</div></header>'
        )
        text = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n'
            + "\n".join(head)
            + f"\n</head>\n<body{attributes}>\n{header}\n<main>\n{body}\n</main>\n"
            + "</body>\n</html>\n"
        )
        return HTMLResponse(text, status_code=status)

    def signed_in(self, request: Request) -> _Viewer | Response:
        """The viewer if signed in, else the way to the sign-in form and back here."""
        viewer = self.viewer(request)
        if viewer.author is not None:
            return viewer
        here = local_path(request.url.path)
        return RedirectResponse(f"/signin?next={quote(here, safe='/')}", status_code=303)

    def leaderboard(self, request: Request) -> Response:
        viewer = self.viewer(request)
        try:
            views.may_read_leaderboard(self.arena, viewer.author)
        except views.Unauthorised:
            body = (
                "<h1>Leaderboard</h1>\n"
                '<p class="notice">This arena\'s leaderboard is for its authors: '
                '<a href="/signin">sign in</a> with your token to see it.</p>'
            )
            return self.page(viewer, "Leaderboard", body, "closed")
        body = (
            "<h1>Leaderboard</h1>\n"
            '<p class="note">Ratings with their 95% interval, refitted as matches finish; '
            'this page follows them live. <span id="updated"></span></p>\n'
            '<p id="problem" class="problem" hidden></p>\n'
            + _to_fill(
                "leaderboard",
                ["rank", "bot", "author", "rating", "95% interval", "matches", "24 h change"],
                {"rank", "rating", "95% interval", "matches", "24 h change"},
                ' class="board-table"',
            )
            + "\n"
            '<p id="empty" class="note" hidden>No bot is on the ladder yet.</p>\n'
            '<section id="suspended-section" hidden><h2>Suspended</h2>\n'
            '<p class="note">Taken off the ladder; the organiser may reinstate them.</p>\n'
            '<ul id="suspended"></ul></section>'
        )
        return self.page(viewer, "Leaderboard", body, "leaderboard")

    def signin_form(self, request: Request) -> Response:
        target = local_path(request.query_params.get("next", "/"))
        return self._signin_page(self.viewer(request), target, None, 200)

    def _signin_page(
        self, viewer: _Viewer, target: str, problem: str | None, status: int
    ) -> Response:
        said = "" if problem is None else f'<p class="problem" role="alert">{escape(problem)}</p>\n'
        body = (
            "<h1>Sign in</h1>\n"
            '<p class="note">Sign in with the token the organiser gave you. It is kept in a '
            "cookie of this site only, which scripts cannot read; sign out on a shared "
            "computer.</p>\n"
            f"{said}"
            '<form method="post" action="/signin" class="signin">'
            '<label for="token">Token</label>'
            '<input type="password" id="token" name="token" autocomplete="current-password" '
            'required maxlength="128" autofocus>'
            f'<input type="hidden" name="next" value="{escape(target)}">'
            '<button type="submit">Sign in</button></form>'
        )
        return self.page(viewer, "Sign in", body, "signin", status=status)

    async def signin(self, request: Request) -> Response:
        body = await read_body(request, FORM_LIMIT, SMALL_BODY_SECONDS)
        try:
            fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
        except ValueError:
            fields = {}
        token = fields.get("token", [""])[0].strip()
        target = local_path(fields.get("next", ["/"])[0])
        author = await run_in_threadpool(auth.author_of, self.arena, token)
        if author is None:
            nobody = _Viewer(None, "")
            problem = "That token is no author's in this arena: check it and try again."
            return self._signin_page(nobody, target, problem, 401)
        response = RedirectResponse(target, status_code=303)
        response.headers["set-cookie"] = auth.cookie_header(token, auth.over_https(request.scope))
        return response

    def signout(self, request: Request) -> Response:
        response = RedirectResponse("/", status_code=303)
        response.headers["set-cookie"] = auth.cookie_header("", auth.over_https(request.scope))
        return response

    def submit(self, request: Request) -> Response:
        viewer = self.signed_in(request)
        if isinstance(viewer, Response):
            return viewer
        limit = f"{self.arena.config.submission.max_bytes / 2**20:g}"
        body = (
            "<h1>Submit a bot</h1>\n"
            '<p class="note">An archive (zip, or tar with gzip, bzip2 or xz) with a '
            "<code>bot.yaml</code> at its top naming the bot, its <code>run</code> command "
            f"and an optional <code>build</code>; at most {limit} MiB unpacked. A new "
            "submission of one of your bots is its next version.</p>\n"
            '<form id="submit-form" class="submit">'
            '<label for="bot-name">Bot name</label>'
            '<input id="bot-name" name="name" required maxlength="40" '
            'pattern="[A-Za-z0-9][A-Za-z0-9_\\-]{0,39}" '
            'title="letters, digits, _ and -, at most 40" autocomplete="off">'
            '<label for="archive">Archive</label>'
            '<input id="archive" name="archive" type="file" required>'
            '<button type="submit" id="send">Submit</button></form>\n'
            '<div id="upload" hidden><progress id="progress" max="1" value="0"></progress> '
            '<span id="progress-label"></span></div>\n'
            '<p id="problem" class="problem" role="alert" hidden></p>'
        )
        return self.page(viewer, "Submit a bot", body, "submit")

    def version(self, request: Request) -> Response:
        viewer = self.signed_in(request)
        if isinstance(viewer, Response):
            return viewer
        version_id = str(request.path_params["id"])
        body = (
            f'<h1 id="title">Version {escape(version_id)}</h1>\n'
            '<p id="state-line" class="state-line"></p>\n'
            '<p class="note">This page follows the version through the intake (unpack, build, '
            "validate) and its placement matches as they happen.</p>\n"
            '<p id="problem" class="problem" role="alert" hidden></p>\n'
            '<section id="verdict" hidden><h2>Verdict</h2>'
            '<p id="reason"></p><ul id="advice" class="advice"></ul></section>\n'
            "<h2>Steps</h2>\n"
            + _to_fill("steps", ["step", "state", "verdict", "time", "log"])
            + "\n"
            '<section id="log-section" hidden><h2 id="log-title">Log</h2>'
            '<p id="log-problem" class="problem" role="alert" hidden></p>'
            '<pre id="log" class="log"></pre></section>'
        )
        return self.page(viewer, f"Version {version_id}", body, "version", {"version": version_id})

    def bot(self, request: Request) -> Response:
        viewer = self.signed_in(request)
        if isinstance(viewer, Response):
            return viewer
        name = request.path_params["name"]
        body = (
            f'<h1>{escape(name)}</h1>\n<p id="bot-line" class="note"></p>\n'
            '<p id="problem" class="problem" role="alert" hidden></p>\n'
            '<h2>Rating</h2>\n<div id="history" class="chart-box"></div>\n'
            "<h2>Versions</h2>\n"
            + _to_fill(
                "versions",
                ["version", "state", "rating", "matches", "submitted", "reason"],
                {"rating", "matches"},
            )
            + "\n<h2>Recent matches</h2>\n"
            + _to_fill("matches", ["match", "game", "seats", "result", "finished"])
            + "\n"
            '<p id="no-matches" class="note" hidden>No match played yet.</p>\n'
            "<h2>Head to head</h2>\n"
            + _to_fill(
                "head-to-head",
                ["opponent", "matches", "wins", "draws", "losses"],
                {"matches", "wins", "draws", "losses"},
            )
        )
        return self.page(viewer, name, body, "bot", {"bot": name})

    def match(self, request: Request) -> Response:
        viewer = self.signed_in(request)
        if isinstance(viewer, Response):
            return viewer
        key = request.path_params["key"]
        try:
            shown = self.rendered(key)
        except views.NotFound as error:
            body = f'<h1>No such match</h1>\n<p class="problem">{escape(str(error))}</p>'
            return self.page(viewer, "No such match", body, "missing", status=404)
        except views.Busy as error:
            body = f'<h1>{escape(key)}</h1>\n<p class="problem">Busy: {escape(str(error))}.</p>'
            return self.page(viewer, key, body, "missing", status=503)
        if shown.html is None:
            # The problem names the transcript's path on this machine: the organiser's.
            why = shown.problem if viewer.organiser else None
            body = (
                f"<h1>{escape(key)}</h1>\n"
                '<p class="problem">This match\'s transcript does not verify, so it is not '
                f"rendered{': ' + escape(why) if why else '; the organiser can see why'}.</p>"
            )
            return self.page(viewer, key, body, "match", {"match": key})
        return self.page(viewer, key, shown.html, "match", {"match": key}, report=True)

    def rendered(self, key: str) -> _Rendered:
        """A match's viewer, or why its transcript does not verify: replayed once, then
        kept (a finished match's transcript never changes)."""
        with self.shown_lock:
            shown = self.shown.get(key)
            if shown is not None:
                self.shown.move_to_end(key)
                return shown
        verdict = self.replays.verdict(key)
        replayed = verdict.replayed
        if verdict.outcome is not Outcome.VERIFIED or replayed is None or replayed.game is None:
            shown = _Rendered(None, verdict.problem or "no problem given")
        else:
            html = f"{match_viewer(replayed.transcript, replayed.game, replayed.frames)}\n"
            html += _seat_logs(replayed.game.roles, replayed.transcript.seats)
            shown = _Rendered(html, None)
        with self.shown_lock:
            self.shown[key] = shown
            while len(self.shown) > SHOWN_MATCHES:
                self.shown.popitem(last=False)
        return shown

    def organiser(self, request: Request) -> Response:
        viewer = self.signed_in(request)
        if isinstance(viewer, Response):
            return viewer
        if not viewer.organiser:
            body = (
                "<h1>Organiser</h1>\n"
                '<p class="problem">This page is the organiser\'s: your token may not use it.</p>'
            )
            return self.page(viewer, "Organiser", body, "forbidden", status=403)
        body = (
            "<h1>Organiser</h1>\n"
            '<p id="problem" class="problem" role="alert" hidden></p>\n'
            '<section class="panel"><h2>Ladder</h2>\n<p id="ladder-line" class="state-line"></p>'
            '<div class="actions"><button type="button" id="pause">Pause the ladder</button>'
            '<button type="button" id="resume">Resume the ladder</button></div>\n'
            '<dl id="ladder" class="facts"></dl></section>\n'
            '<section class="panel"><h2>Intake</h2><dl id="intake" class="facts"></dl></section>\n'
            "<h2>Running matches</h2>\n"
            + _to_fill("running", ["match", "game", "seats", "started"])
            + "\n"
            '<p id="none-running" class="note" hidden>No match is running.</p>\n'
            + "<h2>Bots</h2>\n"
            + _to_fill("bots", ["bot", "author", "latest", "state", "action"])
            + "\n"
            '<h2>Replay a match</h2>\n<p class="note">Replays a transcript by the rules and '
            "checks its signature with the arena's key.</p>\n"
            '<form id="replay-form" class="inline"><label for="replay-key">Match</label>'
            '<input id="replay-key" required maxlength="80" placeholder="arena-00000001">'
            '<button type="submit">Replay</button></form>\n'
            '<p id="replay-result" class="state-line"></p>'
        )
        return self.page(viewer, "Organiser", body, "organiser")

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


def _seat_logs(roles: Sequence[str], seats: Sequence[Seat]) -> str:
    """A match page's buttons that open each seat's log, for whoever may read it."""
    buttons = "".join(
        f'<button type="button" class="log-button" data-role="{escape(role)}">'
        f"{escape(role)}: {escape(seat.player)}</button>"
        for role in roles
        for seat in seats
        if seat.role == role
    )
    return (
        '<section class="seat-logs"><h2>The bots\' logs</h2>\n'
        '<p class="note">What each bot wrote to its standard error in this match: its '
        f'author and the organiser may read it.</p>\n<div class="log-buttons">{buttons}</div>\n'
        '<h3 id="log-title" hidden></h3>'
        '<p id="log-problem" class="problem" role="alert" hidden></p>'
        '<pre id="log" class="log" hidden></pre></section>'
    )


def _to_fill(
    table_id: str, headers: Sequence[str], numeric: Collection[str] = (), attributes: str = ""
) -> str:
    """An empty table that the script fills, its `numeric` columns aligned right."""
    flags = [header in numeric for header in headers]
    return report_pages.table(headers, [], flags, f' id="{table_id}"{attributes}')
