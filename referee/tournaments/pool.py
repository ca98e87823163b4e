"""The player processes of a tournament: started when needed, reused between matches.

A player that plays one match per process costs a process start and end per match: with
instant players most of a match. So a fresh process waits ready for the next match (a
spare), started while the current one plays, and a finished one ends while the next match
plays. Both run in the idle scheduling class meanwhile: they take no CPU time a match's
players want. That needs a referee that can wake a spare (root); elsewhere a process starts
when its match does, and still ends in the background.

A reused process starts its next match clean: one whose answer came late (at the match's
last step, say) is let run, in the background, to write the late answers it owes, which
are dropped; one that does not write them in time is replaced. What it left in its pipe
besides is read and dropped as it is handed out, so a stale move can never answer `start`.
One that left anything in its private directory (HOME, TMPDIR) is replaced too: every
match starts with an empty one, and nothing a program wrote is taken from under it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from pathlib import Path

from referee.errors import PlayerStartError
from referee.players.base import AbsentPlayer, Player, PlayerKind
from referee.players.chance import CHANCE_NAME, ChancePlayer
from referee.players.http import HttpPlayer
from referee.players.process import ProgramPlayer
from referee.players.trace import Trace, trace_channel
from referee.sandbox.cores import available_cores
from referee.sandbox.proc import ProcessTable
from referee.sandbox.process import can_wake_idle
from referee.tournaments.config import Entrant


class PlayerPool:
    """The player processes of a tournament; an idle one is reused when its player allows it."""

    def __init__(
        self, entrants: Sequence[Entrant], trace: Trace | None = None, idle_most: int | None = None
    ) -> None:
        """A pool for `entrants`; it keeps at most `idle_most` idle processes (all, if None):
        past it, the one idle longest ends. A field of thousands, each player meeting others
        seldom, would otherwise keep a process of each, idle, for its next match."""
        self._entrants = {entrant.name: entrant for entrant in entrants}
        self._trace = trace
        self._idle: dict[str, list[ProgramPlayer]] = defaultdict(list)
        self._idle_most = idle_most
        # Every idle process, the one idle longest first, and whose it is.
        self._idle_order: OrderedDict[ProgramPlayer, str] = OrderedDict()
        self._spares: dict[str, asyncio.Task[ProgramPlayer | None]] = {}
        self._live: set[ProgramPlayer] = set()
        self._leaving: set[asyncio.Task[None]] = set()
        # Processes back from a match that still owe late answers, until they are idle or gone.
        self._settling: dict[str, set[asyncio.Task[None]]] = defaultdict(set)
        self._table = ProcessTable()

    def admit(self, entrants: Sequence[Entrant]) -> None:
        """Play on with `entrants` (a ladder's field, changed): the processes of a player no
        longer among them, or among them changed, end (in the background); the others are
        kept for the next matches, as if the pool had always had these entrants."""
        now = {entrant.name: entrant for entrant in entrants}
        for name, entrant in self._entrants.items():
            if now.get(name) == entrant:
                continue
            for player in self._idle.pop(name, []):
                self._idle_order.pop(player, None)
                self._leave(player)
            spare = self._spares.pop(name, None)
            if spare is not None:
                task = asyncio.create_task(self._drop(spare))
                self._leaving.add(task)
                task.add_done_callback(self._leaving.discard)
        self._entrants = now

    async def _drop(self, spare: asyncio.Task[ProgramPlayer | None]) -> None:
        """A spare no longer wanted: ended once started."""
        started = await self._alive(spare)
        if started is not None:
            self._leave(started)

    def _keeps(self, name: str, player: ProgramPlayer) -> bool:
        """Whether `player`, back from a match, may play `name`'s next: it is `name`'s as the
        pool has it now, and its player may be reused."""
        entrant = self._entrants.get(name)
        return entrant is not None and entrant.reuse and entrant.spec == player.spec

    async def acquire(
        self, name: str, log_path: Path, cores: frozenset[int] | None = None
    ) -> Player:
        """A started player for one match, on `cores` if given: an idle process, else a spare,
        else a fresh one; the referee itself for the `random` role of a GDL game (released
        like any player, never kept)."""
        if name == CHANCE_NAME:
            return ChancePlayer()
        idle = self._idle[name]
        while True:
            while idle:
                player = idle.pop()
                self._idle_order.pop(player, None)
                # What it wrote while idle is dropped now; a flood of it is no fault of the
                # match to come, whose player is a fresh process instead.
                if await player.connection.drained(0.0) and not player.left_files():
                    player.resume()
                    return _given(player, log_path, cores)
                self._leave(player)
            settling = self._settling[name]
            if not settling:
                break
            await asyncio.wait(set(settling), return_when=asyncio.FIRST_COMPLETED)
        spec = self._entrants[name].spec
        if spec.kind is PlayerKind.HTTP:
            return HttpPlayer(spec, trace_channel(self._trace, name))  # nothing to start or keep
        if can_wake_idle():
            # The next spare of a player never reused is started before this one is awaited:
            # another match's acquire meanwhile takes the new one, and no spare is left
            # without an owner. A reused one has a spare when its process left files.
            taken = self._spares.pop(name, None)
            if not self._entrants[name].reuse:
                self._spares[name] = asyncio.create_task(self._spare(name, log_path.parent, cores))
            spare = await self._alive(taken)
            if spare is not None:
                spare.set_idle(False)
                return _given(spare, log_path, cores)
        player = ProgramPlayer(
            spec, log_path, table=self._table, trace=trace_channel(self._trace, name), cores=cores
        )
        self._live.add(player)
        try:
            await player.start()
        except PlayerStartError as error:
            self._live.discard(player)
            return AbsentPlayer(spec, str(error))
        return player

    def cores_of(self, name: str) -> frozenset[int] | None:
        """The cores of the process `acquire` would hand out next for `name`, if an idle one
        is kept: a match that gives it the same ones spares moving it."""
        idle = self._idle.get(name)
        return idle[-1].cores if idle else None

    async def release(self, name: str, player: Player) -> None:
        """Take a player back after its match: kept for the next one, or ended (in the
        background: the match's result is written, and nothing waits for the end)."""
        if isinstance(player, ProgramPlayer):
            # The match's last lines (its `end`), held while it was paused, reach it now,
            # while its log is still this match's.
            player.connection.flush()
            if not player.alive or not self._keeps(name, player):
                self._leave(player)
            elif player.connection.owed:
                task = asyncio.create_task(self._settle(name, player))
                self._settling[name].add(task)
                task.add_done_callback(self._settling[name].discard)
            elif player.left_files():
                # Its next match needs a new process: started now, while others play (its
                # log's directory hidden from it, as from the one it replaces).
                self._leave(player)
                logs = player.log.path
                if can_wake_idle() and logs is not None and name not in self._spares:
                    spare = self._spare(name, logs.parent, player.cores)
                    self._spares[name] = asyncio.create_task(spare)
            else:
                self._keep_idle(name, player)

    async def _settle(self, name: str, player: ProgramPlayer) -> None:
        """A process back from its match still owing late answers: let it run (the match
        paused it) to write them, and keep it, paused, if it does; else replace it."""
        # Its cores may be another match's by now: where it can be woken, it runs meanwhile
        # only when nothing else wants them.
        # The wait (`ProgramPlayer.settled`) holds up no result, and a match only when it is
        # to play this very process.
        wakes = can_wake_idle()
        if wakes:
            player.set_idle(True)
        if await player.settled() and self._keeps(name, player):
            if wakes:
                player.set_idle(False)
            player.pause()
            self._keep_idle(name, player)
        else:
            self._leave(player)

    def _keep_idle(self, name: str, player: ProgramPlayer) -> None:
        """Keep `player` idle for `name`'s next match; past `idle_most`, the process idle
        longest ends."""
        self._idle[name].append(player)
        self._idle_order[player] = name
        while self._idle_most is not None and len(self._idle_order) > self._idle_most:
            oldest, whose = self._idle_order.popitem(last=False)
            self._idle[whose].remove(oldest)
            self._leave(oldest)

    async def _alive(self, task: asyncio.Task[ProgramPlayer | None] | None) -> ProgramPlayer | None:
        """The spare a task started, if there is one and it is alive."""
        spare = await task if task is not None else None
        if spare is not None and not spare.alive:
            self._leave(spare)  # a start that failed is said again by a fresh start
            return None
        return spare

    async def _spare(
        self, name: str, logs: Path, cores: frozenset[int] | None
    ) -> ProgramPlayer | None:
        """A process for `name`'s next match, started idle; on every core when matches are
        pinned, so that it has the cpuset its match's cores are written to."""
        spec = self._entrants[name].spec
        everywhere = frozenset(available_cores()) if cores is not None else None
        spare = ProgramPlayer(
            spec,
            None,
            table=self._table,
            trace=trace_channel(self._trace, name),
            cores=everywhere,
            logs=logs,
        )
        self._live.add(spare)
        try:
            await spare.start()
        except PlayerStartError:
            self._live.discard(spare)
            return None
        return spare

    def _leave(self, player: ProgramPlayer) -> None:
        """End a player in the background, idle meanwhile: it cannot slow the next match."""
        self._live.discard(player)
        player.set_idle(True)
        player.resume()  # a paused process could not take its `quit`
        task = asyncio.create_task(player.close())
        self._leaving.add(task)
        task.add_done_callback(self._leaving.discard)

    async def close(self) -> None:
        """End every process: idle, spare, leaving, or still in a match."""
        spares, self._spares = list(self._spares.values()), {}
        settling = [task for tasks in self._settling.values() for task in tasks]
        self._settling.clear()
        for task in (*spares, *settling):
            task.cancel()
        await asyncio.gather(*spares, *settling, return_exceptions=True)
        players, self._live = list(self._live), set()
        self._idle.clear()
        self._idle_order.clear()
        await asyncio.gather(
            *(player.close() for player in players), *self._leaving, return_exceptions=True
        )


def _given(player: ProgramPlayer, log_path: Path, cores: frozenset[int] | None) -> ProgramPlayer:
    """A started process made ready for its match: its log, and its cores if given."""
    player.switch_log(log_path)
    if cores is not None:
        player.pin(cores)
    return player
