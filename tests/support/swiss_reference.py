"""The Swiss pairing as it was before issue 70, kept to check today's against: the complete
graph of the field, costed pair by pair in Python, and networkx's maximum-weight matching
(Edmonds' blossom algorithm in pure Python, cubic in the field). And a round's results drawn
at random, kept as a run keeps them."""

from __future__ import annotations

import random
from itertools import combinations

import networkx as nx

from referee.tournaments.swiss import FIRST, SECOND, Past, Round, _needs, seating


def play_round(round_: Round, past: Past, games: int, rng: random.Random) -> None:
    """Results drawn at random for a round's pairs, kept as a run keeps them."""
    for a, b in round_.pairs:
        past.met.add(frozenset((a, b)))
        for game in range(games):
            first, second = seating((a, b), game)
            past.seats[first].append(FIRST)
            past.seats[second].append(SECOND)
            scored = rng.choice([0.0, 0.5, 1.0])
            past.scores[first] += scored
            past.scores[second] += 1 - scored
    if round_.bye:
        past.byes[round_.bye] += 1
        past.scores[round_.bye] += games


def costs(standing: list[str], past: Past, games_per_pairing: int) -> dict[tuple[str, str], int]:
    """Every pair's cost (first ranked higher), as the pairing before issue 70 costed it."""
    size = len(standing)
    # Each tier of cost is more than all the pairs of the tiers below it can add up to: the
    # order within equal scores, then a seat both want, the scores, a seat both must have,
    # and a pair that has met.
    prefer = size**3 + 1
    score = prefer * (size + 1)
    # Scores in half points, whole numbers: costs the matching adds exactly.
    halves = {name: round(2 * past.scores[name]) for name in standing}
    most_apart = (max(halves.values(), default=0) - min(halves.values(), default=0)) ** 2
    must = score * (size * (most_apart + 1) + 1)
    again = must * (size + 1)
    # With an even number of games a pairing, each player has each seat equally often.
    needs = {name: _needs(name, past) for name in standing} if games_per_pairing % 2 else {}
    found: dict[tuple[str, str], int] = {}
    for i, j in combinations(range(size), 2):
        a, b = standing[i], standing[j]
        cost = score * (halves[a] - halves[b]) ** 2 + (abs(j - i) - size // 2) ** 2
        if needs:
            (wants_a, must_a), (wants_b, must_b) = needs[a], needs[b]
            if wants_a is not None and wants_a == wants_b:
                cost += must if must_a and must_b else prefer
        if frozenset((a, b)) in past.met:
            cost += again
        found[(a, b)] = cost
    return found


def matched(standing: list[str], past: Past, games_per_pairing: int) -> list[tuple[str, str]]:
    """Everyone of `standing` (an even number, best first) paired at the least cost."""
    found = costs(standing, past, games_per_pairing)
    graph: nx.Graph[str] = nx.Graph()
    top = max(found.values(), default=0) + 1
    for (a, b), cost in found.items():
        graph.add_edge(a, b, weight=top - cost)
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    rank = {name: index for index, name in enumerate(standing)}
    return [(a, b) if rank[a] < rank[b] else (b, a) for a, b in matching]


def total(
    standing: list[str], past: Past, games_per_pairing: int, pairs: list[tuple[str, str]]
) -> int:
    """What a pairing of `standing` costs, every pair as the pairing before issue 70 costed it."""
    found = costs(standing, past, games_per_pairing)
    rank = {name: index for index, name in enumerate(standing)}
    return sum(found[(a, b) if rank[a] < rank[b] else (b, a)] for a, b in pairs)
