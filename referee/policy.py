"""The fault policy: who is asked, what a fault costs, which moves the referee draws itself.

Pure functions of the legal moves, the faults and the match's seeded generator. The match
decides every step with them, and replay checks a transcript with the same functions in the
same order, so a record can be verified only if the referee's own choices are reproduced.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from referee.errors import FaultKind

if TYPE_CHECKING:
    from referee.games import Move

# Seeds of the draws (and of a tournament's schedule): what a 64-bit signed field can hold.
MAX_SEED = 2**63 - 1

# Faults after which a player is gone: it plays no further part in the match.
OUT_OF_THE_MATCH = frozenset({FaultKind.CRASH, FaultKind.RESOURCE, FaultKind.RESIGNED})
# Faults that forfeit the match under every policy: a person who resigned gave it up, and
# moves drawn for them under `random` would play on (and could win) a match they had left.
CONCEDED = frozenset({FaultKind.RESIGNED})


class Policy(StrEnum):
    """What a fault costs: the match, or the move (replaced by a random legal one). A
    resignation costs the match under either (`forfeits`)."""

    FORFEIT = "forfeit"
    RANDOM = "random"


def forfeits(policy: Policy, kind: FaultKind) -> bool:
    """Whether a fault of `kind` ends the match, with 0 for its role, under `policy`."""
    return policy is Policy.FORFEIT or kind in CONCEDED


def asked(
    legal: Sequence[Sequence[Move]], out: Collection[int], forced_too: Collection[int] = ()
) -> list[int]:
    """The roles sent `go`: those still in the match with a choice of moves, or in
    `forced_too` (GGP players, which a game manager asks at every step, forced or not)."""
    return [
        role
        for role, moves in enumerate(legal)
        if (len(moves) > 1 or role in forced_too) and role not in out
    ]


@dataclass(frozen=True)
class Resolution:
    """A step decided: the joint move, the moves the referee drew, forfeits, who is out after."""

    joint: tuple[Move, ...]
    drawn: Mapping[int, Move]  # for roles out of the match that had a choice
    replacements: Mapping[int, Move]  # for roles whose answer was a fault, under `random`
    forfeits: frozenset[int]  # roles whose fault ends the match, under `forfeit`
    out: frozenset[int]


def resolve(
    policy: Policy,
    legal: Sequence[Sequence[Move]],
    out: Collection[int],
    answers: Mapping[int, Move | FaultKind],
    rng: random.Random,
) -> Resolution:
    """Decide a step from each asked role's answer: its move, or the kind of its fault.

    Under `random`, a fault that forfeits (a resignation) draws no replacement, and the other
    faults of its step still draw theirs, recorded though the step is not played.

    The generator draws first the moves of roles out of the match, then the replacements,
    each in role order: that order is part of every transcript's meaning.
    """
    joint = [moves[0] for moves in legal]
    drawn: dict[int, Move] = {}
    for role, moves in enumerate(legal):
        if len(moves) > 1 and role in out:
            drawn[role] = joint[role] = rng.choice(moves)
    replacements: dict[int, Move] = {}
    forfeited: set[int] = set()
    now_out = set(out)
    for role in sorted(answers):
        answer = answers[role]
        if not isinstance(answer, FaultKind):
            joint[role] = answer
            continue
        if answer in OUT_OF_THE_MATCH:
            now_out.add(role)
        if forfeits(policy, answer):
            forfeited.add(role)
        else:
            replacements[role] = joint[role] = rng.choice(legal[role])
    return Resolution(tuple(joint), drawn, replacements, frozenset(forfeited), frozenset(now_out))


def start_outcome(policy: Policy, faulty: Collection[int]) -> tuple[frozenset[int], frozenset[int]]:
    """(forfeits, out) after the start: a player that did not get ready is out of step for good."""
    return (frozenset(faulty) if policy is Policy.FORFEIT else frozenset()), frozenset(faulty)


def forfeit_goals(roles: int, forfeits: Collection[int]) -> tuple[int, ...]:
    """The goals of a forfeit: 0 to each faulty role, 100 to every other."""
    return tuple(0 if role in forfeits else 100 for role in range(roles))


def opening_rng(seed: int) -> random.Random:
    """The generator of a match's opening: apart from the policy's draws, and a function of the
    seed alone, so that both seatings of a pair (which share a seed) open alike."""
    return random.Random(f"opening {seed}")


def opening_move(legal: Sequence[Sequence[Move]], rng: random.Random) -> tuple[Move, ...]:
    """A joint move of the opening: each role's move drawn uniformly, in role order (a forced
    move draws nothing)."""
    return tuple(moves[0] if len(moves) == 1 else rng.choice(moves) for moves in legal)
