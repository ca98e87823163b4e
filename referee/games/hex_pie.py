"""hex-pie: Hex on a 9x9 rhombus with the pie (swap) rule.

Cell (r, c), row r in a..i and column c in 1..9, is bit 9*(row number - 1) + (c - 1).
Each row is drawn half a cell further right, so the six neighbours touch on screen:

      1 2 3 4 5 6 7 8 9
    a . . . . . . . . .         red (X) links row a to row i
     b . . . . . . . . .        blue (O) links column 1 to column 9
      c . . . . . . . . .
       ...
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move
from referee.games.boards.bitboard import blank_bits, random_blank
from referee.games.boards.picture import EMPTY, Board, Key

PLAYER1, PLAYER2 = 0, 1
RED, BLUE = 0, 1
SWAP = Move("swap")
SIZE = 9
ROWS = "abcdefghi"
CELLS = len(ROWS) * SIZE
FULL = (1 << CELLS) - 1

_PLACES = tuple(format_move("place", row, column) for row in ROWS for column in range(1, SIZE + 1))
_BITS = {move: b for b, move in enumerate(_PLACES)}
_COLUMN1 = sum(1 << (SIZE * r) for r in range(SIZE))
_COLUMN9 = _COLUMN1 << (SIZE - 1)
_ROW_A = (1 << SIZE) - 1
_ROW_I = _ROW_A << (SIZE * (SIZE - 1))
# The edges each colour links: red rows a and i, blue columns 1 and 9.
_EDGES = ((_ROW_A, _ROW_I), (_COLUMN1, _COLUMN9))


def neighbours(mask: int) -> int:
    """Every cell next to a cell of `mask`: (r, c±1), (r±1, c), (r-1, c+1), (r+1, c-1)."""
    east = mask & ~_COLUMN9
    west = mask & ~_COLUMN1
    return (
        east << 1
        | west >> 1
        | mask << SIZE
        | mask >> SIZE
        | east >> (SIZE - 1)
        | west << (SIZE - 1)
    ) & FULL


def _group(seed: int, stones: int) -> int:
    """The cells of `stones` connected to `seed` (bit-parallel flood fill)."""
    group = seed
    while True:
        grown = (group | neighbours(group)) & stones
        if grown == group:
            return group
        group = grown


class State(NamedTuple):
    """Stones, steps played, and for each colour the stones linked to each of its edges.

    `linked[colour]` holds the stones joined to that colour's first and second edge; a
    chain in both is a win, so the terminal test costs nothing per step.
    """

    stones: tuple[int, int]
    steps: int
    swapped: bool
    linked: tuple[tuple[int, int], tuple[int, int]]
    winner: int | None


class HexPie(Game[State]):
    id = "hex-pie"
    roles = ("player1", "player2")
    description = "Hex on a 9x9 rhombus with the pie rule: player2 may swap colours at step 2."
    example_move = Move("(place e 5)")
    marks = ("X (red, rows a-i) unless player2 swaps", "O (blue, columns 1-9), or X after a swap")
    # 81 cells, and at most one swap.
    max_steps = 82
    rules = """\
A 9x9 rhombus of hexagonal cells, rows a..i from top to bottom, columns 1..9. player1
plays red, player2 blue, and they alternate, player1 first; the idle role plays noop.
The role in control places a stone of its colour on any empty cell.

Pie rule: at step 2, player2 may play swap instead: no stone changes, but from then on
player1 plays blue and player2 plays red. Only at step 2.

Cell (r, c) touches six cells: (r, c-1), (r, c+1), (r-1, c), (r+1, c), (r-1, c+1) and
(r+1, c-1). The game ends when red links row a to row i, or blue links column 1 to
column 9, with a chain of touching stones. The role playing that colour gets 100, the
other 0; there are no draws.

Moves: (place r c), e.g. (place e 5); swap; noop."""

    def all_moves(self) -> Iterable[Move]:
        return (*_PLACES, SWAP, NOOP)

    def initial_state(self) -> State:
        return State((0, 0), 0, False, ((0, 0), (0, 0)), None)

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if state.winner is not None:
            return ()
        if role != state.steps % 2:
            return (NOOP,)
        places = tuple(
            _PLACES[b] for b in blank_bits(state.stones[RED] | state.stones[BLUE], CELLS)
        )
        return (*places, SWAP) if state.steps == 1 else places

    def random_move(self, state: State, role: int, rng: random.Random) -> Move:
        if state.winner is not None:
            raise self.game_over()
        if role != state.steps % 2:
            return NOOP
        occupied = state.stones[RED] | state.stones[BLUE]
        # At step 2 one stone is down: 80 empty cells and swap, each with chance 1/81.
        if state.steps == 1 and rng.randrange(CELLS) == 0:
            return SWAP
        return _PLACES[random_blank(occupied, CELLS, rng)]

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        mover = state.steps % 2
        move = self.controlled_move(joint, mover)
        if move == SWAP:
            if state.steps != 1:
                raise self.illegal(mover, move, "swap is only allowed at step 2")
            return state._replace(steps=2, swapped=True)
        b = _BITS.get(move)
        if b is None:
            raise self.illegal(mover, move, "not a (place r c) move")
        stone = 1 << b
        if (state.stones[RED] | state.stones[BLUE]) & stone:
            raise self.illegal(mover, move, "the cell is not empty")
        colour = self._colour(state, mover)
        own = state.stones[colour] | stone
        first, second = state.linked[colour]
        edge1, edge2 = _EDGES[colour]
        near = neighbours(stone)
        touches1 = bool(stone & edge1 or near & first)
        touches2 = bool(stone & edge2 or near & second)
        if touches1 or touches2:
            # Only the new stone's group can join an edge; groups already linked stay linked.
            group = _group(stone, own)
            first |= group if touches1 else 0
            second |= group if touches2 else 0
        stones = (own, state.stones[BLUE]) if colour == RED else (state.stones[RED], own)
        linked = (
            ((first, second), state.linked[BLUE])
            if colour == RED
            else (state.linked[RED], (first, second))
        )
        winner = colour if first & second else None
        return State(stones, state.steps + 1, state.swapped, linked, winner)

    def is_terminal(self, state: State) -> bool:
        return state.winner is not None

    def goals(self, state: State) -> Goals:
        if state.winner is None:
            return 0, 0
        return tuple(
            100 if self._colour(state, role) == state.winner else 0 for role in (PLAYER1, PLAYER2)
        )

    def render(self, state: State) -> str:
        red_role, blue_role = self._colour_roles(state)
        legend = [
            f"red X ({red_role}) links rows a-i; blue O ({blue_role}) links columns 1-9",
        ]
        return "\n".join([*self.boards(state)[0].lines(), *legend])

    def boards(self, state: State) -> list[Board]:
        red, blue = state.stones

        def symbol(b: int) -> str:
            return "X" if red >> b & 1 else "O" if blue >> b & 1 else "."

        rows = tuple(
            (row, tuple(symbol(SIZE * r + c) for c in range(SIZE))) for r, row in enumerate(ROWS)
        )
        chain = 0
        if state.winner is not None:
            first, second = state.linked[state.winner]
            chain = first & second
        winning = tuple(divmod(b, SIZE) for b in range(CELLS) if chain >> b & 1)
        red_role, blue_role = self._colour_roles(state)
        # No colour named: a viewer draws each role's stones in that role's colour, which
        # after a swap is not the colour the rules call its side.
        legend = (
            Key("X", f"{red_role}: links rows a and i", red_role),
            Key("O", f"{blue_role}: links columns 1 and 9", blue_role),
            Key(EMPTY, "empty"),
        )
        columns = tuple(str(c) for c in range(1, SIZE + 1))
        return [Board("", columns, rows, hexagonal=True, winning=winning, legend=legend)]

    def _colour_roles(self, state: State) -> tuple[str, str]:
        """The roles that play red and blue, after a swap too."""
        return self.roles[self._colour_role(state, RED)], self.roles[self._colour_role(state, BLUE)]

    @staticmethod
    def _colour(state: State, role: int) -> int:
        return RED if (role == PLAYER1) != state.swapped else BLUE

    @staticmethod
    def _colour_role(state: State, colour: int) -> int:
        return PLAYER1 if (colour == RED) != state.swapped else PLAYER2
