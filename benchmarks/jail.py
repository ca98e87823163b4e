"""What the jail costs each player process it starts: a program run in it and out of it.

Usage: python benchmarks/jail.py [--runs N] [--json]

Each run starts the program and waits for it to exit; the median of N runs is reported, for
`true` (the bare cost of a start) and for this Python starting up (a player's usual start).
A player process is started once per match when it is not reused, once per tournament when
it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _help import described
from tabulate import tabulate

from referee.sandbox.isolation import machine_protections
from referee.sandbox.jail import Place, lease_seat_uid, program_files


def _median_ms(argv: list[str] | tuple[str, ...], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def measure(runs: int) -> list[dict[str, object]]:
    """The median start, in ms, of each program out of the jail and in it."""
    jail = machine_protections().jail
    if jail is None:
        raise SystemExit(f"no jail on this machine: {machine_protections().why_not}")
    true = shutil.which("true") or "/bin/true"
    programs = {"true": [true], "python -c pass": [sys.executable, "-c", "pass"]}
    rows = []
    for name, argv in programs.items():
        private = Path(tempfile.mkdtemp(prefix="referee-player-bench-"))
        try:
            uid = lease_seat_uid(private) if jail.setpriv is not None else None
            place = Place(private, private, tuple(program_files(argv, argv[0], None)))
            jailed = jail.command(argv, place, uid)
            bare_ms = _median_ms(argv, runs)
            jailed_ms = _median_ms(jailed, runs)
        finally:
            shutil.rmtree(private, ignore_errors=True)
        rows.append(
            {
                "program": name,
                "bare_ms": bare_ms,
                "jailed_ms": jailed_ms,
                "jail_costs_ms": jailed_ms - bare_ms,
                "as_root": os.geteuid() == 0,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rows = measure(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(tabulate(rows, headers="keys", floatfmt=".1f"))


if __name__ == "__main__":
    main()
