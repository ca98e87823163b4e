"""How well a Swiss ranks a field of known strength, against random pairings of as many
matches: the Spearman correlation of each final order with the true one.

Usage: python benchmarks/swiss.py [--players N] [--rounds R] [--seeds S] [--workers W]
           [--json]

The field: N players of benchmarks/bots/line_bot.py at double-tictactoe, the k-th (from 0)
taking a line or a block with probability k/(N-1), so the true order is the reverse of
theirs; each seed salts their random choices. Each seed plays a Swiss of R rounds
(`format: swiss`, two games a pairing) with `referee tournament --workers W`, and the same
tournament whose R rounds are paired at random instead (written into its results directory
before the run, which then plays them as paired). Both are ranked alike: by score,
Buchholz, Sonneborn-Berger, then Elo. The Swiss's runs are checked too: no pair meets twice,
and every player's seats differ by one at most.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _help import described
from tabulate import tabulate

from referee.tournaments.swiss import Paired, Round, read_rounds, write_rounds

BOT = Path(__file__).resolve().parent / "bots" / "line_bot.py"
GAMES_PER_PAIRING = 2


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def spearman(order: list[str], truth: list[str]) -> float:
    """The rank correlation of two orders of the same names (no ties)."""
    rank = {name: index for index, name in enumerate(truth)}
    size = len(order)
    moved = sum((index - rank[name]) ** 2 for index, name in enumerate(order))
    return 1 - 6 * moved / (size * (size**2 - 1))


def random_rounds(names: list[str], rounds: int, seed: int) -> list[Round]:
    """`rounds` rounds of random pairs, the seats of each pair's first game at random too."""
    rng = random.Random(f"random pairings {seed}")
    found = []
    for number in range(1, rounds + 1):
        shuffled = names[:]
        rng.shuffle(shuffled)
        pairs = tuple((shuffled[i], shuffled[i + 1]) for i in range(0, len(shuffled) - 1, 2))
        bye = shuffled[-1] if len(shuffled) % 2 else None
        found.append(Round(number, pairs, bye))
    return found


def run(directory: Path, players: int, rounds: int, seed: int, workers: int, paired: bool) -> dict:
    """One tournament: its final order and what its rounds were; random pairings unless
    `paired`."""
    names = [f"p{k:02d}" for k in range(players)]
    entries = "".join(
        f"  - {{name: {name}, command: {sys.executable} {BOT} {k / (players - 1):.4f} {seed}}}\n"
        for k, name in enumerate(names)
    )
    config = directory / "swiss.yaml"
    config.write_text(
        f"name: swiss\nformat: swiss\ngames: [double-tictactoe]\nrounds: {rounds}\n"
        f"games_per_pairing: {GAMES_PER_PAIRING}\nseed: {seed}\nplay_clock: 2000\n"
        f"players:\n{entries}"
    )
    results = directory / "results" / "swiss"
    if not paired:
        results.mkdir(parents=True)
        write_rounds(results, Paired(GAMES_PER_PAIRING, tuple(random_rounds(names, rounds, seed))))
    began = time.perf_counter()
    command = ["referee", "tournament", str(config), "--workers", str(workers), "--json"]
    done = subprocess.run(
        [sys.executable, "-m", *command], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"swiss.py: {' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    swiss = json.loads(done.stdout)["swiss"]
    order = [row["player"] for row in swiss["table"]]
    stored = read_rounds(results)
    assert stored is not None
    met = [frozenset(pair) for played in stored.rounds for pair in played.pairs]
    seats: Counter[str] = Counter()
    for transcript in results.glob("*.json"):
        data = json.loads(transcript.read_text())
        seats[data["seats"][0]["player"]] += 1
        seats[data["seats"][1]["player"]] -= 1
    return {
        "spearman": round(spearman(order, names[::-1]), 4),
        "repeated_pairs": len(met) - len(set(met)),
        "most_seats_apart": max((abs(n) for n in seats.values()), default=0),
        "matches": sum(1 for _ in results.glob("*.json")),
        "seconds": round(time.perf_counter() - began, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--players", type=int, default=64, help="the field (default 64)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--seeds", type=int, default=20, help="tournaments of each (default 20)")
    parser.add_argument("--workers", type=int, default=2, help="local workers (default 2)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    if min(args.players - 2, args.rounds, args.seeds, args.workers) < 0 or args.rounds < 1:
        print("swiss.py: at least 2 players, 1 round, 1 seed, 1 worker", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for seed in range(args.seeds):
        row: dict[str, Any] = {"seed": seed}
        for paired, label in ((True, "swiss"), (False, "random")):
            with tempfile.TemporaryDirectory() as directory:
                row[label] = run(
                    Path(directory), args.players, args.rounds, seed, args.workers, paired
                )
        progress(
            f"seed {seed}: Spearman swiss {row['swiss']['spearman']}, random"
            f" {row['random']['spearman']} ({row['swiss']['seconds']} s,"
            f" {row['random']['seconds']} s)"
        )
        rows.append(row)
    summary = {
        label: {
            "mean": round(statistics.mean(r[label]["spearman"] for r in rows), 4),
            "median": round(statistics.median(r[label]["spearman"] for r in rows), 4),
            "min": min(r[label]["spearman"] for r in rows),
        }
        for label in ("swiss", "random")
    }
    report = {
        "players": args.players,
        "rounds": args.rounds,
        "games_per_pairing": GAMES_PER_PAIRING,
        "workers": args.workers,
        "seeds": rows,
        "summary": summary,
        "swiss_better": sum(r["swiss"]["spearman"] > r["random"]["spearman"] for r in rows),
        "swiss_repeated_pairs": sum(r["swiss"]["repeated_pairs"] for r in rows),
        "swiss_most_seats_apart": max(r["swiss"]["most_seats_apart"] for r in rows),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{args.players} players, {args.rounds} rounds of {GAMES_PER_PAIRING} games a pairing,"
        f" {args.seeds} seeds, {args.workers} local workers: Spearman with the true order"
    )
    print(
        tabulate(
            [[label, s["mean"], s["median"], s["min"]] for label, s in summary.items()],
            headers=["pairing", "mean", "median", "min"],
        )
    )
    print(
        f"\nthe Swiss ranks better in {report['swiss_better']} of {args.seeds} seeds;"
        f" its repeated pairs: {report['swiss_repeated_pairs']}, most seats apart:"
        f" {report['swiss_most_seats_apart']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
