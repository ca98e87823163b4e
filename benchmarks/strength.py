"""How often the strong sample player (mcts) beats the random player, per game and role.

Usage: python benchmarks/strength.py [--games IDS] [--matches N] [--play-clock MS]
                                    [--concurrency K] [--json]

Real matches through the referee, both players as subprocesses, chance (a `random` role)
played by the referee. A win is a strictly higher goal than the opponent's. The target is
at least 90% in every game and role, 70% in a game of imperfect information, where mcts
cannot see the state it searches from (issue 54's figure).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from _help import described
from tabulate import tabulate

from referee.clock import Clocks
from referee.games import GAMES, Game, get_game
from referee.match import MatchSetup, play_fresh
from referee.pauses import short_pauses
from referee.players.builtin import make_player, player_spec
from referee.players.chance import chance_spec, is_chance
from referee.records.signing import results_key


def target(game: Game) -> float:
    """The share of wins mcts must reach against random in each role of `game`."""
    return 0.7 if game.imperfect else 0.9


def _seats(game: Game) -> list[int]:
    """The roles players take: all but chance's."""
    return [role for role, name in enumerate(game.roles) if not is_chance(name)]


async def _play(game: Game, strong_role: int, number: int, clocks: Clocks, folder: Path) -> bool:
    seats = _seats(game)
    specs = [
        chance_spec()
        if role not in seats
        else player_spec("mcts" if role == strong_role else "random")
        for role in range(len(game.roles))
    ]
    name = f"{game.id}-{game.roles[strong_role]}-{number}"
    players = [make_player(spec, folder / f"{name}.{role}.log") for role, spec in enumerate(specs)]
    setup = MatchSetup(name, game, players, clocks, seed=number)
    transcript = await play_fresh(setup, folder / f"{name}.json", results_key(folder, None)[0])
    if transcript.faults:
        print(f"{name}: faults {transcript.faults}", file=sys.stderr)
    if transcript.goals is None:
        return False
    (other,) = [role for role in seats if role != strong_role]
    goals = [transcript.goals[role] for role in game.roles]
    return goals[strong_role] > goals[other]


async def _run(
    games: list[Game], matches: int, clocks: Clocks, concurrency: int, folder: Path
) -> list[dict]:
    slots = asyncio.Semaphore(concurrency)
    jobs = [(g, role, n) for g in games for role in _seats(g) for n in range(matches)]

    async def one(job: tuple[Game, int, int]) -> bool:
        async with slots:
            return await _play(*job, clocks, folder)

    wins = await asyncio.gather(*(one(job) for job in jobs))
    rows = []
    for game in games:
        for role in _seats(game):
            won = sum(w for (g, r, _), w in zip(jobs, wins, strict=True) if g is game and r == role)
            rows.append(
                {
                    "game": game.id,
                    "role": game.roles[role],
                    "wins": won,
                    "matches": matches,
                    "target": target(game),
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument(
        "--matches", type=int, default=10, help="matches per game and role (default 10)"
    )
    parser.add_argument(
        "--games",
        default=",".join(GAMES),
        help="game ids or .kif files, comma-separated (default: the built-in games)",
    )
    parser.add_argument("--play-clock", type=int, default=1000, help="ms per move (default 1000)")
    parser.add_argument("--concurrency", type=int, default=1, help="matches at once (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    clocks = Clocks(play_ms=args.play_clock)
    games = [get_game(name.strip()) for name in args.games.split(",") if name.strip()]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, short_pauses():  # as the CLI plays them
        rows = asyncio.run(_run(games, args.matches, clocks, args.concurrency, Path(folder)))
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
                f"{r['target']:.0%}",
                "yes" if r["wins"] >= r["target"] * r["matches"] else "NO",
            ]
            for r in rows
        ]
        print(tabulate(table, headers=["game", "mcts plays", "wins", "rate", "target", "met"]))
    return 0 if all(r["wins"] >= r["target"] * r["matches"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
