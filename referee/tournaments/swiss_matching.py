"""A Swiss round's least-cost pairing, found on a sparse graph and proved the least cost of
the complete one.

The cost of a pair is a sum of tiers, each weighted above all that the tiers below it can
add up to (swiss.py says what each is for): the pair has met; both must have the same seat;
the square of their scores' difference; both want the same seat; how far their distance in
the standing is from half the field. Edmonds' blossom algorithm on the complete graph of n
players is cubic in n: in pure Python a round of 200 players took 9 s, of 400 about 100 s.

Here the blossom algorithm (rustworkx's, compiled) runs on a few pairs a player, and prices
from the matching's linear program prove that no pairing of the complete graph costs less:

- Give each player v a price y_v, and each odd top set S_k (the players of the k best
  scores, where they are odd in number) a price z_k >= 0. A pair's reduced cost is its cost
  less its two players' prices and the prices of the top sets it leaves (one player in,
  one out). Where no pair's reduced cost is negative, a pairing M of everyone costs
  sum(reduced costs of M) + sum(y) + sum_k z_k * (pairs of M that leave S_k), and an odd
  set is left by at least one pair of any pairing: so M costs at least its reduced costs
  plus the bound sum(y) + sum(z).
- So a pair of a least-cost pairing has a reduced cost of at most the gap between any
  pairing found and the bound. The pairs within that gap hold every least-cost pairing, and
  the least-cost pairing among them is one of the complete graph.

The prices are a fractional matching's dual solution (scipy's HiGHS), computed tier by tier:
each tier among the pairs whose reduced cost the tiers above leave at nothing, with a top
set that a tier above prices left exactly once (as every pairing least in that tier leaves
it), and each program given only the pairs its prices call for. They are rounded down to
multiples of 1/64 and lowered wherever a pair would price below its cost, in whole numbers:
the proof holds whatever the prices are, and prices that bound poorly only make the graph
larger and the matching slower, never a costlier pairing.

Growth: the pairs' costs, their reduced costs and the check are numpy arrays over the n^2/2
pairs, quadratic and fast; the programs see about a dozen pairs a player and the matching
about four (round 3 of 1,000 players, where each could have 999), where the prices bound
tightly, as they do for the rounds the tests and the benchmark pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import rustworkx as rx
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]

# Up to this many players the complete graph (2,016 pairs) is matched in milliseconds, before
# the programs are set up. Above, the sparse graph: at 100 to 200 players either takes a
# tenth of a second or two, and the sparse graph's time grows with the field as it will.
COMPLETE_UP_TO = 64
# Prices are whole multiples of 1/GRID: the check is in integers, exact.
GRID = 64
# A tier's programs leave its prices a few units of 1/GRID off where they round: its pairs
# within these many units of their prices are the next tier's.
TIGHT = 2
# The first graph matched holds the pairs within this many cost units of their prices.
FIRST_GAP = 16 * GRID
# A program's columns: at most this many more a player each time they are priced.
NEW_COLUMNS = 2
# The programs start from the pairs within WINDOW places of a shifted pairing's partner, and
# across a group's boundary from its EDGE players on either side.
WINDOW = 4
EDGE = 3
PRICING_ROUNDS = 60
# A fractional matching's artificial columns cost this much more than any pair, so that a
# program without a perfect fractional matching still has prices (and says it has none).
ARTIFICIAL = 4.0


@dataclass(frozen=True)
class Players:
    """A round's players, best first, as the costs need them: scores in half points, the
    seat each wants or must have (-1: neither), whether it must, and the pairs (by index in
    the standing) that have met."""

    halves: Sequence[int]
    wants: Sequence[int]
    must: Sequence[bool]
    met: Sequence[tuple[int, int]]


@dataclass(frozen=True)
class Tier:
    """One tier of a pair's cost: each pair's, whether it counts in the high part, its weight
    there, and top-set prices that bound it from below (feasible for every pair)."""

    cost: Ints
    high: bool
    weight: int
    bound: Ints


@dataclass(frozen=True)
class Pairs:
    """Every pair i < j of the standing, with each tier of its cost, and the weights that
    make the tiers one number: a pair costs score * high + low, where high is again * met +
    must * both must + squared difference (in units of a score point's weight) and low is
    prefer * both want + order."""

    first: Ints
    second: Ints
    group_first: Ints
    group_second: Ints
    # Where each group of equal scores begins in the standing, and where the last ends.
    begins: Ints
    # Whether the top set k (the players of groups 0..k) is odd in number.
    odd: Bools
    # The pairs the programs start from (see `_near`).
    near: Bools
    tiers: tuple[Tier, ...]
    high: Ints
    low: Ints
    score: int
    size: int

    def cost(self, index: int) -> int:
        """A pair's cost, as one exact number."""
        return self.score * int(self.high[index]) + int(self.low[index])


@dataclass
class Prices:
    """Player and top-set prices in units of 1/GRID, each split into a high part (counted in
    units of `Pairs.score`) and a low one."""

    high: Ints
    low: Ints
    sets_high: Ints
    sets_low: Ints

    def bound(self, score: int) -> int:
        """The least any pairing can cost, in units of 1/GRID."""
        high = int(self.high.sum()) + int(self.sets_high.sum())
        return score * high + int(self.low.sum()) + int(self.sets_low.sum())


def pairs_of(players: Players) -> Pairs:
    """The cost of every pair, tier by tier. Each tier weighs more than all the pairs of the
    tiers below it can add up to: the order within equal scores, then a seat both want, the
    scores, a seat both must have, and a pair that has met."""
    halves = np.asarray(players.halves, dtype=np.int64)
    wants = np.asarray(players.wants, dtype=np.int64)
    must = np.asarray(players.must, dtype=np.bool_)
    size = len(halves)
    prefer = size**3 + 1
    score = prefer * (size + 1)
    most_apart = int(halves.max() - halves.min()) ** 2 if size else 0
    must_units = size * (most_apart + 1) + 1
    again_units = must_units * (size + 1)
    first, second = (np.asarray(a, dtype=np.int64) for a in np.triu_indices(size, 1))
    met = np.zeros((size, size), dtype=np.bool_)
    for a, b in players.met:
        met[a, b] = met[b, a] = True
    again = met[first, second]
    same = (wants[first] == wants[second]) & (wants[first] >= 0)
    both_must = same & must[first] & must[second]
    wants = same & ~both_must
    # Scores in half points, whole numbers: costs added exactly.
    squared = (halves[first] - halves[second]) ** 2
    # Among equal scores, pairs half the field apart in its order are preferred.
    order = (second - first - size // 2) ** 2
    group = np.zeros(size, dtype=np.int64)
    group[1:] = np.cumsum(halves[1:] != halves[:-1])
    ends = np.cumsum(np.bincount(group))
    begins = np.concatenate([np.zeros(1, dtype=np.int64), ends])
    odd = ends[:-1] % 2 == 1
    none = np.zeros(len(odd), dtype=np.int64)
    # Each odd top set is left by at least one pair, which crosses at least the score gap
    # below it: a bound on the squared differences (a pair leaving several top sets crosses
    # their gaps, whose squares add up to no more than its own difference's square).
    gaps = halves[begins[:-2]] - halves[begins[1:-1]]
    crossed = np.where(odd, gaps**2, 0)
    tiers = (
        Tier(again.astype(np.int64), True, again_units, none),
        Tier(both_must.astype(np.int64), True, must_units, none),
        Tier(squared, True, 1, crossed),
        Tier(wants.astype(np.int64), False, prefer, none),
        Tier(order, False, 1, none),
    )
    high = again_units * tiers[0].cost + must_units * tiers[1].cost + squared
    low = prefer * tiers[3].cost + order
    near = _near(first, second, group[first], group[second], begins)
    return Pairs(
        first,
        second,
        group[first],
        group[second],
        begins,
        odd,
        near,
        tiers,
        high,
        low,
        score,
        size,
    )


def least_cost(players: Players) -> list[tuple[int, int]]:
    """Everyone paired (an even number of players), at the least total cost of all pairings:
    each pair as the indices (i, j), i < j, of its players in the standing. A small field on
    its complete graph, which is matched sooner than the programs are set up; a large one on
    the sparse graph that its prices prove enough."""
    if len(players.halves) <= COMPLETE_UP_TO:
        return complete_least_cost(players)
    return sparse_least_cost(players)


def complete_least_cost(players: Players) -> list[tuple[int, int]]:
    """The least-cost pairing of the complete graph: every pair an edge."""
    pairs = pairs_of(players)
    return _as_pairs(pairs, _matching(pairs, np.arange(len(pairs.first))))


def sparse_least_cost(players: Players) -> list[tuple[int, int]]:
    """The least-cost pairing of the complete graph, matched on the pairs within the gap
    between a pairing found and the prices' bound."""
    pairs = pairs_of(players)
    if pairs.size == 0:
        return []
    prices = _prices(pairs)
    high, low = _make_feasible(pairs, prices)
    bound = prices.bound(pairs.score)
    gap = FIRST_GAP
    while True:
        found = _matching(pairs, _within(pairs, high, low, gap))
        if 2 * len(found) < pairs.size:
            # Too few pairs to pair everyone: a wider graph.
            gap *= 16
            continue
        # The gap that a pair of a least-cost pairing can have, by the pairing found.
        needed = GRID * sum(pairs.cost(index) for index in found) - bound
        if needed <= gap:
            return _as_pairs(pairs, found)
        gap = needed


def _as_pairs(pairs: Pairs, found: list[int]) -> list[tuple[int, int]]:
    return sorted((int(pairs.first[index]), int(pairs.second[index])) for index in found)


def _prices(pairs: Pairs) -> Prices:
    """Prices that no pair's cost is below, their bound as close to the least cost as the
    tiers' programs make it."""
    size, sets = pairs.size, len(pairs.odd)
    prices = Prices(*(np.zeros(n, dtype=np.int64) for n in (size, size, sets, sets)))
    universe = np.arange(len(pairs.first))
    # A pairing of the programs' first pairs: in each tier where it costs no more than a
    # bound known beforehand (nothing, for most), so does the least-cost pairing, and the
    # bound's prices are the tier's, with no program; until a tier where it costs more.
    sample = universe[pairs.near]
    found = _matching(pairs, sample)
    meets_bounds = 2 * len(found) == size
    once = np.zeros(sets, dtype=np.bool_)
    for tier in pairs.tiers:
        costs = tier.cost[universe]
        if not costs.any():
            continue
        solved: tuple[Ints, Ints] | None = (np.zeros(size, dtype=np.int64), GRID * tier.bound)
        meets_bounds = meets_bounds and int(tier.cost[found].sum()) == int(tier.bound.sum())
        if not meets_bounds:
            solved = _tier_prices(pairs, universe, costs, once)
        if solved is None:
            break
        players, top_sets = solved
        if tier.high:
            prices.high += tier.weight * players
            prices.sets_high += tier.weight * top_sets
        else:
            prices.low += tier.weight * players
            prices.sets_low += tier.weight * top_sets
        reduced = GRID * costs - _priced(pairs, universe, players, top_sets)
        universe = universe[reduced <= TIGHT]
        once |= top_sets != 0
    return prices


def _priced(pairs: Pairs, among: Ints | None, players: Ints, top_sets: Ints) -> Ints:
    """What the prices give the pairs `among` (None: every pair): their players' and the top
    sets they leave."""
    left = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(top_sets)])
    if among is None:
        first, second = pairs.first, pairs.second
        low, high = pairs.group_first, pairs.group_second
    else:
        first, second = pairs.first[among], pairs.second[among]
        low, high = pairs.group_first[among], pairs.group_second[among]
    return np.asarray(players[first] + players[second] + left[high] - left[low], dtype=np.int64)


def _tier_prices(
    pairs: Pairs, universe: Ints, costs: Ints, once: Bools
) -> tuple[Ints, Ints] | None:
    """One tier's prices among the pairs of `universe`, in units of 1/GRID and feasible
    there: a fractional matching's dual, each odd top set left at least once (exactly once
    where `once`). None where no fractional matching pairs everyone."""
    solved = _fractional(pairs, universe, costs.astype(np.float64), once)
    if solved is None:
        return None
    players = np.floor(solved[0] * GRID + 1e-6).astype(np.int64)
    top_sets = np.floor(solved[1] * GRID + 1e-6).astype(np.int64)
    top_sets = np.where(once, top_sets, np.maximum(top_sets, 0))
    reduced = GRID * costs - _priced(pairs, universe, players, top_sets)
    _lower(players, pairs.first[universe], np.maximum(-reduced, 0))
    return players, top_sets


def _lower(prices: Ints, players: Ints, by: Ints) -> Ints:
    """Each player's price lowered by the most any of its pairs asks; by how much."""
    drop = np.zeros_like(prices)
    np.maximum.at(drop, players, by)
    prices -= drop
    return drop


def _fractional(
    pairs: Pairs, universe: Ints, costs: NDArray[np.float64], once: Bools
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """The dual of the least-cost fractional perfect matching on the pairs of `universe`:
    player prices and top-set prices. The program starts from a few pairs a player (near
    their partners in a shifted pairing) and takes in those whose reduced cost is negative
    until none is."""
    size = pairs.size
    first, second = pairs.first[universe], pairs.second[universe]
    low, high = pairs.group_first[universe], pairs.group_second[universe]
    rows = np.flatnonzero(pairs.odd | once)
    exact = once[rows]
    active = pairs.near[universe]
    penalty = ARTIFICIAL * (float(costs.max()) + 1) * size
    for _ in range(PRICING_ROUNDS):
        columns = np.flatnonzero(active)
        degree, crossings = _program(
            size, first[columns], second[columns], low[columns], high[columns], rows
        )
        count = len(columns)
        # One artificial column a row, so that every program has a solution.
        artificial = sparse.identity(size + len(rows), format="csr")
        matrix = sparse.hstack([sparse.vstack([degree, crossings]), artificial]).tocsr()
        objective = np.concatenate([costs[columns], np.full(size + len(rows), penalty)])
        inequal = np.concatenate([np.zeros(size, dtype=np.bool_), ~exact])
        at_least = {}
        if inequal.any():
            at_least = {"A_ub": -matrix[inequal], "b_ub": -np.ones(int(inequal.sum()))}
        # scipy's stubs take no sparse matrices, which its HiGHS methods do.
        solution = linprog(  # type: ignore[call-overload]
            objective,
            A_eq=matrix[~inequal],
            b_eq=np.ones(int((~inequal).sum())),
            bounds=(0, None),
            method="highs",
            **at_least,
        )
        if solution.status != 0:
            return None
        duals = np.zeros(size + len(rows))
        duals[~inequal] = solution.eqlin.marginals
        duals[inequal] = -solution.ineqlin.marginals
        players = duals[:size]
        top_sets = np.zeros(len(pairs.odd))
        top_sets[rows] = duals[size:]
        left = np.concatenate([[0.0], np.cumsum(top_sets)])
        reduced = costs - players[first] - players[second] - (left[high] - left[low])
        wanted = np.flatnonzero((reduced < -1e-9) & ~active)
        if len(wanted) == 0:
            if solution.x[count:].max(initial=0.0) > 1e-9:
                return None
            return players, top_sets
        best = wanted[np.argsort(reduced[wanted], kind="stable")[: NEW_COLUMNS * size]]
        active[best] = True
    return players, top_sets


def _program(
    players: int, first: Ints, second: Ints, low: Ints, high: Ints, rows: Ints
) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """A fractional matching's constraints on these pairs: each player once (a row each),
    and the pairs that leave each top set of `rows`."""
    count, size_rows = len(first), len(rows)
    columns = np.arange(count)
    degree = sparse.csr_matrix(
        (np.ones(2 * count), (np.concatenate([first, second]), np.tile(columns, 2))),
        shape=(players, count),
    )
    # The pair leaves top set k where its first player's group is at most k and its
    # second's above.
    leaves = (low[None, :] <= rows[:, None]) & (high[None, :] > rows[:, None])
    which, column = np.nonzero(leaves)
    crossings = sparse.csr_matrix((np.ones(len(which)), (which, column)), shape=(size_rows, count))
    return degree, crossings


def _near(first: Ints, second: Ints, low: Ints, high: Ints, begins: Ints) -> Bools:
    """The pairs a program starts from: in a group, those near a shifted pairing's (the top
    half against the bottom half); across groups, those near the boundary and those half
    the field apart, as the order tier prefers."""
    size = begins[low + 1] - begins[low]
    apart = second - first
    near = (low == high) & (np.abs(apart - size // 2) <= WINDOW)
    edge = (begins[high] - first <= EDGE) | (second - begins[high] < EDGE)
    near |= (high == low + 1) & (edge | (np.abs(apart - begins[-1] // 2) <= WINDOW))
    return np.asarray(near, dtype=np.bool_)


def _make_feasible(pairs: Pairs, prices: Prices) -> tuple[Ints, Ints]:
    """Prices lowered until no pair's reduced cost is negative, exactly: a top set's price
    first (it must not be negative), then the high parts on their own, then the whole; and
    every pair's reduced cost then, in units of 1/GRID, as score * high + low."""
    for k in range(len(pairs.odd)):
        if pairs.score * int(prices.sets_high[k]) + int(prices.sets_low[k]) < 0:
            prices.sets_high[k] = prices.sets_low[k] = 0
    high = GRID * pairs.high - _priced(pairs, None, prices.high, prices.sets_high)
    high += _lower(prices.high, pairs.first, np.maximum(-high, 0))[pairs.first]
    low = GRID * pairs.low - _priced(pairs, None, prices.low, prices.sets_low)
    # score * high + low < 0 where high < ceil(-low / score): there high * score is less
    # than -low, a number that fits.
    short = high < -np.floor_divide(low, pairs.score)
    by = np.where(short, -low - np.where(short, high, 0) * pairs.score, 0)
    low += _lower(prices.low, pairs.first, by)[pairs.first]
    return high, low


def _within(pairs: Pairs, high: Ints, low: Ints, gap: int) -> Ints:
    """The pairs whose reduced cost (score * high + low) is at most `gap`."""
    gap_high, gap_low = divmod(gap, pairs.score)
    if gap_high >= 2**62:
        return np.arange(len(high))
    # score * (high - gap_high) <= gap_low - low, in numbers that fit.
    return np.flatnonzero(high - gap_high <= np.floor_divide(gap_low - low, pairs.score))


def _matching(pairs: Pairs, among: Ints) -> list[int]:
    """The least-cost pairing of the most players these pairs can pair (rustworkx's blossom
    algorithm, on weights that make the least cost the greatest weight)."""
    if len(among) == 0:
        return []
    graph = rx.PyGraph()
    graph.add_nodes_from(range(pairs.size))
    costs = [pairs.cost(int(index)) for index in among]
    top = max(costs) + 1
    first, second = pairs.first[among].tolist(), pairs.second[among].tolist()
    graph.add_edges_from(
        [(a, b, top - cost) for a, b, cost in zip(first, second, costs, strict=True)]
    )
    weight: Callable[[int], int] = int
    matched = rx.max_weight_matching(graph, max_cardinality=True, weight_fn=weight)
    index = {(a, b): int(i) for a, b, i in zip(first, second, among.tolist(), strict=True)}
    return [index[(min(a, b), max(a, b))] for a, b in matched]
