"""blind-goofspiel: Goofspiel where neither player sees the other's bids (GDL-II).

Its rulesheet (`rulesheets/blind-goofspiel.kif`) is checked against this engine: each says
the same of every state, written apart from the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move

NORTH, SOUTH, CHANCE = 0, 1, 2
CARDS = (1, 2, 3, 4, 5)


class State(NamedTuple):
    """The prizes not yet dealt, the prize being bid for (0 between bids), each player's
    cards and score."""

    deck: frozenset[int]
    prize: int
    hands: tuple[frozenset[int], frozenset[int]]
    scores: tuple[int, int]


def _reveal(card: int) -> Move:
    return format_move("reveal", card)


def _bid(card: int) -> Move:
    return format_move("bid", card)


def _card(move: str) -> int:
    return int(move.strip("()").split()[1])


class BlindGoofspiel(Game[State]):
    id = "blind-goofspiel"
    roles = ("north", "south", "random")
    description = "Bid your cards 1..5 for five random prizes, never seeing the other's bids."
    example_move = Move("(bid 3)")
    marks = ()
    legend = ""
    max_steps = 2 * len(CARDS)
    simultaneous = True
    imperfect = True
    rules = """\
Each player holds the cards 1..5. random is chance, played by the referee: it deals the
prizes 1..5 one at a time in a random order, (reveal p), and both players see (prize p)
while they play noop. Then both bid one of their cards at once, (bid c), random playing
noop: the higher bid takes the prize's value, equal bids take nothing, and the cards bid
are spent. Each player sees only won, lost or tied, never the other's card.
After five prizes: 100 to the higher total, 0 to the other; 50 each when equal; random 0."""

    def all_moves(self) -> Iterable[Move]:
        yield from (_reveal(card) for card in CARDS)
        yield from (_bid(card) for card in CARDS)
        yield NOOP

    def initial_state(self) -> State:
        hand = frozenset(CARDS)
        return State(frozenset(CARDS), 0, (hand, hand), (0, 0))

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if self.is_terminal(state):
            return ()
        if not state.prize:
            return tuple(_reveal(c) for c in sorted(state.deck)) if role == CHANCE else (NOOP,)
        if role == CHANCE:
            return (NOOP,)
        return tuple(_bid(card) for card in sorted(state.hands[role]))

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        for role, move in enumerate(joint):
            if move not in self.legal_moves(state, role):
                raise self.illegal(role, move, "not a legal move here")
        if not state.prize:
            prize = _card(joint[CHANCE])
            return state._replace(deck=state.deck - {prize}, prize=prize)
        north, south = _card(joint[NORTH]), _card(joint[SOUTH])
        scores = (
            state.scores[NORTH] + (state.prize if north > south else 0),
            state.scores[SOUTH] + (state.prize if south > north else 0),
        )
        hands = (state.hands[NORTH] - {north}, state.hands[SOUTH] - {south})
        return State(state.deck, 0, hands, scores)

    def percepts(self, state: State, joint: Sequence[Move]) -> tuple[tuple[str, ...], ...]:
        self.next_state(state, joint)
        if not state.prize:
            told = f"(prize {_card(joint[CHANCE])})"
            return ((told,), (told,), ())
        north, south = _card(joint[NORTH]), _card(joint[SOUTH])
        if north == south:
            return (("tied",), ("tied",), ())
        return (("won",), ("lost",), ()) if north > south else (("lost",), ("won",), ())

    def is_terminal(self, state: State) -> bool:
        return not state.deck and not state.prize

    def goals(self, state: State) -> Goals:
        north, south = state.scores
        if north == south:
            return (50, 50, 0)
        return (100, 0, 0) if north > south else (0, 100, 0)

    def render(self, state: State) -> str:
        def hand(role: int) -> str:
            return " ".join(map(str, sorted(state.hands[role]))) or "-"

        prize = f"prize {state.prize} up for bids" if state.prize else "next prize to deal"
        return (
            f"north {hand(NORTH)}, score {state.scores[NORTH]}\n"
            f"south {hand(SOUTH)}, score {state.scores[SOUTH]}\n"
            f"{prize}; deck {' '.join(map(str, sorted(state.deck))) or '-'}"
        )
