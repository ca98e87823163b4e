"""The command line: the only place that parses arguments, prints, or exits."""

from referee.cli.app import app, main

__all__ = ["app", "main"]
