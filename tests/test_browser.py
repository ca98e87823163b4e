"""The report in a real browser: headless Chromium (Debian's package) driven by Playwright.
The index lists every match and filters them; each match page's slider takes the board
through every step, each drawn as the engine has it; nothing is fetched from a network and
nothing goes to the console."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from typer.testing import CliRunner

from referee.cli import app
from referee.games import GAMES
from tests.conftest import states_of
from tests.test_report import tampered_copy

CHROMIUM = "chromium"
# As the issue asks: no sandbox (root in a container), no GPU, and nothing of Chromium's own
# that would reach for a network this machine does not have.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
runner = CliRunner()


def _missing(reason: str) -> None:
    """One line for the whole module where the browser is missing; under CI, a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)


EXECUTABLE = shutil.which(CHROMIUM)
if EXECUTABLE is None:
    _missing("the browser tests need Chromium: apt-get install chromium")


class Browser:
    """A page of a fresh Chromium profile that records console errors and any request that
    leaves the file system (each one refused)."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.page = context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        context.route("**/*", self._route)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def _route(self, route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri())
        return self.page


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=EXECUTABLE,
            args=FLAGS,
            headless=True,
            offline=True,
        )
        try:
            yield Browser(context)
        finally:
            context.close()


@pytest.fixture(scope="module")
def site(every_game_results: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = runner.invoke(app, ["report", str(every_game_results), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def drawn_marks(page: Any) -> list[list[tuple[str, str, str]]]:
    """Each board on the page: its cells as (row, column, symbol)."""
    boards: list[list[list[str]]] = page.eval_on_selector_all(
        "#board svg.board",
        """boards => boards.map(board => [...board.querySelectorAll("g.square")].map(
            cell => [cell.dataset.row, cell.dataset.column, cell.dataset.mark]))""",
    )
    return [[(row, column, mark) for row, column, mark in cells] for cells in boards]


def engine_marks(boards: list[Any]) -> list[list[tuple[str, str, str]]]:
    """The same, as the engine's boards have it; a position with no cell is not drawn."""
    return [
        [
            (label, column, symbol)
            for label, cells in board.rows
            for column, symbol in zip(board.columns, cells, strict=True)
            if symbol != " "
        ]
        for board in boards
    ]


def test_the_index_lists_every_match_and_filters_them(
    browser: Browser, site: Path, every_game_results: Path
) -> None:
    page = browser.open(site / "index.html")
    names = sorted(path.stem for path in every_game_results.glob("*.json"))
    listed = page.eval_on_selector_all(
        "#matches tbody tr td:first-child", "cells => cells.map(c => c.textContent)"
    )
    assert sorted(listed) == names
    page.select_option("#filter-game", "quad")
    assert page.text_content("#shown") == "2"
    visible = page.eval_on_selector_all(
        "#matches tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.game)"
    )
    assert visible == ["quad", "quad"]
    page.select_option("#filter-game", "")
    page.select_option("#filter-player", "a")
    page.select_option("#filter-result", "win")
    shown = page.eval_on_selector_all(
        "#matches tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.winners)"
    )
    assert all("a" in winners.split() for winners in shown)
    assert browser.errors == [] and browser.requests == []


def test_each_match_page_steps_through_the_engines_boards(
    browser: Browser, site: Path, every_game_results: Path
) -> None:
    for game_id in GAMES:
        path = sorted(every_game_results.glob(f"{game_id}-*.json"))[0]
        game, states = states_of(path)
        page = browser.open(site / "matches" / f"{path.stem}.html")
        assert page.get_attribute("#step", "max") == str(len(states) - 1)
        for step, state in enumerate(states):
            page.fill("#step", str(step))  # moves the slider and fires its input event
            assert page.text_content("#step-label") == f"step {step} of {len(states) - 1}"
            assert drawn_marks(page) == engine_marks(game.boards(state)), (path.stem, step)
        page.keyboard.press("Home")
        assert page.input_value("#step") == "0"
        page.keyboard.press("ArrowRight")
        assert page.input_value("#step") == "1"
        page.keyboard.press("End")
        assert drawn_marks(page) == engine_marks(game.boards(states[-1]))
    assert browser.errors == [] and browser.requests == []


def test_a_tampered_transcript_is_listed_as_failing_and_not_rendered(
    browser: Browser, every_game_results: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "results"
    tampered = tampered_copy(every_game_results, copy)
    assert runner.invoke(app, ["report", str(copy)]).exit_code == 1
    page = browser.open(copy / "report" / "index.html")
    failed = page.eval_on_selector_all(
        "#matches tbody tr.failed",
        "rows => rows.map(r => [r.cells[0].textContent, r.querySelector('a')])",
    )
    assert sorted(name for name, _ in failed) == ["garbage.json", tampered.stem]
    assert all(link is None for _, link in failed)
    page.select_option("#filter-result", "failed")
    assert page.text_content("#shown") == "2"
    assert browser.errors == [] and browser.requests == []
