"""The report in a real browser: headless Chromium (Debian's package) driven by Playwright.
The index lists every match and filters them; each match page's slider takes the board
through every step, each drawn as the engine has it; nothing is fetched from a network and
nothing goes to the console."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.games import GAMES, RULESHEETS
from referee.records.transcript import read_transcript
from referee.records.verify import verify_file
from referee.report.pages import asset
from referee.report.site import match_viewer
from referee.tournaments.config import load_config
from tests.support.boards import states_of, winning
from tests.support.browsers import Browser, chromium
from tests.support.paths import RULES
from tests.support.reports import large_field, tampered_copy
from tests.support.tournaments import run, seeded, write_config

pytestmark = pytest.mark.browser
runner = CliRunner()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with chromium(tmp_path_factory.mktemp("chromium-profile"), "file://", offline=True) as opened:
        yield opened


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


def test_a_long_list_of_matches_is_shown_a_page_at_a_time_and_filtered_whole(
    browser: Browser, every_game_results: Path, tmp_path: Path
) -> None:
    results = large_field(every_game_results, tmp_path / "field", 16)
    result = runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    page = browser.open(tmp_path / "site" / "index.html")

    def visible() -> list[str]:
        shown: list[str] = page.eval_on_selector_all(
            "#matches tbody tr:not([hidden]) td:first-child",
            "cells => cells.map(c => c.textContent)",
        )
        return shown

    everything = sorted(path.stem for path in results.glob("*.json"))
    first = visible()
    assert first == everything[:100] and page.text_content("#page-label") == "1-100 of 120"
    assert page.is_disabled("#page-previous") and page.is_visible(".pager")
    page.click("#page-next")
    assert visible() == everything[100:] and page.text_content("#page-label") == "101-120 of 120"
    assert page.is_disabled("#page-next")
    # A filter counts every match that passes it, and starts again at its first page: p03's
    # 15 matches fit one, so there is nothing to page.
    page.select_option("#filter-player", "p03")
    assert page.text_content("#shown") == "15"
    assert visible() == [name for name in everything if "p03" in name]
    assert not page.is_visible(".pager")
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


def marked(page: Any, flag: str) -> list[set[tuple[str, str]]]:
    """Each board's cells the page marks with a class (`changed`, `winning`)."""
    boards: list[list[list[str]]] = page.eval_on_selector_all(
        "#board svg.board",
        f"""boards => boards.map(board => [...board.querySelectorAll("g.square.{flag}")].map(
            cell => [cell.dataset.row, cell.dataset.column]))""",
    )
    return [{(row, column) for row, column in cells} for cells in boards]


def engine_changed(before: list[Any], after: list[Any]) -> list[set[tuple[str, str]]]:
    """The cells whose symbol a step changed, on each board that kept its title."""
    changed = []
    for old, new in zip(before, after, strict=True):
        if old.title != new.title:
            changed.append(set())
            continue
        cells = dict(((row, column), mark) for row, column, mark in engine_marks([old])[0])
        changed.append(
            {(row, col) for row, col, mark in engine_marks([new])[0] if cells[(row, col)] != mark}
        )
    return changed


def test_a_step_has_its_own_url_and_moving_keeps_it(
    browser: Browser, site: Path, every_game_results: Path
) -> None:
    path = sorted(every_game_results.glob("hex-pie-*.json"))[0]
    game, states = states_of(path)
    page_path = site / "matches" / f"{path.stem}.html"
    page = browser.open(page_path)  # no step asked: the start, drawn, and said to be it
    assert page.input_value("#step") == "0"
    assert drawn_marks(page) == engine_marks(game.boards(states[0]))
    assert "start position" in page.text_content("#moves-caption")
    history = page.evaluate("history.length")
    page.goto(f"{page_path.as_uri()}#step=3")
    assert page.input_value("#step") == "3"
    assert drawn_marks(page) == engine_marks(game.boards(states[3]))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("location.hash") == "#step=5"
    assert page.evaluate("history.length") == history + 1  # the goto's entry, none per step
    page.evaluate("location.hash = '#step=2'")  # a link followed within the page
    page.wait_for_function("document.getElementById('step').value === '2'")
    assert drawn_marks(page) == engine_marks(game.boards(states[2]))
    for wrong, step in [("#step=99999", len(states) - 1), ("#step=-4", 0), ("#step=x", 0)]:
        page.goto(f"{page_path.as_uri()}{wrong}")
        assert page.input_value("#step") == str(step), wrong
    assert browser.errors == [] and browser.requests == []


def test_the_last_move_the_winning_cells_and_the_players_are_marked(
    browser: Browser, site: Path, every_game_results: Path
) -> None:
    won = 0
    for game_id in GAMES:
        path = sorted(every_game_results.glob(f"{game_id}-*.json"))[0]
        game, states = states_of(path)
        last = len(states) - 1
        page = browser.open(site / "matches" / f"{path.stem}.html")
        page.goto(f"{page.url}#step={last}")
        final = game.boards(states[-1])
        assert marked(page, "changed") == engine_changed(game.boards(states[-2]), final)
        assert marked(page, "winning") == [winning(board) for board in final], game_id
        won += any(board.winning for board in final)
        legend = page.text_content("#legend")
        seats = json.loads(path.read_text())["seats"]
        assert all(f"played by {seat['player']}" in legend for seat in seats), legend
    assert won >= 1  # hex-pie always ends on a chain
    assert browser.errors == [] and browser.requests == []


@pytest.fixture(scope="module")
def gdl_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a chess-like and a connect-four-like GDL game, two seeded random players."""
    directory = tmp_path_factory.mktemp("gdl")
    games = "[" + ", ".join(str(RULES / f"{g}.kif") for g in GDL_GAMES) + "]"
    config = load_config(write_config(directory, {"a": seeded(1), "b": seeded(2)}, games))
    # Beside the browser's event loop, which a tournament's own loop may not run inside.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(run, config).result()
    out = directory / "site"
    assert runner.invoke(app, ["report", str(config.output), "--out", str(out)]).exit_code == 0
    return out


GDL_GAMES = ("pawnToQueen", "connectFour")


@pytest.mark.corpus
def test_gdl_boards_are_drawn_the_right_way_round(browser: Browser, gdl_site: Path) -> None:
    pawns = sorted((gdl_site / "matches").glob("pawnToQueen-*.html"))[0]
    page = browser.open(pawns)
    cells = {(row, column): mark for row, column, mark in drawn_marks(page)[0]}
    columns = page.eval_on_selector_all(
        "#board svg.board text.label:not(.row)", "t => t.map(x => x.textContent)"
    )
    rows = page.eval_on_selector_all(
        "#board svg.board text.label.row", "t => t.map(x => x.textContent)"
    )
    assert columns == list("abcdefgh") and rows == [str(rank) for rank in range(8, 0, -1)]
    assert cells[("2", "c")] == "wp" and cells[("7", "d")] == "bp"
    assert page.text_content(".facts caption") == "control"
    four = sorted((gdl_site / "matches").glob("connectFour-*.html"))[0]
    page = browser.open(four)
    page.keyboard.press("End")
    rows = page.eval_on_selector_all(
        "#board svg.board text.label.row", "t => t.map(x => x.textContent)"
    )
    assert rows[-1] == "1" and rows == sorted(rows, key=int, reverse=True)
    # Every piece lies on the bottom row or on another piece: y = 1 is the bottom.
    cells = {(row, column): mark for row, column, mark in drawn_marks(page)[0]}
    for (row, column), mark in cells.items():
        if mark != "." and row != "1":
            assert cells[(str(int(row) - 1), column)] != ".", (row, column)
    # Its pieces are discs of the colours the rules name them by, as the game's picture has.
    discs = page.eval_on_selector_all(
        "#board g.square",
        """cells => cells.map(cell => [cell.dataset.mark,
            cell.querySelector("circle")?.getAttribute("class") ?? null])""",
    )
    assert {mark: disc for mark, disc in discs} == {
        ".": None,
        "red": "piece colour-red",
        "black": "piece colour-black",
    }
    fill = page.eval_on_selector(
        "#board circle.colour-black", "disc => getComputedStyle(disc).fill"
    )
    assert fill == "rgb(34, 34, 34)"
    assert browser.errors == [] and browser.requests == []


# The arena's policy for its pages (the design): the viewer must work under it.
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none';"
    " object-src 'none'"
)


def test_the_viewer_works_under_a_strict_content_security_policy(
    browser: Browser, every_game_results: Path
) -> None:
    path = sorted(every_game_results.glob("quad-*.json"))[0]
    replayed = verify_file(path).replayed
    assert replayed is not None and replayed.game is not None
    body = match_viewer(replayed.transcript, replayed.game, replayed.frames)
    head = (
        '<link rel="stylesheet" href="/assets/report.css"><script src="/assets/report.js"></script>'
    )
    files = {
        "/match": (
            "text/html",
            f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>",
        ),
        "/assets/report.js": ("text/javascript", asset("report.js")),
        "/assets/report.css": ("text/css", asset("report.css")),
    }

    def serve(route: Any) -> None:
        kind, text = files[urlsplit(route.request.url).path]
        headers = {"Content-Type": kind, "Content-Security-Policy": POLICY}
        route.fulfill(status=200, headers=headers, body=text)

    page = browser.context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route("http://arena.test/**", serve)
    last = len(replayed.frames) - 1
    page.goto(f"http://arena.test/match#step={last}")
    game, states = states_of(path)
    assert drawn_marks(page) == engine_marks(game.boards(states[-1]))
    assert page.evaluate("document.querySelectorAll('[style]').length") == 0
    # The style sheet applies: a piece of the first role is filled by its class.
    fill = page.eval_on_selector(
        "#board circle.piece.first", "circle => getComputedStyle(circle).fill"
    )
    assert fill == "rgb(200, 50, 43)"
    # The first role's line in the answer-time chart is its pieces' colour.
    stroke = page.eval_on_selector(
        "svg.chart polyline.times.first", "line => getComputedStyle(line).stroke"
    )
    assert stroke == fill
    page.close()
    assert errors == []  # a refused script, style or attribute is reported on the console


def test_a_match_of_imperfect_information_shows_each_seat_s_view_from_a_menu(
    browser: Browser, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    blind = RULESHEETS / "blind-tictactoe.kif"
    out = results / "blind.json"
    site = tmp_path / "site"
    play = ["play", str(blind), "-p", "xplayer=random", "-p", "oplayer=random", "--out", str(out)]
    # In processes of their own: the browser's event loop runs in this one.
    for command in (play, ["report", str(results), "--out", str(site)]):
        done = subprocess.run([sys.executable, "-m", "referee", *command], capture_output=True)
        assert done.returncode == 0, done.stderr
    transcript = read_transcript(out)
    last = len(transcript.steps)
    page = browser.open(site / "matches" / "blind.html")
    page.fill("#step", str(last))
    page.dispatch_event("#step", "input")
    assert page.is_visible("#board") and not page.is_visible("#told")
    for seat in ("xplayer", "oplayer"):
        page.select_option("#view", seat)
        assert not page.is_visible("#board") and page.is_visible("#told")
        told = page.eval_on_selector_all("#told li", "items => items.map(i => i.textContent)")
        assert told == [
            f"step {step.step}: played {step.moves[seat]}; saw "
            + (" ".join((step.percepts or {})[seat]) or "nothing")
            for step in transcript.steps
        ]
        # Only its own row of moves shows.
        rows = page.eval_on_selector_all(
            "#moves tbody tr", "rows => rows.filter(r => !r.hidden).map(r => r.dataset.role)"
        )
        assert rows == [seat]
    page.select_option("#view", "")
    assert page.is_visible("#board") and not page.is_visible("#told")
    # Its labels, whole: test_no_label_of_a_blind_tictactoe_match_is_clipped_at_1280_pixels.


# Every label of the viewer that is cut off: SVG text reaching past its picture's box, and
# any other text past the page's right edge (the page scrolls sideways) or its left.
CLIPPED_LABELS = """() => {
  const clipped = [];
  for (const svg of document.querySelectorAll("svg")) {
    if (svg.getClientRects().length === 0) continue;
    const box = svg.viewBox.baseVal;
    for (const text of svg.querySelectorAll("text")) {
      const b = text.getBBox();
      if (b.x < 0 || b.y < 0 || b.x + b.width > box.width || b.y + b.height > box.height) {
        clipped.push(`svg text ${text.textContent}: ${b.x},${b.y} ${b.width}x${b.height}`);
      }
    }
  }
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width) clipped.push("the page scrolls sideways");
  for (const element of document.querySelectorAll("body *")) {
    if (element.closest("svg") || element.getClientRects().length === 0) continue;
    const own = [...element.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const box = element.getBoundingClientRect();
    if (own && (box.left < 0 || box.right > width)) {
      const text = element.textContent.trim().slice(0, 40);
      clipped.push(`${element.tagName} ${text}: ${box.left}-${box.right}`);
    }
  }
  return clipped;
}"""


def test_no_label_of_a_blind_tictactoe_match_is_clipped_at_1280_pixels(
    browser: Browser, tmp_path: Path
) -> None:
    # Two listeners, each playing its first legal move: a match known in advance. Each tries
    # cells the other holds, so both come to know several cells, oplayer two in row 1.
    listener = f"{sys.executable} {Path(__file__).parent / 'players' / 'listener.py'}"
    results, site = tmp_path / "results", tmp_path / "site"
    results.mkdir()
    blind = RULESHEETS / "blind-tictactoe.kif"
    play = [
        "play", str(blind), "-p", f"xplayer={listener}", "-p", f"oplayer={listener}",
        "--out", str(results / "blind.json"),
    ]  # fmt: skip
    for command in (play, ["report", str(results), "--out", str(site)]):
        done = subprocess.run([sys.executable, "-m", "referee", *command], capture_output=True)
        assert done.returncode == 0, done.stderr
    last = len(read_transcript(results / "blind.json").steps)
    assert last == 13
    page = browser.new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto((site / "matches" / "blind.html").as_uri())
    for step in range(last + 1):
        page.fill("#step", str(step))
        page.dispatch_event("#step", "input")
        assert page.evaluate(CLIPPED_LABELS) == [], step
    # After step 12 each role's knowledge is listed whole, a row of its arguments each: no
    # grid of role by row whose cells hold one column each, one drawn over another.
    page.fill("#step", "12")
    page.dispatch_event("#step", "input")
    known = page.eval_on_selector_all(
        ".facts table",
        """tables => tables.filter(t => t.caption.textContent === "known")
            .map(t => [...t.querySelectorAll("td")].map(td => td.textContent))""",
    )
    assert known == [
        ["oplayer 1 1", "oplayer 1 3", "oplayer 2 2", "xplayer 1 2", "xplayer 2 1", "xplayer 2 3"]
    ]
    titles = page.eval_on_selector_all("#board figcaption", "c => c.map(x => x.textContent)")
    assert titles == ["cell"]
    for seat in ("xplayer", "oplayer"):
        page.select_option("#view", seat)
        assert page.evaluate(CLIPPED_LABELS) == [], seat
    page.close()
    assert browser.errors == []
