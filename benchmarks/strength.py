"""How often the strong sample player (mcts) beats the random player, per game and role.

Usage: python benchmarks/strength.py [--matches N] [--play-clock MS] [--concurrency K] [--json]

Real matches through the referee, both players as subprocesses. A win is a strictly higher
goal than the opponent's. The target is at least 90% in every game and role.
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

from referee.clock import Clocks
from referee.games import GAMES
from referee.match import MatchSetup, play_fresh
from referee.pauses import short_pauses
from referee.players.builtin import player_spec
from referee.players.process import ProgramPlayer
from referee.records.signing import results_key

TARGET = 0.9


async def _play(game_id: str, strong_role: int, number: int, clocks: Clocks, folder: Path) -> bool:
    game = GAMES[game_id]
    specs = [
        player_spec("mcts") if role == strong_role else player_spec("random") for role in (0, 1)
    ]
    name = f"{game_id}-{game.roles[strong_role]}-{number}"
    players = [
        ProgramPlayer(spec, folder / f"{name}.{role}.log") for role, spec in enumerate(specs)
    ]
    setup = MatchSetup(name, game, players, clocks, seed=number)
    transcript = await play_fresh(setup, folder / f"{name}.json", results_key(folder, None)[0])
    goals = [transcript.goals[role] for role in game.roles] if transcript.goals else [0, 0]
    if transcript.faults:
        print(f"{name}: faults {transcript.faults}", file=sys.stderr)
    return goals[strong_role] > goals[1 - strong_role]


async def _run(matches: int, clocks: Clocks, concurrency: int, folder: Path) -> list[dict]:
    slots = asyncio.Semaphore(concurrency)
    jobs = [(g, role, n) for g in GAMES for role in (0, 1) for n in range(matches)]

    async def one(job: tuple[str, int, int]) -> bool:
        async with slots:
            return await _play(*job, clocks, folder)

    wins = await asyncio.gather(*(one(job) for job in jobs))
    rows = []
    for game_id in GAMES:
        for role in (0, 1):
            won = sum(
                w for (g, r, _), w in zip(jobs, wins, strict=True) if g == game_id and r == role
            )
            rows.append(
                {
                    "game": game_id,
                    "role": GAMES[game_id].roles[role],
                    "wins": won,
                    "matches": matches,
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--matches", type=int, default=10, help="matches per game and role (default 10)"
    )
    parser.add_argument("--play-clock", type=int, default=1000, help="ms per move (default 1000)")
    parser.add_argument("--concurrency", type=int, default=1, help="matches at once (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    clocks = Clocks(play_ms=args.play_clock)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, short_pauses():  # as the CLI plays them
        rows = asyncio.run(_run(args.matches, clocks, args.concurrency, Path(folder)))
    elapsed = time.perf_counter() - began
    if args.json:
        print(
            json.dumps(
                {"play_clock_ms": args.play_clock, "seconds": round(elapsed), "results": rows},
                indent=2,
            )
        )
    else:
        print(f"mcts against random, play clock {args.play_clock} ms, {elapsed:.0f} s")
        table = [
            [
                r["game"],
                r["role"],
                f"{r['wins']}/{r['matches']}",
                f"{r['wins'] / r['matches']:.0%}",
                "yes" if r["wins"] >= TARGET * r["matches"] else "NO",
            ]
            for r in rows
        ]
        print(tabulate(table, headers=["game", "mcts plays", "wins", "rate", ">= 90%"]))
    return 0 if all(r["wins"] >= TARGET * r["matches"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
