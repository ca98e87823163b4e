"""Debian's Chromium, headless, driven by Playwright, for the tests of the report's pages and
the arena's: one launch, one record of console errors and of every request that leaves the
pages' own origin (each one refused)."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from tests.support.facilities import missing

CHROMIUM = "chromium"
# No sandbox (root in a container), no GPU, and nothing of Chromium's own that would reach
# for a network this machine does not have.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# How the console says that a load found no server: refused, or the connection closed before
# an answer (a server stopped while it was asked).
UNREACHED = re.compile(
    r"Failed to load resource: net::ERR_(CONNECTION_(REFUSED|RESET|CLOSED)|EMPTY_RESPONSE) "
)

EXECUTABLE = shutil.which(CHROMIUM)
if EXECUTABLE is None:
    missing("the browser tests need Chromium: apt-get install chromium")


class Browser:
    """A fresh Chromium profile's first page. It records console errors and warnings, page
    errors, dialogs (an `alert` a hostile text would fire), and every request to anywhere but
    `home` (a URL prefix: `file://`, or a server's origin), which it refuses."""

    def __init__(self, context: Any, home: str) -> None:
        self.context = context
        self.homes = [home]
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        context.route("**/*", self._route)
        self.page = self.new_page()

    def new_page(self) -> Any:
        page = self.context.new_page()
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("dialog", self._dialog)
        return page

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            where = message.location.get("url", "")
            self.errors.append(f"{message.type}: {message.text} ({where})")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _route(self, route: Any) -> None:
        if any(route.request.url.startswith(home) for home in self.homes):
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def expected(self, status: int, url: str) -> None:
        """Take from the errors the console's line on a load of `url` answered `status`,
        which the test meant (a refusal it asserts): there must be one."""
        said = f"the server responded with a status of {status} "
        meant = [error for error in self.errors if said in error and error.endswith(f"({url})")]
        assert meant, (status, url, self.errors)
        self.errors[:] = [error for error in self.errors if error not in meant]

    def unreached(self, home: str) -> None:
        """Take from the errors the console's lines on loads under `home` that found no server
        there, refused or cut off mid-answer: what a page's requests meet while the test
        restarts the server, meant (there may be none, if no request fell in that time)."""
        self.errors[:] = [
            error
            for error in self.errors
            if not (UNREACHED.search(error) and error.endswith(")") and f" ({home}" in error)
        ]

    @contextlib.contextmanager
    def also_allowing(self, home: str) -> Iterator[None]:
        """Requests to `home` too, within the block (another site a test serves itself)."""
        self.homes.append(home)
        try:
            yield
        finally:
            self.homes.remove(home)

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri())
        return self.page


@contextlib.contextmanager
def chromium(
    profile: Path, home: str, offline: bool = False, timezone: str | None = None
) -> Iterator[Browser]:
    """A Browser on a new profile in `profile`, closed when the block ends; `offline`, with
    no network at all (not even this machine's); in `timezone` (an IANA name) and US
    English, if given, so that a test knows how the pages write a time."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=EXECUTABLE,
            args=FLAGS,
            headless=True,
            offline=offline,
            timezone_id=timezone,
            locale=None if timezone is None else "en-US",
        )
        try:
            yield Browser(context, home)
        finally:
            context.close()
