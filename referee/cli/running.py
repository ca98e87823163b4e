"""A command's long work: run to its end or stopped by Ctrl-C or SIGTERM, its progress bar,
its trace file."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import typer

from referee.cli import present
from referee.cli.failures import EXIT_INTERRUPTED, say_error
from referee.errors import ConfigError
from referee.pauses import short_pauses
from referee.players.trace import Trace
from referee.records.files import check_writable

T = TypeVar("T")


def run_interruptible(
    work: Coroutine[Any, Any, T], interrupted: str, stop_progress: Callable[[], None]
) -> T:
    """Run `work` to its end; Ctrl-C or SIGTERM cancel it (players ended, records written),
    then the progress is stopped, `interrupted` is said, and the exit code is 130."""
    try:
        with short_pauses():
            return asyncio.run(_stopped_by_sigterm(work))
    except (KeyboardInterrupt, asyncio.CancelledError):
        stop_progress()
        say_error(interrupted)
        raise typer.Exit(EXIT_INTERRUPTED) from None


async def _stopped_by_sigterm(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; SIGTERM cancels it as Ctrl-C does."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


@contextlib.contextmanager
def counting(what: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of `what` on standard error, gone when done, and what moves it:
    a call with how many are done of how many."""
    progress = present.progress_bar(transient=True)
    task = progress.add_task(what, total=None)
    with progress:
        yield lambda done, total: progress.update(task, completed=done, total=total)


def open_trace(stack: contextlib.ExitStack, path: Path | None) -> Trace | None:
    """The trace file `--trace` asks for, closed with `stack`; None without one."""
    if path is None:
        return None
    check_writable(path, "a trace file")
    try:
        trace = Trace(path)
    except OSError as error:
        raise ConfigError(f"--trace {path}: cannot write: {error.strerror}") from None
    stack.callback(trace.close)
    return trace
