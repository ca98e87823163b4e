"""Questions of a game's rules asked by code on an event loop.

The rules know nothing of event loops. A game whose states may take long to compute
(`Game.slow_states`, a GDL rulesheet computed one state at a time) is asked in a thread, so
that nothing else on the loop (another match's clock) waits for it; a match cancelled
meanwhile (Ctrl-C, SIGTERM) gives its query up rather than wait out a state's deadline.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from referee.games.base import Game

R = TypeVar("R")


async def computed(game: Game[Any], query: Callable[..., R], *args: Any) -> R:
    """`query(*args)` of `game`'s rules: in a thread when the game's states may take long."""
    if not game.slow_states:
        return query(*args)
    given_up = threading.Event()

    def ask() -> R:
        with game.asked(given_up):
            return query(*args)

    try:
        return await asyncio.to_thread(ask)
    except asyncio.CancelledError:
        # The thread cannot be cancelled, and a program ending waits for it: each of the
        # query's questions, the one under way and any it would ask next, ends at once.
        given_up.set()
        game.interrupt()
        raise
