"""A knockout: players seeded into a bracket, each tie a mini-match of a few games with the
seats swapped, its winner going on to the next round until one is left.

The bracket is a power of two; a field short of one gives its top seeds a bye, and seeds
meet as the usual order puts them (1 and 2 only in the final). A drawn mini-match goes to
its tie-break: a block of more games, then the higher seed or a draw by the tournament's
seed. Which matches are to be played follows from the seeding, which is kept in the results
directory when the run begins, and the results so far: a run stopped at any point goes on
where it was.
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from referee.errors import ConfigError, RefereeError
from referee.players.chance import CHANCE_NAME
from referee.records.files import read_text, write_atomic
from referee.records.transcript import tournament_match_id
from referee.tournaments.played import Played
from referee.tournaments.ratings import points
from referee.tournaments.swiss import seating

# The seeding, kept in the results directory.
SEEDING_FILE = "knockout.seeds"
MAX_SEEDING_BYTES = 1024 * 1024


class TieBreak(StrEnum):
    """Who goes on from a mini-match still drawn after its tie-break games: the higher seed,
    or one drawn with the tournament's seed."""

    HIGHER_SEED = "higher-seed"
    DRAW = "draw"


@dataclass(frozen=True)
class Rules:
    """How each tie is played and decided."""

    games: int  # the games of a mini-match
    tiebreak_games: int  # the block of games played when it is drawn
    tiebreak: TieBreak
    seed: int


@dataclass(frozen=True)
class TieGame:
    """A game of a tie: its seats and which of the pair's games in those seats it is (the
    match id's repeat)."""

    seats: tuple[str, str]
    again: int


@dataclass
class Tie:
    """A tie of the bracket: its seeds' players (`low` None: a bye), the games it has needed
    so far, their points, and its winner once decided (and how)."""

    round: int
    high: str
    low: str | None
    high_seed: int
    low_seed: int
    games: list[TieGame]
    points: tuple[float, float] = (0.0, 0.0)
    played: int = 0
    winner: str | None = None
    decided_by: str = ""

    @property
    def loser(self) -> str | None:
        if self.winner is None or self.low is None:
            return None
        return self.low if self.winner == self.high else self.high


def slots(size: int) -> list[int]:
    """The seeds (from 1) of a bracket of `size` in their places, top to bottom: each first
    round tie seeds k and size + 1 - k, and seeds 1 and 2 meet only in the final."""
    order = [1]
    while len(order) < size:
        count = len(order) * 2
        order = [seed for top in order for seed in (top, count + 1 - top)]
    return order


def bracket_size(players: int) -> int:
    size = 1
    while size < players:
        size *= 2
    return size


def ties(
    seeds: Sequence[str],
    rules: Rules,
    transcripts: Iterable[Played],
    game_id: str,
    absent: Collection[str] = (),
) -> list[list[Tie]]:
    """The bracket's ties round by round, as far as the results so far decide them: the
    rounds up to the first whose ties are not all decided, each tie with the games it needs
    now. `seeds` are the players, the first seed first; a tie of a player `absent` (left the
    field, or withdrawn) and not yet decided is a walkover for the other."""
    # A match the rules failed is played, and scores nothing.
    by_id = {t.match_id: t for t in transcripts if t.settled}
    # Each place of the round: its seed number and player (None: a seed the field lacks).
    places = [
        (seed, seeds[seed - 1] if seed <= len(seeds) else None)
        for seed in slots(bracket_size(len(seeds)))
    ]
    rounds: list[list[Tie]] = []
    while len(places) > 1:
        current: list[Tie] = []
        following: list[tuple[int, str | None]] = []
        for high, low in zip(places[::2], places[1::2], strict=True):
            if low[0] < high[0]:
                high, low = low, high
            # A seed the field lacks is always below those it has: the higher one is there.
            assert high[1] is not None
            tie = Tie(len(rounds) + 1, high[1], low[1], high[0], low[0], [])
            if tie.low is None:
                tie.winner, tie.decided_by = tie.high, "bye"
            else:
                _decide(tie, rules, by_id, game_id)
                gone = [name for name in (tie.high, tie.low) if name in absent]
                if tie.winner is None and gone:
                    # Both gone: the higher seed's place goes on, to be a walkover in turn.
                    tie.winner = tie.low if gone == [tie.high] else tie.high
                    tie.games = [g for g in tie.games if match_id(game_id, tie, g) in by_id]
                    tie.decided_by = "walkover"
            current.append(tie)
            following.append(high if tie.winner == tie.high else low)
        rounds.append(current)
        if any(tie.winner is None for tie in current):
            break
        places = following
    return rounds


def _decide(tie: Tie, rules: Rules, by_id: dict[str, Played], game_id: str) -> None:
    """The games `tie` needs, their points so far and its winner once they decide it."""
    assert tie.low is not None
    pair = (tie.high, tie.low)
    wanted = rules.games
    blocks = 0
    while True:
        tie.games = [TieGame(seating(pair, k), k // 2) for k in range(wanted)]
        scored, played = _scored(tie, by_id, game_id, pair)
        tie.points, tie.played = scored, played
        if played < wanted:
            return  # games to play
        if scored[0] != scored[1]:
            tie.winner = pair[0] if scored[0] > scored[1] else pair[1]
            tie.decided_by = "tie-break games" if blocks else "games"
            return
        if blocks == 0 and rules.tiebreak_games:
            blocks, wanted = 1, wanted + rules.tiebreak_games
            continue
        if rules.tiebreak is TieBreak.HIGHER_SEED:
            tie.winner, tie.decided_by = tie.high, "higher seed"
        else:
            draw = random.Random(f"knockout {rules.seed} {tie.round} {tie.high} {tie.low}")
            tie.winner, tie.decided_by = draw.choice(pair), "drawn by the seed"
        return


def _scored(
    tie: Tie, by_id: dict[str, Played], game_id: str, pair: tuple[str, str]
) -> tuple[tuple[float, float], int]:
    """The points of the pair in the games of `tie` played so far, and how many."""
    mine = theirs = 0.0
    played = 0
    for game in tie.games:
        transcript = by_id.get(match_id(game_id, tie, game))
        if transcript is None:
            continue
        if transcript.goals is None or not transcript.complete:
            played += 1
            continue
        goal = {
            seat.player: transcript.goals[seat.role]
            for seat in transcript.seats
            if seat.player != CHANCE_NAME
        }
        scored = points(goal[pair[0]], goal[pair[1]])
        mine, theirs, played = mine + scored, theirs + 1 - scored, played + 1
    return (mine, theirs), played


@dataclass(frozen=True)
class KnockoutStandings:
    """A knockout's bracket as far as it has been played, and each player's finish."""

    seeds: tuple[str, ...]
    rounds: list[list[Tie]]
    places: list[tuple[str, str]]

    @property
    def total_rounds(self) -> int:
        return bracket_size(len(self.seeds)).bit_length() - 1


def standings(bracket: Bracket, transcripts: Sequence[Played]) -> KnockoutStandings:
    """The bracket of a knockout as its `transcripts` have played it."""
    game_id = transcripts[0].game if transcripts else ""
    rounds = ties(bracket.seeds, bracket.rules, transcripts, game_id, bracket.absent)
    return KnockoutStandings(bracket.seeds, rounds, places(rounds))


def tie_text(tie: Tie) -> str:
    """A tie as the bracket tells it: its seeds, players and points, and who goes on, why."""
    high = f"({tie.high_seed}) {tie.high}"
    if tie.low is None:
        return f"{high}: a bye"
    score = f"{high} {tie.points[0]:g}-{tie.points[1]:g} ({tie.low_seed}) {tie.low}"
    how = {
        "games": "",
        "tie-break games": " after its tie-break games",
        "higher seed": ", drawn, as the higher seed",
        "drawn by the seed": ", drawn, by lot (drawn with the tournament's seed)",
        "walkover": f", {tie.loser} having left",
    }
    if tie.winner is None:
        return f"{score} (to play)"
    return f"{score}: {tie.winner} goes on{how.get(tie.decided_by, '')}"


def match_id(game_id: str, tie: Tie, game: TieGame) -> str:
    """The id of a game of a tie."""
    return tournament_match_id(game_id, tie.round, game.seats, game.again)


def places(rounds: Sequence[Sequence[Tie]]) -> list[tuple[str, str]]:
    """Each player's finish, best first: the winner, then by the round each was knocked out
    in (`semi-final` and the like), the later first."""
    if not rounds:
        return []
    final = rounds[-1]
    done = len(final) == 1 and final[0].winner is not None
    found: list[tuple[str, str]] = []
    if done:
        found.append((final[0].winner or "", "winner"))
    total = len(rounds)
    for number in range(total, 0, -1):
        for tie in rounds[number - 1]:
            if tie.loser is not None:
                found.append((tie.loser, f"out in {round_name(number, total)}"))
    return found


def round_name(number: int, total: int) -> str:
    """`final`, `semi-final`, `quarter-final`, else `round N`."""
    left = total - number
    return {0: "the final", 1: "the semi-final", 2: "the quarter-final"}.get(
        left, f"round {number}"
    )


@dataclass(frozen=True)
class Bracket:
    """What a knockout is set with when it begins, kept with its results: the seeds, the
    rules of its ties, and the players that have left it since (who lose their ties)."""

    seeds: tuple[str, ...]
    rules: Rules
    absent: tuple[str, ...] = ()


def write_bracket(output: Path, bracket: Bracket) -> None:
    rules = bracket.rules
    data = {
        "seeds": list(bracket.seeds),
        "games": rules.games,
        "tiebreak_games": rules.tiebreak_games,
        "tiebreak": str(rules.tiebreak),
        "seed": rules.seed,
        "absent": list(bracket.absent),
    }
    write_atomic(output / SEEDING_FILE, json.dumps(data, indent=1) + "\n")


def read_bracket(output: Path) -> Bracket | None:
    """The bracket a run began with; None where none was kept. ConfigError for a file that
    is not one this referee wrote."""
    path = output / SEEDING_FILE
    if not path.exists():
        return None
    try:
        data: Any = json.loads(read_text(path, RefereeError, MAX_SEEDING_BYTES))
        rules = Rules(
            data["games"], data["tiebreak_games"], TieBreak(data["tiebreak"]), data["seed"]
        )
        bracket = Bracket(tuple(data["seeds"]), rules, tuple(data["absent"]))
    except (RefereeError, ValueError, TypeError, KeyError, RecursionError) as error:
        raise ConfigError(f"{path}: not a knockout's bracket ({error})") from None
    names = [*bracket.seeds, *bracket.absent]
    numbers = (rules.games, rules.tiebreak_games, rules.seed)
    if not all(isinstance(name, str) for name in names) or not all(
        type(n) is int and n >= 0 for n in numbers
    ):
        raise ConfigError(f"{path}: not a knockout's bracket (a seed or a number is not one)")
    return bracket
