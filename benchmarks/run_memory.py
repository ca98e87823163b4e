"""A run's memory: the peak resident set of `referee tournament` as its field grows.

Usage: python benchmarks/run_memory.py [--players 15,30,60,120] [--game ticblock]
                                       [--referee PATH] [--columns N] [--report] [--json]

Each field plays a round robin of instant players (the built-in `random`, as
benchmarks/tournament.py plays), one round: n(n-1) matches, under `/usr/bin/time -v`, whose
maximum resident set size is the peak of the referee (its players, a few megabytes each,
never come near it). Then the ratios the aim is set on: 60 players against 15 and 120
against 30, each at most 1.25 (issue 70). The standings go to a file, as to a pipe: every
table whole, the widest text there is (`--columns N`: as to a terminal N columns wide, and
the longest line is checked against N). Then `referee standings` of the results, and with
`--report` `referee report`, each under /usr/bin/time -v too. `--referee` runs another
checkout's command (its `.venv/bin/referee`) on the same configs: the figures before and
after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _help import described
from tabulate import tabulate

# The fields of the aim (issue 70): each larger one's peak over the smaller one's.
RATIOS = [(60, 15), (120, 30)]
AIM = 1.25
REFEREE = Path(sys.executable).with_name("referee")


def write_config(directory: Path, players: int, game: str) -> Path:
    lines = [f"name: rr{players}", f"games: [{game}]", "rounds: 1", "play_clock: 2000"]
    lines += [f"output: results-{players}", "players:"]
    for number in range(players):
        lines += [f"  - name: p{number:03d}", "    command: random"]
    path = directory / f"rr{players}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(
    referee: Path, players: int, game: str, columns: int | None, report: bool
) -> dict[str, Any]:
    """One field's run under /usr/bin/time -v: its peak, time, matches and longest line;
    then the peaks of `referee standings` (and `referee report`) of its results."""
    with tempfile.TemporaryDirectory() as directory:
        here = Path(directory)
        config = write_config(here, players, game)
        environment = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
        if columns is not None:
            environment["COLUMNS"] = str(columns)
        load = os.getloadavg()[0]
        command = [str(referee), "tournament", str(config), "--restart"]
        peak, seconds, printed = _timed(command, here, environment)
        run = {
            "players": players,
            "matches": players * (players - 1),
            "peak_mb": peak,
            "seconds": seconds,
            "load": round(load, 2),
            "longest_line": max(map(len, printed), default=0),
        }
        results = here / f"results-{players}"
        run["standings_peak_mb"], _, shown = _timed(
            [str(referee), "standings", str(results)], here, environment
        )
        run["standings_longest_line"] = max(map(len, shown), default=0)
        if report:
            run["report_peak_mb"], run["report_seconds"], _ = _timed(
                [str(referee), "report", str(results)], here, environment
            )
        return run


def _timed(
    command: list[str], here: Path, environment: dict[str, str]
) -> tuple[float, float, list[str]]:
    """A command run under /usr/bin/time -v in `here`: its peak resident set in MB, its wall
    time in seconds, and the lines it printed."""
    out, err = here / "out.txt", here / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        done = subprocess.run(
            ["/usr/bin/time", "-v", *command],
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=environment,
            cwd=here,
            check=False,
        )
    said = err.read_text()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{said[-2000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", said)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", said)
    assert peak is not None and wall is not None
    return round(int(peak[1]) / 1024, 1), round(_seconds(wall[1]), 1), out.read_text().splitlines()


def _seconds(clock: str) -> float:
    """`1:02.50` or `1:01:02` (h:mm:ss) as seconds."""
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--players", default="15,30,60,120", help="the fields, comma-separated")
    parser.add_argument("--game", default="ticblock")
    parser.add_argument("--referee", type=Path, default=REFEREE, help="the command to measure")
    parser.add_argument("--columns", type=int, help="print the standings as to a terminal")
    parser.add_argument("--report", action="store_true", help="measure `referee report` too")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    fields = [int(n) for n in args.players.split(",")]
    runs = [measure(args.referee, n, args.game, args.columns, args.report) for n in fields]
    peaks = {run["players"]: run["peak_mb"] for run in runs}
    ratios = [
        {"players": large, "against": small, "ratio": round(peaks[large] / peaks[small], 3)}
        for large, small in RATIOS
        if large in peaks and small in peaks
    ]
    if args.json:
        found = {"game": args.game, "columns": args.columns, "runs": runs, "ratios": ratios}
        print(json.dumps(found, indent=2))
        return
    print(f"{args.referee} tournament, a round robin of instant players at {args.game}")
    headers = ["players", "matches", "peak MB", "seconds", "load", "longest line"]
    headers += ["standings MB", "its longest line"]
    headers += ["report MB", "report s"] if args.report else []
    print(tabulate([list(run.values()) for run in runs], headers=headers, floatfmt=".1f"))
    for ratio in ratios:
        verdict = "ok" if ratio["ratio"] <= AIM else f"over {AIM}"
        print(f"{ratio['players']} against {ratio['against']}: {ratio['ratio']:.3f}x ({verdict})")
    if args.columns is not None:
        wide = [
            run["players"]
            for run in runs
            if max(run["longest_line"], run["standings_longest_line"]) > args.columns
        ]
        print(f"fields with lines over {args.columns} columns: {wide or 'none'}")


if __name__ == "__main__":
    main()
