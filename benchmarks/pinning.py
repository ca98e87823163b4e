"""What pinning each match to cores of its own does for players that think for most of
their clock.

Usage: python benchmarks/pinning.py [--rounds N] [--clock MS] [--think PERCENT] [--load N]
                                    [--json]

A ticblock tournament of 2*N matches at concurrency 2, whose players spin the CPU for
PERCENT of the play clock at each move, is played twice: pinned, with `cores_per_match: 2`
(ticblock's second phase is simultaneous: both players think at once, a core each), and
not pinned, with `cores_per_match: 0` (where the system puts them). Pinned, a 2-core
machine plays one match at a time: the concurrency is capped to what the cores allow. For
each: the matches at once, timeouts, the answer times (median, 99th percentile, worst) and
the wall time. --load N adds N processes that spin the CPU for the whole run, unpinned, as
other work on the machine would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _help import described
from tabulate import tabulate

from referee.errors import FaultKind
from referee.pauses import short_pauses
from referee.players.builtin import PROGRAMS
from referee.records.signing import results_key
from referee.tournaments.config import load_config
from referee.tournaments.runner import Observer, run_tournament
from referee.tournaments.standings import load_results


def spin() -> None:
    while True:
        pass


class Noted(Observer):
    """Keeps the line that says the concurrency was capped, if one does."""

    note = ""

    def noted(self, line: str) -> None:
        self.note = line


def tournament(rounds: int, clock_ms: int, think_ms: int, cores_per_match: int) -> dict[str, Any]:
    """Play the tournament in a temporary directory; its timeouts and answer times."""
    player = f"{sys.executable} {PROGRAMS / 'random_player.py'} --think-ms {think_ms}"
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "pinning.yaml"
        path.write_text(
            f"name: pinning\ngames: [ticblock]\nrounds: {rounds}\nplay_clock: {clock_ms}\n"
            f"concurrency: 2\ncores_per_match: {cores_per_match}\nplayers:\n"
            f"  - name: one\n    command: {player} --seed 1\n"
            f"  - name: two\n    command: {player} --seed 2\n"
        )
        config = load_config(path)
        key, _ = results_key(config.output, None)
        began = time.perf_counter()
        observer = Noted()
        with short_pauses():  # as `referee tournament` plays them
            asyncio.run(run_tournament(config, key, observer))
        wall = time.perf_counter() - began
        transcripts, _ = load_results(config.output, key.public)
    times = sorted(
        t for found in transcripts for step in found.steps for t in step.times_ms.values()
    )
    faults = [fault for found in transcripts for fault in found.faults]
    return {
        "pinned": bool(cores_per_match),
        "cores_per_match": cores_per_match,
        "note": observer.note,
        "matches": len(transcripts),
        "moves": len(times),
        "timeouts": sum(1 for fault in faults if fault.kind == FaultKind.TIMEOUT),
        "other_faults": sum(1 for fault in faults if fault.kind != FaultKind.TIMEOUT),
        "median_ms": round(statistics.median(times), 1),
        "p99_ms": round(times[int(0.99 * (len(times) - 1))], 1),
        "worst_ms": round(times[-1], 1),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--rounds", type=int, default=20, help="rounds (2 matches each)")
    parser.add_argument("--clock", type=int, default=500, help="play clock, ms")
    parser.add_argument("--think", type=int, default=80, help="CPU per move, percent of clock")
    parser.add_argument("--load", type=int, default=0, help="other processes spinning")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    think_ms = args.clock * args.think // 100
    load = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for process in load:
        process.start()
    try:
        results = [tournament(args.rounds, args.clock, think_ms, cores) for cores in (2, 0)]
    finally:
        for process in load:
            process.kill()
    if args.json:
        print(json.dumps({"clock_ms": args.clock, "think_ms": think_ms, "results": results}))
        return
    print(
        f"ticblock, {2 * args.rounds} matches at concurrency 2, play clock {args.clock} ms,"
        f" players spinning {think_ms} ms a move, {args.load} other processes spinning"
    )
    rows = [
        [
            f"pinned (cores_per_match {row['cores_per_match']})"
            if row["pinned"]
            else "not pinned (cores_per_match 0)",
            row["matches"],
            row["moves"],
            row["timeouts"],
            row["median_ms"],
            row["p99_ms"],
            row["worst_ms"],
            row["wall_s"],
        ]
        for row in results
    ]
    headers = ["players", "matches", "moves", "timeouts", "median ms", "p99 ms", "worst ms"]
    print(tabulate(rows, headers=[*headers, "wall s"], floatfmt=".1f"))
    for row in results:
        if row["note"]:
            print(f"{'pinned' if row['pinned'] else 'not pinned'}: {row['note']}")


if __name__ == "__main__":
    main()
