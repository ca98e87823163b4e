"""A results directory as a static site: an index of the standings and the matches, and a
page per match that steps through its boards.

Only verified transcripts are rendered: each file is replayed with the rules first (`replay
--verify`), and one that fails is listed with what failed, never rendered, since its moves
may not be the ones played. The site is written beside nothing it reads, each page
atomically, so a report refreshed during a tournament is never seen half written.

The transcripts are read one at a time: each is verified, its page written, and its result
counted into the standings (`standings.Tally`) and its row into the list of matches before
the next is read. So a report of a hundred thousand matches holds one match's frames at a
time. The index shows a large field's head-to-head table folded, and the list of matches a
page at a time (the report's script pages it; without the script it is whole).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from referee.errors import RefereeError
from referee.games import Game
from referee.games.boards.picture import Board
from referee.plaintext import elo_text
from referee.records.files import check_writable_dir, write_atomic
from referee.records.replayed import Frame
from referee.records.seats import seat_roles, seat_view
from referee.records.transcript import Transcript, transcript_files
from referee.records.verify import FileVerdict, Outcome, verify_file
from referee.report.charts import bracket_chart, ratings_chart, times_chart
from referee.report.colours import role_colour, symbol_colour
from referee.report.pages import options, page, script_data, table
from referee.tournaments.results import directory_standings, read_info
from referee.tournaments.standings import Record, Standings
from referee.tournaments.standings_tables import COLUMNS as STANDINGS_COLUMNS
from referee.tournaments.standings_tables import NUMERIC, as_json, ranking, rows
from referee.tournaments.swiss import SwissStandings
from referee.tournaments.swiss_tables import (
    CROSSTABLE_CAPTION,
    cross_cell,
    crosstable_columns,
    pair_text,
    swiss_columns,
    swiss_ranking,
    swiss_rows,
)

# Where the report goes in a results directory unless told otherwise; transcripts are the
# directory's own *.json files, so nothing here is taken for one.
REPORT_DIRECTORY = "report"
MATCHES = "matches"
RESULTS = ("win", "draw", "loss", "failed")
# The matches the list shows at a time (the script pages it), and the field whose
# head-to-head table is shown folded: past it, a table too large to read at a glance.
MATCH_PAGE = 100
FOLDED_FIELD = 12
# Where a player's name links to, by its name (None: nowhere).
PlayerLink = Callable[[str], str | None]


@dataclass(frozen=True)
class Site:
    """What a report holds: where its index is, and how many matches it lists and renders
    (a page each)."""

    index: Path
    listed: int
    rendered: int

    @property
    def failed(self) -> int:
        return self.listed - self.rendered


def write_report(
    results: Path,
    out: Path,
    expected_key: str | None,
    progress: Callable[[int, int], None] | None = None,
    assets: str | None = None,
) -> Site:
    """Verify every transcript of `results` and write the site to `out`; `progress(done,
    total)` after each file is verified. Its pages hold the report's style and script, or
    link them from `assets` (`pages.page`)."""
    if not results.is_dir():
        raise RefereeError(f"{results}: no such results directory")
    # Before the verifying, which takes a while: where the pages go must take them.
    check_writable_dir(out / MATCHES, "--out", "the report's ")
    paths = transcript_files(results)
    listing = Listing()

    def verified() -> Iterator[Transcript]:
        """Each transcript that verifies, its page written; every file listed."""
        for done, path in enumerate(paths, start=1):
            verdict = verify_file(path, expected_key)
            listing.add(verdict)
            replayed = verdict.replayed
            if verdict.outcome is Outcome.VERIFIED and replayed is not None:
                assert replayed.game is not None  # it verified
                page = match_page(replayed.transcript, replayed.game, replayed.frames, assets)
                write_atomic(out / MATCHES / page_name(path), page)
                yield replayed.transcript
            if progress is not None:
                progress(done, len(paths))

    standings = directory_standings(results, verified())
    index = out / "index.html"
    write_atomic(index, index_page(results, standings, listing, assets))
    return Site(index, listing.count, listing.count - listing.failed)


def page_name(transcript_path: Path) -> str:
    """A match page's file: named after its transcript's file, never after the match id
    inside it, which an imported match sets and could make a path out of the site."""
    return f"{transcript_path.stem}.html"


def match_page(
    transcript: Transcript, game: Game, frames: Sequence[Frame], assets: str | None = None
) -> str:
    """A match's page of the report: a link back to the index, then the match's viewer."""
    back = '<p><a href="../index.html">all matches</a></p>\n'
    return page(transcript.match_id, back + match_viewer(transcript, game, frames), assets)


def match_viewer(
    transcript: Transcript,
    game: Game,
    frames: Sequence[Frame],
    player_link: PlayerLink | None = None,
) -> str:
    """A match's viewer, as HTML for a page's body: its boards step by step, with the
    moves, times and faults of each. A report's page and an arena's page show it alike; the
    page must carry the report's script and style (`report.js`, `report.css`). A player's
    name links to where `player_link` says (an arena's page of its bot), if it says; else
    it is plain text."""
    players = {seat.role: seat.player for seat in transcript.seats}
    player = functools.partial(player_html, player_link=player_link)
    data = [frame_data(game, frame, players) for frame in frames]
    seats: list[str] = []
    if game.imperfect:
        # Each seat's view: what it was told of each step, its own move and percepts.
        seats = seat_roles(game.roles)
        views = [seat_view(transcript, game, frames, role) for role in seats]
        data[0]["told"] = {}
        for number, shown in enumerate(data[1:]):
            steps = [(view.role, view.steps[number].told) for view in views]
            shown["told"] = {role: seen for role, seen in steps if seen is not None}
    note = f"{escape(transcript.game)}: {_seats(transcript, player)}. {escape(_result(transcript))}"
    chart = f"<h2>Answer times</h2>\n{times_chart(transcript, game.roles)}\n"
    return steps_viewer(transcript.match_id, note, game.roles, players, data, chart, player, seats)


def player_html(name: str, player_link: PlayerLink | None = None) -> str:
    """A player's name as HTML: a link to where `player_link` says (an arena's page of its
    bot), if it says; else plain text."""
    target = None if player_link is None else player_link(name)
    if target is None:
        return escape(name)
    return f'<a class="player" href="{escape(target)}">{escape(name)}</a>'


def frame_data(game: Game, frame: Frame, players: dict[str, str]) -> dict[str, Any]:
    """A frame as the viewer's script draws it: its boards, facts and legend (`players`:
    each role's)."""
    drawn = game.boards(frame.state)
    shown = dict(frame.to_json(game), boards=boards(drawn), facts=facts(game, frame))
    return dict(shown, legend=legend(drawn, game.roles, players))


def steps_viewer(
    title: str,
    note: str,
    roles: Sequence[str],
    players: dict[str, str],
    data: Sequence[dict[str, Any]],
    after: str = "",
    player: Callable[[str], str] = escape,
    seats: Sequence[str] = (),
    truth: bool = True,
) -> str:
    """The viewer of frames already `frame_data`: titled, a note (HTML, escaped by the
    caller) under the title, then the controls, the board, the moves of each role (each
    player as `player` shows it), `after` (HTML) and the frames' data. In a game of imperfect
    information a menu shows, instead of the whole truth, what one of `seats` was told (the
    frames' `told`) up to the step shown; without the `truth` (a match still played, whose
    frames hold only what seats were told), the menu offers only those views."""
    rows = "".join(
        f'<tr data-role="{escape(role)}"><td>{escape(role)}</td>'
        f"<td>{player(players[role]) if role in players else ''}</td>"
        '<td class="move"></td><td class="time number"></td><td class="fault-cell"></td></tr>\n'
        for role in roles
    )
    moves = (
        '<table id="moves">\n<caption id="moves-caption"></caption>\n'
        "<thead><tr><th>role</th><th>player</th><th>move</th>"
        '<th class="number">ms</th><th>fault</th></tr></thead>\n'
        f"<tbody>\n{rows}</tbody>\n</table>"
    )
    last = len(data) - 1
    controls = (
        '<div class="controls">'
        '<button id="first" title="first step (Home)">|&lt;</button>'
        '<button id="previous" title="previous step (left arrow)">&lt;</button>'
        '<button id="play" title="play or pause (space)">play</button>'
        '<button id="next" title="next step (right arrow)">&gt;</button>'
        '<button id="last" title="last step (End)">&gt;|</button>'
        f'<input type="range" id="step" min="0" max="{last}" value="0" aria-label="step">'
        '<span id="step-label"></span></div>'
    )
    views = ""
    if seats:
        choices = "".join(
            f'<option value="{escape(role)}">what {escape(role)} was told</option>'
            for role in seats
        )
        whole = '<option value="">the whole truth</option>' if truth else ""
        views = (
            f'<label class="view">view <select id="view">{whole}{choices}</select></label>\n'
            '<div id="told" hidden><ol></ol></div>\n'
        )
    return (
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="note">{note}</p>\n'
        f'{controls}\n{views}<div id="board"></div>\n<div id="legend" class="legend"></div>\n'
        f"{moves}\n{after}{script_data('frames', list(data))}"
    )


def boards(drawn: Sequence[Board]) -> list[dict[str, Any]]:
    """A frame's boards as the page's script draws them."""
    return [
        {
            "title": board.title,
            "columns": board.columns,
            "rows": [[label, list(cells)] for label, cells in board.rows],
            "hexagonal": board.hexagonal,
            "winning": [list(cell) for cell in board.winning],
        }
        for board in drawn
    ]


def legend(
    drawn: Sequence[Board], roles: Sequence[str], players: dict[str, str]
) -> list[dict[str, str | None]]:
    """What a frame's symbols mean, once each, with the player of each role's pieces and
    the colour (a class) they are drawn in; then each role whose pieces no symbol shows, with
    its player and colour."""
    keys: dict[str, dict[str, str | None]] = {}
    for board in drawn:
        for key in board.legend:
            player = players.get(key.role) if key.role is not None else None
            keys.setdefault(
                key.symbol,
                {
                    "symbol": key.symbol,
                    "meaning": key.meaning,
                    "role": key.role,
                    "player": player,
                    "colour": symbol_colour(key.symbol, key.role, roles),
                },
            )
    shown = {key["role"] for key in keys.values()}
    seats = [
        {
            "symbol": None,
            "meaning": role,
            "role": role,
            "player": players.get(role),
            "colour": role_colour(role, roles),
        }
        for role in roles
        if role not in shown
    ]
    return [*keys.values(), *seats]


def facts(game: Game, frame: Frame) -> list[dict[str, Any]]:
    """A frame's facts beyond its boards, grouped by relation: `(control white)` is
    relation `control` with the row `white`."""
    groups: dict[str, list[str]] = {}
    for fact in game.other_facts(frame.state):
        inner = fact[1:-1] if fact.startswith("(") and fact.endswith(")") else fact
        relation, _, rest = inner.partition(" ")
        groups.setdefault(relation, []).append(rest)
    return [{"relation": name, "rows": rows} for name, rows in groups.items()]


def index_page(
    results: Path,
    standings: Standings,
    listing: Listing,
    assets: str | None = None,
) -> str:
    """The index: the standings, head to head, faults, and every match with its filters."""
    data = as_json(standings)
    info = read_info(results)
    title = info.name if info is not None else results.name
    parts = [f"<h1>{escape(title)}</h1>", _summary(standings, listing)]
    if data["knockout"] is not None:
        parts += ["<h2>Bracket</h2>", bracket_chart(data["knockout"]), _finishes(data["knockout"])]
    if standings.swiss is not None:
        parts += ["<h2>Swiss</h2>", _swiss(standings.swiss)]
        parts += ["<h2>Crosstable</h2>", crosstable(standings.swiss, listing.pages)]
    parts += ["<h2>Standings</h2>", _standings(standings.overall)]
    parts += ["<h2>Ratings</h2>", ratings_chart(data["overall"])]
    for game_id, records in sorted(standings.by_game.items()):
        parts += [f"<h2>{escape(game_id)}</h2>", _standings(records)]
    ranked = [record.player for record in standings.overall]
    parts += ["<h2>Head to head</h2>", _head_to_head(data["head_to_head"], ranked)]
    parts += ["<h2>Faults</h2>", _faults(data["faults"])]
    parts += ["<h2>Matches</h2>", _matches(listing)]
    return page(title, "\n".join(parts), assets)


def _summary(standings: Standings, listing: Listing) -> str:
    failed = listing.failed
    text = f"{listing.count} matches, {listing.count - failed} verified"
    if failed:
        text += f", {failed} failed verification and are neither rendered nor counted"
    if standings.scheduled is not None:
        text += f"; {standings.scheduled} scheduled"
    return f'<p class="note">{escape(text)}.</p>'


def _standings(records: list[Record]) -> str:
    """A standings table as the command line has it, saying what it ranks by."""
    table_ = table(STANDINGS_COLUMNS, rows(records), NUMERIC, ' class="standings"')
    return f'<p class="note">{escape(ranking(records))}</p>\n{table_}'


def _swiss(swiss: SwissStandings) -> str:
    """The Swiss table as the command line has it, then each round's pairs."""
    columns = swiss_columns(swiss)
    numeric = [column != "player" for column in columns]
    ranked = table(columns, swiss_rows(swiss), numeric, ' class="swiss"')
    lines = "".join(
        f'<tr class="round"><td class="number">{played.number}</td>'
        f"<td>{escape(', '.join(pair_text(result) for result in results))}</td>"
        f"<td>{escape(played.bye or '')}</td></tr>\n"
        for played, results in swiss.rounds
    )
    rounds = (
        '<table class="rounds">\n<thead><tr><th class="number">round</th><th>pairs, first seat'
        f" first</th><th>bye</th></tr></thead>\n<tbody>\n{lines}</tbody>\n</table>"
    )
    caption = f'<p class="note">{escape(swiss_ranking(swiss))}</p>'
    return f"{caption}\n{ranked}\n<h2>Rounds</h2>\n{rounds}"


def crosstable(swiss: SwissStandings, pages: set[str]) -> str:
    """The crosstable as the command line has it, each cell's games linked to their pages
    (those of `pages`, the match pages written), numbered in the order they are played."""
    rank = {row.player: number for number, row in enumerate(swiss.crosstable, start=1)}
    lines = []
    for number, row in enumerate(swiss.crosstable, start=1):
        cells = []
        for cell in row.rounds:
            links = [
                f'<a href="{MATCHES}/{escape(quote(f"{match_id}.html"))}"'
                f' title="{escape(match_id)}">g{game}</a>'
                for game, match_id in enumerate(cell.matches if cell else (), start=1)
                if f"{match_id}.html" in pages
            ]
            games = f' <span class="games">{" ".join(links)}</span>' if links else ""
            cells.append(f"<td>{escape(cross_cell(cell, rank))}{games}</td>")
        lines.append(
            f'<tr><td class="number">{number}</td><td>{escape(row.player)}</td>'
            f'<td class="number">{row.score:g}</td>{"".join(cells)}</tr>\n'
        )
    head = "".join(
        f'<th class="number">{escape(c)}</th>' if c in ("#", "score") else f"<th>{escape(c)}</th>"
        for c in crosstable_columns(swiss)
    )
    games_note = "g1, g2, ...: the pairing's games, each a link to its match"
    caption = escape(f"{CROSSTABLE_CAPTION}; {games_note}")
    return (
        f'<p class="note">{caption}</p>\n<div class="wide">\n<table class="crosstable">\n'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{''.join(lines)}</tbody>\n</table>\n</div>"
    )


def _finishes(knockout: dict[str, Any]) -> str:
    seeds = knockout["seeds"]
    rows = [[f["player"], seeds.index(f["player"]) + 1, f["finish"]] for f in knockout["finishes"]]
    return table(["player", "seed", "finish"], rows, [False, True, False])


def _head_to_head(pairs: dict[str, dict[str, dict[str, Any]]], ranked: list[str]) -> str:
    """Rows and columns in the standings' rank order, as the command line has them."""
    players = [player for player in ranked if player in pairs]
    players += sorted(set(pairs) - set(players))
    if not players:
        return '<p class="note">No matches.</p>'

    def cell(row: str, column: str) -> str:
        record = pairs[row].get(column)
        if record is None:
            return ""
        return f"{record['wins']}-{record['draws']}-{record['losses']} ({elo_text(record['elo'])})"

    rows = [[row, *(cell(row, column) for column in players)] for row in players]
    # Scrolled sideways within its box where it is wider than the page.
    laid_out = f'<div class="wide">\n{table(["", *players], rows)}\n</div>'
    if len(players) <= FOLDED_FIELD:
        return laid_out
    summary = f"{len(players)} players: the table, a row and a column each"
    return f"<details>\n<summary>{escape(summary)}</summary>\n{laid_out}\n</details>"


def _faults(faults: list[dict[str, Any]]) -> str:
    if not faults:
        return '<p class="note">No faults.</p>'
    first = ("first_match", "first_step", "first_role", "first_detail")
    rows = [[f["player"], f["fault"], f["count"], *(f[key] for key in first)] for f in faults]
    headers = ["player", "fault", "count", "first match", "its step", "its seat", "what happened"]
    return table(headers, rows, [False, False, True, False, True, False, False])


class Listing:
    """The list of matches as its files are verified: a row each, already HTML, and what the
    filters offer; nothing else of a match is kept."""

    def __init__(self) -> None:
        self.rows: list[str] = []
        self.games: set[str] = set()
        self.players: set[str] = set()
        self.failed = 0
        # The match pages written: those of the transcripts that verified.
        self.pages: set[str] = set()

    @property
    def count(self) -> int:
        return len(self.rows)

    def add(self, verdict: FileVerdict) -> None:
        replayed = verdict.replayed
        verified = verdict.outcome is Outcome.VERIFIED
        self.failed += not verified
        if replayed is None:  # not even read: there is only the file's name to list
            problem = escape(verdict.problem or str(verdict.outcome))
            name = escape(verdict.path.name)
            self.rows.append(_match_row({}, [name, "", "", problem], verified=False))
            return
        transcript = replayed.transcript
        names = [seat.player for seat in transcript.seats]
        self.games.add(transcript.game)
        self.players.update(names)
        name = escape(transcript.match_id)
        page = escape(quote(page_name(verdict.path)))
        link = f'<a href="{MATCHES}/{page}">{name}</a>' if verified else name
        if verified:
            self.pages.add(page_name(verdict.path))
        result = _result(transcript) if verified else f"not rendered: {verdict.problem}"
        found = {"game": transcript.game, "players": " ".join(names)}
        found["winners"] = " ".join(_winners(transcript))
        cells = [link, escape(transcript.game), _seats(transcript), escape(result)]
        self.rows.append(_match_row(found, cells, verified))


def _matches(listing: Listing) -> str:
    """The list of matches with its filters, and the controls that page it (`MATCH_PAGE`
    rows at a time, the script's)."""
    filters = (
        '<p class="filters">'
        f'<label>game <select id="filter-game">{options(sorted(listing.games), "all")}</select>'
        "</label>"
        f'<label>player <select id="filter-player">{options(sorted(listing.players), "all")}'
        "</select></label>"
        f'<label>result <select id="filter-result">{options(RESULTS, "any")}</select></label>'
        f'<span id="shown">{listing.count}</span> shown</p>'
    )
    pager = (
        f'<p class="pager" data-rows="{MATCH_PAGE}" hidden>'
        '<button id="page-previous">previous</button>'
        '<span id="page-label"></span>'
        '<button id="page-next">next</button></p>'
    )
    return (
        f'{filters}\n{pager}\n<table id="matches">\n<thead><tr><th>match</th><th>game</th>'
        f"<th>players</th><th>result</th></tr></thead>\n<tbody>\n{''.join(listing.rows)}"
        "</tbody>\n</table>"
    )


def _match_row(data: dict[str, str], cells: Sequence[str], verified: bool) -> str:
    """A row of the match list: what the filters read, and cells already HTML."""
    attributes = "".join(f' data-{key}="{escape(value)}"' for key, value in data.items())
    attributes += f' data-verified="{"yes" if verified else "no"}"'
    if not verified:
        attributes += ' class="failed"'
    return f"<tr{attributes}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>\n"


def _seats(transcript: Transcript, player: Callable[[str], str] = escape) -> str:
    """The seats as HTML: each player (as `player` shows it) and its role."""
    return ", ".join(f"{player(seat.player)} as {escape(seat.role)}" for seat in transcript.seats)


def _result(transcript: Transcript) -> str:
    """The goals and the end, with what decided it when the rules did not."""
    why = transcript.why_ended()
    end = f"{transcript.end_reason}; {why}" if why else transcript.end_reason
    if transcript.goals is None:
        return f"no result ({end})"
    goals = ", ".join(f"{role} {goal}" for role, goal in transcript.goals.items())
    return f"goals {goals} ({end})"


def _winners(transcript: Transcript) -> list[str]:
    """The players of the highest goal; none when every player has the same."""
    if not transcript.goals or len(set(transcript.goals.values())) == 1:
        return []
    best = max(transcript.goals.values())
    return [seat.player for seat in transcript.seats if transcript.goals.get(seat.role) == best]
