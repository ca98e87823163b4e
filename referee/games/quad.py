"""quad: a small Quod on a 7x7 board without its four corners (45 cells).

Cell (rR, cC), row R and column C in 1..7, is bit 7*(R-1) + (C-1); the four corner
bits are never used:

        c1 c2 c3 c4 c5 c6 c7
    r1      .  .  .  .  .          x and o: the roles' quads
    r2   .  .  .  .  .  .  .       W: a white blocker
    ...
    r7      .  .  .  .  .
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move
from referee.games.boards.bitboard import blank_bits, random_blank
from referee.games.boards.picture import EMPTY, NO_CELL, Board, Key

X, O = 0, 1
SIZE = 7
QUADS, WHITES = 12, 5
_CORNERS = {(1, 1), (1, SIZE), (SIZE, 1), (SIZE, SIZE)}
CELLS = tuple(
    (r, c) for r in range(1, SIZE + 1) for c in range(1, SIZE + 1) if (r, c) not in _CORNERS
)
_LATTICE = SIZE * SIZE


def _bit(r: int, c: int) -> int:
    return SIZE * (r - 1) + (c - 1)


# Missing corners count as taken, so a blank-cell search never lands on one.
_MISSING = sum(1 << _bit(r, c) for r, c in _CORNERS)
_MARKS = {_bit(r, c): format_move("mark", f"r{r}", f"c{c}") for r, c in CELLS}
_BLOCKS = {_bit(r, c): format_move("block", f"r{r}", f"c{c}") for r, c in CELLS}
_DECODE = {move: (False, b) for b, move in _MARKS.items()} | {
    move: (True, b) for b, move in _BLOCKS.items()
}


def _squares() -> tuple[int, ...]:
    """Masks of every square, axis-aligned or tilted, whose four corners are cells."""
    existing = set(CELLS)
    found = []
    for r in range(1, SIZE + 1):
        for c in range(1, SIZE + 1):
            for s in range(1, SIZE):
                for t in range(SIZE):
                    corners = [(r, c), (r - t, c + s), (r + s, c + t), (r + s - t, c + s + t)]
                    if all(corner in existing for corner in corners):
                        found.append(sum(1 << _bit(*corner) for corner in corners))
    return tuple(found)


SQUARES = _squares()
_SQUARES_AT = {b: tuple(sq for sq in SQUARES if sq >> b & 1) for b in _MARKS}


class State(NamedTuple):
    """Pieces and whites on the board, what each role has left, control, and any square made."""

    pieces: tuple[int, int]
    whites: int
    quads_left: tuple[int, int]
    whites_left: tuple[int, int]
    control: int
    square: int | None


class Quad(Game[State]):
    id = "quad"
    roles = ("x", "o")
    description = "Quod on a cornerless 7x7 board: four pieces on a square, tilted or not, win."
    example_move = Move("(mark r4 c4)")
    marks = ("x", "o")
    legend = "W a white blocker, . empty"
    # The game ends when both roles have used their 12 quads: 24 marks and at most 10 blocks.
    max_steps = 34
    rules = """\
A 7x7 board of rows r1..r7 and columns c1..c7 without its four corners: 45 cells. Each
role has 12 quads (its pieces) and 5 white blockers; x moves first and the idle role
plays noop. The role in control either marks an empty cell with a quad, which passes
control to the other role, or blocks an empty cell with a white, after which it moves
again. Whites belong to nobody.

x wins (100-0) by holding the four corners of any square, axis-aligned or tilted;
o wins (0-100) the same way. Otherwise the game ends when both roles have placed all
their quads: x gets 95-5 if it holds three corners of a square whose fourth is empty,
else the role with more whites left gets 90-10, and equal whites give 50-50.

Moves: (mark rR cC), (block rR cC), noop; e.g. (mark r4 c4)."""

    def all_moves(self) -> Iterable[Move]:
        return (*_DECODE, NOOP)

    def initial_state(self) -> State:
        return State((0, 0), 0, (QUADS, QUADS), (WHITES, WHITES), X, None)

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if self.is_terminal(state):
            return ()
        if role != state.control:
            return (NOOP,)
        empty = blank_bits(_occupied(state), _LATTICE)
        marks = [_MARKS[b] for b in empty] if state.quads_left[role] else []
        blocks = [_BLOCKS[b] for b in empty] if state.whites_left[role] else []
        return (*marks, *blocks)

    def random_move(self, state: State, role: int, rng: random.Random) -> Move:
        if self.is_terminal(state):
            raise self.game_over()
        if role != state.control:
            return NOOP
        b = random_blank(_occupied(state), _LATTICE, rng)
        # Marks and blocks come one of each per empty cell, so pick the cell, then the kind.
        can_mark, can_block = state.quads_left[role] > 0, state.whites_left[role] > 0
        if can_block and (not can_mark or rng.getrandbits(1)):
            return _BLOCKS[b]
        return _MARKS[b]

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        mover = state.control
        idle = 1 - mover
        move = self.controlled_move(joint, mover)
        decoded = _DECODE.get(move)
        if decoded is None:
            raise self.illegal(mover, move, "not a (mark rR cC) or (block rR cC) move")
        is_block, b = decoded
        if _occupied(state) >> b & 1:
            raise self.illegal(mover, move, "the cell is not empty")
        if is_block:
            if not state.whites_left[mover]:
                raise self.illegal(mover, move, "no white left")
            return state._replace(
                whites=state.whites | 1 << b, whites_left=_less(state.whites_left, mover)
            )
        if not state.quads_left[mover]:
            raise self.illegal(mover, move, "no quad left")
        own = state.pieces[mover] | 1 << b
        square = mover if any(own & sq == sq for sq in _SQUARES_AT[b]) else None
        pieces = (own, state.pieces[O]) if mover == X else (state.pieces[X], own)
        return State(
            pieces, state.whites, _less(state.quads_left, mover), state.whites_left, idle, square
        )

    def is_terminal(self, state: State) -> bool:
        return state.square is not None or state.quads_left == (0, 0)

    def goals(self, state: State) -> Goals:
        if state.square is not None:
            return (100, 0) if state.square == X else (0, 100)
        if state.quads_left == (0, 0) and self._open_quad(state):
            return 95, 5
        x_whites, o_whites = state.whites_left
        if x_whites > o_whites:
            return 90, 10
        return (50, 50) if x_whites == o_whites else (10, 90)

    @staticmethod
    def _open_quad(state: State) -> int:
        """A square of which x holds three corners and whose fourth is empty; 0 for none."""
        x = state.pieces[X]
        taken = _occupied(state)
        for sq in SQUARES:
            fourth = sq & ~x
            if fourth & (fourth - 1) == 0 and fourth and not fourth & taken:
                return sq
        return 0

    def _deciding(self, state: State) -> int:
        """The cells that decide a finished game: the winner's square, or x's three corners
        of an open square at the end; none while it goes on or when the whites decide."""
        if state.square is not None:
            own = state.pieces[state.square]
            return next(sq for sq in SQUARES if own & sq == sq)
        if state.quads_left == (0, 0):
            return self._open_quad(state) & state.pieces[X]
        return 0

    def render(self, state: State) -> str:
        # The counts as wide as their most: the lines keep their width as they go down.
        q, w = len(str(QUADS)), len(str(WHITES))
        left = [
            f"{self.roles[role]}: {quads:{q}} of {QUADS} quads and {whites:{w}} of {WHITES}"
            " whites left"
            for role, quads, whites in zip((X, O), state.quads_left, state.whites_left, strict=True)
        ]
        return "\n".join([*self.boards(state)[0].lines(), *left])

    def boards(self, state: State) -> list[Board]:
        x, o = state.pieces

        def symbol(r: int, c: int) -> str:
            if (r, c) in _CORNERS:
                return NO_CELL
            b = 1 << _bit(r, c)
            return "x" if x & b else "o" if o & b else "W" if state.whites & b else "."

        columns = tuple(f"c{c}" for c in range(1, SIZE + 1))
        rows = tuple(
            (f"r{r}", tuple(symbol(r, c) for c in range(1, SIZE + 1))) for r in range(1, SIZE + 1)
        )
        deciding = self._deciding(state)
        winning = tuple((r - 1, c - 1) for r, c in CELLS if deciding >> _bit(r, c) & 1)
        legend = (
            Key("x", f"{self.roles[X]}'s quad", self.roles[X]),
            Key("o", f"{self.roles[O]}'s quad", self.roles[O]),
            Key("W", "white blocker (nobody's)"),
            Key(EMPTY, "empty"),
        )
        return [Board("", columns, rows, winning=winning, legend=legend)]


def _occupied(state: State) -> int:
    return state.pieces[X] | state.pieces[O] | state.whites | _MISSING


def _less(counts: tuple[int, int], role: int) -> tuple[int, int]:
    return (counts[0] - 1, counts[1]) if role == X else (counts[0], counts[1] - 1)
