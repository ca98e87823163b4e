"""The one interface every game implements, and the canonical text of moves.

A move *is* its canonical GDL text (`noop`, `(place e 5)`): the same string goes on the
wire, into transcripts and into tests, so there is nothing to convert and nothing to
get out of step. States are immutable and hashable; `next_state` returns a new one.
"""

from __future__ import annotations

import contextlib
import random
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence
from typing import ClassVar, Generic, NewType, TypeVar

from referee.errors import IllegalMoveError, MoveParseError, UnknownRoleError
from referee.games.boards.picture import Board

Move = NewType("Move", str)
JointMove = tuple[Move, ...]
Goals = tuple[int, ...]

NOOP = Move("noop")
# GDL's role of chance, as the GGP managers read it: the referee plays it, uniformly.
CHANCE_ROLE = "random"
# The longest move a player can send: a line of the protocol holds 64 KiB
# (protocol.LINE_LIMIT, which the protocol layer owns and a test holds equal).
MOVE_LIMIT = 64 * 1024
# A move's tokens: each parenthesis, and each run of what is neither one nor a space.
_TOKEN = re.compile(r"[()]|[^\s()]+")

S = TypeVar("S", bound=Hashable)


def format_move(name: str, *args: object) -> Move:
    """The canonical text of a move: an atom, or a flat list `(name arg ...)`."""
    if not args:
        return Move(name)
    return Move(f"({name} {' '.join(str(arg) for arg in args)})")


def with_outer_parentheses(text: str) -> str:
    """A move's text with the outer parentheses a player may leave out: `mark 1 2` is
    `(mark 1 2)`. Text of several terms is the list of them; one term (an atom, a balanced
    list), or text that is not balanced, is left as it is, for the move's parser to judge."""
    depth = terms = 0
    for token in _TOKEN.findall(text):
        if depth == 0 and token != ")":
            terms += 1
        depth += {"(": 1, ")": -1}.get(token, 0)
        if depth < 0:
            return text
    return f"({text.strip()})" if terms > 1 and depth == 0 else text


def canonical_spelling(text: str) -> str:
    """Rewrite an equivalent spelling (any case, extra spaces, no outer parentheses) canonically."""
    body = with_outer_parentheses(text.strip().lower())
    listed = body.startswith("(") and body.endswith(")")
    tokens = (body[1:-1] if listed else body).split()
    if len(tokens) == 1 and not listed:
        return tokens[0]
    # A token with a parenthesis left in it is a nested or unbalanced term: no move has one.
    return "(" + " ".join(tokens) + ")"


class Game(ABC, Generic[S]):
    """A two-or-more-role simultaneous-move game; turn-taking games give the idle role `noop`."""

    # Class attributes of the built-in games; a GDL game sets them from its rulesheet.
    id: str
    roles: tuple[str, ...]
    description: str
    rules: str
    example_move: Move
    # What each role's pieces look like on the board, in role order, and the other symbols.
    marks: ClassVar[tuple[str, ...]]
    legend: ClassVar[str] = ". empty"
    # The longest a match can last by the rules, in steps: what bounds a match's time.
    max_steps: ClassVar[int]
    # Whether several roles choose their moves at the same step: their seats think at once, so
    # none is paused while another is asked, and each has cores of its own.
    simultaneous: bool = False
    # Whether a role is told only its own percepts after a step, never the others' moves
    # (GDL-II's `sees`: a game of imperfect information).
    imperfect: bool = False
    # Whether computing a state may take long (a GDL game reasoned about one state at a time
    # in a child process): code on an event loop computes its states off the loop.
    slow_states: bool = False

    def __init__(self) -> None:
        self._moves: dict[str, Move] = {move: move for move in self.all_moves()}

    @abstractmethod
    def all_moves(self) -> Iterable[Move]:
        """Every move that some role may play in some state."""

    @abstractmethod
    def initial_state(self) -> S:
        """The state before the first step."""

    @abstractmethod
    def legal_moves(self, state: S, role: int) -> tuple[Move, ...]:
        """The legal moves of the role with this index; empty in a terminal state."""

    def next_state(self, state: S, joint: Sequence[Move]) -> S:
        """The state after every role plays its move of `joint` (role order); checks legality.

        IllegalMoveError for a joint move of the wrong size, one played after the end, or one
        the rules do not allow.
        """
        if len(joint) != len(self.roles):
            raise IllegalMoveError(
                f"{self.id}: a joint move has {len(self.roles)} moves, got {len(joint)}"
            )
        if self.is_terminal(state):
            raise self.game_over()
        return self._next_state(state, joint)

    @abstractmethod
    def _next_state(self, state: S, joint: Sequence[Move]) -> S:
        """The state after a joint move of the right size in a state that is not terminal."""

    def percepts(self, state: S, joint: Sequence[Move]) -> tuple[tuple[str, ...], ...]:
        """Per role, in role order, what it perceives when `joint` is played in `state`,
        each percept's canonical text, sorted: in a game of imperfect information, all a
        role learns of the step beyond its own move. None in a game of perfect information,
        where every role is told every move. Checks legality as next_state does."""
        self.next_state(state, joint)
        return tuple(() for _ in self.roles)

    @abstractmethod
    def is_terminal(self, state: S) -> bool:
        """Whether the game is over."""

    @abstractmethod
    def goals(self, state: S) -> Goals:
        """Each role's goal value in 0..100, in role order (meaningful in terminal states)."""

    @abstractmethod
    def render(self, state: S) -> str:
        """The state as text for a terminal."""

    def boards(self, state: S) -> list[Board]:
        """The state's boards as data, for a picture; none where the game has no board of
        its own (a GDL game: its state is its facts)."""
        return []

    def other_facts(self, state: S) -> list[str]:
        """What a state holds beyond its boards, as facts a reader can follow (a GDL game's
        facts that are no cells: whose turn, the scores); none where the boards say it all."""
        return []

    def close(self) -> None:
        """Let go of what computing states holds (a GDL reasoner's child process); asked
        again, the game takes it up again."""

    def asked(self, given_up: threading.Event) -> contextlib.AbstractContextManager[None]:
        """Around a query of the rules computed in a thread (`slow_states`): the query is
        given up once `given_up` is set and the game interrupted (`interrupt`), its question
        under way and every later one raising GameFault at once."""
        return contextlib.nullcontext()

    def interrupt(self) -> None:
        """From any thread: a query given up (`asked`) that is waiting for its answer ends."""

    def random_move(self, state: S, role: int, rng: random.Random) -> Move:
        """A uniformly random legal move of a role; games override it with a faster equivalent."""
        moves = self.legal_moves(state, role)
        if not moves:
            raise self.game_over()
        return rng.choice(moves)

    def parse_move(self, text: str) -> Move:
        """The move that `text` spells, or MoveParseError naming the game and the text."""
        move = self._moves.get(canonical_spelling(text))
        if move is None:
            raise MoveParseError(f"{self.id}: {text!r} is not a move of this game")
        return move

    def role_index(self, role: str) -> int:
        """The index of a role name in the canonical role order, in any case: GDL's names
        are, and a rulesheet may spell a role `xPlayer`."""
        for index, name in enumerate(self.roles):
            if name.lower() == role.lower():
                return index
        raise UnknownRoleError(f"{self.id} has no role {role!r} (roles: {', '.join(self.roles)})")

    def illegal(self, role: int, move: str, why: str) -> IllegalMoveError:
        """The error for `move` of a role that the rules do not allow in this state."""
        return IllegalMoveError(f"{self.id}: {self.roles[role]} cannot play {move!r}: {why}")

    def controlled_move(self, joint: Sequence[Move], mover: int) -> Move:
        """The move of the role in control, after checking that every other role plays noop.

        The one helper of turn-taking: a game where one role moves at a time calls it first.
        """
        for role, move in enumerate(joint):
            if role != mover and move != NOOP:
                raise self.illegal(role, move, "it is not in control: only noop")
        return joint[mover]

    def game_over(self) -> IllegalMoveError:
        """The error for a move asked of, or played in, a terminal state."""
        return IllegalMoveError(f"{self.id}: the game is over; no move can be played")

    def __repr__(self) -> str:
        return f"<game {self.id}>"
