"""The `random` role of a GDL game, played by the referee as the GGP managers do: uniformly.

A role named `random` is chance, not a competitor: no program is started for it and it
appears in no standings. Its moves are drawn from a generator seeded by the match id and
recorded in the transcript like any other, so a replay re-checks them as legal moves.
"""

from __future__ import annotations

import random
from pathlib import Path

from referee.games.base import CHANCE_ROLE
from referee.players.base import Player, PlayerKind, PlayerSpec, Reply
from referee.protocol import READY, Go, Start, parse

CHANCE_NAME = "random (referee)"


def chance_spec() -> PlayerSpec:
    """The spec of the seat the referee plays itself."""
    return PlayerSpec(CHANCE_NAME, kind=PlayerKind.CHANCE)


def is_chance(role: str) -> bool:
    """Whether the referee plays a role of this name."""
    return role == CHANCE_ROLE


def competing(game_roles: tuple[str, ...]) -> int:
    """How many roles of a game players take: all but `random`."""
    return sum(1 for role in game_roles if not is_chance(role))


def with_chance(game_roles: tuple[str, ...], players: tuple[str, ...]) -> tuple[str, ...]:
    """Player names for every role: `players` in the competing roles, the referee in `random`."""
    given = iter(players)
    return tuple(CHANCE_NAME if is_chance(role) else next(given) for role in game_roles)


class ChancePlayer(Player):
    """Answers `start` at once and every `go` with a uniformly random legal move."""

    def __init__(self) -> None:
        self.spec = chance_spec()
        self.log_path: Path | None = None
        self._rng = random.Random()

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        return None

    async def request(self, line: str, limit_s: float) -> Reply | None:
        message = parse(line)
        if isinstance(message, Start):
            self._rng.seed(f"{message.match_id} chance")
            return Reply(READY, 0.0)
        if isinstance(message, Go):
            return Reply(self._rng.choice(message.legal), 0.0)
        return None

    async def send(self, line: str, limit_s: float) -> None:
        return None

    async def close(self) -> None:
        return None

    @property
    def alive(self) -> bool:
        return True
