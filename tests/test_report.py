"""The report: a static site of a results directory. Every match is listed; a verified one
has a page whose last board is the engine's final state; a tampered one is listed as
failing and not rendered; nothing in a page reaches outside it."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.games import GAMES, get_game
from referee.games.boards.picture import Board
from referee.records.transcript import read_transcript
from referee.report import live, site
from referee.report.charts import WIDTH
from referee.report.pages import script_data
from referee.report.site import legend
from referee.tournaments.config import load_config
from referee.tournaments.standings import compute
from tests.support.boards import play, states_of
from tests.support.matches import TIMED_OUT_PLAY_MS
from tests.support.paths import EXAMPLES
from tests.support.reports import large_field, tampered_copy
from tests.support.tournaments import run, seeded, write_config

runner = CliRunner()


class Page(HTMLParser):
    """What the tests read of a page: its rows of matches, its links, its scripts' data."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.links: list[str] = []
        self.sources: list[str] = []
        self.data: dict[str, str] = {}
        self._data_id: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "tr" and "data-verified" in found:
            self.rows.append(found)
        if tag == "a":
            self.links.append(found.get("href", ""))
        if tag in ("script", "img", "link", "iframe") and ("src" in found or "href" in found):
            self.sources.append(found.get("src") or found.get("href", ""))
        if tag == "script" and found.get("type") == "application/json":
            self._data_id = found["id"]

    def handle_data(self, data: str) -> None:
        if self._data_id is not None:
            self.data[self._data_id] = self.data.get(self._data_id, "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._data_id = None


def final_board(path: Path) -> str:
    """The engine's own final board: the recorded joint moves applied from the start."""
    game, states = states_of(path)
    return game.render(states[-1])


def frames_of(page: Path) -> list[dict[str, object]]:
    frames: list[dict[str, object]] = json.loads(Page(page.read_text()).data["frames"])
    return frames


def test_the_report_lists_every_match_and_steps_each_to_the_engines_final_board(
    every_game_results: Path, tmp_path: Path
) -> None:
    results = every_game_results
    result = runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    transcripts = {path.stem: read_transcript(path) for path in results.glob("*.json")}
    assert len(transcripts) == 2 * len(GAMES)
    index = Page((tmp_path / "site" / "index.html").read_text())
    assert sorted(row["data-game"] for row in index.rows) == sorted(2 * list(GAMES))
    assert all(row["data-verified"] == "yes" for row in index.rows)
    assert sorted(link for link in index.links) == sorted(
        f"matches/{name}.html" for name in transcripts
    )
    for name, transcript in transcripts.items():
        frames = frames_of(tmp_path / "site" / "matches" / f"{name}.html")
        assert [frame["step"] for frame in frames] == list(range(len(transcript.steps) + 1))
        assert frames[-1]["board"] == final_board(results / f"{name}.json")
        assert frames[-1]["terminal"] is True


def test_a_match_forfeited_on_time_shows_the_seat_the_fault_and_its_step(
    timed_out_results: Path, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["report", str(timed_out_results), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    transcript = timed_out_results / "timed-out.json"
    step = len(read_transcript(transcript).steps) + 1
    detail = f"no answer within {TIMED_OUT_PLAY_MS} ms"
    page = tmp_path / "matches" / "timed-out.html"
    text = page.read_text()
    # Said on the page itself, whatever its script does.
    assert f"(forfeit; obplayer: timeout at step {step}, {detail})</p>" in text
    # The step is one to step to: the board it was asked on, and the fault for its row.
    last = frames_of(page)[-1]
    assert (last["step"], last["played"], last["moves"]) == (step, False, {})
    assert [(f["role"], f["kind"], f["detail"]) for f in last["faults"]] == [
        ("obplayer", "timeout", detail)
    ]
    assert last["board"] == final_board(transcript)
    # The answer-time chart rings it at its step, inside the chart.
    ring = re.search(r'<circle cx="([0-9.]+)"[^>]*class="fault" data-step="([0-9]+)"', text)
    assert ring is not None and ring[2] == str(step) and float(ring[1]) <= WIDTH
    index = (tmp_path / "index.html").read_text()
    # The faults: the first timeout's match, step, seat and what happened.
    cells = f'<td>timed-out</td><td class="number">{step}</td><td>obplayer</td><td>{detail}</td>'
    assert cells in index


def test_the_index_says_what_its_standings_rank_by_with_each_los_on_its_own_row(
    every_game_results: Path, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["report", str(every_game_results), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    first, second = compute([read_transcript(p) for p in every_game_results.glob("*.json")]).overall
    assert first.rating is not None and first.rating.los_next is not None
    index = (tmp_path / "index.html").read_text()
    table = index.split("<h2>Standings</h2>\n")[1].split("</table>")[0]
    assert table.startswith('<p class="note">ranked by rating (Elo)</p>')
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]
    assert [row[:2] for row in cells] == [
        ["1", first.player],
        ["", f"LOS {100 * first.rating.los_next:.1f}%: #1 stronger than #2"],
        ["2", second.player],
    ]


def test_each_roles_colour_is_the_same_on_the_board_and_in_the_chart(
    every_game_results: Path, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["report", str(every_game_results), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for page in sorted((tmp_path / "matches").glob("*.html")):
        text = page.read_text()
        lines = dict(re.findall(r'class="times ([a-z-]+)" data-role="([^"]+)"', text))
        chart = {role: colour for colour, role in lines.items()}
        assert len(chart) == len(read_transcript(every_game_results / f"{page.stem}.json").seats)
        for frame in frames_of(page):
            legend = frame["legend"]
            assert isinstance(legend, list)
            for key in legend:
                if key["role"] is not None:
                    assert key["colour"] == chart[key["role"]], (page.name, frame["step"], key)


def test_hex_pie_stones_take_their_new_owners_colour_at_the_swap() -> None:
    game = get_game("hex-pie")
    before = game.boards(play(game, ["(place a 1)"]))
    after = game.boards(play(game, ["(place a 1)", "swap"]))

    def colours(drawn: list[Board]) -> dict[str | None, str | None]:
        return {k["symbol"]: k["colour"] for k in legend(drawn, game.roles, {})}

    # player1's red stone becomes player2's: drawn in player2's colour, the one its blue
    # stones had before.
    assert colours(after)["X"] == colours(before)["O"] != colours(before)["X"]


def test_a_tampered_transcript_is_listed_as_failing_and_not_rendered(
    every_game_results: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "results"
    tampered = tampered_copy(every_game_results, copy)
    result = runner.invoke(app, ["report", str(copy), "--json"])
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert (summary["listed"], summary["rendered"], summary["failed"]) == (
        2 * len(GAMES) + 1, 2 * len(GAMES) - 1, 2
    )  # fmt: skip
    index = Page((copy / "report" / "index.html").read_text())
    failed = [row for row in index.rows if row["data-verified"] == "no"]
    assert len(failed) == 2 and all(row["class"] == "failed" for row in failed)
    assert f"matches/{tampered.stem}.html" not in index.links
    assert not (copy / "report" / "matches" / f"{tampered.stem}.html").exists()
    text = (copy / "report" / "index.html").read_text()
    assert "garbage.json" in text and "not rendered: " in text
    assert "neither rendered nor counted" in text


def test_a_page_reaches_nothing_outside_itself(every_game_results: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(every_game_results), "--out", str(tmp_path)])
    assert result.exit_code == 0
    for page in [tmp_path / "index.html", *sorted((tmp_path / "matches").glob("*.html"))]:
        parsed = Page(page.read_text())
        assert parsed.sources == []
        assert all(not re.match(r"[a-z]+:", link) for link in parsed.links), page


@pytest.mark.parametrize(
    "text",
    [
        "</script><script>alert(1)</script>",
        # An HTML parser inside a script element that meets `<!--<script` passes over the
        # next `</script>`: the element would swallow the rest of the page.
        "answered '<!--<script>', not a move",
        "a & b <b>",
    ],
)
def test_script_data_cannot_close_its_element_or_hide_its_end(text: str) -> None:
    element = script_data("frames", {"detail": text})
    body = element.removeprefix('<script type="application/json" id="frames">')
    body = body.removesuffix("</script>")
    assert not set("<>&") & set(body)
    assert json.loads(body) == {"detail": text}


def test_a_missing_results_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(tmp_path / "none")])
    assert result.exit_code == 2
    # One line: no progress bar's empty line before it.
    assert result.stderr == f"referee: error: {tmp_path / 'none'}: no such results directory\n"


def test_the_charts_show_every_rating_and_every_answer_time(
    every_game_results: Path, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["report", str(every_game_results), "--out", str(tmp_path)])
    assert result.exit_code == 0
    index = (tmp_path / "index.html").read_text()
    assert sorted(re.findall(r'<g class="rating" data-player="([^"]+)"', index)) == ["a", "b"]
    for path in sorted(every_game_results.glob("*.json")):
        transcript = read_transcript(path)
        page = (tmp_path / "matches" / f"{path.stem}.html").read_text()
        found = re.findall(
            r'<polyline points="([^"]*)" class="times [^"]*" data-role="([^"]+)"', page
        )
        lines = {role: points for points, role in found}
        for seat in transcript.seats:
            answered = [step for step in transcript.steps if seat.role in step.times_ms]
            assert len(lines[seat.role].split()) == len(answered)
        assert f"play clock {transcript.clocks['play_ms']} ms" in page


def test_a_report_is_kept_fresh_while_matches_finish(
    every_game_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "EVERY_S", 0.1)
    results, out = tmp_path / "results", tmp_path / "site"
    results.mkdir()
    shutil.copy(every_game_results / "signing.pub", results)
    key = (results / "signing.pub").read_text().strip()
    played = sorted(every_game_results.glob("*.json"))[:3]

    async def tournament() -> int:
        for path in played:  # matches finishing one by one
            shutil.copy(path, results)
            await asyncio.sleep(0.05)
        while not (out / "index.html").exists():  # until a refresh has happened
            await asyncio.sleep(0.05)
        return len(played)

    assert (
        asyncio.run(asyncio.wait_for(live.with_fresh_report(tournament(), results, out, key), 120))
        == 3
    )
    index = Page((out / "index.html").read_text())
    assert sorted(
        row["data-game"] for row in index.rows if row["data-verified"] == "yes"
    ) == sorted(read_transcript(path).game for path in played)


def test_tournament_report_writes_the_site_of_what_was_played(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, "[quad]")
    result = runner.invoke(app, ["tournament", str(path), "--report", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["matches"] == 2  # the report's line is not on stdout
    site = load_config(path).output / "report"
    assert len(Page((site / "index.html").read_text()).rows) == 2
    assert len(list((site / "matches").glob("*.html"))) == 2


def test_a_gdl_game_is_drawn_as_a_grid_of_its_facts(tmp_path: Path) -> None:
    rules = EXAMPLES / "tictactoe.kif"
    path = write_config(tmp_path, {"a": seeded(1), "b": seeded(2)}, f"[{rules}]")
    config = load_config(path)
    run(config)
    out = tmp_path / "site"
    assert runner.invoke(app, ["report", str(config.output), "--out", str(out)]).exit_code == 0
    for transcript_path in sorted(config.output.glob("*.json")):
        game, states = states_of(transcript_path)
        frames = frames_of(out / "matches" / f"{transcript_path.stem}.html")
        drawn = [
            [(row, [str(cell) for cell in cells]) for row, cells in frame["boards"][0]["rows"]]  # type: ignore[index]
            for frame in frames
        ]
        # Tic-tac-toe's (cell m n mark) facts: a 3x3 grid, every cell said, at every step.
        expected = [
            [(row, list(cells)) for row, cells in game.boards(state)[0].rows] for state in states
        ]
        assert drawn == expected
        assert [len(rows) for rows in drawn] == [3] * len(states)
        assert {cell for rows in drawn for _, cells in rows for cell in cells} <= {"b", "x", "o"}


@pytest.mark.parametrize("out", ["/proc/report", "file"])
def test_an_out_that_cannot_take_the_site_is_one_line_and_exit_2(
    every_game_results: Path, tmp_path: Path, out: str
) -> None:
    (tmp_path / "file").write_text("")
    target = out if out.startswith("/") else str(tmp_path / out)
    result = runner.invoke(app, ["report", str(every_game_results), "--out", target])
    assert result.exit_code == 2
    # One line, after the blank one the verifying bar leaves as it goes.
    assert result.output.strip().count("\n") == 0
    assert result.output.strip().startswith("referee: error: --out: cannot create the report's ")


def test_the_head_to_head_writes_an_even_pairing_as_the_terminal_does() -> None:
    even = {"wins": 1, "draws": 0, "losses": 1, "elo": -0.2}
    html = site._head_to_head({"a": {"b": even}, "b": {"a": dict(even, elo=0.2)}}, ["a", "b"])
    assert html.count("1-0-1 (+0)") == 2 and "(-0)" not in html


def test_the_head_to_head_is_in_the_standings_rank_order() -> None:
    """As the terminal has it: the rows and the columns by rank, not by name."""
    won = {"wins": 1, "draws": 0, "losses": 0, "elo": 400.0}
    lost = {"wins": 0, "draws": 0, "losses": 1, "elo": -400.0}
    html = site._head_to_head({"ann": {"zed": lost}, "zed": {"ann": won}}, ["zed", "ann"])
    assert html.index("<th>zed</th>") < html.index("<th>ann</th>")
    assert html.index("<td>zed</td>") < html.index("<td>ann</td>")


def test_a_large_fields_index_folds_its_head_to_head_and_pages_its_matches_holding_all(
    every_game_results: Path, tmp_path: Path
) -> None:
    results = large_field(every_game_results, tmp_path / "field", 16)
    out = tmp_path / "site"
    result = runner.invoke(app, ["report", str(results), "--out", str(out)])
    assert result.exit_code == 0, result.output
    index = (out / "index.html").read_text()
    # Every match listed, each with its page; the script shows them a hundred at a time.
    assert len(Page(index).rows) == 120 == len(list((out / "matches").glob("*.html")))
    assert '<p class="pager" data-rows="100" hidden>' in index
    # The head to head of 16 players is folded, and holds a cell for each side of every pair.
    head = index.split("<h2>Head to head</h2>")[1].split("<h2>")[0]
    assert head.startswith("\n<details>\n<summary>16 players: ")
    assert len(re.findall(r"<td>\d+-\d+-\d+ \([+-]\d+\)</td>", head)) == 16 * 15
