"""blind-tictactoe: tic-tac-toe where neither player sees the other's marks (GDL-II).

Its rulesheet (`rulesheets/blind-tictactoe.kif`) is checked against this engine: each says
the same of every state, written apart from the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move

XPLAYER, OPLAYER = 0, 1
CELLS = tuple((m, n) for m in (1, 2, 3) for n in (1, 2, 3))
LINES = (
    *(tuple((m, n) for n in (1, 2, 3)) for m in (1, 2, 3)),
    *(tuple((m, n) for m in (1, 2, 3)) for n in (1, 2, 3)),
    ((1, 1), (2, 2), (3, 3)),
    ((1, 3), (2, 2), (3, 1)),
)
_MARKS = {cell: format_move("mark", *cell) for cell in CELLS}
_CELL_OF = {move: cell for cell, move in _MARKS.items()}


class State(NamedTuple):
    """Each role's marks, the opponent's cells each role found taken, and who moves."""

    marks: tuple[frozenset[tuple[int, int]], frozenset[tuple[int, int]]]
    known: tuple[frozenset[tuple[int, int]], frozenset[tuple[int, int]]]
    mover: int


class BlindTictactoe(Game[State]):
    id = "blind-tictactoe"
    roles = ("xplayer", "oplayer")
    description = "Tic-tac-toe where you do not see your opponent's marks."
    example_move = Move("(mark 2 2)")
    marks = ("X", "O")
    # Nine marks, and at most four refusals each.
    max_steps = 17
    imperfect = True
    rules = """\
Tic-tac-toe on a 3x3 board, cells (mark m n) with m the row, n the column, both 1..3;
neither player sees the other's marks. xplayer moves first; the idle role plays noop.
On your turn you may try any cell you have not marked and do not know to be taken. If
your opponent holds it, the mark is refused: you see (taken m n) and try again, and your
opponent sees refused. Otherwise it is placed and the turn passes.
Three in a row wins: 100 to the winner, 0 to the other. A full board is 50 each."""

    def all_moves(self) -> Iterable[Move]:
        return (*_MARKS.values(), NOOP)

    def initial_state(self) -> State:
        return State((frozenset(), frozenset()), (frozenset(), frozenset()), XPLAYER)

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if self.is_terminal(state):
            return ()
        if role != state.mover:
            return (NOOP,)
        barred = state.marks[role] | state.known[role]
        return tuple(_MARKS[cell] for cell in CELLS if cell not in barred)

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        move = self.controlled_move(joint, state.mover)
        if move not in self.legal_moves(state, state.mover):
            raise self.illegal(state.mover, move, "not a cell it may try")
        cell, mover, other = _CELL_OF[move], state.mover, 1 - state.mover
        if cell in state.marks[other]:
            known = list(state.known)
            known[mover] = known[mover] | {cell}
            return state._replace(known=(known[0], known[1]))
        marks = list(state.marks)
        marks[mover] = marks[mover] | {cell}
        return State((marks[0], marks[1]), state.known, other)

    def percepts(self, state: State, joint: Sequence[Move]) -> tuple[tuple[str, ...], ...]:
        self.next_state(state, joint)
        cell = _CELL_OF[joint[state.mover]]
        seen: list[tuple[str, ...]] = [(), ()]
        if cell in state.marks[1 - state.mover]:
            seen[state.mover] = (f"(taken {cell[0]} {cell[1]})",)
            seen[1 - state.mover] = ("refused",)
        return (seen[0], seen[1])

    def _line(self, state: State, role: int) -> bool:
        return any(all(cell in state.marks[role] for cell in line) for line in LINES)

    def is_terminal(self, state: State) -> bool:
        full = len(state.marks[0]) + len(state.marks[1]) == len(CELLS)
        return full or self._line(state, XPLAYER) or self._line(state, OPLAYER)

    def goals(self, state: State) -> Goals:
        for role in (XPLAYER, OPLAYER):
            if self._line(state, role):
                return (100, 0) if role == XPLAYER else (0, 100)
        return (50, 50)

    def render(self, state: State) -> str:
        def symbol(cell: tuple[int, int]) -> str:
            return "X" if cell in state.marks[0] else "O" if cell in state.marks[1] else "."

        rows = [" ".join(symbol((m, n)) for n in (1, 2, 3)) for m in (1, 2, 3)]
        return "\n".join(rows) + f"\n{self.roles[state.mover]} to move"
