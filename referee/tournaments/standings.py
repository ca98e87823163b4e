"""Standings from match transcripts: wins, draws, losses, score, Elo, faults, head to head.

A win is a strictly higher goal than the opponent's. Elo is each player's rating difference
against the average of its opponents, from its score, with a 95% margin from the spread of
its results, as cutechess-cli computes it; `docs/tournaments.md` gives the formulas.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from tabulate import tabulate

from referee.errors import FaultKind, TranscriptError
from referee.players.chance import CHANCE_NAME
from referee.records.transcript import Transcript, read_signed, transcript_files

Z_95 = 1.959964  # two-sided 95% quantile of the normal distribution


class Format(StrEnum):
    """How standings are printed."""

    TABLE = "table"
    MARKDOWN = "markdown"
    CSV = "csv"
    JSON = "json"


@dataclass
class Record:
    """One player's results in one scope (a game, or all games).

    Wins, draws and losses are counted per pair of players in a match, by their goals: one
    result per match in a two-player game, one per opponent in a game of more roles.
    """

    player: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    goal_total: int = 0
    faults: Counter[FaultKind] = field(default_factory=Counter)
    matches: int = 0
    # Whether a game of more than two roles counts here: then goals rank, not the score.
    many_roles: bool = False

    @property
    def pairings(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points per pairing: a win 1, a draw 1/2."""
        return (self.wins + self.draws / 2) / self.pairings if self.pairings else 0.0

    @property
    def average_goal(self) -> float:
        return self.goal_total / self.matches if self.matches else 0.0

    def elo(self) -> tuple[float, float]:
        """Elo difference against the average opponent, and its 95% margin (inf when unbounded)."""
        return elo_with_margin(self.wins, self.draws, self.losses)


def elo_difference(score: float) -> float:
    """The Elo difference that predicts this expected score; +-inf for 1 and 0."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return -400 * math.log10(1 / score - 1)


def elo_with_margin(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """Elo from the score, and half the width of the Elo interval of a 95% score interval."""
    n = wins + draws + losses
    if n == 0:
        return 0.0, math.inf
    score = (wins + draws / 2) / n
    deviation = math.sqrt((wins + draws / 4) / n - score**2)
    spread = Z_95 * deviation / math.sqrt(n)
    low, high = elo_difference(score - spread), elo_difference(score + spread)
    margin = (high - low) / 2 if spread > 0 else math.inf
    return elo_difference(score), margin


@dataclass(frozen=True)
class Standings:
    """Every player's record over all games and per game, and results pair by pair."""

    overall: list[Record]
    by_game: dict[str, list[Record]]
    head_to_head: dict[str, dict[str, Record]]  # row player -> opponent -> row's record
    matches: int


def compute(transcripts: Iterable[Transcript]) -> Standings:
    """Standings of the complete matches among `transcripts` (aborted ones are left out)."""
    overall: dict[str, Record] = {}
    by_game: dict[str, dict[str, Record]] = defaultdict(dict)
    pairs: dict[str, dict[str, Record]] = defaultdict(dict)
    count = 0
    for transcript in transcripts:
        if not transcript.complete:
            continue
        count += 1
        assert transcript.goals is not None
        # The referee's `random` role is chance, not a competitor.
        seats = [seat for seat in transcript.seats if seat.player != CHANCE_NAME]
        many = len(seats) > 2
        for seat in seats:
            opponents = [other for other in seats if other is not seat]
            mine = transcript.goals[seat.role]
            faults = Counter(f.kind for f in transcript.faults if f.role == seat.role)
            scopes = [
                overall.setdefault(seat.player, Record(seat.player)),
                by_game[transcript.game].setdefault(seat.player, Record(seat.player)),
            ]
            for record in scopes:
                record.matches += 1
                record.goal_total += mine
                record.faults.update(faults)
                record.many_roles |= many
                for other in opponents:
                    _tally(record, mine, transcript.goals[other.role])
            for other in opponents:
                pair = pairs[seat.player].setdefault(other.player, Record(seat.player))
                pair.matches += 1
                pair.goal_total += mine
                _tally(pair, mine, transcript.goals[other.role])
    return Standings(
        overall=_ranked(overall.values()),
        by_game={game: _ranked(records.values()) for game, records in sorted(by_game.items())},
        head_to_head={
            player: dict(pairs[player]) for player in (r.player for r in overall.values())
        },
        matches=count,
    )


def _tally(record: Record, mine: int, theirs: int) -> None:
    if mine > theirs:
        record.wins += 1
    elif mine == theirs:
        record.draws += 1
    else:
        record.losses += 1


def _ranked(records: Iterable[Record]) -> list[Record]:
    """By score, then goal; where a game of more than two roles counts, by goal, then score."""

    def key(r: Record) -> tuple[float, float, str]:
        if r.many_roles:
            return (-r.average_goal, -r.score, r.player)
        return (-r.score, -r.average_goal, r.player)

    return sorted(records, key=key)


def load_results(
    directory: Path, expected_key: str | None
) -> tuple[list[Transcript], list[TranscriptError]]:
    """Every transcript in a results directory, and the files that could not be read.

    A transcript whose signature fails (not made with `expected_key`, when given) is one that
    could not be read: its result may not be the one the referee wrote.
    """
    transcripts, errors = [], []
    for path in transcript_files(directory):
        try:
            transcript, signature = read_signed(path, expected_key)
        except TranscriptError as error:
            errors.append(error)
            continue
        if signature.fails:
            errors.append(TranscriptError(f"{path}: {signature}"))
        else:
            transcripts.append(transcript)
    return transcripts, errors


_COLUMNS = ["#", "player", "matches", "wins", "draws", "losses", "avg goal", "score %", "Elo"]
_COLUMNS += ["+-95%", "faults"]


def _row(rank: int, record: Record) -> list[Any]:
    elo, margin = record.elo()
    faults = ", ".join(f"{n} {kind}" for kind, n in sorted(record.faults.items())) or "-"
    return [
        rank,
        record.player,
        record.matches,
        record.wins,
        record.draws,
        record.losses,
        f"{record.average_goal:.1f}",
        f"{100 * record.score:.1f}",
        _signed(elo),
        _unsigned(margin),
        faults,
    ]


def _signed(value: float) -> str:
    return f"{round(value):+d}" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def _unsigned(value: float) -> str:
    return f"{value:.0f}" if math.isfinite(value) else "inf"


def render(standings: Standings, fmt: Format) -> str:
    """The standings as text in one of the formats."""
    if fmt is Format.JSON:
        return json.dumps(as_json(standings), indent=2)
    if fmt is Format.CSV:
        return _csv(standings)
    style = "github" if fmt is Format.MARKDOWN else "simple"
    heading = (lambda text: f"## {text}") if fmt is Format.MARKDOWN else (lambda text: text)
    blocks = [
        heading(f"Standings: all games ({standings.matches} matches)"),
        _table(standings.overall, style),
    ]
    for game, records in standings.by_game.items():
        blocks += [heading(game), _table(records, style)]
    names = [record.player for record in standings.overall]
    matrix = [
        [row, *(_wdl(standings.head_to_head[row].get(col)) if col != row else "" for col in names)]
        for row in names
    ]
    blocks += [
        heading("Head to head: wins-draws-losses of the row player against the column player"),
        tabulate(matrix, headers=["", *names], tablefmt=style),
    ]
    return "\n\n".join(blocks)


def _table(records: list[Record], style: str) -> str:
    rows = [_row(rank, record) for rank, record in enumerate(records, start=1)]
    return tabulate(rows, headers=_COLUMNS, tablefmt=style, disable_numparse=True)


def _wdl(record: Record | None) -> str:
    return f"{record.wins}-{record.draws}-{record.losses}" if record else "-"


def _record_json(record: Record) -> dict[str, Any]:
    elo, margin = record.elo()
    return {
        "player": record.player,
        "matches": record.matches,
        "wins": record.wins,
        "draws": record.draws,
        "losses": record.losses,
        "average_goal": round(record.average_goal, 3),
        "score": round(record.score, 4),
        "elo": round(elo, 1) if math.isfinite(elo) else None,
        "elo_margin": round(margin, 1) if math.isfinite(margin) else None,
        "faults": {kind.value: record.faults[kind] for kind in FaultKind},
    }


def as_json(standings: Standings) -> dict[str, Any]:
    """The standings as JSON-ready data; an infinite Elo or margin is null."""
    return {
        "matches": standings.matches,
        "overall": [_record_json(r) for r in standings.overall],
        "games": {g: [_record_json(r) for r in rs] for g, rs in standings.by_game.items()},
        "head_to_head": {
            row: {col: _record_json(record) for col, record in cols.items()}
            for row, cols in standings.head_to_head.items()
        },
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
