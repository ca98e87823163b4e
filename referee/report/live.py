"""A report kept fresh while a tournament runs: rewritten in a process of its own, at a
lower priority, whenever matches have finished since the last time.

Not in the referee's process: verifying every transcript is CPU work that would delay the
event loop that times the players. The site's files are each written atomically, so a
browser reloading a page never reads one half written.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from referee.records.transcript import transcript_files

T = TypeVar("T")
# How often the results directory is looked at for new transcripts.
EVERY_S = 5.0
# The refresh yields the CPU to the referee and its players.
NICENESS = "10"


async def with_fresh_report(work: Awaitable[T], results: Path, out: Path, key: str) -> T:
    """Run `work`; meanwhile rewrite the report of `results` in `out` (transcripts signed
    with `key`) whenever its transcripts have changed, one rewrite at a time."""
    refresher = asyncio.create_task(_refresh(results, out, key))
    try:
        return await work
    finally:
        refresher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await refresher


async def _refresh(results: Path, out: Path, key: str) -> None:
    seen: tuple[tuple[str, int], ...] = ()
    while True:
        await asyncio.sleep(EVERY_S)
        now = _listing(results)
        if now == seen:
            continue
        seen = now
        command = [sys.executable, "-m", "referee", "report", str(results), "--out", str(out)]
        process = await asyncio.create_subprocess_exec(
            "nice",
            "-n",
            NICENESS,
            *command,
            "--key",
            key,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await process.wait()
        finally:
            if process.returncode is None:  # the tournament is over: the last report follows
                process.kill()
                await process.wait()


def _listing(results: Path) -> tuple[tuple[str, int], ...]:
    """The transcripts as they stand: each one's name and when it was last written."""
    listed = []
    for path in transcript_files(results):
        with contextlib.suppress(OSError):
            listed.append((path.name, path.stat().st_mtime_ns))
    return tuple(listed)
