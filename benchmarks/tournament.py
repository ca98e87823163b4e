"""Tournament throughput: matches per second for two instant players on each game.

Usage: python benchmarks/tournament.py [--rounds N] [--json]

Each game is played as a two-player tournament of players/random_player.py against itself,
at concurrency 1 and 2, with process reuse on and off. Reuse saves a process start per
player per match; concurrency overlaps one match's waiting with another's work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from referee.games import GAMES
from referee.records.signing import results_key
from referee.tournaments.config import load_config
from referee.tournaments.runner import run_tournament

SETTINGS = [(concurrency, reuse) for concurrency in (1, 2) for reuse in (True, False)]


def matches_per_second(game_id: str, rounds: int, concurrency: int, reuse: bool) -> float:
    """Play a fresh tournament in a temporary directory; its matches over its wall time."""
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "bench.yaml"
        config.write_text(
            f"name: bench\ngames: [{game_id}]\nrounds: {rounds}\nconcurrency: {concurrency}\n"
            f"reuse: {str(reuse).lower()}\nplayers:\n"
            "  - name: one\n    command: random\n  - name: two\n    command: random\n"
        )
        start = time.perf_counter()
        settings = load_config(config)
        key, _ = results_key(settings.output, None)
        schedule = asyncio.run(run_tournament(settings, key))
        return len(schedule) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds per game (2 matches each)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    results = [
        {
            "game": game_id,
            "concurrency": concurrency,
            "reuse": reuse,
            "matches_per_s": round(matches_per_second(game_id, args.rounds, concurrency, reuse), 2),
        }
        for game_id in GAMES
        for concurrency, reuse in SETTINGS
    ]
    if args.json:
        print(json.dumps({"rounds": args.rounds, "results": results}, indent=2))
        return
    headers = [f"c={c}, reuse {'on' if r else 'off'}" for c, r in SETTINGS]
    table = [
        [game_id, *(row["matches_per_s"] for row in results if row["game"] == game_id)]
        for game_id in GAMES
    ]
    print(
        f"matches per second, {2 * args.rounds} matches per cell, python {sys.version.split()[0]}"
    )
    print(tabulate(table, headers=["game", *headers], floatfmt=".1f"))


if __name__ == "__main__":
    main()
