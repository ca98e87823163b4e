"""Tournament throughput: matches per second, in one process and on local Dask workers.

Usage: python benchmarks/tournament.py [--rounds N] [--worker-rounds N] [--think-rounds N]
                                       [--repeat N] [--json]

First each game is played as a two-player tournament of the random player against itself,
at concurrency 1 and 2, with process reuse on and off. Reuse saves a process start per
player per match; concurrency overlaps one match's waiting with another's work.

Then ticblock is played in one process (concurrency 1) and on 1 and 2 local workers, by
instant players and by players that think 100 ms of CPU time a move, each --repeat times
in turns; the median is shown. A rate there counts from the first match's start to the
last one's end: starting the workers is reported apart. The standings of each run are
compared with the first one-process run's (the players are seeded per match, so they must
be the same). Last come two one-process tournaments at once, each on a core of its own
with half the rounds: the most any way of spreading the matches over this machine's cores
could give, with nothing spent on the spreading.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _help import described
from tabulate import tabulate

from referee.games import GAMES
from referee.pauses import short_pauses
from referee.players.builtin import PROGRAMS
from referee.records.signing import results_key
from referee.records.transcript import Transcript
from referee.sandbox.cores import CORES_VARIABLE, format_cores
from referee.tournaments.cluster import Workers, on_cluster
from referee.tournaments.config import load_config
from referee.tournaments.runner import Observer, run_tournament
from referee.tournaments.schedule import ScheduledMatch
from referee.tournaments.standings import compute, load_results

SETTINGS = [(concurrency, reuse) for concurrency in (1, 2) for reuse in (True, False)]
WORKER_GAME = "ticblock"
# (what the players are, their extra options).
PLAYERS = [("instant", ""), ("think 100 ms", " --think-ms 100")]


@dataclass(frozen=True)
class Place:
    """Where a tournament's matches are played: on `workers` local Dask workers, else in
    `processes` one-process tournaments at once, each on a core of its own with its share of
    the rounds."""

    workers: int = 0
    processes: int = 1

    @property
    def name(self) -> str:
        if self.workers:
            return f"{self.workers} worker{'s' if self.workers > 1 else ''}"
        return "one process" if self.processes == 1 else f"{self.processes} processes"


# The one process first: the others are compared with it.
PLACES = [Place(), Place(workers=1), Place(workers=2), Place(processes=2)]


class Clock(Observer):
    """When the first match started, the cluster's start aside, and the last one ended: on
    the system's monotonic clock, which separate processes share."""

    def __init__(self) -> None:
        self.begun = time.monotonic()
        self.first: float | None = None
        self.last = 0.0
        self.played = 0

    def started(self, match: ScheduledMatch) -> None:
        if self.first is None:
            self.first = time.monotonic()

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        self.last = time.monotonic()
        self.played += 1


def write_config(
    directory: Path, game_id: str, rounds: int, extra: str, players: tuple[str, str]
) -> Path:
    config = directory / "bench.yaml"
    config.write_text(
        f"name: bench\ngames: [{game_id}]\nrounds: {rounds}\nplay_clock: 2000\n{extra}players:\n"
        f"  - name: one\n    command: {players[0]}\n  - name: two\n    command: {players[1]}\n"
    )
    return config


def matches_per_second(game_id: str, rounds: int, concurrency: int, reuse: bool) -> float:
    """Play a fresh tournament in a temporary directory; its matches over its wall time."""
    with tempfile.TemporaryDirectory() as directory:
        extra = f"concurrency: {concurrency}\nreuse: {str(reuse).lower()}\n"
        start = time.perf_counter()
        players = ("random", "random")
        settings = load_config(write_config(Path(directory), game_id, rounds, extra, players))
        key, _ = results_key(settings.output, None)
        with short_pauses():  # as `referee tournament` plays them
            schedule = asyncio.run(run_tournament(settings, key))
        return len(schedule) / (time.perf_counter() - start)


def on_workers(rounds: int, workers: int, options: str) -> dict[str, Any]:
    """A ticblock tournament of seeded players, in this process or on `workers` workers: when
    its matches began and ended, and its standings."""
    player = f"{sys.executable} {PROGRAMS / 'random_player.py'}"
    with tempfile.TemporaryDirectory() as directory:
        # Each player seeded: its moves in a match depend on nothing but the match.
        players = (f"{player} --seed 1{options}", f"{player} --seed 2{options}")
        settings = load_config(write_config(Path(directory), WORKER_GAME, rounds, "", players))
        key, _ = results_key(settings.output, None)
        clock = Clock()
        venue = on_cluster(Workers(workers)) if workers else None
        with short_pauses():
            asyncio.run(run_tournament(settings, key, clock, venue=venue))
        assert clock.first is not None
        standings = compute(load_results(settings.output, key.public)[0])
        return {
            "begun": clock.begun,
            "first": clock.first,
            "last": clock.last,
            "matches": clock.played,
            "standings": [(r.player, r.wins, r.draws, r.losses) for r in standings.overall],
        }


def play_at(place: Place, rounds: int, options: str) -> dict[str, Any]:
    """The ticblock tournament played at `place`: its rate and standings. Processes run this
    script with --share, each with its rounds and its core, and count together from the
    first match any of them began to the last one any ended."""
    if place.processes == 1:
        runs = [on_workers(rounds, place.workers, options)]
    else:
        cores = sorted(os.sched_getaffinity(0))
        share = [sys.executable, __file__, "--share", str(max(1, rounds // place.processes))]
        shares = [
            subprocess.Popen(
                [*share, "--options", options],
                env={**os.environ, CORES_VARIABLE: format_cores((core,))},
                stdout=subprocess.PIPE,
                text=True,
            )
            for core in cores[: place.processes]
        ]
        runs = [json.loads(process.communicate()[0]) for process in shares]
    first = min(run["first"] for run in runs)
    matches = sum(run["matches"] for run in runs)
    return {
        "workers": place.workers,
        "processes": place.processes,
        "matches": matches,
        "matches_per_s": round(matches / (max(run["last"] for run in runs) - first), 2),
        "start_s": round(first - min(run["begun"] for run in runs), 2),
        # Each process plays the same rounds: its own standings, not the whole's.
        "standings": runs[0]["standings"] if len(runs) == 1 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--rounds", type=int, default=10, help="rounds per game (2 matches each)")
    parser.add_argument("--worker-rounds", type=int, default=200, help="rounds, instant players")
    parser.add_argument("--think-rounds", type=int, default=6, help="rounds, thinking players")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, the median shown")
    parser.add_argument("--json", action="store_true", help="print JSON")
    # One process's share of a run of several (see play_at), its figures printed as JSON.
    parser.add_argument("--share", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--options", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.share is not None:
        print(json.dumps(on_workers(args.share, 0, args.options)))
        return
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
    distributed = []
    for players, options in PLAYERS:
        rounds = args.worker_rounds if not options else args.think_rounds
        # Taken in turns, so that what else the machine does falls on each alike.
        tries = [[play_at(place, rounds, options) for place in PLACES] for _ in range(args.repeat)]
        runs = []
        for index, place in enumerate(PLACES):
            rates = [attempt[index]["matches_per_s"] for attempt in tries]
            run = dict(tries[0][index], matches_per_s=statistics.median(rates), rates=rates)
            run["where"] = place.name
            run["same_standings"] = (
                all(attempt[index]["standings"] == tries[0][0]["standings"] for attempt in tries)
                if place.processes == 1
                else None
            )
            runs.append(run)
        alone = runs[0]["matches_per_s"]
        for run in runs:
            run["players"] = players
            run["speedup"] = round(run["matches_per_s"] / alone, 2)
            del run["standings"]
        distributed += runs
    if args.json:
        print(
            json.dumps(
                {"rounds": args.rounds, "results": results, "workers": distributed}, indent=2
            )
        )
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
    print(
        f"\n{WORKER_GAME} in one process (concurrency 1), on local Dask workers, and in separate"
        " processes, a core each"
    )
    same = {True: "yes", False: "NO", None: "-"}
    rows = [
        [
            run["players"],
            run["where"],
            run["matches"],
            run["matches_per_s"],
            f"{run['speedup']:.2f}x",
            run["start_s"],
            same[run["same_standings"]],
        ]
        for run in distributed
    ]
    print(
        tabulate(
            rows,
            headers=["players", "where", "matches", "matches/s", "speed-up", "start s", "same"],
            floatfmt=".1f",
        )
    )


if __name__ == "__main__":
    main()
