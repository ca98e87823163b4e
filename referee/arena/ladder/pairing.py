"""Who the ladder pairs next: pure functions of the field as the ladder sees it, no database.

A pair is two matches, the seats swapped, with one seed: the same draws by the referee and
the same opening, so neither seat's advantage nor a lucky opening decides it. The first
version of a pair is the one its matches tell most about: a version still placing, then the
most uncertain. A placing version's opponents are spread over the whole ladder, strong and
weak, so that its first results place it wherever it belongs (with `close`, the others'
opponents have close ratings). No version starves: one that has waited
`patience` pairs goes first, the longest waiter before the others, so in any window of
`window(field)` pairs every version plays.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from referee.arena.store.config import PairingRule

# The opponents of nearest rating one is drawn from, so that a pair does not meet again and
# again while their ratings stay close.
CLOSE_FEW = 3
# The seeds of pairs: positive, and small enough for any database's integer.
SEED_BITS = 31
# A margin for a version not yet rated: more uncertain than any rated one.
UNRATED_MARGIN = math.inf
# Where a placing version's k-th opponent stands in the ladder's order: the k-th point of
# the golden ratio's sequence, which spreads any number of points evenly over it.
GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class Entry:
    """A version on the ladder as pairing sees it: its bot (two versions of one bot never
    meet), whether it is placing, its matches played and planned, its rating and margin
    (None before its first fit), and how many pairs were planned since its last."""

    version: int
    bot: int
    placing: bool
    matches: int
    rating: float | None
    margin: float | None
    waited: int


@dataclass(frozen=True)
class Pair:
    """Two matches of `game` with one seed: `first` in the first seat, then `second`."""

    first: int
    second: int
    game: str
    seed: int

    @property
    def seatings(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return (self.first, self.second), (self.second, self.first)


@dataclass(frozen=True)
class Plan:
    """Pairs planned, and the field and games' counts as they stand after them."""

    pairs: list[Pair]
    entries: list[Entry]
    games: dict[str, int]


def patience(size: int) -> int:
    """The pairs a version of a field of `size` may wait before it goes first."""
    return 2 * size


def window(size: int) -> int:
    """A number of pairs in which every version of a field of `size` plays: it waits at most
    `patience`, then the others that waited as long go first, one per pair."""
    return patience(size) + size


def plan(
    entries: Sequence[Entry],
    count: int,
    games: Mapping[str, int],
    rule: PairingRule,
    placement_matches: int,
    rng: random.Random,
) -> Plan:
    """Up to `count` pairs for the field `entries`, each at the game that has had fewest
    pairs (`games`: each game's pairs so far, in the config's order); fewer when no two
    versions of different bots are left to meet. Each pair costs a pass over the field (a
    version's wait is counted from when it was last paired here, not rewritten for every
    version at every pair), plus a sort of it for a placing version's opponent."""
    field = {entry.version: entry for entry in entries}
    # The pairs planned here when each version was last paired (0: not yet): its wait is
    # its entry's, and one more for each pair planned since.
    since = dict.fromkeys(field, 0)
    played = dict(games)
    pairs: list[Pair] = []
    for planned in range(count):
        waits = {v: planned - since[v] for v in field}
        pair = _next_pair(list(field.values()), waits, played, rule, placement_matches, rng)
        if pair is None:
            break
        pairs.append(pair)
        played[pair.game] += 1
        for version in (pair.first, pair.second):
            field[version] = _after(field[version])
            since[version] = planned + 1
    made = len(pairs)
    after = [
        Entry(
            e.version, e.bot, e.placing, e.matches, e.rating, e.margin, e.waited + made - since[v]
        )
        for v, e in field.items()
    ]
    return Plan(pairs, after, played)


def _next_pair(
    entries: list[Entry],
    waits: Mapping[int, int],
    games: Mapping[str, int],
    rule: PairingRule,
    placement_matches: int,
    rng: random.Random,
) -> Pair | None:
    if not games:
        return None
    """The next pair of `entries`, each of which has waited its entry's `waited` and
    `waits` more pairs."""
    limit = patience(len(entries))

    def still_placing(entry: Entry) -> bool:
        return entry.placing and entry.matches < placement_matches

    def urgency(entry: Entry) -> tuple[float, ...]:
        waited = entry.waited + waits[entry.version]
        if waited >= limit:
            return (0, -waited)
        if still_placing(entry):
            return (1, entry.matches)
        margin = UNRATED_MARGIN if entry.margin is None else entry.margin
        return (2, -margin, entry.matches)

    if not entries:
        return None
    keys = [urgency(entry) for entry in entries]
    most = min(keys)
    # The random part last: ties broken alike however the entries came.
    tied = sorted((e for e, key in zip(entries, keys, strict=True) if key == most), key=_by_version)
    first = rng.choice(tied)
    others = [entry for entry in entries if entry.bot != first.bot]
    if not others:
        return None  # every version is of one bot: none may meet another
    placing = still_placing(first)
    second = _spread(first, others) if placing else _opponent(first, others, rule, rng)
    game = min(games, key=lambda name: games[name])
    return Pair(first.version, second.version, game, rng.getrandbits(SEED_BITS))


def _by_version(entry: Entry) -> int:
    return entry.version


def _spread(first: Entry, others: list[Entry]) -> Entry:
    """A placing version's opponent: its k-th placement pair meets the one at the k-th point
    of GOLDEN's sequence through the others, weakest to strongest (an unrated one at 0)."""
    ranked = sorted(others, key=lambda e: (e.rating or 0.0, e.version))
    at = ((first.matches // 2 + 0.5) * GOLDEN) % 1.0
    return ranked[min(int(at * len(ranked)), len(ranked) - 1)]


def _opponent(first: Entry, others: list[Entry], rule: PairingRule, rng: random.Random) -> Entry:
    if rule is PairingRule.RANDOM:
        return rng.choice(others)
    # A version not yet rated stands at the mean, which is 0.
    mine = first.rating or 0.0
    nearest = heapq.nsmallest(
        CLOSE_FEW, others, key=lambda e: (abs((e.rating or 0.0) - mine), e.version)
    )
    return rng.choice(nearest)


def _after(entry: Entry) -> Entry:
    """A version once a pair of it is planned: its two matches counted, its wait ended, and
    its margin narrowed as two more results would narrow it (as one over the root of the
    matches)."""
    margin = entry.margin
    if margin is not None:
        margin *= math.sqrt((entry.matches + 1) / (entry.matches + 3))
    return replace(entry, matches=entry.matches + 2, margin=margin, waited=0)


def waits(recent: Sequence[tuple[int, int]], versions: Sequence[int]) -> dict[int, int]:
    """How many pairs each of `versions` has waited, from the most recent pairs planned
    (newest first; each its two versions): as many as there are for one in none of them."""
    waited = dict.fromkeys(versions, len(recent))
    for age in reversed(range(len(recent))):
        for version in recent[age]:
            if version in waited:
                waited[version] = age
    return waited
