"""The built-in mcts answers by its deadlines whatever the rules cost: rules that block until
released stand for a heavy game's loading and its slowest states."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Iterator, Sequence

import pytest

from referee.games import Game, Move, get_game
from referee.players.programs.mcts_player import Mind
from referee.protocol import Go, Moves, Start

START = Start("m1", "slow", "a", 200, 100)


class Blocking(Game[int]):
    """Two roles, each with moves x and y; every question of its rules waits for `gate`."""

    id = "slow"
    roles = ("a", "b")
    max_steps = 10

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate
        self.asked = threading.Event()
        super().__init__()

    def all_moves(self) -> Iterable[Move]:
        return (Move("x"), Move("y"))

    def initial_state(self) -> int:
        return 0

    def legal_moves(self, state: int, role: int) -> tuple[Move, ...]:
        self.asked.set()
        self.gate.wait()
        return (Move("x"), Move("y"))

    def _next_state(self, state: int, joint: Sequence[Move]) -> int:
        self.gate.wait()
        return state + 1

    def is_terminal(self, state: int) -> bool:
        self.gate.wait()
        return state >= 3

    def goals(self, state: int) -> tuple[int, ...]:
        return (50, 50)

    def render(self, state: int) -> str:
        return str(state)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Released at the end of the test, so that the mind's thread finishes what it waits on."""
    event = threading.Event()
    yield event
    event.set()


def test_a_state_that_does_not_come_is_answered_with_a_legal_move(gate: threading.Event) -> None:
    game = Blocking(gate)
    mind = Mind(random.Random(1), lambda start: game)
    mind.start(START)
    assert mind.go(Go(1, 100, ("y", "x"))) == "y"
    assert game.asked.is_set()  # the search was stuck in the rules when the answer came
    assert not gate.is_set()


def test_a_game_still_loading_gets_ready_and_moves_from_the_go_line(gate: threading.Event) -> None:
    loading = threading.Event()

    def load(start: Start) -> Game:
        loading.set()
        gate.wait()
        return get_game("ticblock")

    mind = Mind(random.Random(1), load)
    mind.start(Start("m1", "ticblock", "obplayer", 200, 100))  # within its clock, not loaded
    assert loading.is_set() and not gate.is_set()
    assert mind.go(Go(1, 100, ("(mark 2 2)", "(mark 1 1)"))) == "(mark 2 2)"
    # Loaded late, it catches up with the moves played meanwhile and searches from there:
    # not the first move the line offers, taken since.
    mind.moves(Moves(1, ("(mark 2 2)", "noop")))
    gate.set()
    game = get_game("ticblock")
    legal = game.legal_moves(game.next_state(game.initial_state(), _joint("(mark 2 2)")), 1)
    assert mind.go(Go(2, 1_000, ("(mark 2 2)", *legal))) in legal


def _joint(move: str) -> tuple[Move, Move]:
    return Move(move), Move("noop")


def test_once_loaded_it_follows_the_moves_and_searches() -> None:
    game = get_game("ticblock")
    mind = Mind(random.Random(1), lambda start: game)
    mind.start(Start("m1", "ticblock", "xcplayer", 5_000, 300))
    state = game.initial_state()
    for joint in (("(mark 1 1)", "noop"), ("noop", "(mark 2 2)")):
        mind.moves(Moves(1, joint))
        state = game.next_state(state, tuple(Move(m) for m in joint))
    # Not the first move the line offers, taken since: the search's, from the state followed.
    legal = game.legal_moves(state, 0)
    offered = ("(mark 1 1)", *legal)
    assert mind.go(Go(3, 1_000, offered)) in legal
