#!/usr/bin/env python3
"""A strong sample player: Monte Carlo tree search over the referee's own rule engines.

It follows the match through the `moves` lines with its own copy of the rules, and on `go`
searches until a safe share of its time is used. Simultaneous moves are searched with
decoupled UCT: at each node every role picks its move by its own UCB statistics, which for
a turn-taking game (the idle role has only `noop`) is plain UCT.
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
import time
from collections.abc import Hashable

from referee.errors import GameFault
from referee.games import Game, GdlGame, Move
from referee.protocol import READY, Go, Moves, Quit, Start, parse, start_game

EXPLORATION = 0.7
SAFETY_S = 0.03  # what answering and the pipes may cost, kept out of the search
# Searching for 75% of the time keeps the slowest answers under 80% of the clock.
SHARE = 0.75


class Node:
    """A state in the tree: each role's legal moves with visit counts and summed rewards."""

    __slots__ = ("children", "legal", "totals", "visits")

    def __init__(self, game: Game, state: Hashable) -> None:
        self.legal = [game.legal_moves(state, role) for role in range(len(game.roles))]
        self.visits = [dict.fromkeys(moves, 0) for moves in self.legal]
        self.totals = [dict.fromkeys(moves, 0.0) for moves in self.legal]
        self.children: dict[tuple[Move, ...], Node] = {}

    def select(self, role: int, rng: random.Random) -> Move:
        """The move a role tries next: an untried one, else the best by UCB1."""
        moves = self.legal[role]
        if len(moves) == 1:
            return moves[0]
        visits = self.visits[role]
        untried = [move for move in moves if not visits[move]]
        if untried:
            return rng.choice(untried)
        totals = self.totals[role]
        log_n = math.log(sum(visits.values()))
        return max(
            moves,
            key=lambda m: totals[m] / visits[m] + EXPLORATION * math.sqrt(log_n / visits[m]),
        )


def search(game: Game, state: Hashable, role: int, seconds: float, rng: random.Random) -> Move:
    """The most visited move of `role` after searching from `state` for about `seconds`.

    A state the rules cannot compute (a rulesheet's fault, or past the limits of its
    reasoner) ends the search: the best move so far is the answer, never a timeout.
    """
    root = Node(game, state)
    if len(root.legal[role]) == 1:
        return root.legal[role][0]
    deadline = time.monotonic() + seconds
    if isinstance(game, GdlGame):
        game.give_up_at(deadline)
    try:
        with contextlib.suppress(GameFault):
            while time.monotonic() < deadline:
                _iterate(game, root, state, rng)
    finally:
        if isinstance(game, GdlGame):
            game.give_up_at(None)
    visits = root.visits[role]
    return max(root.legal[role], key=lambda move: visits[move])


def _iterate(game: Game, root: Node, state: Hashable, rng: random.Random) -> None:
    """One descent of the tree from the root, a random playout, and its result backed up."""
    roles = range(len(game.roles))
    node, current, path = root, state, []
    while not game.is_terminal(current):
        joint = tuple(node.select(r, rng) for r in roles)
        path.append((node, joint))
        current = game.next_state(current, joint)
        child = node.children.get(joint)
        if child is None:
            if not game.is_terminal(current):
                node.children[joint] = Node(game, current)
            break
        node = child
    while not game.is_terminal(current):
        current = game.next_state(current, tuple(game.random_move(current, r, rng) for r in roles))
    goals = game.goals(current)
    for node, joint in path:
        for r in roles:
            node.visits[r][joint[r]] += 1
            node.totals[r][joint[r]] += goals[r] / 100


def _choose(
    game: Game, state: Hashable, role: int, seconds: float, go: Go, rng: random.Random
) -> str:
    """The searched move; where the rules failed on this state or an earlier one (None),
    any of the moves the line offers."""
    if state is not None:
        with contextlib.suppress(GameFault):
            return search(game, state, role, seconds, rng)
    return rng.choice(go.legal)


def main() -> None:
    rng = random.Random()
    game: Game | None = None
    state: Hashable = None
    role = 0
    for line in sys.stdin:
        message = parse(line)
        if isinstance(message, Start):
            # A GDL game's rules come on the line: the package's own reasoner plays them.
            game = start_game(message)
            role = game.role_index(message.role)
            state = game.initial_state()
            print(READY, flush=True)
        elif isinstance(message, Go) and game is not None:
            seconds = max(0.005, message.ms / 1000 * SHARE - SAFETY_S)
            print(_choose(game, state, role, seconds, message, rng), flush=True)
        elif isinstance(message, Moves) and game is not None:
            joint = tuple(game.parse_move(m) for m in message.joint)
            # A state the rules fail on is the referee's to judge; the next go says.
            try:
                state = None if state is None else game.next_state(state, joint)
            except GameFault:
                state = None
        elif isinstance(message, Quit):
            return


if __name__ == "__main__":
    main()
