"""The referee's own cost per move, against the cost of a bare pipe round trip.

Usage: python benchmarks/match.py [--matches N] [--json]

1. Pipe ping-pong: write a line to `cat` and read it back, blocking calls, many times.
2. Matches between two instant players (the built-in random,
   referee/players/programs/random_player.py), the processes reused after a warm-up match:
   wall time minus the players' own time (each answer's time from write to read; the slower
   one when both are asked at once), per step.
Both are measured in the same run, so their ratio is meaningful on a noisy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from referee.clock import Clocks
from referee.games import get_game
from referee.match import Match, MatchSetup
from referee.players.builtin import player_spec
from referee.players.process import ProgramPlayer

ROOT = Path(__file__).resolve().parents[1]
INSTANT = player_spec("random", "random")
GAMES = ("hex-pie", "quad", "double-tictactoe", "blocker-parallel")


def pipe_round_trip_us(rounds: int = 5_000) -> float:
    """Median microseconds for one line to `cat` and back."""
    child = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    line = b"go 1 1000 (place e 5) (place e 6)\n"
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        os.write(child.stdin.fileno(), line)
        received = b""
        while not received.endswith(b"\n"):
            received += os.read(child.stdout.fileno(), 4096)
        samples.append(time.perf_counter() - start)
    child.stdin.close()
    child.wait()
    return statistics.median(samples) * 1e6


async def _match_costs(game_id: str, matches: int, logs: Path) -> dict[str, float]:
    """Play one warm-up match, then `matches` measured ones, all with the same two processes."""
    seats = [ProgramPlayer(INSTANT, logs / f"{game_id}-{i}.log") for i in (0, 1)]
    for seat in seats:
        await seat.start()
    steps = 0
    wall = players = 0.0
    try:
        for number in range(matches + 1):
            setup = MatchSetup(f"bench-{number}", get_game(game_id), seats, Clocks(), seed=number)
            began = time.perf_counter()
            transcript = await Match(setup).run()
            if number == 0:
                continue
            wall += time.perf_counter() - began
            steps += len(transcript.steps)
            # Players asked at the same time wait together: count the slower one.
            players += max(transcript.start_times_ms.values()) / 1000
            players += (
                sum(max(step.times_ms.values(), default=0) for step in transcript.steps) / 1000
            )
    finally:
        await asyncio.gather(*(seat.close() for seat in seats))
    return {
        "steps": steps,
        "wall_us_per_step": wall / steps * 1e6,
        "players_us_per_step": players / steps * 1e6,
        "overhead_us_per_step": (wall - players) / steps * 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=20, help="matches per game (default 20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    round_trip = pipe_round_trip_us()
    with tempfile.TemporaryDirectory() as logs:
        rows = []
        for game_id in GAMES:
            costs = asyncio.run(_match_costs(game_id, args.matches, Path(logs)))
            rows.append(
                {
                    "game": game_id,
                    **costs,
                    "overhead_per_round_trip": costs["overhead_us_per_step"] / round_trip,
                }
            )
    if args.json:
        print(
            json.dumps(
                {
                    "pipe_round_trip_us": round_trip,
                    "matches_per_game": args.matches,
                    "results": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"bare pipe round trip (cat, blocking I/O): {round_trip:.1f} us (median)")
    print(f"{args.matches} matches per game between two instant players\n")
    table = [
        [
            r["game"],
            r["steps"],
            f"{r['wall_us_per_step']:.0f}",
            f"{r['players_us_per_step']:.0f}",
            f"{r['overhead_us_per_step']:.0f}",
            f"{r['overhead_per_round_trip']:.1f}x",
        ]
        for r in rows
    ]
    headers = [
        "game",
        "steps",
        "wall us/step",
        "players us/step",
        "overhead us/step",
        "overhead / round trip",
    ]
    print(tabulate(table, headers=headers, colalign=("left",) + ("right",) * 5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
