"""The arena's pages in a browser, for the tests: an arena made with its authors and served
(and served again, as after a restart), a Chromium on it, what must not have gone wrong after
each test, signing in and out through the header and the form as a person does, a bot's
archive, and a submission through the API."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from typer.testing import CliRunner

from referee.cli import app
from referee.players.starter import STARTERS
from tests.support.archives import Entry, tar
from tests.support.arena import SERVICE_CONFIG, token_of, wait_for
from tests.support.arena_serving import DEADLINE_S, Served, serving
from tests.support.browsers import Browser, chromium

DEADLINE_MS = DEADLINE_S * 1000
ORGANISER = "organiser"
# The service tests' arena, validating with one match a role.
VALIDATING_CONFIG = f"{SERVICE_CONFIG}  validate: {{matches_per_role: 1}}\n"
runner = CliRunner()


@dataclass
class Running:
    """An arena served: its directory, each author's token by name (the organiser's as
    ORGANISER), and a folder for the tests' archives. `restart` serves it again on the same
    port, as a new process."""

    directory: Path
    tokens: dict[str, str]
    served: Served
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    # The options it is served with (`--workers 1`), again at each restart.
    options: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return self.served.url

    @property
    def archives(self) -> Path:
        return self.directory.parent / "archives"

    def restart(self) -> None:
        with self.stopped():
            pass

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """Not served within the block (for a command that refuses a served arena, as
        `arena final` does), then served again on the same port, as a new process."""
        port = urllib.parse.urlsplit(self.url).port
        self.stack.close()
        self.stack = contextlib.ExitStack()
        yield
        self.served = self.stack.enter_context(
            serving(self.directory, *self.options, "--port", str(port))
        )


def new_arena(root: Path, config: str, authors: Sequence[str]) -> tuple[Path, dict[str, str]]:
    """An arena made in `root` by `referee arena init` from `config`, with `authors` added by
    `referee arena author add`: its directory and the tokens the commands printed."""
    written = root / "arena.yaml"
    written.write_text(config)
    (root / "archives").mkdir()
    directory = root / "arena"
    made = runner.invoke(app, ["arena", "init", str(directory), "--config", str(written)])
    assert made.exit_code == 0, made.output
    tokens = {ORGANISER: token_of(made.stdout)}
    for name in authors:
        added = runner.invoke(app, ["arena", "author", "add", str(directory), name])
        assert added.exit_code == 0, added.output
        tokens[name] = token_of(added.stdout)
    return directory, tokens


@contextlib.contextmanager
def served(directory: Path, tokens: dict[str, str], *options: str) -> Iterator[Running]:
    """The arena in `directory` served with `options` until the block ends (restarted or
    not)."""
    stack = contextlib.ExitStack()
    opened = stack.enter_context(serving(directory, *options))
    running = Running(directory, tokens, opened, stack, options)
    try:
        yield running
    finally:
        running.stack.close()


@contextlib.contextmanager
def arena_served(
    root: Path, config: str, authors: Sequence[str] = ("ada", "grace")
) -> Iterator[Running]:
    """`new_arena`, served until the block ends."""
    with served(*new_arena(root, config, authors)) as running:
        yield running


@contextlib.contextmanager
def browsing(
    arena: Running, paths: pytest.TempPathFactory, timezone: str | None = None
) -> Iterator[Browser]:
    """A Chromium on a new profile, at home on the arena (in `timezone`, if given), until the
    block ends."""
    with chromium(paths.mktemp("chromium-profile"), f"{arena.url}/", timezone=timezone) as opened:
        yield opened


@contextlib.contextmanager
def nothing_goes_wrong(*browsers: Browser) -> Iterator[None]:
    """Around a test: afterwards, in each browser, no request left the arena, no console
    error, no dialog (an alert a hostile text would fire), and no image was made (the pages
    have none: one would be a hostile text's)."""
    for browser in browsers:
        browser.errors.clear()
    yield
    for browser in browsers:
        assert browser.requests == []
        assert browser.errors == []
        assert browser.dialogs == []
        for page in browser.context.pages:
            assert page.locator("img").count() == 0, page.url


def landing(who: str) -> str:
    """Where the arena sends someone signed in who asked for no page: the organiser to their
    page, an author to her home."""
    return "/organiser" if who == ORGANISER else "/me"


def sign_out_button(page: Any) -> Any:
    """The header's own "Sign out" (not the organiser's "Sign out everywhere" of an author)."""
    return page.locator("header.top").get_by_role("button", name="Sign out", exact=True)


def sign_out(page: Any, arena: Running) -> None:
    """Through the header's button, as a person does: back on the leaderboard, signed out."""
    sign_out_button(page).click()
    page.wait_for_url(f"{arena.url}/")
    expect(page.locator("header.top a.button")).to_have_text("Sign in")


def sign_in(page: Any, arena: Running, who: str) -> None:
    """Through the sign-in form, asking for no page (signing out first whoever the browser
    is signed in as): on the page the arena sends them to."""
    page.goto(f"{arena.url}/signin")
    if page.locator("#me").count():
        sign_out(page, arena)
        page.goto(f"{arena.url}/signin")
    page.fill("#token", arena.tokens[who])
    page.click("form.signin button")
    page.wait_for_url(f"{arena.url}{landing(who)}", timeout=DEADLINE_MS)
    expect(page.locator("#me")).to_have_text(who)


def archive(path: Path, manifest: str, files: dict[str, bytes]) -> Path:
    """A bot's archive at `path`: its bot.yaml and its files."""
    entries = [Entry(name, data) for name, data in {"bot.yaml": manifest.encode(), **files}.items()]
    path.write_bytes(tar(entries))
    return path


def random_bot(arena: Running, name: str) -> Path:
    """The archive of a bot `name` that plays the Python starter's random moves."""
    return archive(
        arena.archives / f"{name}.tar.gz",
        f"name: {name}\nrun: /usr/bin/python3 bot.py\n",
        {"bot.py": (STARTERS / "random_player.py").read_bytes()},
    )


def upload_by_api(arena: Running, who: str, name: str, data: bytes) -> tuple[int, Any]:
    """An archive's bytes sent to the API as bot `name` with `who`'s token: the status and
    the JSON answer."""
    request = urllib.request.Request(
        f"{arena.url}/api/bots/{urllib.parse.quote(name, safe='')}/versions",
        data=data,
        headers={"Authorization": f"Bearer {arena.tokens[who]}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=DEADLINE_S) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def submitted(arena: Running, who: str, name: str, path: Path) -> int:
    """The archive at `path` submitted through the API, and taken: the version's id."""
    status, said = upload_by_api(arena, who, name, path.read_bytes())
    assert status == 202, said
    return int(said["id"])


def finished_match(arena: Running, bot: str | None = None) -> dict[str, Any]:
    """The newest finished match (of `bot`, if given), once there is one."""
    found: list[dict[str, Any]] = []
    asked = "/api/matches?limit=1" + ("" if bot is None else f"&bot={bot}")

    def played() -> bool:
        _, listed = arena.served.get(asked, arena.tokens[ORGANISER])
        found[:] = listed.get("matches", [])
        return bool(found)

    wait_for("a finished match" + ("" if bot is None else f" of {bot}"), played)
    return found[0]


def a_fresh_match(arena: Running, who: str, most_steps: int = 2) -> str:
    """The key of a running match that has played no more than `most_steps` steps, as `who`
    sees it."""
    found: list[str] = []

    def fresh() -> bool:
        _, listed = arena.served.get("/api/running", arena.tokens[who])
        for match in listed["running"]:
            _, live = arena.served.get(f"/api/matches/{match['key']}/live", arena.tokens[who])
            if live["state"] == "running" and (live["last"] or 0) <= most_steps:
                found.append(match["key"])
                return True
        return False

    wait_for("a match that has just started", fresh)
    return found[0]
