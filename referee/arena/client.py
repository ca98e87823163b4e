"""The API's command-line clients: a submission followed through the intake, and an author's
status. urllib only; every answer is read within bounds, and every failure is one line."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.arena.intake.archive import Caps, pack
from referee.arena.store.db import ON_LADDER, VersionState, player_name
from referee.arena.store.manifest import read_manifest
from referee.arena.store.tokens import MAX_TOKEN_CHARS
from referee.errors import ArenaError, SubmissionError

# What the client packs or sends at most: an arena's own caps are at most these, and it
# says its own when they are passed.
CLIENT_CAPS = Caps(max_bytes=1024 * 1024 * 1024, max_files=100_000)
# The most of an answer read: a transcript is the largest the API gives.
ANSWER_LIMIT = 64 * 1024 * 1024
REQUEST_S = 60
POLL_S = 1.0
# A busy arena (503: as many uploads under way as it takes) is sent the submission again,
# after a wait that doubles from BACKOFF_S to BACKOFF_MAX_S (longer if its Retry-After says
# so), for RETRY_FOR_S in all: a class submitting at a deadline gets in, one after another.
BACKOFF_S = 1.0
BACKOFF_MAX_S = 30.0
RETRY_FOR_S = 300.0
BUSY = 503
TOO_MANY = 429
# Where a submission's following ends: on the ladder, or off it.
_ENDED = (*ON_LADDER, VersionState.FAILED, VersionState.SUSPENDED, VersionState.RETIRED)

Json = dict[str, Any]


class ClientError(ArenaError):
    """The arena refused a request, or could not be reached: one line saying which."""

    def __init__(
        self, message: str, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Submitted:
    """Where a submission ended: its version as the API shows it to its author."""

    version: Json

    @property
    def reached_ladder(self) -> bool:
        return self.version.get("state") in ON_LADDER


class Api:
    """An arena's API at `url`, as the author of `token`."""

    def __init__(self, url: str, token: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ClientError(f"{url[:200]}: not an arena's URL (http://HOST:PORT)")
        if (
            not token
            or len(token) > MAX_TOKEN_CHARS
            or not token.isascii()
            or not all(character.isprintable() and not character.isspace() for character in token)
        ):
            raise ClientError("the token is not one an arena gives: check --token or REFEREE_TOKEN")
        self.url = url.rstrip("/")
        self.token = token

    def get(self, path: str) -> Json:
        return self.request("GET", path)

    def request(self, method: str, path: str, body: bytes | None = None) -> Json:
        """The JSON the API answers; ClientError with its one line for any refusal."""
        request = urllib.request.Request(
            self.url + path,
            data=body,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/octet-stream",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_S) as answer:
                return _json(answer.read(ANSWER_LIMIT + 1), self.url + path)
        except urllib.error.HTTPError as error:
            with error:
                said = _said(error.read(64 * 1024))
            wait = error.headers.get("Retry-After", "")
            raise ClientError(
                f"{method} {path}: {error.code} {error.reason}: {said}",
                error.code,
                float(wait) if wait.isascii() and wait.isdigit() else None,
            ) from None
        except urllib.error.URLError as error:
            raise ClientError(f"cannot reach {self.url}: {error.reason}") from None
        except (TimeoutError, ConnectionError) as error:
            raise ClientError(f"cannot reach {self.url}: {error}") from None


def submit(
    api: Api,
    path: Path,
    name: str | None = None,
    progress: Callable[[str], None] = lambda line: None,
    poll_s: float = POLL_S,
) -> Submitted:
    """Send a bot (a directory, packed, or an archive file) and follow it through the intake:
    each step told to `progress` as it changes, until it reaches the ladder or fails."""
    if path.is_dir():
        try:
            manifest = read_manifest(path)
        except SubmissionError as error:
            raise SubmissionError(f"{path}/{error}") from None
        if name is not None and name != manifest.name:
            raise SubmissionError(
                f"{path}/bot.yaml names the bot {manifest.name!r}, not {name!r}: they must agree"
            )
        data = pack(path, CLIENT_CAPS)
        name = manifest.name
    elif path.is_file():
        if name is None:
            raise SubmissionError(f"{path}: an archive: give its bot's name with --name")
        if path.stat().st_size > CLIENT_CAPS.max_bytes:
            raise SubmissionError(f"{path}: larger than {CLIENT_CAPS.max_bytes} bytes")
        data = path.read_bytes()
    else:
        raise SubmissionError(f"{path}: no such directory or archive file")
    where = f"/api/bots/{urllib.parse.quote(name, safe='')}/versions"
    sent = _sent(api, where, data, progress)
    try:
        return _follow(api, name, sent, len(data), progress, poll_s)
    except (KeyError, TypeError, ValueError) as error:
        raise ClientError(f"{api.url}: an answer is not an arena's: {error!r}") from None


def _sent(
    api: Api,
    path: str,
    data: bytes,
    progress: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> Json:
    """The submission POSTed, and sent again while the arena answers that it is busy (503,
    which takes nothing), each wait told to `progress`; past RETRY_FOR_S, its refusal. A
    failure to reach it is not tried again: a submission cut off may have been taken."""
    return _patiently(
        lambda: api.request("POST", path, data), "sending again", progress, False, sleep
    )


def _patiently(
    call: Callable[[], Json],
    again: str,
    progress: Callable[[str], None],
    unreached: bool,
    sleep: Callable[[float], None],
) -> Json:
    """`call`'s answer, asked again while the arena is busy (503: its uploads all under way,
    or its database out for a while), while it paces this client's requests (429 for a few
    seconds: an hourly cap's longer wait is a refusal), and while it cannot be reached if
    `unreached` (an arena restarted), with a wait that doubles, each told to `progress`;
    past RETRY_FOR_S, the last refusal."""
    waited, backoff = 0.0, BACKOFF_S
    while True:
        try:
            return call()
        except ClientError as error:
            paced = error.status == TOO_MANY and (error.retry_after_s or 0.0) <= BACKOFF_MAX_S
            retried = error.status == BUSY or paced or (unreached and error.status is None)
            if not retried or waited >= RETRY_FOR_S:
                raise
            wait = min(max(backoff, error.retry_after_s or 0.0), BACKOFF_MAX_S)
            wait = min(wait, RETRY_FOR_S - waited)
            shown = "busy" if error.status in (BUSY, TOO_MANY) else "out of reach"
            progress(f"the arena is {shown} ({error}); {again} in {wait:g} s")
            sleep(wait)
            waited += wait
            backoff = min(2 * backoff, BACKOFF_MAX_S)


def _follow(
    api: Api,
    name: str,
    sent: Json,
    size: int,
    progress: Callable[[str], None],
    poll_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Submitted:
    """The submission followed until it ends; an arena busy or restarted meanwhile is asked
    again (`_patiently`), since what was sent is the arena's already."""
    progress(f"{name}: version {sent['number']} submitted ({size} bytes), queued")
    seen: dict[str, str] = {}
    state = sent["state"]
    where = f"/api/versions/{int(sent['id'])}"
    while True:
        version = _patiently(lambda: api.get(where), "asking again", progress, True, sleep)
        for step in version.get("steps", []):
            shown = step["state"] + (f": {step['verdict']}" if step.get("verdict") else "")
            if seen.get(step["kind"]) != shown:
                seen[step["kind"]] = shown
                progress(f"{step['kind']}: {shown}")
        if version["state"] in _ENDED:
            # Its end is the answer, shown once by whoever asked.
            return Submitted(version)
        if version["state"] != state:
            state = version["state"]
            progress(f"{player_name(name, version['number'])}: {state}")
        sleep(poll_s)


def status(api: Api) -> Json:
    """The author's bots, each with its versions (state, reason, advice), the leaderboard,
    whether submissions are closed, and the final's report (its URL) once it is played."""
    try:
        me = api.get("/api/me")
        bots = [api.get(f"/api/bots/{urllib.parse.quote(bot, safe='')}") for bot in me["bots"]]
        board = api.get("/api/leaderboard")["leaderboard"]
        final = api.get("/api/final")
        return {
            "author": me["name"],
            "bots": bots,
            "leaderboard": board,
            "submissions_closed": bool(final["closed"]),
            "final": api.url + final["report"] if final["report"] else None,
        }
    except (KeyError, TypeError) as error:
        raise ClientError(f"{api.url}: an answer is not an arena's: {error!r}") from None


def _json(data: bytes, where: str) -> Json:
    if len(data) > ANSWER_LIMIT:
        raise ClientError(f"{where}: the answer is larger than {ANSWER_LIMIT} bytes")
    try:
        found = json.loads(data)
    except ValueError:
        raise ClientError(f"{where}: the answer is not JSON: is this an arena?") from None
    if not isinstance(found, dict):
        raise ClientError(f"{where}: the answer is not an arena's: not a JSON object")
    return found


def _said(data: bytes) -> str:
    """The one line of an error answer: the API's `error`, or the start of the text."""
    try:
        said = json.loads(data).get("error")
    except (ValueError, AttributeError):
        said = None
    text = said if isinstance(said, str) else data.decode("utf-8", "replace")
    return " ".join(text.split())[:300] or "(no reason given)"
