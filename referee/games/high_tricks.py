"""high-tricks: three tricks with hidden hands from a random deal (GDL-II).

Its rulesheet (`rulesheets/high-tricks.kif`) is checked against this engine: each says the
same of every state, written apart from the other.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from referee.games.base import NOOP, Game, Goals, Move, format_move

NORTH, SOUTH, CHANCE = 0, 1, 2
CARDS = tuple(range(1, 10))
HAND = 3
# The deals, then two plays a trick.
_DEALS = 2
_TRICKS = 3


class State(NamedTuple):
    """The steps dealt (0..2), each player's hand, who leads, the card led (0: none yet),
    and each player's tricks."""

    dealt: int
    hands: tuple[frozenset[int], frozenset[int]]
    leader: int
    led: int
    tricks: tuple[int, int]


def _deal(cards: Sequence[int]) -> Move:
    return format_move("deal", *cards)


def _play(card: int) -> Move:
    return format_move("play", card)


def _cards(move: str) -> tuple[int, ...]:
    return tuple(int(word) for word in move.strip("()").split()[1:])


class HighTricks(Game[State]):
    id = "high-tricks"
    roles = ("north", "south", "random")
    description = "Three tricks of high card, each hand dealt at random and hidden."
    example_move = Move("(play 7)")
    marks = ()
    legend = ""
    max_steps = _DEALS + 2 * _TRICKS
    imperfect = True
    rules = """\
Nine cards, 1..9. random is chance, played by the referee: it deals north three cards
(deal a b c), then south three of the six left; the last three stay hidden. Each player
sees only its own hand, (hand a b c).
Then three tricks. The leader (north at first) plays a card from its hand (play c) while
the other plays noop, and the other sees (led c); then the other plays a card, and the
leader sees (followed c). The higher card wins the trick, and its player leads the next.
Goals: 100 to the player with two tricks or more, 0 to the other; random 0."""

    def all_moves(self) -> Iterable[Move]:
        yield from (_deal(hand) for hand in itertools.combinations(CARDS, HAND))
        yield from (_play(card) for card in CARDS)
        yield NOOP

    def initial_state(self) -> State:
        return State(0, (frozenset(), frozenset()), NORTH, 0, (0, 0))

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        if self.is_terminal(state):
            return ()
        if state.dealt < _DEALS:
            if role != CHANCE:
                return (NOOP,)
            left = [card for card in CARDS if card not in state.hands[NORTH]]
            return tuple(_deal(hand) for hand in itertools.combinations(left, HAND))
        mover = state.leader if not state.led else 1 - state.leader
        if role != mover:
            return (NOOP,)
        return tuple(_play(card) for card in sorted(state.hands[role]))

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        for role, move in enumerate(joint):
            if move not in self.legal_moves(state, role):
                raise self.illegal(role, move, "not a legal move here")
        if state.dealt < _DEALS:
            hands = list(state.hands)
            hands[state.dealt] = frozenset(_cards(joint[CHANCE]))
            return state._replace(dealt=state.dealt + 1, hands=(hands[0], hands[1]))
        mover = state.leader if not state.led else 1 - state.leader
        (card,) = _cards(joint[mover])
        hands = list(state.hands)
        hands[mover] = hands[mover] - {card}
        if not state.led:
            return state._replace(hands=(hands[0], hands[1]), led=card)
        winner = state.leader if state.led > card else mover
        tricks = list(state.tricks)
        tricks[winner] += 1
        return State(state.dealt, (hands[0], hands[1]), winner, 0, (tricks[0], tricks[1]))

    def percepts(self, state: State, joint: Sequence[Move]) -> tuple[tuple[str, ...], ...]:
        self.next_state(state, joint)
        seen: list[tuple[str, ...]] = [(), (), ()]
        if state.dealt < _DEALS:
            seen[state.dealt] = (f"(hand {' '.join(map(str, _cards(joint[CHANCE])))})",)
        elif not state.led:
            seen[1 - state.leader] = (f"(led {_cards(joint[state.leader])[0]})",)
        else:
            seen[state.leader] = (f"(followed {_cards(joint[1 - state.leader])[0]})",)
        return (seen[0], seen[1], seen[2])

    def is_terminal(self, state: State) -> bool:
        return state.dealt == _DEALS and not state.hands[NORTH] and not state.hands[SOUTH]

    def goals(self, state: State) -> Goals:
        north = 100 if state.tricks[NORTH] >= 2 else 0
        return (north, 100 - north, 0)

    def render(self, state: State) -> str:
        def hand(role: int) -> str:
            return " ".join(map(str, sorted(state.hands[role]))) or "-"

        led = f", {state.led} led" if state.led else ""
        return (
            f"north {hand(NORTH)} ({state.tricks[NORTH]} tricks)\n"
            f"south {hand(SOUTH)} ({state.tricks[SOUTH]} tricks)\n"
            f"{self.roles[state.leader]} leads{led}"
        )
