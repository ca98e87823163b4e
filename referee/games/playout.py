"""Games between uniformly random movers: the demo, the benchmark and property tests."""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterator

from referee.games import Game, JointMove


def random_steps(game: Game, rng: random.Random) -> Iterator[tuple[JointMove, Hashable]]:
    """Play from the initial state to the end, yielding each joint move and the state after it."""
    state = game.initial_state()
    roles = range(len(game.roles))
    while not game.is_terminal(state):
        joint = tuple(game.random_move(state, role, rng) for role in roles)
        state = game.next_state(state, joint)
        yield joint, state
