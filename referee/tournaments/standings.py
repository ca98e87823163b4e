"""Standings from match transcripts: results, ratings, head to head, faults, the SPRT.

A pairing of two players in a match is a win for the higher goal (`ratings.points`). The
ratings of a table come from one fit of all its results (`ratings.fit`); a head-to-head
figure is the pairwise Elo of the two players' results. `docs/tournaments.md` explains each
column with its formula.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from referee.errors import FaultKind, TranscriptError
from referee.players.chance import CHANCE_NAME
from referee.records.transcript import Fault, Transcript, read_signed, transcript_files
from referee.tournaments.formats import Format
from referee.tournaments.knockout import Bracket, KnockoutStandings, round_name, tie_text
from referee.tournaments.knockout import standings as knockout_standings
from referee.tournaments.ratings import Pairing, Rating, fit, pairwise, pairwise_los, points
from referee.tournaments.sprt import SprtSettings, SprtStatus, Verdict, status
from referee.tournaments.swiss import Paired, PairResult, SwissStandings
from referee.tournaments.swiss import standings as swiss_standings
from referee.tournaments.withdrawal import WITHDRAWN, withdrawn_players


@dataclass
class Record:
    """One player's results in one scope (a game, all games, or against one opponent).

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
    # Whether a game of more than two roles counts here: then goals rank, not the rating.
    many_roles: bool = False
    rating: Rating | None = None
    # Whether its program failed to start so often that it was no longer tried (withdrawal.py).
    withdrawn: bool = False

    @property
    def pairings(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def points(self) -> float:
        return self.wins + self.draws / 2

    @property
    def score(self) -> float:
        """Points per pairing: a win 1, a draw 1/2."""
        return self.points / self.pairings if self.pairings else 0.0

    @property
    def draw_ratio(self) -> float:
        return self.draws / self.pairings if self.pairings else 0.0

    @property
    def average_goal(self) -> float:
        return self.goal_total / self.matches if self.matches else 0.0


@dataclass(frozen=True)
class FirstFault:
    """How often a player made one kind of fault, and the first one: its match, the fault
    as recorded (its seat, step and detail), and the log of the seat."""

    player: str
    count: int
    match_id: str
    first: Fault
    log: str | None

    @property
    def kind(self) -> FaultKind:
        return self.first.kind


@dataclass(frozen=True)
class Standings:
    """Every player's record over all games and per game, results pair by pair, the faults,
    and what the schedule and the SPRT (if any) say of how far the tournament has come."""

    overall: list[Record]
    by_game: dict[str, list[Record]]
    head_to_head: dict[str, dict[str, Record]]  # row player -> opponent -> row's record
    matches: int
    faults: list[FirstFault] = field(default_factory=list)
    scheduled: int | None = None
    sprt: SprtStatus | None = None
    anchor: str | None = None
    swiss: SwissStandings | None = None
    knockout: KnockoutStandings | None = None


def pairings(transcript: Transcript) -> Iterator[tuple[str, str, float]]:
    """Each (player, opponent, the player's points) of a complete match; chance plays no part."""
    assert transcript.goals is not None
    seats = [seat for seat in transcript.seats if seat.player != CHANCE_NAME]
    for seat in seats:
        for other in seats:
            if other is not seat:
                mine, theirs = transcript.goals[seat.role], transcript.goals[other.role]
                yield seat.player, other.player, points(mine, theirs)


def compute(
    transcripts: Iterable[Transcript],
    anchor: str | None = None,
    scheduled: int | None = None,
    sprt: tuple[SprtSettings, str] | None = None,
    swiss: Paired | None = None,
    knockout: Bracket | None = None,
) -> Standings:
    """Standings of the complete matches among `transcripts` (aborted ones are left out).

    `anchor` is the player rated 0 (else the mean is); `scheduled` the number of matches in
    the schedule; `sprt` the test's settings and the player it tests; `swiss` what a Swiss
    has kept (its rounds so far); `knockout` a knockout's bracket.
    """
    complete = sorted((t for t in transcripts if t.complete), key=lambda t: t.started_at)
    overall: dict[str, Record] = {}
    by_game: dict[str, dict[str, Record]] = defaultdict(dict)
    pairs: dict[str, dict[str, Record]] = defaultdict(dict)
    # Each pairing once, for the fits: of all games, and of each game.
    results: list[Pairing] = []
    results_by_game: dict[str, list[Pairing]] = defaultdict(list)
    for transcript in complete:
        assert transcript.goals is not None
        seats = [seat for seat in transcript.seats if seat.player != CHANCE_NAME]
        for seat in seats:
            faults = Counter(f.kind for f in transcript.faults if f.role == seat.role)
            for record in (
                overall.setdefault(seat.player, Record(seat.player)),
                by_game[transcript.game].setdefault(seat.player, Record(seat.player)),
            ):
                record.matches += 1
                record.goal_total += transcript.goals[seat.role]
                record.faults.update(faults)
                record.many_roles |= len(seats) > 2
        for player, opponent, scored in pairings(transcript):
            pair = pairs[player].setdefault(opponent, Record(player))
            pair.matches += 1
            for record in (overall[player], by_game[transcript.game][player], pair):
                _tally(record, scored)
            if player < opponent:
                results.append(Pairing(player, opponent, 1, scored))
                results_by_game[transcript.game].append(results[-1])
    # Withdrawn from the tournament: so in every table, whichever game it happened in.
    withdrawn = withdrawn_players(complete)
    for record in [*overall.values(), *(r for game in by_game.values() for r in game.values())]:
        record.withdrawn = record.player in withdrawn
    rated = _rated(overall, results, anchor)
    elo = {record.player: record.rating.elo for record in rated if record.rating}
    return Standings(
        overall=rated,
        by_game={
            game: _rated(records, results_by_game[game], anchor)
            for game, records in sorted(by_game.items())
        },
        head_to_head={player: dict(pairs[player]) for player in overall},
        matches=len(complete),
        faults=_first_faults(complete),
        scheduled=scheduled,
        sprt=sprt_status(sprt[0], sprt[1], complete) if sprt else None,
        anchor=anchor,
        swiss=swiss_standings(swiss, complete, elo) if swiss else None,
        knockout=knockout_standings(knockout, list(transcripts)) if knockout else None,
    )


def _tally(record: Record, scored: float) -> None:
    if scored == 1:
        record.wins += 1
    elif scored == 0:
        record.losses += 1
    else:
        record.draws += 1


def _rated(records: dict[str, Record], results: list[Pairing], anchor: str | None) -> list[Record]:
    """The records with their ratings from one fit, ranked as `ranking` says."""
    ratings = {rating.player: rating for rating in fit(results, anchor)}
    for record in records.values():
        record.rating = ratings.get(record.player)
    by_goal = _ranks_by_goal(records.values())

    def key(r: Record) -> tuple[float, float, str]:
        elo = r.rating.elo if r.rating else 0.0
        if by_goal:
            return (-r.average_goal, -elo, r.player)
        return (-elo, -r.average_goal, r.player)

    return sorted(records.values(), key=key)


def _ranks_by_goal(records: Iterable[Record]) -> bool:
    """Whether a table ranks by average goal (then rating) rather than by rating: where a
    game of more than two roles counts, whose goals rank more than a pair's win or loss."""
    return any(record.many_roles for record in records)


def ranking(records: Iterable[Record]) -> str:
    """What a table ranks by, as its caption says it."""
    if _ranks_by_goal(records):
        return (
            "ranked by average goal (avg goal), then rating: a game of more than two roles counts"
        )
    return "ranked by rating (Elo)"


def _first_faults(transcripts: list[Transcript]) -> list[FirstFault]:
    """Per player and fault kind: the count and the first (in the order matches started)."""
    counts: Counter[tuple[str, FaultKind]] = Counter()
    first: dict[tuple[str, FaultKind], tuple[str, Fault, str | None]] = {}
    for transcript in transcripts:
        seats = {seat.role: seat for seat in transcript.seats}
        for fault in transcript.faults:
            seat = seats[fault.role]
            key = (seat.player, fault.kind)
            counts[key] += 1
            first.setdefault(key, (transcript.match_id, fault, seat.log))
    return [FirstFault(key[0], counts[key], *first[key]) for key in sorted(counts)]


def sprt_pairs(transcripts: Iterable[Transcript], tested: str) -> list[tuple[float, float]]:
    """The tested player's two results in each pair whose two matches are complete.

    A pair is the matches of one game with one seed and the same two players (the seats
    swapped); its results are the tested player's points in each.
    """
    found: dict[tuple[str, int, frozenset[str]], list[float]] = defaultdict(list)
    for transcript in transcripts:
        if not transcript.complete:
            continue
        players = frozenset(seat.player for seat in transcript.seats) - {CHANCE_NAME}
        for player, _, scored in pairings(transcript):
            if player == tested:
                found[(transcript.game, transcript.seed, players)].append(scored)
    return [(results[0], results[1]) for results in found.values() if len(results) == 2]


def sprt_status(
    settings: SprtSettings, tested: str, transcripts: Iterable[Transcript]
) -> SprtStatus:
    return status(settings, sprt_pairs(transcripts, tested))


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
