"""double-tictactoe: two tic-tac-toe boards, one shared turn order.

Both boards use the tic-tac-toe layout, cell (m, n) with m the row; `(mark1 m n)` marks
board 1 and `(mark2 m n)` board 2:

    board 1          board 2
    m\\n 1 2 3        m\\n 1 2 3
     1  . . .         1  . . .
     2  . . .         2  . . .
     3  . . .         3  . . .
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move
from referee.games.boards import tictactoe
from referee.games.boards.bitboard import blank_bits
from referee.games.boards.picture import Board
from referee.games.boards.render import side_by_side

XPLAYER, OPLAYER = 0, 1
_CELLS = len(tictactoe.CELLS)
_MARKS = tuple(
    tuple(format_move(f"mark{board + 1}", m, n) for m, n in tictactoe.CELLS) for board in (0, 1)
)
_TARGETS = {move: (board, b) for board in (0, 1) for b, move in enumerate(_MARKS[board])}


class State(NamedTuple):
    """The x and o marks of board 1 and board 2, and the role in control."""

    x: tuple[int, int]
    o: tuple[int, int]
    control: int


class DoubleTictactoe(Game[State]):
    id = "double-tictactoe"
    roles = ("xplayer", "oplayer")
    description = "Two tic-tac-toe boards, one turn order; each board is worth 50."
    example_move = Move("(mark2 1 3)")
    marks = ("X", "O")
    # Every step fills one of the 18 cells.
    max_steps = 18
    rules = """\
Two 3x3 tic-tac-toe boards, cells (m, n) with m the row and n the column, both 1..3.
xplayer (x) moves first and the roles alternate; the idle role plays noop. The role in
control marks one blank cell of either board that is not finished yet. A board is
finished on a line of three of one mark or when it is full; the game ends when both
boards are finished.

Each board scores like tic-tac-toe: a line 50 to its owner and 0 to the other, a full
board without a line 25 each. A role's goal is the sum over the two boards.

Moves: (mark1 m n) on board 1, (mark2 m n) on board 2, noop."""

    def all_moves(self) -> Iterable[Move]:
        return (*_TARGETS, NOOP)

    def initial_state(self) -> State:
        return State((0, 0), (0, 0), XPLAYER)

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if self.is_terminal(state):
            return ()
        if role != state.control:
            return (NOOP,)
        return tuple(
            _MARKS[board][b]
            for board in (0, 1)
            if not tictactoe.finished(state.x[board], state.o[board])
            for b in blank_bits(state.x[board] | state.o[board], _CELLS)
        )

    def random_move(self, state: State, role: int, rng: random.Random) -> Move:
        if role != state.control and not self.is_terminal(state):
            return NOOP
        return super().random_move(state, role, rng)

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        mover = state.control
        idle = 1 - mover
        move = self.controlled_move(joint, mover)
        target = _TARGETS.get(move)
        if target is None:
            raise self.illegal(mover, move, "not a (mark1 m n) or (mark2 m n) move")
        board, b = target
        x, o = state.x[board], state.o[board]
        if tictactoe.finished(x, o):
            raise self.illegal(mover, move, f"board {board + 1} is finished")
        if (x | o) >> b & 1:
            raise self.illegal(mover, move, "the cell is not blank")
        if mover == XPLAYER:
            marks = _set(state.x, board, x | 1 << b)
            return State(marks, state.o, idle)
        return State(state.x, _set(state.o, board, o | 1 << b), idle)

    def is_terminal(self, state: State) -> bool:
        return tictactoe.finished(state.x[0], state.o[0]) and tictactoe.finished(
            state.x[1], state.o[1]
        )

    def goals(self, state: State) -> Goals:
        (x1, o1), (x2, o2) = (tictactoe.scores(state.x[k], state.o[k]) for k in (0, 1))
        return x1 + x2, o1 + o2

    def render(self, state: State) -> str:
        return "\n".join(side_by_side([board.lines() for board in self.boards(state)]))

    def boards(self, state: State) -> list[Board]:
        boards = []
        for k in (0, 1):
            # Words of one length: the board beside it stays where it is as this one ends.
            done = "done" if tictactoe.finished(state.x[k], state.o[k]) else "open"
            boards.append(
                tictactoe.board(state.x[k], state.o[k], f"board {k + 1} ({done})", self.roles)
            )
        return boards


def _set(pair: tuple[int, int], index: int, value: int) -> tuple[int, int]:
    return (value, pair[1]) if index == 0 else (pair[0], value)
