"""What every command that starts players does first."""

from __future__ import annotations

from collections.abc import Iterable

import typer

from referee.players.base import PlayerKind, PlayerSpec
from referee.sandbox.isolation import inherited_limits, machine_protections, remove_left_behind


def prepare_sandbox(seats: Iterable[PlayerSpec] = ()) -> None:
    """Before any player starts: clean up after killed referees; say what cannot be protected,
    and which limit the referee was started under lowers the programs' among `seats` (a
    LimitTooLowError where one leaves them too little)."""
    programs = [seat.limits for seat in seats if seat.kind is PlayerKind.PROGRAM]
    notes = inherited_limits(programs)
    remove_left_behind()
    for reason in machine_protections().why_not:
        typer.echo(f"referee: warning: {reason}", err=True)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
