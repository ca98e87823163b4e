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
from referee.tournaments.ratings import (
    Estimate,
    Pairing,
    Rating,
    fit,
    pairwise,
    pairwise_los,
    points,
)
from referee.tournaments.sprt import (
    Pentanomial,
    SprtSettings,
    SprtStatus,
    judged,
    pair_bin,
    pair_elo,
    pair_los,
)
from referee.tournaments.swiss import DEFAULT_TIEBREAKS, Paired, SwissStandings, Tiebreak
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
class PairLine:
    """The result of a two-player run, as fastchess prints it: the first player's wins,
    draws and losses against the second, its Elo difference with the 95% margin and its
    likelihood of superiority (LOS), from its pairs of games (one opening, the seats
    swapped) where it has played any, whose pentanomial is then given, else from its games."""

    first: str
    second: str
    wins: int
    draws: int
    losses: int
    elo: Estimate
    los: float
    # LL, LD, WL+DD, WD, WW: the pairs that scored 0, 1/2, 1, 3/2, 2 (None: no pair whole).
    pentanomial: Pentanomial | None

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + self.draws / 2) / self.games if self.games else 0.0

    @property
    def draw_ratio(self) -> float:
        """The games drawn, of all games."""
        return self.draws / self.games if self.games else 0.0


def pair_line(first: str, second: str, record: PairRecord, counts: Pentanomial) -> PairLine:
    """`first`'s result against `second`: its games' `record`, and the pentanomial of its
    pairs (`counts`), from which Elo and LOS are reckoned where the pairs differ in score.
    Pairs of one score have no spread to reckon a margin from (one pair: +- 0, LOS 100%),
    so then they come from the games, as where there is no whole pair."""
    if sum(1 for n in counts if n) > 1:
        elo, los = pair_elo(counts), pair_los(counts)
    else:
        elo = pairwise(record.wins, record.draws, record.losses)
        los = pairwise_los(record.wins, record.losses)
    penta = counts if sum(counts) else None
    return PairLine(first, second, record.wins, record.draws, record.losses, elo, los, penta)


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
    # The result of a field of two players, the SPRT's tested player (else the one ranked
    # first) against the other.
    pair: PairLine | None = None


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
    faults' counts and first occurrences, and each pairing's pentanomial (`GamePairs`: the
    SPRT's, and a two-player field's pair line). It keeps no match, except, with `keep`,
    what a Swiss's or a knockout's table is read from (`MatchResult`s), and the first result
    of a pair whose other match has not come; so it grows with the players and pairings,
    never with a match's steps.

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
        self._tested = sprt_tested
        self._game_pairs = GamePairs()
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
        self._game_pairs.add(match)

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
        tiebreaks: Sequence[Tiebreak] = DEFAULT_TIEBREAKS,
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
            sprt=judged(sprt, self._game_pairs.of(self._tested))
            if self._tested is not None and sprt
            else None,
            anchor=anchor,
            swiss=swiss_standings(swiss, kept, elo, tiebreaks) if swiss else None,
            knockout=knockout_standings(knockout, kept) if knockout else None,
            pair=self._pair_line(ranked),
        )

    def _pair_line(self, ranked: list[str]) -> PairLine | None:
        """The result of a field of two players: the tested one's, else the first ranked's."""
        if len(ranked) != 2:
            return None
        first = self._tested if self._tested in ranked else ranked[0]
        (second,) = set(ranked) - {first}
        record = self._pairs[first].get(second) or PairRecord()
        return pair_line(first, second, record, self._game_pairs.of(first, second))

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
    tiebreaks: Sequence[Tiebreak] = DEFAULT_TIEBREAKS,
) -> Standings:
    """Standings of the complete matches among `matches` (aborted ones are left out), read
    once, one at a time.

    `anchor` is the player rated 0 (else the mean is); `scheduled` the number of matches in
    the schedule; `sprt` the test's settings and the player it tests; `swiss` what a Swiss
    has kept (its rounds so far), ranked by its `tiebreaks`; `knockout` a knockout's
    bracket.
    """
    tally = Tally(sprt[1] if sprt else None, keep=swiss is not None or knockout is not None)
    for match in matches:
        tally.add(match)
    return tally.standings(anchor, scheduled, sprt[0] if sprt else None, swiss, knockout, tiebreaks)


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


class GamePairs:
    """The pairs of matches of two players, counted as the matches come: a pair is the two
    matches of one game with one seed (one opening), the seats swapped. Each whole pair is
    counted in its players' pentanomial; a match waits, kept as its first seat and its
    points, only until the other of its pair comes. So it keeps five counts per two players
    who met, and the matches of pairs not yet whole.

    A pairing of more games than two (a Swiss's, a knockout's tie) has one seed for all of
    them: each match is paired with one of the other seating that is waiting."""

    def __init__(self) -> None:
        # (the name that sorts first, the other) -> the pentanomial of the first.
        self._counts: dict[tuple[str, str], list[int]] = {}
        # (game, seed, the two names sorted) -> each waiting match's first seat and the
        # points of the name that sorts first.
        self._waiting: dict[tuple[str, int, str, str], list[tuple[str, float]]] = {}

    def add(self, match: Played) -> None:
        if not match.complete:
            return
        goals = match.goals
        assert goals is not None
        seats = [seat for seat in match.seats if seat.player != CHANCE_NAME]
        if len(seats) != 2 or seats[0].player == seats[1].player:
            return
        one, two = sorted(seats, key=lambda seat: seat.player)
        scored = points(goals[one.role], goals[two.role])
        key = (match.game, match.seed, one.player, two.player)
        waiting = self._waiting.setdefault(key, [])
        seated = seats[0].player
        partner = next((i for i, (first, _) in enumerate(waiting) if first != seated), None)
        if partner is None:
            waiting.append((seated, scored))
            return
        _, other = waiting.pop(partner)
        if not waiting:
            del self._waiting[key]
        counts = self._counts.setdefault((one.player, two.player), [0] * 5)
        counts[pair_bin(scored, other)] += 1

    def of(self, player: str | None, opponent: str | None = None) -> Pentanomial:
        """The pentanomial of `player`'s pairs against `opponent`, or against everyone."""
        total = [0] * 5
        for (one, two), counts in self._counts.items():
            if player not in (one, two) or (opponent is not None and opponent not in (one, two)):
                continue
            for index, count in enumerate(counts if player == one else counts[::-1]):
                total[index] += count
        return (total[0], total[1], total[2], total[3], total[4])


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
