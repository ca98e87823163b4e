"""ticblock: tic-tac-toe, a `reset` step, then a simultaneous blocker game on a 4x4 board.

Phase 1 uses the tic-tac-toe layout, cell (m, n) with m the row; phase 2 the crossing
layout, cell (x, y) with x the column. `(mark a b)` means a cell of the current phase's
board:

    phase 1           phase 2
    m\\n 1 2 3        y\\x 1 2 3 4
     1  . . .          1  . . . .
     2  . . .          2  . . . .
     3  . . .          3  . . . .
                       4  . . . .
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move
from referee.games.boards import crossing, tictactoe
from referee.games.boards.bitboard import blank_bits, random_blank
from referee.games.boards.picture import Board
from referee.games.boards.render import side_by_side

XCPLAYER, OBPLAYER = 0, 1
RESET = Move("reset")

_MARKS = {(a, b): format_move("mark", a, b) for a in range(1, 5) for b in range(1, 5)}
_TIC_MOVES = tuple(_MARKS[cell] for cell in tictactoe.CELLS)
_CROSS_MOVES = tuple(_MARKS[cell] for cell in crossing.CELLS)
_TIC_BITS = {move: b for b, move in enumerate(_TIC_MOVES)}
_CROSS_BITS = {move: b for b, move in enumerate(_CROSS_MOVES)}


class State(NamedTuple):
    """Both phases' boards; `tic` holds the tic-tac-toe scores once `reset` recorded them."""

    x: int
    o: int
    control: int
    tic: tuple[int, int] | None
    crosser: int
    blocked: int


class Ticblock(Game[State]):
    id = "ticblock"
    roles = ("xcplayer", "obplayer")
    description = "Tic-tac-toe, then a simultaneous crossing game on 4x4; the scores add up."
    example_move = Move("(mark 2 2)")
    marks = ("X, then X crossing", "O, then # blocking")
    # 9 cells of tic-tac-toe, the reset, then at least one of 16 cells per step.
    max_steps = 26
    simultaneous = True
    rules = """\
Phase 1 is tic-tac-toe on a 3x3 board, cells (m, n) with m the row and n the column,
both 1..3. xcplayer (x) moves first and the roles alternate; the idle role plays noop.
It is finished on a line of three or a full board: an x line scores xcplayer 50, an
o line scores obplayer 50, a full board without a line scores 25 each.

Then both roles must play reset: the scores are kept and phase 2 starts on a blank
4x4 board, cells (x, y) with x the column 1..4. Both roles move at every step: the
obplayer's cell becomes blocked, the xcplayer's cell becomes its own unless the
obplayer named the same cell. Phase 2 ends on a bridge of xcplayer cells (one in every
column, each within one row of the next) or a full board.

Goals: tic-tac-toe score plus 50 to xcplayer for a bridge, or 50 to obplayer without one.

Moves: (mark a b) on the current board, reset, noop."""

    def all_moves(self) -> Iterable[Move]:
        return (*_MARKS.values(), RESET, NOOP)

    def initial_state(self) -> State:
        return State(0, 0, XCPLAYER, None, 0, 0)

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if state.tic is None:
            if tictactoe.finished(state.x, state.o):
                return (RESET,)
            if role != state.control:
                return (NOOP,)
            return tuple(_TIC_MOVES[b] for b in blank_bits(state.x | state.o, len(tictactoe.CELLS)))
        if self.is_terminal(state):
            return ()
        return tuple(
            _CROSS_MOVES[b] for b in blank_bits(state.crosser | state.blocked, len(crossing.CELLS))
        )

    def random_move(self, state: State, role: int, rng: random.Random) -> Move:
        if state.tic is None:
            if tictactoe.finished(state.x, state.o) or role != state.control:
                return self.legal_moves(state, role)[0]
            return _TIC_MOVES[random_blank(state.x | state.o, len(tictactoe.CELLS), rng)]
        if self.is_terminal(state):
            raise self.game_over()
        return _CROSS_MOVES[random_blank(state.crosser | state.blocked, len(crossing.CELLS), rng)]

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        if state.tic is None:
            if tictactoe.finished(state.x, state.o):
                for role, move in enumerate(joint):
                    if move != RESET:
                        raise self.illegal(role, move, "the tic-tac-toe is finished: only reset")
                return State(0, 0, state.control, tictactoe.scores(state.x, state.o), 0, 0)
            return self._tic_step(state, joint)
        occupied = state.crosser | state.blocked
        bits = []
        for role, move in enumerate(joint):
            b = _CROSS_BITS.get(move)
            if b is None or occupied >> b & 1:
                raise self.illegal(
                    role, move, "phase 2 needs (mark x y) on a blank cell of the 4x4 board"
                )
            bits.append(b)
        crosser, blocked = crossing.mark(
            state.crosser, state.blocked, bits[XCPLAYER], bits[OBPLAYER]
        )
        return state._replace(crosser=crosser, blocked=blocked)

    def _tic_step(self, state: State, joint: Sequence[Move]) -> State:
        mover = state.control
        idle = 1 - mover
        move = self.controlled_move(joint, mover)
        b = _TIC_BITS.get(move)
        if b is None or (state.x | state.o) >> b & 1:
            raise self.illegal(
                mover, move, "phase 1 needs (mark m n) on a blank cell of the 3x3 board"
            )
        if mover == XCPLAYER:
            return state._replace(x=state.x | 1 << b, control=idle)
        return state._replace(o=state.o | 1 << b, control=idle)

    def is_terminal(self, state: State) -> bool:
        return state.tic is not None and (
            crossing.has_bridge(state.crosser) or (state.crosser | state.blocked) == crossing.FULL
        )

    def goals(self, state: State) -> Goals:
        tic_x, tic_o = state.tic or (0, 0)
        if crossing.has_bridge(state.crosser):
            return tic_x + 50, tic_o
        return tic_x, tic_o + 50

    def render(self, state: State) -> str:
        # Both boards at every step, under titles that do not change, and the scores in
        # columns of their own: the text keeps its shape from the first step to the last.
        tic = tictactoe.board(state.x, state.o, "tic-tac-toe (phase 1)", self.roles)
        cross = crossing.board(state.crosser, state.blocked, "blocker (phase 2)", self.roles)
        x, o = ("--", "--") if state.tic is None else (f"{score:2}" for score in state.tic)
        scored = f"tic-tac-toe scored {self.roles[XCPLAYER]} {x}, {self.roles[OBPLAYER]} {o}"
        return "\n".join([*side_by_side([tic.lines(), cross.lines()]), scored])

    def boards(self, state: State) -> list[Board]:
        if state.tic is None:
            return [tictactoe.board(state.x, state.o, "tic-tac-toe (phase 1)", self.roles)]
        tic_x, tic_o = state.tic
        title = f"blocker (phase 2); tic-tac-toe scored xcplayer {tic_x}, obplayer {tic_o}"
        return [crossing.board(state.crosser, state.blocked, title, self.roles)]
