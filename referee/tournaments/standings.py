"""Standings from match transcripts: results, ratings, head to head, faults, the SPRT.

A pairing of two players in a match is a win for the higher goal (`ratings.points`). The
ratings of a table come from one fit of all its results (`ratings.fit`); a head-to-head
figure is the pairwise Elo of the two players' results. `docs/tournaments.md` explains each
column with its formula. The standings as tables, text and JSON are standings_tables.py's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from referee.errors import FaultKind, TranscriptError
from referee.players.chance import CHANCE_NAME
from referee.records.transcript import Fault, Transcript, read_signed, transcript_files
from referee.tournaments.knockout import Bracket, KnockoutStandings
from referee.tournaments.knockout import standings as knockout_standings
from referee.tournaments.ratings import Pairing, Rating, fit, points
from referee.tournaments.sprt import SprtSettings, SprtStatus, status
from referee.tournaments.swiss import Paired, SwissStandings
from referee.tournaments.swiss import standings as swiss_standings
from referee.tournaments.withdrawal import withdrawn_players


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
    """The records with their ratings from one fit, ranked by rating, or by average goal
    where `ranks_by_goal`."""
    ratings = {rating.player: rating for rating in fit(results, anchor)}
    for record in records.values():
        record.rating = ratings.get(record.player)
    by_goal = ranks_by_goal(records.values())

    def key(r: Record) -> tuple[float, float, str]:
        elo = r.rating.elo if r.rating else 0.0
        if by_goal:
            return (-r.average_goal, -elo, r.player)
        return (-elo, -r.average_goal, r.player)

    return sorted(records.values(), key=key)


def ranks_by_goal(records: Iterable[Record]) -> bool:
    """Whether a table ranks by average goal (then rating) rather than by rating: where a
    game of more than two roles counts, whose goals rank more than a pair's win or loss."""
    return any(record.many_roles for record in records)


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
