"""Random playouts per second and steps per second of each rule engine, on one core.

Usage: python benchmarks/engines.py [--seconds S] [--json]
Exits 1 when a game is below its floor (1,000 playouts/s for hex-pie, 5,000 for the others).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time

from _help import described
from tabulate import tabulate

from referee.games import GAMES, Game
from referee.games.playout import random_steps

FLOORS = {game_id: 5_000 for game_id in GAMES} | {"hex-pie": 1_000}


def measure(game: Game, seconds: float, seed: int = 1) -> dict[str, float | int | str | bool]:
    """Play random games back to back for about `seconds` and count playouts and steps."""
    rng = random.Random(seed)
    playouts = steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in random_steps(game, rng):
            steps += 1
        playouts += 1
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    rate = playouts / elapsed
    return {
        "game": game.id,
        "playouts": playouts,
        "seconds": round(elapsed, 3),
        "playouts_per_s": round(rate),
        "steps_per_s": round(steps / elapsed),
        "steps_per_playout": round(steps / playouts, 1),
        "floor": FLOORS[game.id],
        "meets_floor": rate >= FLOORS[game.id],
    }


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--seconds", type=float, default=3.0, help="time per game (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    rows = [measure(game, args.seconds) for game in GAMES.values()]
    if args.json:
        print(json.dumps({"python": platform.python_version(), "results": rows}, indent=2))
    else:
        print(f"Python {platform.python_version()}, one core, {args.seconds:g} s per game")
        table = [
            [
                r["game"],
                f"{r['playouts_per_s']:,}",
                f"{r['steps_per_s']:,}",
                r["steps_per_playout"],
                f"{r['floor']:,}",
                "yes" if r["meets_floor"] else "NO",
            ]
            for r in rows
        ]
        headers = ["game", "playouts/s", "steps/s", "steps/playout", "floor", "meets floor"]
        print(
            tabulate(table, headers=headers, colalign=("left", "right", "right", "right", "right"))
        )
    return 0 if all(r["meets_floor"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
