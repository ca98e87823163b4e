"""A Swiss tournament: each round pairs players of equal or near score who have not met, with
their seats balanced; a round is paired once, from the results recorded before it, and the
pairing kept in the results directory, so that a run stopped and started again plays the
same rounds.

A round's pairing is a least-cost perfect matching of its players (swiss_matching.py: the
blossom algorithm, compiled, on a graph of a few pairs a player that prices prove holds a
least-cost pairing of the complete graph): each pair costs more with the square of the
difference of their scores. A pair that has met, or that would give a player the same seat
a third time in a row or leave its seats two apart, costs more than any pairing by score
can, so it is chosen only where nothing else pairs everyone. Among players of equal score
the cost prefers those half the field apart in its order (the top half against the bottom
half).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.errors import ConfigError, RefereeError
from referee.players.chance import CHANCE_NAME
from referee.records.files import read_text, write_atomic
from referee.records.transcript import tournament_match_id
from referee.tournaments.played import Played
from referee.tournaments.ratings import points

if TYPE_CHECKING:
    from referee.tournaments.swiss_matching import Players

# The pairings of every round so far, in the results directory.
ROUNDS_FILE = "swiss.rounds"
MAX_ROUNDS_BYTES = 16 * 1024 * 1024
# Seats, as a player's record of them says: the first role, or the second.
FIRST, SECOND = 0, 1


@dataclass(frozen=True)
class Round:
    """A round's pairs, each with the seats of its first game (first, second), strongest
    first; and the player who sits it out with a bye, if the field is odd."""

    number: int
    pairs: tuple[tuple[str, str], ...]
    bye: str | None = None


@dataclass(frozen=True)
class Paired:
    """What a Swiss keeps with its results: the games of a pairing, the rounds paired so far,
    and the players who have left the field since (their pairs are byes for the others)."""

    games_per_pairing: int
    rounds: tuple[Round, ...]
    absent: tuple[str, ...] = ()


class Tiebreak(StrEnum):
    """What ranks equal scores in a Swiss table, as a config names it (`tiebreaks`). Each
    Buchholz adds up, round by round, the score of that round's opponent; a round the player
    did not play (a bye, a pair whose opponent left, a round before it joined) counts a
    virtual opponent with the player's own score, as FIDE's 2023 rules have it, so that every
    player counts every round. The Cut-1 leaves out the lowest of those scores, the median
    the highest and the lowest."""

    BUCHHOLZ = "buchholz"
    BUCHHOLZ_CUT_1 = "buchholz-cut-1"
    MEDIAN_BUCHHOLZ = "median-buchholz"
    # Over its games: the points it scored times that opponent's score.
    SONNEBORN_BERGER = "sonneborn-berger"

    @property
    def label(self) -> str:
        """The column that shows it."""
        return _LABELS[self]


_LABELS = {
    Tiebreak.BUCHHOLZ: "Buchholz",
    Tiebreak.BUCHHOLZ_CUT_1: "Bu Cut-1",
    Tiebreak.MEDIAN_BUCHHOLZ: "median Bu",
    Tiebreak.SONNEBORN_BERGER: "S-B",
}
# A Swiss's tie-breaks unless its config names others.
DEFAULT_TIEBREAKS = (Tiebreak.BUCHHOLZ, Tiebreak.SONNEBORN_BERGER)


@dataclass
class Past:
    """What the rounds so far say of each player."""

    scores: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    met: set[frozenset[str]] = field(default_factory=set)
    # Each game's seat, in the order they were played.
    seats: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    byes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # Each game's opponent and the points scored against it.
    games: dict[str, list[tuple[str, float]]] = field(default_factory=lambda: defaultdict(list))
    # Each round's opponent, by the round's number; None: a bye (or an opponent who left).
    opponents: dict[str, dict[int, str | None]] = field(default_factory=lambda: defaultdict(dict))
    rounds: int = 0


@dataclass(frozen=True)
class SwissRow:
    """A player's line of a Swiss table: its score, and the tie-breaks that may rank equal
    scores (`Tiebreak`)."""

    player: str
    score: float
    buchholz: float
    sonneborn_berger: float
    byes: int
    games: int
    # The rating from all results, the last tie-break (None: no result yet).
    elo: float | None = None
    buchholz_cut_1: float = 0.0
    median_buchholz: float = 0.0

    def tiebreak(self, which: Tiebreak) -> float:
        return {
            Tiebreak.BUCHHOLZ: self.buchholz,
            Tiebreak.BUCHHOLZ_CUT_1: self.buchholz_cut_1,
            Tiebreak.MEDIAN_BUCHHOLZ: self.median_buchholz,
            Tiebreak.SONNEBORN_BERGER: self.sonneborn_berger,
        }[which]


def seating(pair: tuple[str, str], game: int) -> tuple[str, str]:
    """The seats of a pair's `game`th game (from 0): swapped from one game to the next."""
    return pair if game % 2 == 0 else (pair[1], pair[0])


def past_of(
    rounds: Sequence[Round],
    transcripts: Iterable[Played],
    games_per_pairing: int,
    entrants: Iterable[str],
) -> Past:
    """What `rounds` and the `transcripts` of their matches left each player (a match that
    did not end scores nothing). A pair whose other player has left the field is a bye for
    the one who stayed."""
    past = Past(rounds=len(rounds))
    present = set(entrants)
    for played in rounds:
        for pair in played.pairs:
            gone = [name for name in pair if name not in present]
            if gone:
                for name in set(pair) - set(gone):
                    _bye(past, name, games_per_pairing)
                    past.opponents[name][played.number] = None
                continue
            past.met.add(frozenset(pair))
            past.opponents[pair[0]][played.number] = pair[1]
            past.opponents[pair[1]][played.number] = pair[0]
            for game in range(games_per_pairing):
                first, second = seating(pair, game)
                past.seats[first].append(FIRST)
                past.seats[second].append(SECOND)
        if played.bye is not None:
            _bye(past, played.bye, games_per_pairing)
            past.opponents[played.bye][played.number] = None
    for transcript in transcripts:
        if transcript.goals is None or not transcript.complete:
            continue
        one, two = [seat for seat in transcript.seats if seat.player != CHANCE_NAME]
        mine, theirs = transcript.goals[one.role], transcript.goals[two.role]
        for seat, other, scored in (
            (one, two, points(mine, theirs)),
            (two, one, points(theirs, mine)),
        ):
            past.scores[seat.player] += scored
            past.games[seat.player].append((other.player, scored))
    return past


def _bye(past: Past, name: str, games_per_pairing: int) -> None:
    """A bye scores as a round won: every game of a pairing."""
    past.byes[name] += 1
    past.scores[name] += games_per_pairing


def pair(number: int, field_: Sequence[str], past: Past, games_per_pairing: int) -> Round:
    """Round `number` of the players of `field_` (in the field's order, which ranks equal
    scores), from what the rounds before it left them."""
    order = {name: index for index, name in enumerate(field_)}
    standing = sorted(field_, key=lambda name: (-past.scores[name], order[name]))
    bye = None
    if len(standing) % 2:
        # The lowest score of those who have had the fewest byes; of equals, the last.
        fewest = min(past.byes[name] for name in standing)
        candidates = [name for name in standing if past.byes[name] == fewest]
        bye = min(reversed(candidates), key=lambda name: past.scores[name])
        standing.remove(bye)
    pairs = _matched(standing, past, games_per_pairing)
    rank = {name: index for index, name in enumerate(standing)}
    seated = [_seats(a, b, past, games_per_pairing, number) for a, b in pairs]
    seated.sort(key=lambda p: min(rank[p[0]], rank[p[1]]))
    return Round(number, tuple(seated), bye)


def _matched(standing: list[str], past: Past, games_per_pairing: int) -> list[tuple[str, str]]:
    """Everyone of `standing` (an even number, best first) paired at the least cost, as
    swiss_matching costs a pair and proves the least."""
    # The matching's numbers (numpy, scipy's programs, rustworkx) load when a round is
    # paired, not whenever a Swiss's standings are read.
    from referee.tournaments.swiss_matching import least_cost

    found = least_cost(matching_players(standing, past, games_per_pairing))
    return [(standing[i], standing[j]) for i, j in found]


def matching_players(standing: list[str], past: Past, games_per_pairing: int) -> Players:
    """What the matching needs of the players of `standing` (best first)."""
    from referee.tournaments.swiss_matching import Players

    index = {name: i for i, name in enumerate(standing)}
    # With an even number of games a pairing, each player has each seat equally often.
    needs = [_needs(name, past) if games_per_pairing % 2 else (None, False) for name in standing]
    met = [
        (index[a], index[b])
        for a, b in (tuple(pair) for pair in past.met)
        if a in index and b in index
    ]
    return Players(
        halves=[round(2 * past.scores[name]) for name in standing],
        wants=[-1 if wants is None else wants for wants, _ in needs],
        must=[must for _, must in needs],
        met=met,
    )


def _needs(name: str, past: Past) -> tuple[int | None, bool]:
    """The seat a player is to have next, if any, and whether it must: it must have the
    other seat after two in a row of one, or once it has had one two times more than the
    other; else it wants the one it has had fewer times."""
    seats = past.seats[name]
    balance = seats.count(FIRST) - seats.count(SECOND)
    if len(seats) >= 2 and seats[-1] == seats[-2]:
        return 1 - seats[-1], True
    if balance:
        return (SECOND if balance > 0 else FIRST), abs(balance) >= 2
    return None, False


def _seats(a: str, b: str, past: Past, games_per_pairing: int, number: int) -> tuple[str, str]:
    """The pair in the seats of its first game. With an even number of games each player has
    each seat equally often whatever the order; else a seat one must have, then one wants,
    decides, and of two that need neither, the one ranked higher has the first seat in odd
    rounds."""
    if games_per_pairing % 2 == 0:
        return a, b
    (wants_a, must_a), (wants_b, must_b) = _needs(a, past), _needs(b, past)
    for strong in (True, False):
        if (wants_a == FIRST and must_a >= strong) or (wants_b == SECOND and must_b >= strong):
            return a, b
        if (wants_b == FIRST and must_b >= strong) or (wants_a == SECOND and must_a >= strong):
            return b, a
    return (a, b) if number % 2 else (b, a)


def buchholz_scores(past: Past, name: str) -> list[float]:
    """The scores that make `name`'s Buchholz, one for each round paired so far: its
    opponent's, or, for a round it did not play, its own (a virtual opponent)."""
    scores = []
    for number in range(1, past.rounds + 1):
        opponent = past.opponents[name].get(number)
        scores.append(past.scores[name] if opponent is None else past.scores[opponent])
    return scores


def table(
    past: Past,
    field_: Sequence[str],
    ratings: Mapping[str, float],
    tiebreaks: Sequence[Tiebreak] = DEFAULT_TIEBREAKS,
) -> list[SwissRow]:
    """The Swiss table: by score, then the `tiebreaks` in their order, then the rating.

    Growth: O(rounds log rounds) a player."""
    rows = []
    for name in field_:
        games = past.games[name]
        scores = sorted(buchholz_scores(past, name))
        rows.append(
            SwissRow(
                name,
                past.scores[name],
                sum(scores),
                sum(scored * past.scores[other] for other, scored in games),
                past.byes[name],
                len(games),
                ratings.get(name),
                sum(scores[1:]),
                sum(scores[1:-1]),
            )
        )
    rows.sort(
        key=lambda r: (
            -r.score,
            *(-r.tiebreak(which) for which in tiebreaks),
            -(r.elo or 0.0),
            r.player,
        )
    )
    return rows


@dataclass(frozen=True)
class PairResult:
    """A pair's points in a round, as its complete games give them, and how many of its
    games are complete; the one of them who has left the field, if one has (the other has a
    bye); and the ids of its games' matches, in the order they are played."""

    first: str
    second: str
    points: tuple[float, float]
    games: int
    left: str | None = None
    matches: tuple[str, ...] = ()


@dataclass(frozen=True)
class CrossCell:
    """A player's round in the crosstable: its opponent (None: a bye, or an opponent who
    left), its seat in the pairing's first game (FIRST or SECOND), its points and how many
    of the pairing's games are complete, and their matches' ids."""

    round: int
    opponent: str | None
    seat: int | None
    points: float
    games: int
    matches: tuple[str, ...] = ()


@dataclass(frozen=True)
class CrossRow:
    """A player's line of the crosstable: each round paired so far (None: it was not in
    that round's field), in the order of the Swiss table."""

    player: str
    score: float
    rounds: tuple[CrossCell | None, ...]


@dataclass(frozen=True)
class SwissStandings:
    """The Swiss table, each round's pairs with their results, and the crosstable."""

    rows: list[SwissRow]
    rounds: list[tuple[Round, list[PairResult]]]
    games_per_pairing: int
    tiebreaks: tuple[Tiebreak, ...] = DEFAULT_TIEBREAKS
    crosstable: list[CrossRow] = field(default_factory=list)


def standings(
    paired: Paired,
    transcripts: Iterable[Played],
    ratings: Mapping[str, float],
    tiebreaks: Sequence[Tiebreak] = DEFAULT_TIEBREAKS,
) -> SwissStandings:
    """The standings of a Swiss's rounds from the `transcripts` of their matches, its table
    ranked by the `tiebreaks`."""
    rounds, games_per_pairing = paired.rounds, paired.games_per_pairing
    by_id = {t.match_id: t for t in transcripts if t.complete}
    players = sorted(
        {
            name
            for r in rounds
            for name in (*(n for p in r.pairs for n in p), r.bye)
            if name is not None and name not in paired.absent
        }
    )
    past = past_of(rounds, by_id.values(), games_per_pairing, players)
    game = next(iter(by_id.values())).game if by_id else ""
    results = []
    for played in rounds:
        found = []
        for pair in played.pairs:
            scored = [0.0, 0.0]
            games = 0
            ids = []
            for index in range(games_per_pairing):
                seats = seating(pair, index)
                match_id = tournament_match_id(game, played.number, seats, index // 2)
                ids.append(match_id)
                transcript = by_id.get(match_id)
                if transcript is None or transcript.goals is None:
                    continue
                goal = {seat.player: transcript.goals[seat.role] for seat in transcript.seats}
                mine = points(goal[pair[0]], goal[pair[1]])
                scored[0] += mine
                scored[1] += 1 - mine
                games += 1
            left = next((name for name in pair if name in paired.absent), None)
            found.append(
                PairResult(pair[0], pair[1], (scored[0], scored[1]), games, left, tuple(ids))
            )
        results.append((played, found))
    rows = table(past, players, ratings, tiebreaks)
    return SwissStandings(
        rows, results, games_per_pairing, tuple(tiebreaks), crosstable(rows, results, paired)
    )


def crosstable(
    rows: Sequence[SwissRow], rounds: Sequence[tuple[Round, Sequence[PairResult]]], paired: Paired
) -> list[CrossRow]:
    """Each player's rounds, in the table's order: its opponent, seat and points in each."""
    cells: dict[str, dict[int, CrossCell]] = defaultdict(dict)
    bye = float(paired.games_per_pairing)
    for played, results in rounds:
        number = played.number
        for result in results:
            if result.left is not None:
                for name in {result.first, result.second} - {result.left}:
                    cells[name][number] = CrossCell(number, None, None, bye, 0)
                continue
            for seat, (name, other) in enumerate(
                ((result.first, result.second), (result.second, result.first))
            ):
                cells[name][number] = CrossCell(
                    number, other, seat, result.points[seat], result.games, result.matches
                )
        if played.bye is not None:
            cells[played.bye][number] = CrossCell(number, None, None, bye, 0)
    return [
        CrossRow(row.player, row.score, tuple(cells[row.player].get(r.number) for r, _ in rounds))
        for row in rows
    ]


def write_rounds(output: Path, paired: Paired) -> None:
    """Keep the pairings of every round so far with the results."""
    data = {
        "games_per_pairing": paired.games_per_pairing,
        "rounds": [
            {"round": r.number, "pairs": [list(p) for p in r.pairs], "bye": r.bye}
            for r in paired.rounds
        ],
        "absent": list(paired.absent),
    }
    write_atomic(output / ROUNDS_FILE, json.dumps(data, indent=1) + "\n")


def read_rounds(output: Path) -> Paired | None:
    """What a Swiss has kept with its results; None where it has kept nothing. ConfigError
    for a file that is not one this referee wrote."""
    path = output / ROUNDS_FILE
    if not path.exists():
        return None
    try:
        data: Any = json.loads(read_text(path, RefereeError, MAX_ROUNDS_BYTES))
        games = data["games_per_pairing"]
        rounds = [
            Round(
                entry["round"],
                tuple((str(a), str(b)) for a, b in entry["pairs"]),
                entry["bye"] if entry["bye"] is None else str(entry["bye"]),
            )
            for entry in data["rounds"]
        ]
        absent = tuple(str(name) for name in data.get("absent", []))
    except (RefereeError, ValueError, TypeError, KeyError, RecursionError) as error:
        raise ConfigError(f"{path}: not a Swiss's pairings ({error})") from None
    if type(games) is not int or [r.number for r in rounds] != list(range(1, len(rounds) + 1)):
        raise ConfigError(f"{path}: not a Swiss's pairings (its rounds are out of order)")
    return Paired(games, tuple(rounds), absent)
