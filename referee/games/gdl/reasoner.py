"""What a GDL game asks of its rules, whichever way they are evaluated.

Two reasoners answer it. The compiled one (`compile.py`) grounds the whole game once and
is fast; the per-state one (`per_state.py`) grounds each state as it is reached, for games
whose whole ground program is too big to build. Both pass states as `int` bit sets over
the facts they know of and moves as indices into the moves they know of, so the game above
them never sees which one it has.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

State = int


def true_bits(state: State) -> list[int]:
    """The indices of a state's facts, in order. In one pass over its binary text: testing
    each fact's bit shifts the whole number, which over the 300,000 facts some games meet
    made every state cost seconds."""
    text = format(state, "b")[::-1]
    found = []
    index = text.find("1")
    while index >= 0:
        found.append(index)
        index = text.find("1", index + 1)
    return found


@dataclass(frozen=True)
class StateView:
    """What the rules say of one state, as a per-state reasoner keeps it: per role the
    indices of its legal moves and every goal value, and whether the state is terminal."""

    legal: tuple[tuple[int, ...], ...]
    terminal: bool
    goals: tuple[tuple[int, ...], ...]


class QuestionControls(Protocol):
    """How a reasoner's questions are given up and what it holds is let go. A reasoner that
    answers in this process, to the end, has nothing to do: these defaults. The one whose
    child can wait past a player's clock (`remote.RemotePerState`) overrides them."""

    def give_up_at(self, moment: float | None) -> None:
        """Questions still unanswered at `moment` (time.monotonic()) are given up; None:
        never."""
        return None  # a body: mypy takes a protocol method without one as abstract

    def close(self) -> None:
        """Let go of what answering holds (a child process); the next question starts anew."""
        return None

    def asked(self, given_up: threading.Event) -> contextlib.AbstractContextManager[None]:
        """The questions this thread asks meanwhile are given up once `given_up` is set."""
        return contextlib.nullcontext()

    def interrupt(self) -> None:
        """Wake, from any thread, a question waiting for its answer, so that it ends if it
        has been given up."""
        return None


class Reasoner(QuestionControls, Protocol):
    """The queries of the rules, over states and moves by index."""

    @property
    def roles(self) -> tuple[str, ...]: ...

    @property
    def initial(self) -> State: ...

    # Goal values that are not numbers 0..100, as (role, text): a fault of the game.
    @property
    def bad_goals(self) -> tuple[tuple[str, str], ...]: ...

    # Whether known_moves() is every move of the game, so that any other text is no move.
    @property
    def complete(self) -> bool: ...

    def legal(self, state: State, /) -> tuple[tuple[int, ...], ...]:
        """Per role, the indices of its legal moves, in the order of their text."""

    def terminal(self, state: State, /) -> bool: ...

    def goals(self, state: State, /) -> tuple[tuple[int, ...], ...]:
        """Per role, every goal value the rules give it in the state."""

    def next(self, state: State, moves: Sequence[int], /) -> State: ...

    # GDL-II: whether the rules say what each role sees after a step (`sees`); in a game
    # whose rules do not, every role sees every move.
    @property
    def imperfect(self) -> bool: ...

    def sees(self, state: State, moves: Sequence[int], /) -> tuple[tuple[str, ...], ...]:
        """Per role, the text of each percept it has after the joint move, sorted."""

    def move(self, role: int, index: int) -> str:
        """The text of a role's move by index."""

    def move_index(self, role: int, text: str) -> int | None:
        """The index of a role's move by its canonical text; None for one never seen."""

    def known_moves(self) -> Iterable[str]:
        """The text of every move known so far."""

    def fact_texts(self, state: State) -> list[str]:
        """The facts true in a state, sorted."""

    def known_facts(self) -> Sequence[str]:
        """Every fact known so far: a compiled game's every fact, a per-state one's those
        of the states met."""
