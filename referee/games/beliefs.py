"""What a role of a game of imperfect information may believe: the states that agree with
all it was told, each with its chance of being the one the match is in.

A search player samples its playouts' starts from them (determinization); `serve` takes the
legal moves a GGP manager's player has from them, since a GDL-II manager tells it only its
own move and percepts. The other roles are taken to choose uniformly, as chance does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence

from referee.games.base import Game, Move

# The states kept: the likeliest, once there are more.
BELIEFS = 512
# The states a role may be in, each with its chance.
Beliefs = dict[Hashable, float]


def narrowed(
    game: Game, beliefs: Beliefs, role: int, move: str, percepts: Sequence[str]
) -> Beliefs:
    """The states that may follow `beliefs` given what `role` was told of a step (its own
    `move`, and its `percepts`, the same as the rules give it there), each with its chance:
    the others' moves taken as uniform, as chance's are; the likeliest BELIEFS of them."""
    found: dict[Hashable, float] = {}
    told = tuple(sorted(percepts))
    own = game.parse_move(move)
    for state, chance in beliefs.items():
        if own not in game.legal_moves(state, role):
            continue
        choices = [
            (own,) if r == role else game.legal_moves(state, r) for r in range(len(game.roles))
        ]
        each = chance / math.prod(len(moves) for moves in choices)
        for joint in itertools.product(*choices):
            if tuple(sorted(game.percepts(state, joint)[role])) == told:
                following = game.next_state(state, joint)
                found[following] = found.get(following, 0.0) + each
    kept = sorted(found, key=found.__getitem__, reverse=True)[:BELIEFS]
    total = sum(found[state] for state in kept)
    return {state: found[state] / total for state in kept}


def where_over(game: Game, beliefs: Beliefs, over: bool) -> Beliefs:
    """The states of `beliefs` where the game is `over` (or not), their chances made to add
    up to 1 again: what a role learns when it is asked to move (the game goes on) or told
    the end. Empty when none is."""
    kept = {state: chance for state, chance in beliefs.items() if game.is_terminal(state) == over}
    total = sum(kept.values())
    return {state: chance / total for state, chance in kept.items()} if total else {}


def offered(game: Game, beliefs: Beliefs, role: int) -> tuple[Move, ...]:
    """The moves legal for `role` in every state it may be in, in the rules' order: in a
    game whose legal moves depend only on what the role knows, its legal moves."""
    states = iter(beliefs)
    first = next(states, None)
    if first is None:
        return ()
    moves = game.legal_moves(first, role)
    for state in states:
        legal = set(game.legal_moves(state, role))
        moves = tuple(move for move in moves if move in legal)
    return moves


def likeliest(beliefs: Beliefs) -> Hashable:
    """The state it is likeliest to be in."""
    return max(beliefs, key=beliefs.__getitem__)
