"""How long one rating fit of a whole field takes (`referee.tournaments.ratings.fit`, with its
intervals and LOS), as the field grows.

Usage: python benchmarks/ratings.py [--sizes N ...] [--runs R] [--no-target] [--before]
           [--json]

Each field is synthetic and seeded: players of normally distributed strength (sd 200 Elo),
random pairs of them, each player meeting 20 others on average (all the others in a field of
10), 5 to 15 games a pairing (10 on average), 30% of games drawn and the rest won by the
logistic curve. The target field of issue 70 is another: 3,000 players in exactly 60,000
pairings (each player meeting 40 others on average) of 1,000,000 games together (16 or 17 a
pairing). Each fit is timed R times, after one run that is not counted, and the median
given; the ratio of the 800-player fit's time to the 200-player one's comes from the same
run. One more fit of each field, traced by tracemalloc (numpy's arrays included), gives the
most memory a fit held at once.

--before times the fit as it was before issue 70 (kept in tests/support/ratings_reference.py),
a dense Newton's method in pure Python, without the target field: give it only sizes it
finishes (400 players took it 34.5 s).

Progress goes to standard error; exits 1 when the target field takes more than 5 s or the
800-player fit more than 16 times as long as the 200-player one (each where measured).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy
from _help import described
from tabulate import tabulate

from referee.tournaments.ratings import Pairing, Rating, fit

Fit = Callable[[Iterable[Pairing]], list[Rating]]
ROOT = Path(__file__).resolve().parent.parent

SIZES = (10, 100, 200, 400, 800, 1000, 3000)
TARGET = "3000 (60,000 pairings)"
TARGET_S = 5.0
GROWTH = (200, 800)
GROWTH_TARGET = 16.0
DRAWS = 0.3


@dataclass(frozen=True)
class Field:
    """A synthetic field: its name in the table, its players and its pairings."""

    name: str
    players: int
    pairings: list[Pairing]

    @property
    def games(self) -> int:
        return round(sum(p.games for p in self.pairings))


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def field(
    name: str,
    players: int,
    pairs: int,
    games: Callable[[np.random.Generator, int], np.ndarray],
    seed: int,
) -> Field:
    """`pairs` random distinct pairs of `players`, with games for each from `games`."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 200.0, players)
    met: set[tuple[int, int]] = set()
    while len(met) < pairs:
        a, b = rng.integers(players, size=2)
        if a != b:
            met.add((min(a, b), max(a, b)))
    first, second = np.array(sorted(met)).T
    played = games(rng, len(first))
    drawn = rng.binomial(played, DRAWS)
    expected = 1 / (1 + 10 ** ((strength[second] - strength[first]) / 400))
    won = rng.binomial(played - drawn, expected)
    pairings = [
        Pairing(f"p{a}", f"p{b}", float(n), w + d / 2)
        for a, b, n, w, d in zip(first, second, played, won, drawn, strict=True)
    ]
    return Field(name, players, pairings)


def series(players: int) -> Field:
    """A field of the growth series: each player meeting 20 others, 10 games a pairing."""
    return field(
        f"{players}",
        players,
        min(players * 10, players * (players - 1) // 2),
        lambda rng, n: rng.integers(5, 16, size=n),
        players,
    )


def target() -> Field:
    """Issue 70's target: 3,000 players, 60,000 pairings, 1,000,000 games."""

    def games(rng: np.random.Generator, n: int) -> np.ndarray:
        played = np.full(n, 1_000_000 // n)
        played[rng.choice(n, 1_000_000 % n, replace=False)] += 1
        return played

    return field(TARGET, 3000, 60_000, games, 3000)


def timed(fitting: Fit, pairings: list[Pairing], runs: int) -> list[float]:
    """The seconds of `runs` fits, after one that is not counted."""
    fitting(pairings)
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        fitting(pairings)
        seconds.append(time.perf_counter() - began)
    return seconds


def peak_mb(fitting: Fit, pairings: list[Pairing]) -> float:
    """The most memory, in MB, that one fit held at once beyond what was held before it."""
    tracemalloc.start()
    try:
        fitting(pairings)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def measure(fields: Iterable[Callable[[], Field]], fitting: Fit, runs: int) -> list[dict]:
    rows: list[dict] = []
    for make in fields:
        made = make()
        progress(
            f"{made.name}: {made.players:,} players, {len(made.pairings):,} pairings,"
            f" {made.games:,} games; fitting {runs + 1} times, the first not timed"
            f" (load {os.getloadavg()[0]:.2f})"
        )
        seconds = timed(fitting, made.pairings, runs)
        median = statistics.median(seconds)
        progress(f"  median {median:.3f} s")
        previous = rows[-1] if rows and made.name != TARGET else None
        rows.append(
            {
                "field": made.name,
                "players": made.players,
                "pairings": len(made.pairings),
                "games": made.games,
                "median_s": round(median, 4),
                "min_s": round(min(seconds), 4),
                "max_s": round(max(seconds), 4),
                "x_previous": round(median / previous["median_s"], 1) if previous else None,
                "peak_mb": round(peak_mb(fitting, made.pairings), 1),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="the fields' players"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed fits of each (default 3)")
    parser.add_argument("--no-target", action="store_true", help="leave out the target field")
    parser.add_argument("--before", action="store_true", help="time the fit before issue 70")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.runs < 1 or min(args.sizes) < 2:
        parser.error("at least 1 run, and fields of at least 2 players")
    fitting: Fit = fit
    if args.before:
        sys.path.insert(0, str(ROOT))
        from tests.support.ratings_reference import fit as fitting
    fields: list[Callable[[], Field]] = [
        lambda players=players: series(players) for players in sorted(set(args.sizes))
    ]
    if not (args.no_target or args.before):
        fields.append(target)
    load_before = os.getloadavg()
    rows = measure(fields, fitting, args.runs)
    by_players = {row["players"]: row["median_s"] for row in rows if row["field"] != TARGET}
    growth = (
        round(by_players[GROWTH[1]] / by_players[GROWTH[0]], 1)
        if all(size in by_players for size in GROWTH)
        else None
    )
    goal = next((row["median_s"] for row in rows if row["field"] == TARGET), None)
    met = (growth is None or growth <= GROWTH_TARGET) and (goal is None or goal <= TARGET_S)
    fitted = "before issue 70 (tests/support/ratings_reference.py)" if args.before else "today"
    report = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "fit": fitted,
        "runs": args.runs,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "results": rows,
        "growth_800_over_200": growth,
        "meets_targets": None if args.before else met,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"The fit {fitted}; Python {report['python']}, numpy {report['numpy']},"
            f" scipy {report['scipy']}; median of {args.runs}; load average"
            f" {load_before[0]:.2f} before, {report['load_after'][0]:.2f} after"
        )
        columns = ["field", "players", "pairings", "games", "median_s", "min_s", "x_previous"]
        print(
            tabulate(
                [[*(row[c] for c in columns), row["peak_mb"]] for row in rows],
                headers=[
                    *("field", "players", "pairings", "games", "median s", "min s", "x prev"),
                    "peak MB",
                ],
                intfmt=",",
                floatfmt=("", "", "", "", ".3f", ".3f", ".1f", ".1f"),
            )
        )
        if growth is not None:
            print(f"800 players over 200: {growth:g} times (target: at most {GROWTH_TARGET:g})")
        if goal is not None:
            print(f"{TARGET}: {goal:.3f} s (target: at most {TARGET_S:g} s)")
    return 0 if args.before or met else 1


if __name__ == "__main__":
    sys.exit(main())
