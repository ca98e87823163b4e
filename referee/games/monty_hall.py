"""monty-hall: the game show, a game of imperfect information with chance (GDL-II).

Its rulesheet (`rulesheets/monty-hall.kif`) is checked against this engine: each says the
same of every state, written apart from the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move

CANDIDATE, CHANCE = 0, 1
DOORS = (1, 2, 3)
SWITCH = Move("switch")
# The last step is the third: the game is over after it.
_LAST = 3


class State(NamedTuple):
    """The step to come (1..3, 4 once over), the car's and the chosen door (0 before they
    are), and the doors still closed."""

    step: int
    car: int
    chosen: int
    closed: frozenset[int]


def _hide(door: int) -> Move:
    return format_move("hide_car", door)


def _choose(door: int) -> Move:
    return format_move("choose", door)


def _open(door: int) -> Move:
    return format_move("open_door", door)


class MontyHall(Game[State]):
    id = "monty-hall"
    roles = ("candidate", "random")
    description = "Find the car behind one of three doors; one empty door is opened for you."
    example_move = Move("(choose 1)")
    marks = ()
    legend = ""
    max_steps = _LAST
    simultaneous = True
    imperfect = True
    rules = """\
Three doors, a car behind one. random is chance, played by the referee.
Step 1: random hides the car (hide_car d) while the candidate picks a door (choose d);
neither is told the other's move.
Step 2: random opens a closed door that is neither the car's nor the chosen one
(open_door d); the candidate plays noop and sees (opened d).
Step 3: the candidate plays noop to keep its door or switch to take the other closed one;
random plays noop. The candidate then sees (car d).
Goals: candidate 100 if its door hides the car, else 0; random 0."""

    def all_moves(self) -> Iterable[Move]:
        for door in DOORS:
            yield from (_hide(door), _choose(door), _open(door))
        yield from (NOOP, SWITCH)

    def initial_state(self) -> State:
        return State(1, 0, 0, frozenset(DOORS))

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if state.step == 1:
            return tuple((_choose if role == CANDIDATE else _hide)(door) for door in DOORS)
        if state.step == 2:
            if role == CANDIDATE:
                return (NOOP,)
            return tuple(
                _open(door)
                for door in sorted(state.closed)
                if door not in (state.car, state.chosen)
            )
        if state.step == _LAST:
            return (NOOP, SWITCH) if role == CANDIDATE else (NOOP,)
        return ()

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        for role, move in enumerate(joint):
            if move not in self.legal_moves(state, role):
                raise self.illegal(role, move, f"not a legal move at step {state.step}")
        candidate, chance = joint
        if state.step == 1:
            return State(2, _door(chance), _door(candidate), state.closed)
        if state.step == 2:
            return state._replace(step=3, closed=state.closed - {_door(chance)})
        chosen = state.chosen
        if candidate == SWITCH:
            (chosen,) = state.closed - {state.chosen}
        return state._replace(step=_LAST + 1, chosen=chosen)

    def percepts(self, state: State, joint: Sequence[Move]) -> tuple[tuple[str, ...], ...]:
        self.next_state(state, joint)
        if state.step == 2:
            return ((f"(opened {_door(joint[CHANCE])})",), ())
        if state.step == _LAST:
            return ((f"(car {state.car})",), ())
        return ((), ())

    def is_terminal(self, state: State) -> bool:
        return state.step > _LAST

    def goals(self, state: State) -> Goals:
        return (100 if state.chosen == state.car else 0, 0)

    def render(self, state: State) -> str:
        def door(number: int) -> str:
            shown = "car" if number == state.car else "goat"
            inside = shown if number not in state.closed or state.step > _LAST else "?"
            chosen = "*" if number == state.chosen else " "
            return f"{chosen}[{number}: {inside}]"

        return " ".join(door(number) for number in DOORS) + f"   step {min(state.step, 4)}"


def _door(move: str) -> int:
    """The door a move names: its last argument."""
    return int(move.rstrip(")").split()[-1])
