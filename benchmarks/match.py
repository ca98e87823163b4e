"""The referee's own cost per move, against the same exchange with no referee.

Usage: python benchmarks/match.py [--matches N] [--repeat N] [--json]

For each game, in turns --repeat times (the median kept), with two instant players (the
built-in random, referee/players/programs/random_player.py), their processes reused after a
warm-up match:
1. The referee: matches played by `Match`, the players in the sandbox as in a tournament
   (`ponder: false`): wall time per step, and the players' own time (each answer's time from
   write to read; the slower one when both are asked at once).
2. The floor: the same exchange with no referee: the players started as plain processes,
   the engine for the legal moves and the next state, their lines written and read on one
   event loop, and nothing else (no clock, sandbox, check, record).
The referee's step over the floor's is the measure: both run in the same process, in turns,
so the ratio holds on a noisy machine, where a ratio to a bare pipe moved 4x between
machines. A bare pipe round trip (a line to `cat` and back, blocking calls) is printed too.
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

from _help import described
from tabulate import tabulate

from referee.clock import Clocks
from referee.games import get_game
from referee.match import Match, MatchSetup
from referee.pauses import short_pauses
from referee.players.builtin import player_spec
from referee.players.process import ProgramPlayer
from referee.policy import asked
from referee.protocol import End, EndReason, Go, Moves, Quit, Start

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


async def _floor_costs(game_id: str, matches: int) -> dict[str, float]:
    """The same matches with no referee: plain processes, the engine, the lines, the loop."""
    game = get_game(game_id)
    roles = range(len(game.roles))
    clocks = Clocks()
    seats = [
        await asyncio.create_subprocess_exec(
            *INSTANT.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **INSTANT.env},
        )
        for _ in roles
    ]
    pipes = [(seat.stdin, seat.stdout) for seat in seats]

    def tell(role: int, line: str) -> None:
        writer = pipes[role][0]
        assert writer is not None
        writer.write(f"{line}\n".encode())

    async def ask(role: int, line: str) -> str:
        tell(role, line)
        reader = pipes[role][1]
        assert reader is not None
        return (await reader.readline()).decode().strip()

    steps = 0
    wall = 0.0
    try:
        for number in range(matches + 1):
            began = time.perf_counter()
            start = [
                Start(f"floor-{number}", game_id, name, clocks.start_ms, clocks.play_ms)
                for name in game.roles
            ]
            await asyncio.gather(*(ask(role, str(start[role])) for role in roles))
            state = game.initial_state()
            step = 0
            while not game.is_terminal(state):
                step += 1
                legal = [game.legal_moves(state, role) for role in roles]
                choosing = asked(legal, ())
                lines = [str(Go(step, clocks.play_ms, legal[role])) for role in choosing]
                answers = await asyncio.gather(*map(ask, choosing, lines))
                joint = [moves[0] for moves in legal]
                for role, answer in zip(choosing, answers, strict=True):
                    joint[role] = game.parse_move(answer)
                state = game.next_state(state, tuple(joint))
                for role in roles:
                    tell(role, str(Moves(step, tuple(joint))))
            for role in roles:
                tell(role, str(End(tuple(game.goals(state)), EndReason.TERMINAL)))
            if number:
                wall += time.perf_counter() - began
                steps += step
    finally:
        for role, seat in zip(roles, seats, strict=True):
            tell(role, str(Quit()))
            await seat.wait()
    return {"floor_steps": steps, "floor_us_per_step": wall / steps * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--matches", type=int, default=20, help="matches per game (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    round_trip = pipe_round_trip_us()
    # The collector's pauses as `referee match` keeps them, for the floor alike.
    with tempfile.TemporaryDirectory() as logs, short_pauses():
        rows = []
        for game_id in GAMES:
            runs = []
            for _ in range(args.repeat):
                # In turns, so that what else the machine does falls on each alike.
                referee = asyncio.run(_match_costs(game_id, args.matches, Path(logs)))
                floor = asyncio.run(_floor_costs(game_id, args.matches))
                runs.append({**referee, **floor})
            row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            rows.append(
                {
                    "game": game_id,
                    **row,
                    "asks_both": get_game(game_id).simultaneous,
                    "ratio_to_floor": row["wall_us_per_step"] / row["floor_us_per_step"],
                    "overhead_per_round_trip": row["overhead_us_per_step"] / round_trip,
                }
            )
    if args.json:
        print(
            json.dumps(
                {
                    "pipe_round_trip_us": round_trip,
                    "matches_per_game": args.matches,
                    "repeat": args.repeat,
                    "results": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"bare pipe round trip (cat, blocking I/O): {round_trip:.1f} us (median)")
    print(
        f"{args.matches} matches per game between two instant players, the median of"
        f" {args.repeat} runs\n"
    )
    table = [
        [
            r["game"],
            "both" if r["asks_both"] else "one",
            f"{r['steps']:.0f}",
            f"{r['wall_us_per_step']:.0f}",
            f"{r['players_us_per_step']:.0f}",
            f"{r['floor_us_per_step']:.0f}",
            f"{r['ratio_to_floor']:.2f}x",
            f"{r['overhead_per_round_trip']:.1f}x",
        ]
        for r in rows
    ]
    headers = [
        "game",
        "asks",
        "steps",
        "referee us/step",
        "players us/step",
        "floor us/step",
        "referee / floor",
        "overhead / round trip",
    ]
    print(tabulate(table, headers=headers, colalign=("left", "left") + ("right",) * 6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
