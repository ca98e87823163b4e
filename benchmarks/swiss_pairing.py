"""How long one round of a Swiss takes to pair, as the field grows: the pairing before issue
70 (networkx's matching of the complete graph, in pure Python), a compiled matching of the
complete graph (rustworkx's), and the sparse graph with its proof (what `pair` uses above
64 players); with the 400/100 ratio of each, in the same run.

Usage: python benchmarks/swiss_pairing.py [--players 10,100,400,1000,3000] [--round 3]
           [--games 2] [--seeds 3] [--repeat 5] [--networkx-up-to 200]
           [--complete-up-to 1000] [--json]

The field: N players; rounds 1 to R-1 paired by `pair` and their games' results drawn at
random (win, draw or loss alike), then round R paired by each way on the same players; once
for each of --seeds seeds, since a field's results decide how much work its round is. A
seed's time is the median of --repeat runs (one run where one takes over 10 s), a field's
the median of its seeds'. All ways' pairings cost the same (checked): the time is the only
difference.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _help import described
from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.tournaments.swiss import Past, matching_players, pair  # noqa: E402
from referee.tournaments.swiss_matching import (  # noqa: E402
    Players,
    complete_least_cost,
    pairs_of,
    sparse_least_cost,
)
from tests.support.swiss_reference import matched, play_round  # noqa: E402

Matching = Callable[[list[str], Past, int], list[tuple[str, str]]]
ONCE_OVER_S = 10.0


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def compiled(way: Callable[[Players], list[tuple[int, int]]]) -> Matching:
    def pairing(standing: list[str], past: Past, games: int) -> list[tuple[str, str]]:
        found = way(matching_players(standing, past, games))
        return [(standing[i], standing[j]) for i, j in found]

    return pairing


WAYS: dict[str, Matching] = {
    "networkx, complete graph (before)": matched,
    "rustworkx, complete graph": compiled(complete_least_cost),
    "rustworkx, sparse graph and proof": compiled(sparse_least_cost),
}


def field_at(size: int, number: int, games: int, seed: int) -> tuple[list[str], Past]:
    """The players of round `number` (the bye's, if any, set aside) in standing order, and
    what the rounds before it left them."""
    field = [f"p{n:04d}" for n in range(size)]
    rng, past = random.Random(f"swiss pairing {size} {seed}"), Past()
    for played in range(1, number):
        play_round(pair(played, field, past, games), past, games, rng)
    order = {name: index for index, name in enumerate(field)}
    standing = sorted(field, key=lambda name: (-past.scores[name], order[name]))
    if size % 2:
        # The bye as `pair` gives it; the matching pairs the others.
        standing.remove(pair(number, field, past, games).bye or "")
    return standing, past


def cost(standing: list[str], past: Past, games: int, pairs: list[tuple[str, str]]) -> int:
    """A pairing's total cost, as the matching costs its pairs."""
    every = pairs_of(matching_players(standing, past, games))
    rank = {name: index for index, name in enumerate(standing)}
    size = len(standing)
    total = 0
    for a, b in pairs:
        i, j = sorted((rank[a], rank[b]))
        total += every.cost(i * size - i * (i + 1) // 2 + j - i - 1)
    return total


def timed(way: Matching, standing: list[str], past: Past, games: int, repeat: int) -> dict:
    times, pairs = [], []
    for _ in range(repeat):
        began = time.perf_counter()
        pairs = way(standing, past, games)
        times.append(time.perf_counter() - began)
        if times[-1] > ONCE_OVER_S:
            break
    return {"seconds": round(statistics.median(times), 4), "runs": len(times), "pairs": pairs}


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument(
        "--players",
        default="10,100,400,1000,3000",
        help="the fields (default 10,100,400,1000,3000)",
    )
    parser.add_argument("--round", type=int, default=3, help="the round paired (default 3)")
    parser.add_argument("--games", type=int, default=2, help="games a pairing (default 2)")
    parser.add_argument("--seeds", type=int, default=3, help="fields of each size (default 3)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument(
        "--networkx-up-to", type=int, default=200, help="largest field networkx pairs (200)"
    )
    parser.add_argument(
        "--complete-up-to", type=int, default=1000, help="largest complete graph (1000)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    try:
        sizes = [int(size) for size in args.players.split(",")]
    except ValueError:
        print(f"swiss_pairing.py: --players {args.players}: not numbers", file=sys.stderr)
        return 2
    if min(sizes) < 2 or min(args.round, args.games, args.seeds, args.repeat) < 1:
        print("swiss_pairing.py: at least 2 players, round 1, 1 game, seed, run", file=sys.stderr)
        return 2
    limits = {
        "networkx, complete graph (before)": args.networkx_up_to,
        "rustworkx, complete graph": args.complete_up_to,
        "rustworkx, sparse graph and proof": max(sizes),
    }
    rows: list[dict[str, Any]] = []
    for size in sizes:
        row: dict[str, Any] = {"players": size}
        for seed in range(args.seeds):
            began = time.perf_counter()
            standing, past = field_at(size, args.round, args.games, seed)
            progress(
                f"{size} players, seed {seed}: rounds before in {time.perf_counter() - began:.1f} s"
            )
            costs = set()
            for name, way in WAYS.items():
                if size > limits[name]:
                    continue
                found = timed(way, standing, past, args.games, args.repeat)
                costs.add(cost(standing, past, args.games, found.pop("pairs")))
                row.setdefault(name, {"seeds": []})["seeds"].append(found)
                progress(f"{size} players, seed {seed}, {name}: {found['seconds']} s")
            if len(costs) > 1:
                print(
                    f"swiss_pairing.py: {size} players, seed {seed}: costs differ", file=sys.stderr
                )
                return 1
        for name in WAYS:
            if name in row:
                seeds = row[name]["seeds"]
                row[name]["seconds"] = statistics.median(found["seconds"] for found in seeds)
        rows.append(row)
    by_size = {row["players"]: row for row in rows}
    ratios = {
        name: round(by_size[400][name]["seconds"] / by_size[100][name]["seconds"], 1)
        for name in WAYS
        if name in by_size.get(400, {}) and name in by_size.get(100, {})
    }
    report = {
        "round": args.round,
        "games_per_pairing": args.games,
        "seeds": args.seeds,
        "fields": rows,
    }
    report["ratio_400_to_100"] = ratios
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"round {args.round} of a Swiss, {args.games} games a pairing: seconds to pair it"
        f" (the median of {args.seeds} fields)"
    )
    table = [
        [row["players"], *(row[name]["seconds"] if name in row else "" for name in WAYS)]
        for row in rows
    ]
    print(tabulate(table, headers=["players", *WAYS]))
    for name, ratio in ratios.items():
        print(f"{name}: 400 players take {ratio} times as long as 100")
    return 0


if __name__ == "__main__":
    sys.exit(main())
