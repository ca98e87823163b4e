"""The command line: the only place that parses arguments, prints, or exits.

Each command imports what it runs when it runs: the version, the help and shell completion
load the command line's own light modules only (tests/test_cli_start.py), never the arena,
the records or the presenters, nor the libraries behind them. The modules that define
commands do without `from __future__ import annotations`: Typer reads every command's
signature at each start, and annotations kept as strings would be evaluated there, twice a
command, a third of the start's own time."""

from referee.cli.app import app, main

__all__ = ["app", "main"]
