"""The schedule of a tournament: which matches, in which order, with which ids and seeds.

A match's id and seed are functions of the match alone (its game, round and players), never
of its place in the schedule, so that a field that changes (a new entrant, more rounds)
keeps every match already played. The order is set by the config's seed.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from referee.clock import Clocks
from referee.games import Game
from referee.players.chance import competing, with_chance
from referee.records.transcript import tournament_match_id
from referee.tournaments.config import GameSettings, TournamentConfig


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
    opening: int = 0


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
            _match(config, settings, round_, group, seating)
            for settings, group in batch
            for seating in rotations(group)
        )
    return order


def _match(
    config: TournamentConfig,
    settings: GameSettings,
    round_: int,
    group: tuple[str, ...],
    seating: tuple[str, ...],
) -> ScheduledMatch:
    game = settings.game
    return ScheduledMatch(
        match_id=tournament_match_id(game.id, round_, seating),
        game=game,
        players=with_chance(game.roles, seating),
        round=round_,
        clocks=settings.clocks,
        seed=match_seed(config.seed, game.id, round_, group),
        opening=config.openings,
    )
