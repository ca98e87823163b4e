"""What every command that starts players does first."""

from __future__ import annotations

import typer

from referee.sandbox.isolation import machine_protections, remove_left_behind


def prepare_sandbox() -> None:
    """Before any player starts: clean up after killed referees; say what cannot be protected."""
    remove_left_behind()
    for reason in machine_protections().why_not:
        typer.echo(f"referee: warning: {reason}", err=True)
