#!/usr/bin/env python3
"""A strong sample player: Monte Carlo tree search over the referee's own rule engines.

It follows the match through the `moves` lines with its own copy of the rules, and on `go`
searches until a safe share of its time is used. Simultaneous moves are searched with
decoupled UCT: at each node every role picks its move by its own UCB statistics, which for
a turn-taking game (the idle role has only `noop`) is plain UCT.

In a game of imperfect information it is told only its own move and percepts (`sees`): it
keeps the states that agree with all it was told, each with its chance of being the one
(`referee.games.beliefs`), and searches by determinization: each playout starts from one
of them, drawn by its chance, its own first move chosen by UCB1 over all the playouts.

The rules are loaded, followed and searched in a thread of their own, and the thread that
reads the referee's lines answers by its deadlines whatever they cost: a heavy GDL game can
take longer to load than the start clock and longer to compute one state than the play
clock. It says `ready` when the start clock runs short, loaded or not, and answers `go`
with the best move found so far, or, while the rules are not yet known, the first move the
line offers.
"""

from __future__ import annotations

import contextlib
import math
import queue
import random
import resource
import sys
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from referee.errors import GameFault, RefereeError
from referee.games import Game, GdlGame, Move
from referee.games.beliefs import Beliefs, narrowed, where_over
from referee.protocol import READY, Go, Moves, Quit, Sees, Start, parse, start_game

EXPLORATION = 0.7
SAFETY_S = 0.03  # what answering and the pipes may cost, kept out of the search
# Searching for 75% of the time keeps the slowest answers under 80% of the clock.
SHARE = 0.75
# When the rules have not answered, what is known is answered at this share of the clock.
LAST_SHARE = 0.9
# The address space of each of this player's processes, its reasoners' children among them:
# a seat's memory (1 GiB by default) counts them together, and a game too big to ground
# within this is played one state at a time instead of costing the seat.
MEMORY_BYTES = 768 << 20


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
        return upper_bound(self.legal[role], self.visits[role], self.totals[role], rng)

    def best(self, role: int) -> Move | None:
        """The role's most visited move so far; None in a terminal state."""
        visits = self.visits[role]
        return max(self.legal[role], key=lambda move: visits[move], default=None)


def upper_bound(
    moves: Sequence[Move], visits: dict[Move, int], totals: dict[Move, float], rng: random.Random
) -> Move:
    """The move to try next: an untried one, else the best by UCB1."""
    if len(moves) == 1:
        return moves[0]
    untried = [move for move in moves if not visits[move]]
    if untried:
        return rng.choice(untried)
    log_n = math.log(sum(visits.values()))
    return max(
        moves,
        key=lambda m: totals[m] / visits[m] + EXPLORATION * math.sqrt(log_n / visits[m]),
    )


@dataclass
class Answer:
    """One `go` being searched: the root of its tree once there is one, the move once found."""

    search_until: float
    give_up_at: float
    root: Node | None = None
    move: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def search(
    game: Game, state: Hashable, role: int, answer: Answer, rng: random.Random
) -> Move | None:
    """The most visited move of `role` after searching from `state` until
    `answer.search_until`; None when the rules could not give even the root.

    A question of the rules still unanswered at `answer.give_up_at`, or a state the rules
    cannot compute (a rulesheet's fault, or past the limits of its reasoner), ends the search:
    the best move so far is the answer, never a timeout. The root's own state is computed
    whatever it takes, the answer given meanwhile by the caller: the match is followed
    through it, and a heavy game's state given up at every move would be computed again
    by the next `moves`, beside the referee computing it too.
    """
    with contextlib.suppress(GameFault):
        answer.root = Node(game, state)
    if answer.root is None or len(answer.root.legal[role]) < 2:
        return None if answer.root is None else answer.root.best(role)
    if isinstance(game, GdlGame):
        game.give_up_at(answer.give_up_at)
    try:
        with contextlib.suppress(GameFault):
            while time.monotonic() < answer.search_until:
                _iterate(game, answer.root, state, rng)
    finally:
        if isinstance(game, GdlGame):
            game.give_up_at(None)
    return answer.root.best(role)


def search_unseen(
    game: Game,
    beliefs: Beliefs,
    role: int,
    legal: Sequence[Move],
    answer: Answer,
    rng: random.Random,
) -> Move | None:
    """The move of `role` among `legal` that did best in random playouts, each from one of
    the states it may be in, until `answer.search_until`; None without a playout."""
    if len(legal) < 2 or not beliefs:
        return legal[0] if len(legal) == 1 else None
    visits = dict.fromkeys(legal, 0)
    totals = dict.fromkeys(legal, 0.0)
    roles = range(len(game.roles))
    states, chances = list(beliefs), list(beliefs.values())
    if isinstance(game, GdlGame):
        game.give_up_at(answer.give_up_at)
    try:
        with contextlib.suppress(GameFault):
            while time.monotonic() < answer.search_until:
                (state,) = rng.choices(states, chances)
                move = upper_bound(legal, visits, totals, rng)
                if move not in game.legal_moves(state, role):
                    continue  # a state its `go` line says it is not in
                current = game.next_state(
                    state,
                    tuple(move if r == role else game.random_move(state, r, rng) for r in roles),
                )
                while not game.is_terminal(current):
                    joint = tuple(game.random_move(current, r, rng) for r in roles)
                    current = game.next_state(current, joint)
                visits[move] += 1
                totals[move] += game.goals(current)[role] / 100
    finally:
        if isinstance(game, GdlGame):
            game.give_up_at(None)
    return max(legal, key=lambda move: visits[move]) if any(visits.values()) else None


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


class Mind:
    """The game, the state of the match and the search, worked on in a thread of their own,
    one task at a time in the order the referee's lines came; the caller's thread only waits
    for them as long as its clock allows."""

    def __init__(self, rng: random.Random, load: Callable[[Start], Game] = start_game) -> None:
        self._rng = rng
        self._load = load
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        # Set, read and changed by the tasks alone, in the mind's thread.
        self._game: Game | None = None
        self._state: Hashable = None
        # In a game of imperfect information, the states it may be in instead.
        self._beliefs: Beliefs = {}
        self._role = 0
        threading.Thread(target=self._work, daemon=True).start()

    def start(self, message: Start) -> None:
        """Load the game, waiting for it only while the start clock allows."""
        received = time.monotonic()
        loaded = threading.Event()
        self._tasks.put(lambda: self._begin(message, loaded))
        ready_by = received + message.start_ms / 1000 * SHARE - SAFETY_S
        loaded.wait(max(0.0, ready_by - time.monotonic()))

    def go(self, message: Go) -> str:
        """The move to answer: the search's, or when it is late the best move so far, or the
        first legal move when the search has no tree yet."""
        received = time.monotonic()
        seconds = message.ms / 1000
        answer = Answer(
            search_until=received + max(0.005, seconds * SHARE - SAFETY_S),
            give_up_at=received + max(0.005, seconds * LAST_SHARE - SAFETY_S),
        )
        self._tasks.put(lambda: self._search(answer, message.legal))
        answer.done.wait(max(0.0, answer.give_up_at - time.monotonic()))
        move = answer.move
        if move is None and answer.root is not None:
            move = answer.root.best(self._role)
        return move if move in message.legal else message.legal[0]

    def moves(self, message: Moves) -> None:
        """Follow the match: the state after the joint move, once the earlier tasks are done."""
        self._tasks.put(lambda: self._advance(message.joint))

    def sees(self, message: Sees) -> None:
        """Follow a match it sees only part of: the states that agree with what it was told."""
        self._tasks.put(lambda: self._observe(message))

    def _work(self) -> None:
        while True:
            self._tasks.get()()

    def _begin(self, message: Start, loaded: threading.Event) -> None:
        self._game = self._state = None
        self._beliefs = {}
        try:
            game = self._load(message)
            self._role = game.role_index(message.role)
            self._state = game.initial_state()
            self._beliefs = {self._state: 1.0} if game.imperfect else {}
            self._game = game
        except (RefereeError, MemoryError):
            pass  # a game it cannot load is played with the moves the `go` lines offer
        finally:
            loaded.set()

    def _advance(self, texts: Sequence[str]) -> None:
        game, state = self._game, self._state
        if game is None or state is None:
            return
        # A state the rules fail on is the referee's to judge; the next go says.
        try:
            self._state = game.next_state(state, tuple(game.parse_move(m) for m in texts))
        except (GameFault, ValueError):
            self._state = None

    def _observe(self, told: Sees) -> None:
        game = self._game
        if game is None or not self._beliefs:
            return
        # Rules that fail are the referee's to judge; with no state left it plays at random.
        try:
            self._beliefs = narrowed(game, self._beliefs, self._role, told.move, told.percepts)
        except (GameFault, ValueError):
            self._beliefs = {}

    def _search(self, answer: Answer, legal: Sequence[str]) -> None:
        game, state = self._game, self._state
        try:
            if game is None or time.monotonic() >= answer.give_up_at:
                return
            if game.imperfect:
                # Asked to move, it learns that the game goes on.
                self._beliefs = where_over(game, self._beliefs, False)
                offered = [Move(move) for move in legal]
                answer.move = search_unseen(
                    game, self._beliefs, self._role, offered, answer, self._rng
                ) or self._rng.choice(offered)
            elif state is not None:
                answer.move = search(game, state, self._role, answer, self._rng)
        finally:
            answer.done.set()


def main() -> None:
    # Within the seat's memory, whatever the game: see MEMORY_BYTES.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limits = [limit for limit in (MEMORY_BYTES, soft, hard) if limit != resource.RLIM_INFINITY]
    resource.setrlimit(resource.RLIMIT_AS, (min(limits), hard))
    mind = Mind(random.Random())
    for line in sys.stdin:
        message = parse(line)
        if isinstance(message, Start):
            mind.start(message)
            print(READY, flush=True)
        elif isinstance(message, Go):
            print(mind.go(message), flush=True)
        elif isinstance(message, Moves):
            mind.moves(message)
        elif isinstance(message, Sees):
            mind.sees(message)
        elif isinstance(message, Quit):
            return


if __name__ == "__main__":
    main()
