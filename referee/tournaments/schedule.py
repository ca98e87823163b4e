"""The schedule of a tournament: which matches, in which order, with which ids and seeds.

A match's id and seed are functions of the match alone (its game, round and players), never
of its place in the schedule, so that a field that changes (a new entrant, more rounds)
keeps every match already played. The order is set by the config's seed.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from referee.clock import Clocks
from referee.games import Game
from referee.players.chance import competing, with_chance
from referee.records.transcript import BookLine, tournament_match_id
from referee.tournaments.config import GameSettings, TournamentConfig
from referee.tournaments.knockout import Tie
from referee.tournaments.swiss import Round, seating


@dataclass(frozen=True)
class ScheduledMatch:
    """One match of a tournament: who plays which role of which game, in which round.

    The matches of one group of players at one game and round share a seed: they are its
    rotations (for two players, a pair with the seats swapped).
    """

    match_id: str
    game: Game
    players: tuple[str, ...]  # player names in the game's role order
    round: int
    clocks: Clocks
    seed: int
    # Steps the referee plays at random before the players choose; or a book's line.
    opening: int = 0
    book: BookLine | None = None
    # The step after which the match, if not over, is adjudicated.
    max_steps: int | None = None
    # Each seat's clocks in role order, where a player has its own (`TournamentConfig.
    # seat_clocks`); (): every seat has `clocks`.
    seat_clocks: tuple[Clocks, ...] = ()


def rotations(group: Sequence[str]) -> list[tuple[str, ...]]:
    """A group of players in every rotation of the seats: each player once in each seat.

    Rotations (not all K! orders) keep every seat fair to every player at K times the cost
    of one match per group.
    """
    group = tuple(group)
    return [group[shift:] + group[:shift] for shift in range(len(group))]


def groups(names: Sequence[str], roles: int, challengers: int = 0) -> list[tuple[str, ...]]:
    """The groups of players that meet at a game of `roles` competing roles: every
    `roles`-subset, or in a gauntlet each challenger (the first `challengers` names) with
    every `roles - 1`-subset of the others."""
    if not challengers:
        return list(combinations(names, roles))
    rest = names[challengers:]
    return [
        (challenger, *others)
        for challenger in names[:challengers]
        for others in combinations(rest, roles - 1)
    ]


def match_seed(seed: int, game: str, round_: int, group: Sequence[str]) -> int:
    """The seed of a group's matches at a game and round, from the tournament's seed."""
    text = f"{seed}\n{game}\n{round_}\n" + "\n".join(sorted(group))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") >> 1


def schedule(config: TournamentConfig) -> list[ScheduledMatch]:
    """Every group x every game x every rotation x rounds, round by round.

    Round by round, so that a tournament stopped early is still balanced; the groups of a
    round shuffled by the seed, so that games and pairings are spread out; the rotations of
    a group one after the other, so that its pair is complete as soon as possible.
    """
    rng = random.Random(config.seed)
    names = [player.name for player in config.players]
    order: list[ScheduledMatch] = []
    for round_ in range(1, max(settings.rounds for settings in config.games) + 1):
        batch = [
            (settings, group)
            for settings in config.games
            if round_ <= settings.rounds
            for group in groups(names, competing(settings.game.roles), config.challengers)
        ]
        rng.shuffle(batch)
        order.extend(
            _match(config, settings, round_, group, seats)
            for settings, group in batch
            for seats in rotations(group)
        )
    return order


def swiss_matches(config: TournamentConfig, rounds: Sequence[Round]) -> list[ScheduledMatch]:
    """The matches of a Swiss's rounds paired so far: each pair's games in turn, the seats
    swapped from one to the next, all with one seed (one opening); none for a pair of which
    a player has left the field."""
    settings = config.games[0]
    entrants = {player.name for player in config.players}
    return [
        _match(config, settings, played.number, pair, seating(pair, game), game // 2)
        for played in rounds
        for pair in played.pairs
        if entrants.issuperset(pair)
        for game in range(config.games_per_pairing)
    ]


def knockout_matches(
    config: TournamentConfig, rounds: Sequence[Sequence[Tie]]
) -> list[ScheduledMatch]:
    """The matches of a knockout's ties as far as they are known: the games each needs now,
    all of a tie with one seed (one opening), the seats swapped from one to the next; none
    of a player who has left the field."""
    settings = config.games[0]
    entrants = {player.name for player in config.players}
    return [
        _match(config, settings, tie.round, (tie.high, tie.low), game.seats, game.again)
        for ties in rounds
        for tie in ties
        if tie.low is not None and entrants.issuperset((tie.high, tie.low))
        for game in tie.games
    ]


def _match(
    config: TournamentConfig,
    settings: GameSettings,
    round_: int,
    group: tuple[str, ...],
    seats: tuple[str, ...],
    again: int = 0,
) -> ScheduledMatch:
    game = settings.game
    steps, book = settings.opening(round_ - 1)
    players = with_chance(game.roles, seats)
    return ScheduledMatch(
        match_id=tournament_match_id(game.id, round_, seats, again),
        game=game,
        players=players,
        round=round_,
        clocks=settings.clocks,
        seed=match_seed(config.seed, game.id, round_, group),
        opening=steps,
        book=book,
        max_steps=settings.max_steps,
        seat_clocks=config.seat_clocks(settings.clocks, players),
    )


def capacities(config: TournamentConfig) -> dict[str, int]:
    """The players that may be in only so many matches at once (URL players), and how many."""
    return {p.name: p.capacity for p in config.players if p.capacity is not None}


class Dispatcher:
    """The matches still to play, handed out in order except that none puts a player in more
    running matches than its capacity: a URL player is one server, which answers a second
    match's START with `busy`. A match that must wait for its player lets a later one that
    fits go first, so a free place is never left idle while something could run in it.
    """

    def __init__(self, matches: Sequence[ScheduledMatch], limits: Mapping[str, int]) -> None:
        self._waiting = list(matches)
        self._limits = dict(limits)
        self._free = dict(limits)
        self._changed = asyncio.Condition()

    def __len__(self) -> int:
        return len(self._waiting)

    async def take(self, most: int) -> list[ScheduledMatch]:
        """Up to `most` matches that fit beside the running ones, once at least one does; none
        when no match is left. Give them back with `done` when they have been played."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: not self._waiting or any(self._fits(m, Counter()) for m in self._waiting)
            )
            batch: list[ScheduledMatch] = []
            held: Counter[str] = Counter()
            for match in list(self._waiting):
                if len(batch) == most:
                    break
                if self._fits(match, held):
                    extra = self._seats(match) - held
                    held += extra
                    for name, count in extra.items():
                        self._free[name] -= count
                    batch.append(match)
                    self._waiting.remove(match)
            return batch

    async def done(self, batch: Sequence[ScheduledMatch]) -> None:
        """The matches of a batch `take` gave are over: their players' seats are free again."""
        async with self._changed:
            for name, count in self._held(batch).items():
                self._free[name] += count
            self._changed.notify_all()

    def note(self, places: int) -> str | None:
        """One line when the players' capacities let fewer than `places` of the matches run at
        once: how many will, and why; None when they do not hold them below `places`.

        When every match seats a limited player, each running match holds one of their
        seats, so their seats together are the most that can run."""
        if not self._waiting or any(not self._seats(m) for m in self._waiting):
            return None
        playing = sorted({name for match in self._waiting for name in self._seats(match)})
        most = sum(self._limits[name] for name in playing)
        if most >= places:
            return None
        each = ", ".join(f"{name} {self._limits[name]}" for name in playing)
        return (
            f"{most} match{'es' if most > 1 else ''} at a time, not {places}: every match seats"
            f" a URL player, and they take {most} at a time in all (capacity: {each})"
        )

    def _seats(self, match: ScheduledMatch) -> Counter[str]:
        return Counter(name for name in match.players if name in self._limits)

    def _held(self, batch: Sequence[ScheduledMatch]) -> Counter[str]:
        """The seats a batch holds: its matches are played one after another, so the most
        any one of them takes of each player, not their sum."""
        held: Counter[str] = Counter()
        for match in batch:
            held |= self._seats(match)
        return held

    def _fits(self, match: ScheduledMatch, held: Counter[str]) -> bool:
        """Whether `match` fits in a batch holding `held` beside the running matches."""
        extra = self._seats(match) - held
        return all(self._free[name] >= count for name, count in extra.items())
