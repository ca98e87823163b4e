"""Standings as tables: text (plain or Markdown), CSV and JSON, with their captions.

What they show is computed by standings.py from the transcripts; here it is only laid out:
the ranked table of each scope, head to head, the Swiss table and its rounds, a knockout's
bracket, the SPRT and the faults.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from tabulate import tabulate

from referee.errors import FaultKind
from referee.tournaments.formats import Format
from referee.tournaments.knockout import KnockoutStandings, round_name, tie_text
from referee.tournaments.ratings import pairwise, pairwise_los
from referee.tournaments.sprt import SprtStatus, Verdict
from referee.tournaments.standings import FirstFault, Record, Standings, ranks_by_goal
from referee.tournaments.swiss import PairResult, SwissStandings
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


def render(standings: Standings, fmt: Format) -> str:
    """The standings as text in one of the formats."""
    if fmt is Format.JSON:
        return json.dumps(as_json(standings), indent=2)
    if fmt is Format.CSV:
        return _csv(standings)
    style = "github" if fmt is Format.MARKDOWN else "simple"
    heading = (lambda text: f"## {text}") if fmt is Format.MARKDOWN else (lambda text: text)
    # Lines laid out as text: Markdown keeps them so in a code block.
    laid_out = (lambda text: f"```\n{text}\n```") if fmt is Format.MARKDOWN else (lambda t: t)
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
            laid_out(bracket_text(found)),
            heading("Finishes"),
            tabulate(
                [[name, found.seeds.index(name) + 1, finish] for name, finish in found.places],
                headers=["player", "seed", "finish"],
                tablefmt=style,
            ),
        ]
    if standings.swiss is not None:
        blocks += [
            heading(f"Swiss: {len(standings.swiss.rounds)} rounds ({progress_text(standings)})"),
            swiss_table(standings.swiss, style),
            heading("Rounds"),
            laid_out(rounds_text(standings.swiss)),
        ]
    blocks += [
        heading(f"Standings: all games ({progress_text(standings)}; Elo with {anchored})"),
        table(standings.overall, style),
    ]
    if len(standings.by_game) > 1:
        for game, records in standings.by_game.items():
            blocks += [heading(game), table(records, style)]
    names = [record.player for record in standings.overall]
    matrix = [
        [row, *(_wdl(standings.head_to_head[row].get(col)) if col != row else "" for col in names)]
        for row in names
    ]
    blocks += [
        heading(
            "Head to head: the row player's wins-draws-losses against the column player,"
            " and its pairwise Elo"
        ),
        tabulate(matrix, headers=["", *names], tablefmt=style),
    ]
    if standings.sprt is not None:
        blocks += [heading("SPRT"), sprt_text(standings.sprt)]
    blocks += [heading("Faults"), fault_table(standings.faults, style)]
    return "\n\n".join(blocks)


SWISS_COLUMNS = ["#", "player", "score", "games", "byes", "Buchholz", "S-B", "Elo"]


def swiss_rows(swiss: SwissStandings) -> list[list[Any]]:
    """The Swiss table's rows, in SWISS_COLUMNS."""
    return [
        [
            rank,
            row.player,
            f"{row.score:g}",
            row.games,
            row.byes,
            f"{row.buchholz:g}",
            f"{row.sonneborn_berger:g}",
            elo_text(row.elo) if row.elo is not None else "",
        ]
        for rank, row in enumerate(swiss.rows, start=1)
    ]


def swiss_ranking(swiss: SwissStandings) -> str:
    """What a Swiss table ranks by, as its caption says it."""
    return (
        "ranked by score (a game won 1, drawn 1/2; a bye, the pairing's"
        f" {swiss.games_per_pairing}), then Buchholz (the opponents' scores), Sonneborn-Berger"
        " (each game's points times that opponent's score), then Elo"
    )


def swiss_table(swiss: SwissStandings, style: str = "simple") -> str:
    """The Swiss table, with the tie-breaks in the order they count."""
    rows = swiss_rows(swiss)
    ranked = tabulate(rows, headers=SWISS_COLUMNS, tablefmt=style, disable_numparse=True)
    gap = "\n" if style == "simple" else "\n\n"
    return f"{swiss_ranking(swiss)}:{gap}{ranked}"


def bracket_text(knockout: KnockoutStandings) -> str:
    """Each round of the bracket as far as it is known, a tie a line."""
    lines = []
    for ties in knockout.rounds:
        lines.append(round_name(ties[0].round, knockout.total_rounds).removeprefix("the "))
        lines += [f"  {tie_text(tie)}" for tie in ties]
    return "\n".join(lines)


def rounds_text(swiss: SwissStandings) -> str:
    """Each round on a line: its pairs in their first game's seats with their points, and its
    bye."""
    lines = []
    for played, results in swiss.rounds:
        pairs = ", ".join(pair_text(r) for r in results)
        bye = f"; bye: {played.bye}" if played.bye else ""
        lines.append(f"round {played.number}: {pairs}{bye}")
    return "\n".join(lines)


def pair_text(result: PairResult) -> str:
    """A pair of a Swiss's round: its points, or that it is to be played, or a bye for one
    of them since the other has left."""
    pair = f"{result.first} - {result.second}"
    if result.left is not None:
        return f"{pair} ({result.left} left: a bye)"
    if not result.games:
        return f"{pair} (to play)"
    return f"{result.first} {result.points[0]:g}-{result.points[1]:g} {result.second}"


def table(records: list[Record], style: str = "simple") -> str:
    """What the table ranks by, then its rows (`rows`)."""
    ranked = tabulate(rows(records), headers=COLUMNS, tablefmt=style, disable_numparse=True)
    # Markdown needs a blank line between a paragraph and a table.
    gap = "\n" if style == "simple" else "\n\n"
    return f"{ranking(records)}:{gap}{ranked}"


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
    one below it, for a row between the two; None unless that one is the one rated next
    below it (a ranking by goal may put another player there)."""
    if rank >= len(records):
        return None
    above, below = records[rank - 1].rating, records[rank].rating
    if above is None or above.los_next is None or below is None or below.elo > above.elo:
        return None
    if any(r.rating and below.elo < r.rating.elo < above.elo for r in records):
        return None
    return f"LOS {100 * above.los_next:.1f}%: #{rank} stronger than #{rank + 1}"


def fault_table(faults: list[FirstFault], style: str = "simple") -> str:
    """Per player and kind of fault: how many, and the first one with its log."""
    if not faults:
        return "no faults"
    rows = [
        (f.player, str(f.kind), f.count, f"{f.match_id}, {f.first}", f.log or "-") for f in faults
    ]
    headers = ["player", "fault", "count", "first", "its log"]
    return tabulate(rows, headers=headers, tablefmt=style, disable_numparse=True)


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


def _wdl(record: Record | None) -> str:
    if record is None:
        return "-"
    estimate = pairwise(record.wins, record.draws, record.losses)
    return f"{record.wins}-{record.draws}-{record.losses} ({elo_text(estimate.elo)})"


def elo_text(value: float) -> str:
    """Whole Elo with a sign; no `-0`."""
    return f"{round(value) or 0:+d}"


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


def _pair_json(record: Record) -> dict[str, Any]:
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


def _swiss_json(swiss: SwissStandings) -> dict[str, Any]:
    return {
        "games_per_pairing": swiss.games_per_pairing,
        "table": [
            {
                "player": row.player,
                "score": row.score,
                "games": row.games,
                "byes": row.byes,
                "buchholz": row.buchholz,
                "sonneborn_berger": row.sonneborn_berger,
                "elo": None if row.elo is None else round(row.elo, 1),
            }
            for row in swiss.rows
        ],
        "rounds": [
            {
                "round": played.number,
                "pairs": [
                    {
                        "players": [r.first, r.second],
                        "points": list(r.points),
                        "games": r.games,
                        "left": r.left,
                    }
                    for r in results
                ],
                "bye": played.bye,
            }
            for played, results in swiss.rounds
        ],
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
        "sprt": _sprt_json(standings.sprt) if standings.sprt else None,
        "swiss": _swiss_json(standings.swiss) if standings.swiss else None,
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
