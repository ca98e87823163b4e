"""Standings from match transcripts: results, ratings, head to head, faults, the SPRT.

A pairing of two players in a match is a win for the higher goal (`ratings.points`). The
ratings of a table come from one fit of all its results (`ratings.fit`); a head-to-head
figure is the pairwise Elo of the two players' results. `docs/tournaments.md` explains each
column with its formula. The standings as tables, text and JSON are standings_tables.py's.

The standings are counted match by match (`Tally`): what they keep grows with the players
and their pairings, not with the matches, so that a run of a hundred thousand matches, or
a results directory read file by file, holds one transcript at a time.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from referee.errors import FaultKind, TranscriptError
from referee.players.chance import CHANCE_NAME
from referee.records.transcript import Fault, Transcript, read_signed, transcript_files
from referee.tournaments.knockout import Bracket, KnockoutStandings
from referee.tournaments.knockout import standings as knockout_standings
from referee.tournaments.played import MatchResult, Played
from referee.tournaments.ratings import Pairing, Rating, fit, points
from referee.tournaments.sprt import SprtSettings, SprtStatus, status
from referee.tournaments.swiss import Paired, SwissStandings
from referee.tournaments.swiss import standings as swiss_standings
from referee.tournaments.withdrawal import is_withdrawal


class _Results:
    """Wins, draws and losses, and what they make.

    They are counted per pair of players in a match, by their goals: one result per match
    in a two-player game, one per opponent in a game of more roles.
    """

    __slots__ = ()
    wins: int
    draws: int
    losses: int

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


@dataclass(slots=True)
class Record(_Results):
    """One player's results in one scope (a game, or all games)."""

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
    def average_goal(self) -> float:
        return self.goal_total / self.matches if self.matches else 0.0


@dataclass(slots=True)
class PairRecord(_Results):
    """One player's results against one opponent, over all games: a field of N players has
    N(N-1) of them, so they hold nothing more."""

    wins: int = 0
    draws: int = 0
    losses: int = 0


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
    head_to_head: dict[str, dict[str, PairRecord]]  # row player -> opponent -> row's results
    matches: int
    faults: list[FirstFault] = field(default_factory=list)
    scheduled: int | None = None
    sprt: SprtStatus | None = None
    anchor: str | None = None
    swiss: SwissStandings | None = None
    knockout: KnockoutStandings | None = None


def pairings(match: Played) -> Iterator[tuple[str, str, float]]:
    """Each (player, opponent, the player's points) of a complete match; chance plays no part."""
    goals = match.goals
    assert goals is not None
    seats = [seat for seat in match.seats if seat.player != CHANCE_NAME]
    for seat in seats:
        for other in seats:
            if other is not seat:
                yield seat.player, other.player, points(goals[seat.role], goals[other.role])


# When a match began, and its place among those counted: what orders matches as they began.
_Began = tuple[str, int]


@dataclass(slots=True)
class _PairTotal:
    """A pairing's results in one game, for its fit: when its first match began, its games,
    and the points of its first player (the one whose name sorts first)."""

    first: _Began
    games: float = 0.0
    points: float = 0.0


class Tally:
    """The standings counted one match at a time: per player and game, per pairing, the
    faults' counts and first occurrences, and the SPRT's pairs. It keeps no match, except,
    with `keep`, what a Swiss's or a knockout's table is read from (`MatchResult`s); so it
    grows with the players and pairings (and an SPRT's pairs), never with a match's steps.

    The counts are those of the matches in the order they began, whatever the order they
    are added in: the fits see each pairing where its first match began, and a fault's
    first occurrence is the one that began first."""

    def __init__(self, sprt_tested: str | None = None, keep: bool = False) -> None:
        """`sprt_tested`: the SPRT's tested player, whose pairs are counted; `keep`: keep
        what each settled match's result is (for a Swiss's or a knockout's table)."""
        self.matches = 0  # the complete ones counted, each numbered by its place among them
        self._overall: dict[str, Record] = {}
        self._by_game: dict[str, dict[str, Record]] = defaultdict(dict)
        self._pairs: dict[str, dict[str, PairRecord]] = defaultdict(dict)
        # Game -> (first player, second player) -> its totals, for the fits.
        self._totals: dict[str, dict[tuple[str, str], _PairTotal]] = defaultdict(dict)
        self._fault_counts: Counter[tuple[str, FaultKind]] = Counter()
        self._first_faults: dict[tuple[str, FaultKind], tuple[_Began, str, Fault, str | None]] = {}
        self._withdrawn: set[str] = set()
        self._sprt = SprtPairs(sprt_tested) if sprt_tested is not None else None
        self.kept: list[MatchResult] | None = [] if keep else None

    def add(self, match: Played) -> None:
        """Count a match: a complete one in every table, any other only where it is kept."""
        if self.kept is not None and match.settled:
            self.kept.append(match if isinstance(match, MatchResult) else MatchResult.of(match))
        if not match.complete:
            return
        goals = match.goals
        assert goals is not None
        self.matches += 1
        began = (match.started_at, self.matches)
        seats = [seat for seat in match.seats if seat.player != CHANCE_NAME]
        by_game = self._by_game[match.game]
        for seat in seats:
            faults = Counter(f.kind for f in match.faults if f.role == seat.role)
            for record in (
                self._overall.setdefault(seat.player, Record(seat.player)),
                by_game.setdefault(seat.player, Record(seat.player)),
            ):
                record.matches += 1
                record.goal_total += goals[seat.role]
                record.faults.update(faults)
                record.many_roles |= len(seats) > 2
        totals = self._totals[match.game]
        for player, opponent, scored in pairings(match):
            pair = self._pairs[player].get(opponent) or PairRecord()
            self._pairs[player][opponent] = pair
            for scope in (self._overall[player], by_game[player], pair):
                _tally(scope, scored)
            if player < opponent:
                total = totals.get((player, opponent)) or _PairTotal(began)
                totals[(player, opponent)] = total
                total.games += 1
                total.points += scored
        self._count_faults(match, began)
        if self._sprt is not None:
            self._sprt.add(match)

    def _count_faults(self, match: Played, began: _Began) -> None:
        seats = {seat.role: seat for seat in match.seats}
        for fault in match.faults:
            seat = seats[fault.role]
            key = (seat.player, fault.kind)
            self._fault_counts[key] += 1
            known = self._first_faults.get(key)
            if known is None or began < known[0]:
                self._first_faults[key] = (began, match.match_id, fault, seat.log)
            if is_withdrawal(fault):
                self._withdrawn.add(seat.player)

    def standings(
        self,
        anchor: str | None = None,
        scheduled: int | None = None,
        sprt: SprtSettings | None = None,
        swiss: Paired | None = None,
        knockout: Bracket | None = None,
    ) -> Standings:
        """The standings of the matches counted so far (see `compute`). Their records are
        the tally's own, which a later `add` changes: what is to outlive one is taken first."""
        for record in [*self._overall.values(), *self._game_records()]:
            record.withdrawn = record.player in self._withdrawn
        rated = _rated(self._overall, self._fitted(list(self._totals.values())), anchor)
        elo = {record.player: record.rating.elo for record in rated if record.rating}
        kept = self.kept or []
        ranked = [record.player for record in rated]
        return Standings(
            overall=rated,
            by_game={
                game: _rated(records, self._fitted([self._totals[game]]), anchor)
                for game, records in sorted(self._by_game.items())
            },
            head_to_head={
                player: {o: self._pairs[player][o] for o in ranked if o in self._pairs[player]}
                for player in ranked
            },
            matches=self.matches,
            faults=[
                FirstFault(key[0], self._fault_counts[key], *self._first_faults[key][1:])
                for key in sorted(self._fault_counts)
            ],
            scheduled=scheduled,
            sprt=self._sprt.status(sprt) if self._sprt is not None and sprt else None,
            anchor=anchor,
            swiss=swiss_standings(swiss, kept, elo) if swiss else None,
            knockout=knockout_standings(knockout, kept) if knockout else None,
        )

    def _game_records(self) -> Iterator[Record]:
        for records in self._by_game.values():
            yield from records.values()

    @staticmethod
    def _fitted(games: Sequence[dict[tuple[str, str], _PairTotal]]) -> list[Pairing]:
        """The pairings of `games` for one fit, each as its first match began among them:
        the order in which the fit meets the players and their results."""
        merged: dict[tuple[str, str], _PairTotal] = {}
        for totals in games if len(games) > 1 else ():
            for key, total in totals.items():
                found = merged.setdefault(key, _PairTotal(total.first))
                found.first = min(found.first, total.first)
                found.games += total.games
                found.points += total.points
        # A single game's totals are the fit's as they are: not copied.
        pairs = games[0] if len(games) == 1 else merged
        ordered = sorted(pairs.items(), key=lambda item: item[1].first)
        return [Pairing(a, b, total.games, total.points) for (a, b), total in ordered]


def compute(
    matches: Iterable[Played],
    anchor: str | None = None,
    scheduled: int | None = None,
    sprt: tuple[SprtSettings, str] | None = None,
    swiss: Paired | None = None,
    knockout: Bracket | None = None,
) -> Standings:
    """Standings of the complete matches among `matches` (aborted ones are left out), read
    once, one at a time.

    `anchor` is the player rated 0 (else the mean is); `scheduled` the number of matches in
    the schedule; `sprt` the test's settings and the player it tests; `swiss` what a Swiss
    has kept (its rounds so far); `knockout` a knockout's bracket.
    """
    tally = Tally(sprt[1] if sprt else None, keep=swiss is not None or knockout is not None)
    for match in matches:
        tally.add(match)
    return tally.standings(anchor, scheduled, sprt[0] if sprt else None, swiss, knockout)


def _tally(record: Record | PairRecord, scored: float) -> None:
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


class SprtPairs:
    """The tested player's two results in each pair whose two matches are complete, counted
    as the matches come.

    A pair is the matches of one game with one seed and the same two players (the seats
    swapped); its results are the tested player's points in each.
    """

    def __init__(self, tested: str) -> None:
        self.tested = tested
        self._found: dict[tuple[str, int, frozenset[str]], list[float]] = defaultdict(list)

    def add(self, match: Played) -> None:
        if not match.complete:
            return
        players = frozenset(seat.player for seat in match.seats) - {CHANCE_NAME}
        for player, _, scored in pairings(match):
            if player == self.tested:
                self._found[(match.game, match.seed, players)].append(scored)

    def pairs(self) -> list[tuple[float, float]]:
        return [(found[0], found[1]) for found in self._found.values() if len(found) == 2]

    def status(self, settings: SprtSettings) -> SprtStatus:
        return status(settings, self.pairs())


def read_results(
    directory: Path, expected_key: str | None
) -> Iterator[Transcript | TranscriptError]:
    """Each transcript of a results directory as it is read, one at a time, in the files'
    order; or, for a file that could not be read, why. A transcript whose signature fails
    (not made with `expected_key`, when given) is one that could not be read: its result may
    not be the one the referee wrote."""
    for path in transcript_files(directory):
        try:
            transcript, signature = read_signed(path, expected_key)
        except TranscriptError as error:
            yield error
            continue
        if signature.fails:
            yield TranscriptError(f"{path}: {signature}")
        else:
            yield transcript


def load_results(
    directory: Path, expected_key: str | None
) -> tuple[list[Transcript], list[TranscriptError]]:
    """Every transcript in a results directory, whole, and the files that could not be read
    (`read_results`): for a few matches; standings read them as they go."""
    transcripts, errors = [], []
    for found in read_results(directory, expected_key):
        if isinstance(found, TranscriptError):
            errors.append(found)
        else:
            transcripts.append(found)
    return transcripts, errors
