"""One scheduled match played with the players of a pool, on its own cores: the same in the
referee process and in a cluster's worker, which differ only in where the results go."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from referee.match import MatchSetup, play_recorded
from referee.players.base import AbsentPlayer, Fingerprint, Player
from referee.players.chance import is_chance
from referee.records.transcript import Transcript
from referee.sandbox.cores import split_cores
from referee.tournaments.config import TournamentConfig
from referee.tournaments.pool import PlayerPool
from referee.tournaments.schedule import ScheduledMatch


async def play_scheduled(
    config: TournamentConfig,
    match: ScheduledMatch,
    pool: PlayerPool,
    prints: Mapping[str, Fingerprint],
    log_of: Callable[[str], Path],
    record: Callable[[Transcript], Awaitable[None]],
    cores: frozenset[int] | None = None,
    withdrawn: Mapping[str, str] | None = None,
) -> Transcript:
    """Play `match` and give its transcript to `record`: its players from `pool`, each role's
    log at `log_of(role)`, their processes on `cores` when given (each seat on its own share
    of them when the config keeps seats apart). A player in `withdrawn` is not started: its
    seat fails at once, for the reason given."""
    seats = list(zip(match.players, match.game.roles, strict=True))
    out = withdrawn or {}
    shares = _shares(config, match, cores)
    players = await asyncio.gather(
        *(
            _absent(config, name, out[name])
            if name in out
            else pool.acquire(name, log_of(role), shares[role])
            for name, role in seats
        )
    )
    setup = MatchSetup(
        match.match_id,
        match.game,
        players,
        match.clocks,
        config.policy,
        match.seed,
        match.opening,
        [prints.get(name) for name in match.players],
        ponder=config.ponder,
    )
    transcript = await play_recorded(setup, record)
    await asyncio.gather(
        *(pool.release(name, player) for (name, _), player in zip(seats, players, strict=True))
    )
    return transcript


def _shares(
    config: TournamentConfig, match: ScheduledMatch, cores: frozenset[int] | None
) -> dict[str, frozenset[int] | None]:
    """The cores of each role's processes: all of the match's, or a share of its own."""
    roles = match.game.roles
    if cores is None or not config.seats_apart(match.game):
        return dict.fromkeys(roles, cores)
    seats = [role for role in roles if not is_chance(role)]
    parts = split_cores(sorted(cores), len(seats))
    return dict.fromkeys(roles, None) | {
        role: frozenset(part) for role, part in zip(seats, parts, strict=True)
    }


async def _absent(config: TournamentConfig, name: str, reason: str) -> Player:
    spec = next(entrant.spec for entrant in config.players if entrant.name == name)
    return AbsentPlayer(spec, reason)
