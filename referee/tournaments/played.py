"""What a tournament keeps of a match once it is played, and what its standings read of one.

A transcript holds every step of its match: tens of kilobytes, where the standings, a
Swiss's next pairing and a knockout's next tie need a few facts (who sat where, the goals,
the faults). A long run keeps those facts (`MatchResult`, a few hundred bytes, the names
shared with every other match of the same players) or only the counts made of them
(`standings.Tally`), never the transcripts, which stay on the disk. Whatever reads a match
for its result takes either a transcript or a `MatchResult` (`Played`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from referee.records.transcript import Fault


class PlayedSeat(Protocol):
    """A seat as standings read it: the role, its player, and where its log went."""

    @property
    def role(self) -> str: ...

    @property
    def player(self) -> str: ...

    @property
    def log(self) -> str | None: ...


class Played(Protocol):
    """A match as standings read it: a `Transcript`, or the `MatchResult` kept of one."""

    @property
    def match_id(self) -> str: ...

    @property
    def game(self) -> str: ...

    @property
    def seed(self) -> int: ...

    @property
    def started_at(self) -> str: ...

    @property
    def seats(self) -> Sequence[PlayedSeat]: ...

    @property
    def goals(self) -> Mapping[str, int] | None: ...

    @property
    def faults(self) -> Sequence[Fault]: ...

    @property
    def complete(self) -> bool: ...

    @property
    def settled(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ResultSeat:
    """A seat of a `MatchResult`."""

    role: str
    player: str
    log: str | None = None


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The facts of a played match that its standings need, and nothing of its steps.

    `scores` holds each seat's goal in seat order (None: the match has none); `logs` each
    seat's log, kept only where the match has a fault, the one thing a log is named for in
    the standings (a fault's first occurrence)."""

    match_id: str
    game: str
    seed: int
    started_at: str
    players: tuple[str, ...]
    roles: tuple[str, ...]
    scores: tuple[int, ...] | None
    complete: bool
    settled: bool
    faults: tuple[Fault, ...] = ()
    logs: tuple[str | None, ...] = ()

    @classmethod
    def of(cls, match: Played) -> MatchResult:
        """What is kept of `match`. Names, roles and games are interned: a run's thousands
        of matches share one string for each, as they share the players."""
        seats = match.seats
        goals = match.goals
        return cls(
            match.match_id,
            sys.intern(match.game),
            match.seed,
            match.started_at,
            tuple(sys.intern(seat.player) for seat in seats),
            tuple(sys.intern(seat.role) for seat in seats),
            None if goals is None else tuple(goals[seat.role] for seat in seats),
            match.complete,
            match.settled,
            tuple(match.faults),
            tuple(seat.log for seat in seats) if match.faults else (),
        )

    @property
    def seats(self) -> tuple[ResultSeat, ...]:
        logs = self.logs or (None,) * len(self.roles)
        return tuple(
            ResultSeat(role, player, log)
            for role, player, log in zip(self.roles, self.players, logs, strict=True)
        )

    @property
    def goals(self) -> dict[str, int] | None:
        if self.scores is None:
            return None
        return dict(zip(self.roles, self.scores, strict=True))
