"""The round-robin schedule of a tournament: which matches, in which order, with which ids."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from referee.clock import Clocks
from referee.games import Game
from referee.players.chance import competing, with_chance
from referee.records.transcript import tournament_match_id
from referee.tournaments.config import TournamentConfig


@dataclass(frozen=True)
class ScheduledMatch:
    """One match of a tournament: who plays which role of which game, in which round."""

    match_id: str
    game: Game
    players: tuple[str, ...]  # player names in the game's role order
    round: int
    clocks: Clocks
    seed: int


def seatings(names: Sequence[str], roles: int) -> list[tuple[str, ...]]:
    """Every `roles`-subset of the players in every rotation of the seats.

    Two players: both seatings of every pair. K players of a K-role game: K matches, each
    player in each seat once. Rotations (not all K! orders) keep every seat fair to every
    player at K times the cost of one match per subset.
    """
    return [
        group[shift:] + group[:shift]
        for group in combinations(names, roles)
        for shift in range(roles)
    ]


def round_robin(config: TournamentConfig) -> list[ScheduledMatch]:
    """Every group of players x every game x every rotation x rounds, in an order set by the seed.

    Matches are ordered round by round, so a tournament stopped early is still balanced,
    and shuffled within a round, so games and pairings are spread out.
    """
    rng = random.Random(config.seed)
    names = [player.name for player in config.players]
    draft = [
        (round_, settings, seating)
        for settings in config.games
        for round_ in range(1, settings.rounds + 1)
        for seating in seatings(names, competing(settings.game.roles))
    ]
    order: list[tuple] = []
    for round_ in sorted({entry[0] for entry in draft}):
        batch = [entry for entry in draft if entry[0] == round_]
        rng.shuffle(batch)
        order.extend(batch)
    width = len(str(len(order)))
    return [
        ScheduledMatch(
            match_id=tournament_match_id(f"{number:0{width}d}", settings.game.id, round_, seating),
            game=settings.game,
            players=with_chance(settings.game.roles, seating),
            round=round_,
            clocks=settings.clocks,
            seed=rng.randrange(2**31),
        )
        for number, (round_, settings, seating) in enumerate(order, start=1)
    ]
