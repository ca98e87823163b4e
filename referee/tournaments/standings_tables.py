"""Standings as tables: text (plain or Markdown), CSV and JSON, with their captions.

What they show is computed by standings.py from the transcripts; here it is only laid out:
the ranked table of each scope, head to head, a Swiss's tables (swiss_tables.py), a knockout's
bracket, the SPRT and the faults.

Text for a terminal is fit to its width: a ranked table too wide for it has fewer, narrower
columns; the head-to-head table of a field too large for it shows the first players by rank,
as many as fit, and says where the rest is (JSON and the HTML report hold all of it). Text
with no width (a file, a pipe, Markdown) is laid out whole.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from tabulate import MIN_PADDING, tabulate

from referee.errors import FaultKind
from referee.plaintext import elo_text, fit, laid_out, versus
from referee.plaintext import table as fitted_table
from referee.tournaments.formats import Format
from referee.tournaments.knockout import KnockoutStandings, round_name, tie_text
from referee.tournaments.ratings import pairwise, pairwise_los
from referee.tournaments.sprt import SprtStatus, Verdict
from referee.tournaments.standings import (
    FirstFault,
    PairLine,
    PairRecord,
    Record,
    Standings,
    ranks_by_goal,
)
from referee.tournaments.swiss_tables import (
    crosstable_text,
    rounds_text,
    swiss_json,
    swiss_table,
)
from referee.tournaments.withdrawal import WITHDRAWN

COLUMNS = ["#", "player", "Elo", "95% interval", "matches", "wins", "draws", "losses"]
COLUMNS += ["draws %", "score %", "avg goal", "faults"]
# Which of them hold numbers, to align on the right where a table can.
NUMERIC = [True, False, True, True, True, True, True, True, True, True, True, False]


def _row(rank: int, record: Record) -> list[Any]:
    rating = record.rating
    faults = ", ".join(f"{n} {kind}" for kind, n in sorted(record.faults.items())) or "-"
    return [
        rank,
        f"{record.player} ({WITHDRAWN})" if record.withdrawn else record.player,
        elo_text(rating.elo) if rating else "",
        f"{elo_text(rating.low)} to {elo_text(rating.high)}" if rating else "",
        record.matches,
        record.wins,
        record.draws,
        record.losses,
        f"{100 * record.draw_ratio:.1f}",
        f"{100 * record.score:.1f}",
        f"{record.average_goal:.1f}",
        faults,
    ]


def ranking(records: Iterable[Record]) -> str:
    """What a table ranks by, as its caption says it."""
    if ranks_by_goal(records):
        return (
            "ranked by average goal (avg goal), then rating: a game of more than two roles counts"
        )
    return "ranked by rating (Elo)"


def progress_text(standings: Standings) -> str:
    """`30 matches`, or `5 of 24 matches played` while the schedule is not complete."""
    total = standings.scheduled
    stopped = standings.sprt is not None and standings.sprt.verdict is not Verdict.RUNNING
    if total is None or standings.matches >= total or stopped:
        return f"{standings.matches} matches"
    return f"{standings.matches} of {total} matches played"


def render(standings: Standings, fmt: Format, width: int | None = None) -> str:
    """The standings as text in one of the formats; plain text fit to `width` columns (a
    terminal's), if given."""
    if fmt is Format.JSON:
        return json.dumps(as_json(standings), indent=2)
    if fmt is Format.CSV:
        return _csv(standings)
    if fmt is Format.MARKDOWN:
        return _text(standings, "github", None)
    return _text(standings, "simple", width)


def _text(standings: Standings, style: str, width: int | None) -> str:
    """The standings as plain text (`simple`) or Markdown (`github`), fit to `width`."""
    markdown = style == "github"

    def heading(text: str) -> str:
        return f"## {text}" if markdown else fit(text, width)

    def lines(text: str) -> str:
        """Each line fit to the width."""
        return "\n".join(fit(line, width) for line in text.splitlines())

    def as_text(text: str) -> str:
        """Lines laid out as text: Markdown keeps them so in a code block."""
        return f"```\n{text}\n```" if markdown else lines(text)

    anchored = f"{standings.anchor} at 0" if standings.anchor else "the mean at 0"
    blocks = []
    if standings.knockout is not None:
        found = standings.knockout
        winner = next((name for name, finish in found.places if finish == "winner"), None)
        blocks += [
            heading(
                f"Knockout: {len(found.seeds)} players, {found.total_rounds} rounds"
                f" ({progress_text(standings)}); "
                + (f"the winner: {winner}" if winner else "not decided yet")
            ),
            as_text(bracket_text(found)),
            heading("Finishes"),
            laid_out(
                ["player", "seed", "finish"],
                [[name, found.seeds.index(name) + 1, finish] for name, finish in found.places],
                style,
                width,
            ),
        ]
    if standings.swiss is not None:
        blocks += [
            heading(f"Swiss: {len(standings.swiss.rounds)} rounds ({progress_text(standings)})"),
            swiss_table(standings.swiss, style, width),
            heading("Crosstable"),
            crosstable_text(standings.swiss, style, width),
            heading("Rounds"),
            as_text(rounds_text(standings.swiss)),
        ]
    blocks += [
        heading(f"Standings: all games ({progress_text(standings)}; Elo with {anchored})"),
        table(standings.overall, style, width),
    ]
    if standings.pair is not None:
        blocks += [heading(PAIR_HEADING), lines(pair_text_line(standings.pair))]
    if len(standings.by_game) > 1:
        for game, records in standings.by_game.items():
            blocks += [heading(game), table(records, style, width)]
    blocks += [
        heading(
            "Head to head: the row player's wins-draws-losses against the column player,"
            " and its pairwise Elo"
        ),
        head_to_head_text(standings, style, width),
    ]
    if standings.sprt is not None:
        blocks += [heading("SPRT"), lines(sprt_text(standings.sprt))]
    blocks += [heading("Faults"), fault_table(standings.faults, style, width)]
    return "\n\n".join(blocks)


_GAP = 2  # spaces between the columns of tabulate's plain format
# Where every pairing and column is when a terminal shows only some.
WHOLE = "all of it: --json, or the HTML report (referee report)"


def head_to_head_text(standings: Standings, style: str = "simple", width: int | None = None) -> str:
    """The head-to-head table, rows and columns in rank order: whole where it fits `width`
    (or there is none); else the first players by rank, as many as fit, and a line that
    says so and where the rest is."""
    names = [record.player for record in standings.overall]
    pairs = standings.head_to_head
    shown = len(names) if width is None else _fitting_players(names, pairs, width)
    if shown < 2 and len(names) >= 2:
        return fit(
            f"({len(names)} players: their table does not fit {width} columns; {WHOLE})", width
        )
    first = names[:shown]
    matrix = [
        [row, *(_wdl(pairs[row].get(col)) if col != row else "" for col in first)] for row in first
    ]
    laid_out = tabulate(matrix, headers=["", *first], tablefmt=style, disable_numparse=True)
    if shown == len(names):
        return laid_out
    note = f"(the first {shown} of {len(names)} players by rank, as many as {width} columns hold;"
    note += f" {WHOLE})"
    return f"{laid_out}\n{fit(note, width)}"


def _fitting_players(names: list[str], pairs: dict[str, dict[str, PairRecord]], width: int) -> int:
    """How many of the first `names` a head-to-head table `width` wide holds (tabulate's
    plain format: each column as wide as its widest cell, or its header and two spaces,
    the columns two spaces apart). Counted player by player, each widening every column
    before it by its row: as long as they fit, never the whole field's cells."""
    columns: list[int] = []  # the widths of the players' columns so far
    names_width = MIN_PADDING  # the first column's: the row players' names
    for count, name in enumerate(names, start=1):
        row = [len(_wdl(pairs[name].get(col))) for col in names[: count - 1]]
        columns = [max(known, cell) for known, cell in zip(columns, row, strict=True)]
        column = [len(_wdl(pairs[other].get(name))) for other in names[: count - 1]]
        columns.append(max([len(name) + MIN_PADDING, *column]))
        names_width = max(names_width, len(name))
        if names_width + sum(columns) + _GAP * len(columns) > width:
            return count - 1
    return len(names)


def bracket_text(knockout: KnockoutStandings) -> str:
    """Each round of the bracket as far as it is known, a tie a line."""
    lines = []
    for ties in knockout.rounds:
        lines.append(round_name(ties[0].round, knockout.total_rounds).removeprefix("the "))
        lines += [f"  {tie_text(tie)}" for tie in ties]
    return "\n".join(lines)


def table(records: list[Record], style: str = "simple", width: int | None = None) -> str:
    """What the table ranks by, then its rows (`rows`); where they are wider than `width`,
    the compact rows (`compact_rows`) fit to it, with a line saying what they leave out."""
    ranked = tabulate(rows(records), headers=COLUMNS, tablefmt=style, disable_numparse=True)
    # Markdown needs a blank line between a paragraph and a table.
    gap = "\n" if style == "simple" else "\n\n"
    if width is None or max(map(len, ranked.splitlines())) <= width:
        return f"{ranking(records)}:{gap}{ranked}"
    compact = fitted_table(COMPACT_COLUMNS, compact_rows(records), width, disable_numparse=True)
    caption = f"{ranking(records)}; {COMPACT_NOTE}:"
    return f"{fit(caption, width)}{gap}{compact}"


# The ranked table where the whole one is too wide: wins, draws and losses in one column,
# the LOS over the player below in another, the matches and the draw ratio left out.
# Its headers are short: at 80 columns, the widest of them made a field of short names a
# block of lines a player.
COMPACT_COLUMNS = ["#", "player", "Elo", "95% CI", "W-D-L", "score%", "goal", "faults", "LOS"]
COMPACT_NOTE = (
    "95% CI the Elo's interval, W-D-L wins-draws-losses, goal the average goal, LOS the"
    " likelihood of being stronger than the player below; every column: --format csv, --json"
)


def compact_rows(records: list[Record]) -> list[list[Any]]:
    """A row per player, ranked, in COMPACT_COLUMNS."""
    found = []
    for rank, record in enumerate(records, start=1):
        whole = _row(rank, record)
        los = los_next(records, rank)
        wdl = f"{record.wins}-{record.draws}-{record.losses}"
        found.append([*whole[:4], wdl, *whole[9:], "" if los is None else f"{100 * los:.1f}%"])
    return found


def rows(records: list[Record]) -> list[list[Any]]:
    """A row per player, ranked, in COLUMNS; between two players rated one after the other,
    a row with the LOS of the one above over the one below."""
    found = []
    for rank, record in enumerate(records, start=1):
        found.append(_row(rank, record))
        los = los_line(records, rank)
        if los is not None:
            found.append(["", los, *[""] * (len(COLUMNS) - 2)])
    return found


def los_line(records: list[Record], rank: int) -> str | None:
    """`LOS 71.4%: #1 stronger than #2`: the LOS of the player at `rank` (from 1) over the
    one below it, for a row between the two (`los_next`)."""
    los = los_next(records, rank)
    if los is None:
        return None
    return f"LOS {100 * los:.1f}%: #{rank} stronger than #{rank + 1}"


def los_next(records: list[Record], rank: int) -> float | None:
    """The LOS of the player at `rank` (from 1) over the one below it; None unless that one
    is the one rated next below it (a ranking by goal may put another player there)."""
    if rank >= len(records):
        return None
    above, below = records[rank - 1].rating, records[rank].rating
    if above is None or above.los_next is None or below is None or below.elo > above.elo:
        return None
    if any(r.rating and below.elo < r.rating.elo < above.elo for r in records):
        return None
    return above.los_next


def fault_table(faults: list[FirstFault], style: str = "simple", width: int | None = None) -> str:
    """Per player and kind of fault: how many, and the first one with its log."""
    if not faults:
        return "no faults"
    rows: list[list[Any]] = [
        [f.player, str(f.kind), f.count, f"{f.match_id}, {f.first}", f.log or "-"] for f in faults
    ]
    return laid_out(["player", "fault", "count", "first", "its log"], rows, style, width)


def sprt_text(sprt: SprtStatus) -> str:
    """The test in three lines: the verdict and LLR with its bounds, the pairs, the Elo."""
    settings = sprt.settings
    ll, ld, d, wd, ww = sprt.pentanomial
    return "\n".join(
        [
            f"{sprt.verdict}: LLR {sprt.llr:.2f}"
            f" (bounds {settings.lower:.2f}, {settings.upper:.2f};"
            f" elo0 {settings.elo0:g}, elo1 {settings.elo1:g}, alpha {settings.alpha:g},"
            f" beta {settings.beta:g})",
            f"pairs {sprt.pairs}: [LL {ll}, LD {ld}, WL+DD {d}, WD {wd}, WW {ww}]",
            f"Elo {sprt.elo.elo:+.1f} +- {sprt.elo.margin:.1f} (95%, from the pairs)",
        ]
    )


PAIR_HEADING = (
    "Pair: the first player's results against the second; Elo and LOS from its pairs of"
    " games (one opening, the seats swapped) where they differ in score, else from its games;"
    " Ptnml(0-2): the pairs that scored 0, 1/2, 1, 3/2, 2 (LL, LD, WL+DD, WD, WW)"
)


def pair_text_line(pair: PairLine) -> str:
    """`v2 vs v1: 200 games, W-L-D 80-74-46 (51.5%), Elo +10.4 +- 20.1 (95%), LOS 84.5%, draw
    ratio 23.0%, Ptnml(0-2) [5, 20, 40, 25, 10]`: a two-player run's result, as fastchess
    gives it (the pentanomial only where a pair of games is whole)."""
    penta = "" if pair.pentanomial is None else f", Ptnml(0-2) {list(pair.pentanomial)}"
    return (
        f"{versus(pair.first, pair.second)}: {pair.games} games,"
        f" W-L-D {pair.wins}-{pair.losses}-{pair.draws} ({100 * pair.score:.1f}%),"
        f" Elo {pair.elo.elo:+.1f} +- {pair.elo.margin:.1f} (95%),"
        f" LOS {100 * pair.los:.1f}%, draw ratio {100 * pair.draw_ratio:.1f}%{penta}"
    )


def _pair_line_json(pair: PairLine) -> dict[str, Any]:
    return {
        "players": [pair.first, pair.second],
        "games": pair.games,
        "wins": pair.wins,
        "losses": pair.losses,
        "draws": pair.draws,
        "score": round(pair.score, 4),
        "elo": round(pair.elo.elo, 1),
        "elo_margin": round(pair.elo.margin, 1),
        "los": round(pair.los, 4),
        "draw_ratio": round(pair.draw_ratio, 4),
        "pentanomial": None if pair.pentanomial is None else list(pair.pentanomial),
    }


def _wdl(record: PairRecord | None) -> str:
    if record is None:
        return "-"
    estimate = pairwise(record.wins, record.draws, record.losses)
    return f"{record.wins}-{record.draws}-{record.losses} ({elo_text(estimate.elo)})"


def _record_json(record: Record) -> dict[str, Any]:
    rating = record.rating
    return {
        "player": record.player,
        "elo": round(rating.elo, 1) if rating else 0.0,
        "elo_low": round(rating.low, 1) if rating else 0.0,
        "elo_high": round(rating.high, 1) if rating else 0.0,
        "los_next": round(rating.los_next, 4) if rating and rating.los_next is not None else None,
        "matches": record.matches,
        "wins": record.wins,
        "draws": record.draws,
        "losses": record.losses,
        "draw_ratio": round(record.draw_ratio, 4),
        "score": round(record.score, 4),
        "average_goal": round(record.average_goal, 3),
        "faults": {kind.value: record.faults[kind] for kind in FaultKind},
        WITHDRAWN: record.withdrawn,
    }


def _pair_json(record: PairRecord) -> dict[str, Any]:
    estimate = pairwise(record.wins, record.draws, record.losses)
    return {
        "wins": record.wins,
        "draws": record.draws,
        "losses": record.losses,
        "score": round(record.score, 4),
        "elo": round(estimate.elo, 1),
        "elo_margin": round(estimate.margin, 1),
        "los": round(pairwise_los(record.wins, record.losses), 4),
    }


def _sprt_json(sprt: SprtStatus) -> dict[str, Any]:
    settings = sprt.settings
    return {
        "verdict": str(sprt.verdict),
        "llr": round(sprt.llr, 4),
        "lower_bound": round(settings.lower, 4),
        "upper_bound": round(settings.upper, 4),
        "elo0": settings.elo0,
        "elo1": settings.elo1,
        "alpha": settings.alpha,
        "beta": settings.beta,
        "pairs": sprt.pairs,
        "pentanomial": list(sprt.pentanomial),
        "elo": round(sprt.elo.elo, 1),
        "elo_margin": round(sprt.elo.margin, 1),
    }


def _knockout_json(knockout: KnockoutStandings) -> dict[str, Any]:
    return {
        "seeds": list(knockout.seeds),
        "rounds": [
            [
                {
                    "seeds": [tie.high_seed, tie.low_seed],
                    "players": [tie.high, tie.low],
                    "points": list(tie.points),
                    "games": tie.played,
                    "winner": tie.winner,
                    "decided_by": tie.decided_by or None,
                }
                for tie in ties
            ]
            for ties in knockout.rounds
        ],
        "finishes": [{"player": name, "finish": finish} for name, finish in knockout.places],
    }


def as_json(standings: Standings) -> dict[str, Any]:
    """The standings as JSON-ready data: every rating a finite number."""
    return {
        "matches": standings.matches,
        "scheduled": standings.scheduled,
        "anchor": standings.anchor,
        "overall": [_record_json(r) for r in standings.overall],
        "games": {g: [_record_json(r) for r in rs] for g, rs in standings.by_game.items()},
        "head_to_head": {
            row: {col: _pair_json(record) for col, record in cols.items()}
            for row, cols in standings.head_to_head.items()
        },
        "pair": _pair_line_json(standings.pair) if standings.pair else None,
        "sprt": _sprt_json(standings.sprt) if standings.sprt else None,
        "swiss": swiss_json(standings.swiss) if standings.swiss else None,
        "knockout": _knockout_json(standings.knockout) if standings.knockout else None,
        "faults": [
            {
                "player": f.player,
                "fault": str(f.kind),
                "count": f.count,
                "first_match": f.match_id,
                "first_step": f.first.step,
                "first_role": f.first.role,
                "first_detail": f.first.detail,
                "log": f.log,
            }
            for f in standings.faults
        ],
    }


def _csv(standings: Standings) -> str:
    """One row per player and scope: `all`, or a game id."""
    out = io.StringIO()
    columns = ["game", *_record_json(Record(""))]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c for c in columns if c != "faults"] + [f"faults_{k}" for k in FaultKind])
    scopes = [("all", standings.overall), *standings.by_game.items()]
    for scope, records in scopes:
        for record in records:
            data = _record_json(record)
            faults = data.pop("faults")
            writer.writerow([scope, *data.values(), *faults.values()])
    return out.getvalue().rstrip("\n")
