"""blocker-parallel: crosser and blocker mark two 4x4 boards at once, at every step.

Board 1 and board 2 each use the crossing layout, cell (x, y) with x the column:

    board 1             board 2
    y\\x 1 2 3 4         y\\x 1 2 3 4
     1   . . . .          1   . . . .
     ...                  ...
     4   . . . .          4   . . . .

A move `(mark x1 y1 x2 y2)` names one cell of board 1 and one of board 2.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import Game, Goals, Move, format_move
from referee.games.boards import crossing
from referee.games.boards.bitboard import blank_bits, random_blank
from referee.games.boards.picture import Board
from referee.games.boards.render import side_by_side

CROSSER, BLOCKER = 0, 1
_BOARD_CELLS = len(crossing.CELLS)

# _MOVES[b1][b2] is the move naming bit b1 of board 1 and bit b2 of board 2.
_MOVES = tuple(
    tuple(format_move("mark", x1, y1, x2, y2) for x2, y2 in crossing.CELLS)
    for x1, y1 in crossing.CELLS
)
_BITS = {_MOVES[b1][b2]: (b1, b2) for b1 in range(_BOARD_CELLS) for b2 in range(_BOARD_CELLS)}


class State(NamedTuple):
    """Crosser and blk cells of board 1 and board 2, as crossing masks."""

    crosser: tuple[int, int]
    blocked: tuple[int, int]


class BlockerParallel(Game[State]):
    id = "blocker-parallel"
    roles = ("crosser", "blocker")
    description = "Simultaneous marks on two 4x4 boards; crosser bridges one, blocker walls off."
    example_move = Move("(mark 1 2 4 3)")
    marks = ("X", "#")
    # Every step fills at least one of board 1's 16 cells.
    max_steps = 16
    simultaneous = True
    rules = """\
Two 4x4 boards, cells (x, y) with x the column 1..4 and y the row 1..4. Both roles move
at every step, at the same time: each names one blank cell of board 1 and one blank
cell of board 2. On each board the blocker's cell becomes blocked; the crosser's cell
becomes the crosser's, unless the blocker named the same cell (the blocker wins it).

A bridge is one crosser cell in every column, each within one row of the next.
The game ends on a bridge on either board or when either board has no blank cell.
Each board scores crosser 100 for a bridge, blocker 100 for a full board without one;
a role's goal is the average over the two boards (a bridge on one board while the
other still has blank cells: crosser 50, blocker 0).

Move: (mark x1 y1 x2 y2), cell (x1, y1) of board 1 and cell (x2, y2) of board 2."""

    def all_moves(self) -> Iterable[Move]:
        return _BITS.keys()

    def initial_state(self) -> State:
        return State((0, 0), (0, 0))

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if self.is_terminal(state):
            return ()
        occupied1, occupied2 = _occupied(state)
        blanks2 = blank_bits(occupied2, _BOARD_CELLS)
        return tuple(_MOVES[b1][b2] for b1 in blank_bits(occupied1, _BOARD_CELLS) for b2 in blanks2)

    def random_move(self, state: State, role: int, rng: random.Random) -> Move:
        if self.is_terminal(state):
            raise self.game_over()
        occupied1, occupied2 = _occupied(state)
        # Independent uniform blank cells on the two boards are a uniform legal move.
        return _MOVES[random_blank(occupied1, _BOARD_CELLS, rng)][
            random_blank(occupied2, _BOARD_CELLS, rng)
        ]

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        occupied = _occupied(state)
        bits = []
        for role, move in enumerate(joint):
            cells = _BITS.get(move)
            if cells is None:
                raise self.illegal(role, move, "not a (mark x1 y1 x2 y2) move")
            for board, b in enumerate(cells):
                if occupied[board] >> b & 1:
                    x, y = crossing.CELLS[b]
                    raise self.illegal(
                        role, move, f"cell ({x}, {y}) of board {board + 1} is not blank"
                    )
            bits.append(cells)
        boards = [
            crossing.mark(state.crosser[k], state.blocked[k], bits[CROSSER][k], bits[BLOCKER][k])
            for k in (0, 1)
        ]
        return State((boards[0][0], boards[1][0]), (boards[0][1], boards[1][1]))

    def is_terminal(self, state: State) -> bool:
        occupied1, occupied2 = _occupied(state)
        return (
            crossing.has_bridge(state.crosser[0])
            or crossing.has_bridge(state.crosser[1])
            or occupied1 == crossing.FULL
            or occupied2 == crossing.FULL
        )

    def goals(self, state: State) -> Goals:
        crosser = blocker = 0
        for crossed, occupied in zip(state.crosser, _occupied(state), strict=True):
            if crossing.has_bridge(crossed):
                crosser += 100
            elif occupied == crossing.FULL:
                blocker += 100
        return crosser // 2, blocker // 2

    def render(self, state: State) -> str:
        return "\n".join(side_by_side([board.lines() for board in self.boards(state)]))

    def boards(self, state: State) -> list[Board]:
        return [
            crossing.board(state.crosser[k], state.blocked[k], f"board {k + 1}", self.roles)
            for k in (0, 1)
        ]


def _occupied(state: State) -> tuple[int, int]:
    return state.crosser[0] | state.blocked[0], state.crosser[1] | state.blocked[1]
