"""One scheduled match played with the players of a pool, on its own cores: the same in the
referee process and in a cluster's worker, which differ only in where the results go."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.errors import ConfigError
from referee.match import MatchSetup, play_recorded
from referee.players.base import AbsentPlayer, Fingerprint, Player, PlayerKind
from referee.players.chance import competing, is_chance
from referee.records.transcript import Transcript
from referee.sandbox.cores import format_cores, split_cores
from referee.tournaments.config import TournamentConfig
from referee.tournaments.live import LiveMoves, live_path
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
    seat fails at once, for the reason given. The moves of a `live` tournament's match are
    written as they are played (`live.py`)."""
    seats = list(zip(match.players, match.game.roles, strict=True))
    out = withdrawn or {}
    shares = _shares(config, match, cores, {role: pool.cores_of(name) for name, role in seats})
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
        book=match.book,
        max_steps=match.max_steps,
        seat_clocks=match.seat_clocks,
    )
    live = None
    if config.live:
        live = LiveMoves(live_path(config.output, match.match_id), match.match_id, match.game.roles)
    try:
        transcript = await play_recorded(setup, record, live.step if live else None)
    finally:
        if live is not None:
            live.close()
    await asyncio.gather(
        *(pool.release(name, player) for (name, _), player in zip(seats, players, strict=True))
    )
    return transcript


@dataclass(frozen=True)
class CorePlan:
    """The cores a match of each game of a tournament takes on a place's cores (0: its
    players are not pinned): for a match, or for each of its seats that a program plays here
    (a URL player's seat takes none); and what those cores could not give, one line each."""

    per_game: dict[str, int]
    # The games whose figure is for each seat, with their seats.
    per_seat: dict[str, int]
    # The URL players of the tournament: seats that take no cores here.
    urls: int = 0
    notes: tuple[str, ...] = ()

    def needed(self, match: ScheduledMatch, programs: int) -> int:
        """The cores `match` takes, with `programs` of its seats played by programs here."""
        cores = self.per_game[match.game.id]
        return cores * programs if match.game.id in self.per_seat else cores

    @property
    def most(self) -> int:
        """What a place must offer for any match."""
        return max((n * self.per_seat.get(game, 1) for game, n in self.per_game.items()), default=0)

    @property
    def fewest(self) -> int:
        """The fewest cores a pinned match takes (0: none is pinned)."""
        least = (
            n * max(1, self.per_seat[game] - self.urls) if game in self.per_seat else n
            for game, n in self.per_game.items()
        )
        return min((n for n in least if n), default=0)

    def matches_at_once(self, cores: int) -> int:
        """How many matches `cores` cores can run at once, the fewest each."""
        return cores // self.fewest


def pinned(config: TournamentConfig) -> bool:
    """Whether some match of the tournament has its players pinned to cores."""
    return any(
        config.cores_per_seat if config.seats_apart(s.game) else config.cores_per_match
        for s in config.games
    )


def plan_cores(config: TournamentConfig, cores: Sequence[int]) -> CorePlan:
    """The cores each match takes on `cores`: `cores_per_match`, shared by seats that take
    turns, or `cores_per_seat` for each seat where seats think at once. ConfigError when a
    match cannot have them; except that the seats of a game of simultaneous moves share the
    match's cores, with a note, where there are too few to part them."""
    per_game: dict[str, int] = {}
    per_seat: dict[str, int] = {}
    notes: list[str] = []
    have = f"there are {len(cores)} (cores {format_cores(cores)})"
    for settings in config.games:
        game = settings.game
        seats = competing(game.roles)
        if not config.seats_apart(game):
            wanted, key = config.cores_per_match, "cores_per_match"
        else:
            wanted, key = config.cores_per_seat * seats, "cores_per_seat"
            why = "ponder: true" if config.ponder else f"{game.id} is a game of simultaneous moves"
            if wanted > len(cores) and not config.ponder and config.cores_per_match <= len(cores):
                notes.append(
                    f"{game.id}: {have}, too few to give each of its {seats} seats"
                    f" {config.cores_per_seat} of its own: they share {config.cores_per_match}"
                )
                wanted, key = config.cores_per_match, "cores_per_match"
            elif wanted > len(cores):
                raise ConfigError(
                    f"{config.path}: cores_per_seat: {config.cores_per_seat} cores for each of"
                    f" the {seats} seats of a match ({why}), but {have}"
                )
        if wanted > len(cores):
            raise ConfigError(f"{config.path}: {key}: {wanted} cores for each match, but {have}")
        if key == "cores_per_seat":
            per_game[game.id], per_seat[game.id] = config.cores_per_seat, seats
        else:
            per_game[game.id] = wanted
    return CorePlan(per_game, per_seat, len(_url_players(config)), tuple(notes))


def _url_players(config: TournamentConfig) -> set[str]:
    """The players of the tournament reached at a URL: their seats take no cores here."""
    return {entrant.name for entrant in config.players if entrant.spec.kind is PlayerKind.HTTP}


def programs_of(config: TournamentConfig, match: ScheduledMatch) -> list[int]:
    """The seats of `match`, by role index, that programs play here: not the referee's
    `random`, nor a URL player's."""
    urls = _url_players(config)
    return [
        index
        for index, (role, name) in enumerate(zip(match.game.roles, match.players, strict=True))
        if not is_chance(role) and name not in urls
    ]


def _shares(
    config: TournamentConfig,
    match: ScheduledMatch,
    cores: frozenset[int] | None,
    placed: Mapping[str, frozenset[int] | None],
) -> dict[str, frozenset[int] | None]:
    """The cores of each role's processes: all of the match's, or a share of its own where
    seats think at once and the match has a core for each; a role whose process is `placed`
    on one of the shares keeps it (moving a process's cores costs the kernel dearly, and
    players swap seats from one round to the next)."""
    roles = match.game.roles
    seats = [roles[index] for index in programs_of(config, match)]
    if cores is None or not config.seats_apart(match.game) or not 0 < len(seats) <= len(cores):
        return dict.fromkeys(roles, cores)
    parts = [frozenset(part) for part in split_cores(sorted(cores), len(seats))]
    kept = {role: placed[role] for role in seats if placed.get(role) in parts}
    if len(set(kept.values())) < len(kept):
        kept = {}  # two processes on the same share: dealt out afresh
    left = iter(part for part in parts if part not in kept.values())
    return dict.fromkeys(roles, None) | {role: kept.get(role) or next(left) for role in seats}


async def _absent(config: TournamentConfig, name: str, reason: str) -> Player:
    spec = next(entrant.spec for entrant in config.players if entrant.name == name)
    return AbsentPlayer(spec, reason)
