"""How a command fails: a RefereeError becomes one line on standard error and an exit code,
never a traceback. Shared by every command module."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import typer

from referee.errors import RefereeError
from referee.sandbox.limits import own_limit

F = TypeVar("F", bound=Callable[..., None])

# Exit codes: 0 success, 1 a check failed (mismatch), 2 bad input, 130 interrupted.
EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 1, 2, 130


def user_errors(command: F) -> F:
    """Report a RefereeError as one line on standard error with exit code 2, not a traceback;
    and the referee's own failure for a limit it was started under, with exit code 1."""

    @functools.wraps(command)
    def run(*args: object, **kwargs: object) -> None:
        try:
            command(*args, **kwargs)
        except RefereeError as error:
            say_error(str(error))
            raise typer.Exit(EXIT_BAD_INPUT) from None
        except (MemoryError, OSError, RuntimeError, ExceptionGroup) as error:
            line = own_limit(error)
            if line is None:
                raise
            say_error(line)
            raise typer.Exit(EXIT_FAILED) from None

    return run  # type: ignore[return-value]


def say_error(message: str) -> None:
    """An error on standard error, a line for each of its lines (a config's several
    mistakes), each marked as the referee's."""
    for line in message.splitlines() or [""]:
        typer.echo(f"referee: error: {line}", err=True)
