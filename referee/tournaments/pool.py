"""The player processes of a tournament: started when needed, reused between matches."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from referee.errors import PlayerStartError
from referee.players.base import AbsentPlayer, Player, PlayerKind
from referee.players.chance import CHANCE_NAME, ChancePlayer
from referee.players.http import HttpPlayer
from referee.players.process import ProgramPlayer
from referee.players.trace import Trace, trace_channel
from referee.sandbox.proc import ProcessTable
from referee.tournaments.config import Entrant


class PlayerPool:
    """The player processes of a tournament; an idle one is reused when its player allows it."""

    def __init__(self, entrants: Sequence[Entrant], trace: Trace | None = None) -> None:
        self._entrants = {entrant.name: entrant for entrant in entrants}
        self._trace = trace
        self._idle: dict[str, list[ProgramPlayer]] = defaultdict(list)
        self._live: set[ProgramPlayer] = set()
        self._table = ProcessTable()

    async def acquire(
        self, name: str, log_path: Path, cores: frozenset[int] | None = None
    ) -> Player:
        """A started player for one match, on `cores` if given: an idle process, else a fresh
        one; the referee itself for the `random` role of a GDL game (released like any player,
        never kept)."""
        if name == CHANCE_NAME:
            return ChancePlayer()
        idle = self._idle[name]
        while idle:
            player = idle.pop()
            if player.alive:
                player.switch_log(log_path)
                if cores is not None:
                    player.pin(cores)
                return player
            await self._close(player)
        spec = self._entrants[name].spec
        channel = trace_channel(self._trace, name)
        if spec.kind is PlayerKind.HTTP:
            return HttpPlayer(spec, channel)  # a server: nothing to start or keep
        player = ProgramPlayer(spec, log_path, table=self._table, trace=channel, cores=cores)
        self._live.add(player)
        try:
            await player.start()
        except PlayerStartError as error:
            self._live.discard(player)
            return AbsentPlayer(spec, str(error))
        return player

    async def release(self, name: str, player: Player) -> None:
        """Take a player back after its match: kept for the next one, or ended."""
        if isinstance(player, ProgramPlayer):
            if player.alive and self._entrants[name].reuse:
                self._idle[name].append(player)
            else:
                await self._close(player)

    async def _close(self, player: ProgramPlayer) -> None:
        self._live.discard(player)
        await player.close()

    async def close(self) -> None:
        """End every process, idle or still in a match."""
        players, self._live = list(self._live), set()
        self._idle.clear()
        await asyncio.gather(*(player.close() for player in players), return_exceptions=True)
