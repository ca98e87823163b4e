"""A Swiss's standings as tables: its ranked table with the tie-breaks it chose, its
crosstable (each player's rounds) and its rounds, as text and JSON; the report draws them
from the same columns and cells."""

from __future__ import annotations

from typing import Any

from referee.plaintext import elo_text, fit, laid_out, versus
from referee.tournaments.swiss import (
    FIRST,
    CrossCell,
    CrossRow,
    PairResult,
    SwissStandings,
    Tiebreak,
)


def swiss_columns(swiss: SwissStandings) -> list[str]:
    """The Swiss table's columns: its tie-breaks in the order they count."""
    return ["#", "player", "score", "games", "byes", *(t.label for t in swiss.tiebreaks), "Elo"]


def swiss_rows(swiss: SwissStandings) -> list[list[Any]]:
    """The Swiss table's rows, in `swiss_columns`."""
    return [
        [
            rank,
            row.player,
            f"{row.score:g}",
            row.games,
            row.byes,
            *(f"{row.tiebreak(which):g}" for which in swiss.tiebreaks),
            elo_text(row.elo) if row.elo is not None else "",
        ]
        for rank, row in enumerate(swiss.rows, start=1)
    ]


_TIEBREAK_WORDS = {
    Tiebreak.BUCHHOLZ: "Buchholz (the opponents' scores, a round not played counting the"
    " player's own)",
    Tiebreak.BUCHHOLZ_CUT_1: "Buchholz Cut-1 (Bu Cut-1: Buchholz less its lowest score)",
    Tiebreak.MEDIAN_BUCHHOLZ: "median Buchholz (median Bu: Buchholz less its highest and"
    " lowest scores)",
    Tiebreak.SONNEBORN_BERGER: "Sonneborn-Berger (S-B: each game's points times that"
    " opponent's score)",
}


def swiss_ranking(swiss: SwissStandings) -> str:
    """What a Swiss table ranks by, as its caption says it."""
    ties = ", ".join(_TIEBREAK_WORDS[which] for which in swiss.tiebreaks)
    return (
        "ranked by score (a game won 1, drawn 1/2; a bye, the pairing's"
        f" {swiss.games_per_pairing}), then {ties + ', then ' if ties else ''}Elo"
    )


def swiss_table(swiss: SwissStandings, style: str = "simple", width: int | None = None) -> str:
    """The Swiss table, with the tie-breaks in the order they count; fit to `width`."""
    rows = swiss_rows(swiss)
    ranked = laid_out(swiss_columns(swiss), rows, style, width)
    gap = "\n" if style == "simple" else "\n\n"
    return f"{fit(swiss_ranking(swiss) + ':', width)}{gap}{ranked}"


CROSSTABLE_CAPTION = (
    "each round: the opponent's rank in the table above, the seat of the pairing's first"
    " game (1st: the game's first role; the games after it swap the seats) and the points"
    " (- still to play); a bye with its points"
)


def crosstable_columns(swiss: SwissStandings) -> list[str]:
    return ["#", "player", "score", *(f"r{played.number}" for played, _ in swiss.rounds)]


def crosstable_rows(swiss: SwissStandings) -> list[list[str]]:
    """A row per player in the table's order: its rank, name, score and each round's cell."""
    rank = {row.player: number for number, row in enumerate(swiss.crosstable, start=1)}
    return [
        [str(number), row.player, f"{row.score:g}", *(cross_cell(c, rank) for c in row.rounds)]
        for number, row in enumerate(swiss.crosstable, start=1)
    ]


def cross_cell(cell: CrossCell | None, rank: dict[str, int]) -> str:
    """`#4 1st 1.5`: the opponent's rank, the seat of the first game, the points; `bye 2`;
    `-` where the player was not in the round."""
    if cell is None:
        return "-"
    if cell.opponent is None:
        return f"bye {cell.points:g}"
    seat = "1st" if cell.seat == FIRST else "2nd"
    points = f"{cell.points:g}" if cell.games else "-"
    opponent = f"#{rank[cell.opponent]}" if cell.opponent in rank else cell.opponent
    return f"{opponent} {seat} {points}"


def crosstable_text(swiss: SwissStandings, style: str = "simple", width: int | None = None) -> str:
    """The crosstable under its caption, fit to `width`."""
    crosstable = laid_out(crosstable_columns(swiss), crosstable_rows(swiss), style, width)
    gap = "\n" if style == "simple" else "\n\n"
    return f"{fit(CROSSTABLE_CAPTION + ':', width)}{gap}{crosstable}"


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
    of them since the other has left: `ann vs bob 1.5-0.5`, the points in the players' order."""
    pair = versus(result.first, result.second)
    if result.left is not None:
        return f"{pair} ({result.left} left: a bye)"
    if not result.games:
        return f"{pair} (to play)"
    return f"{pair} {result.points[0]:g}-{result.points[1]:g}"


def cross_json(row: CrossRow) -> dict[str, Any]:
    return {
        "player": row.player,
        "score": row.score,
        "rounds": [
            None
            if cell is None
            else {
                "round": cell.round,
                "opponent": cell.opponent,
                "seat": None if cell.seat is None else cell.seat + 1,
                "points": cell.points,
                "games": cell.games,
                "matches": list(cell.matches),
            }
            for cell in row.rounds
        ],
    }


def swiss_json(swiss: SwissStandings) -> dict[str, Any]:
    return {
        "games_per_pairing": swiss.games_per_pairing,
        "tiebreaks": [str(which) for which in swiss.tiebreaks],
        "table": [
            {
                "player": row.player,
                "score": row.score,
                "games": row.games,
                "byes": row.byes,
                "buchholz": row.buchholz,
                "buchholz_cut_1": row.buchholz_cut_1,
                "median_buchholz": row.median_buchholz,
                "sonneborn_berger": row.sonneborn_berger,
                "elo": None if row.elo is None else round(row.elo, 1),
            }
            for row in swiss.rows
        ],
        "crosstable": [cross_json(row) for row in swiss.crosstable],
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
