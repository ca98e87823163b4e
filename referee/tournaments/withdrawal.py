"""Withdrawal: a player whose program failed to start in `withdraw_after` matches in a row is
no longer tried; each match it has left is a forfeit whose fault says so.

That fault's detail is all that records the withdrawal (the transcripts are the one source
of truth): the runner writes it, a resumed run and the standings read it, here and only here.
"""

from __future__ import annotations

from collections.abc import Iterable

from referee.records.transcript import Fault
from referee.tournaments.played import Played

WITHDRAWN = "withdrawn"
_PREFIX = f"{WITHDRAWN}: "


def withdrawal(failures: int) -> str:
    """The reason a withdrawn player's seat fails, as its matches' faults record it."""
    return f"{_PREFIX}its program failed to start in {failures} matches in a row"


def is_withdrawal(fault: Fault) -> bool:
    """Whether a fault is the forfeit of a withdrawn player, not a start that was tried."""
    return fault.step == 0 and fault.detail.startswith(_PREFIX)


def withdrawn_players(matches: Iterable[Played]) -> set[str]:
    """The players the `matches` record as withdrawn."""
    return {
        seat.player
        for match in matches
        for seat in match.seats
        if any(f.role == seat.role and is_withdrawal(f) for f in match.faults)
    }
