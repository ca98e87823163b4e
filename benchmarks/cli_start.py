"""How long the command line takes to start, beside Python importing Typer alone.

The starts timed: `referee --version`, `referee --help`, a command's help, and shell
completions of a command and of an option (what the completion script asks of `referee` at
a Tab).

Usage: python benchmarks/cli_start.py [--runs N] [--from-source] [--json]

Each command is run N times, the commands in turn (a machine busy with other work slows
them alike), after one run of each that is not counted; the table gives each one's least,
median and greatest wall time, its median over that of `python -c "import typer"`, and its
median CPU time (user and system), which a machine busy with other work inflates less.
Exits 1 when `referee --version` or `referee --help` takes more than 3 times as long as
Typer's import (the median of each).

The runs read the bytecode the uncounted run wrote (to a directory of their own: nothing is
written beside the sources), as an installed referee does. With --from-source they run in
this environment as it is: where PYTHONDONTWRITEBYTECODE is set, every run compiles the
referee's modules afresh, and the figures are the cost of that too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _help import described
from tabulate import tabulate

# At most this many times Python's import of Typer alone, for the version and the help.
TARGET = 3.0
BASELINE = "python -c 'import typer'"


def _referee() -> list[str]:
    """The `referee` console script beside this Python, or this Python running the package."""
    script = Path(sys.executable).with_name("referee")
    return [str(script)] if script.exists() else [sys.executable, "-m", "referee"]


def cases() -> list[tuple[str, list[str], dict[str, str]]]:
    """Each case: its name, its command line and the environment it adds."""
    referee = _referee()
    command = {"_REFEREE_COMPLETE": "complete_bash", "COMP_WORDS": "referee ", "COMP_CWORD": "1"}
    option = command | {"COMP_WORDS": "referee play --", "COMP_CWORD": "2"}
    return [
        ("referee --version", [*referee, "--version"], {}),
        ("referee --help", [*referee, "--help"], {}),
        ("referee play --help", [*referee, "play", "--help"], {}),
        ("completion: referee <Tab>", referee, command),
        ("completion: referee play --<Tab>", referee, option),
        (BASELINE, [sys.executable, "-c", "import typer"], {}),
    ]


def _cpu() -> float:
    """The CPU time, user and system, of the finished runs together."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One run: its wall time and its CPU time, in ms."""
    began, cpu = time.perf_counter(), _cpu()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - began) * 1000, (_cpu() - cpu) * 1000


def measure(runs: int, from_source: bool) -> list[dict[str, object]]:
    """Every case timed `runs` times, in turn, after a run of each that is not counted."""
    with tempfile.TemporaryDirectory(prefix="referee-cli-start-") as cache:
        base = dict(os.environ)
        if not from_source:
            base.pop("PYTHONDONTWRITEBYTECODE", None)
            base["PYTHONPYCACHEPREFIX"] = cache
        chosen = [(name, argv, base | extra) for name, argv, extra in cases()]
        for _, argv, env in chosen:
            _run(argv, env)
        times: dict[str, list[float]] = {name: [] for name, _, _ in chosen}
        cpu: dict[str, list[float]] = {name: [] for name, _, _ in chosen}
        for _ in range(runs):
            for name, argv, env in chosen:
                wall, used = _run(argv, env)
                times[name].append(wall)
                cpu[name].append(used)
    typer_ms = statistics.median(times[BASELINE])
    rows = []
    for name in times:
        median = statistics.median(times[name])
        row: dict[str, object] = {
            "command": name,
            "min_ms": round(min(times[name]), 1),
            "median_ms": round(median, 1),
            "max_ms": round(max(times[name]), 1),
            "vs_typer": round(median / typer_ms, 2),
            "cpu_median_ms": round(statistics.median(cpu[name]), 1),
        }
        if name in ("referee --version", "referee --help"):
            row["meets_target"] = median <= TARGET * typer_ms
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="run in this environment as it is, without bytecode written for the runs",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs: at least 1")
    rows = measure(args.runs, args.from_source)
    bytecode = "compiled afresh if not cached" if args.from_source else "cached"
    if args.json:
        report = {
            "python": platform.python_version(),
            "runs": args.runs,
            "bytecode": bytecode,
            "load": os.getloadavg()[0],
            "results": rows,
        }
        print(json.dumps(report, indent=2))
    else:
        print(
            f"Python {platform.python_version()}, {args.runs} runs each, bytecode {bytecode},"
            f" load average {os.getloadavg()[0]:.2f}; target: at most {TARGET:g} x {BASELINE}"
        )
        table = [
            [
                r["command"],
                r["min_ms"],
                r["median_ms"],
                r["max_ms"],
                r["vs_typer"],
                r["cpu_median_ms"],
                "" if "meets_target" not in r else "yes" if r["meets_target"] else "NO",
            ]
            for r in rows
        ]
        headers = ["command", "min ms", "median ms", "max ms", "x typer", "CPU ms", "meets target"]
        floats = (".0f", ".0f", ".0f", ".0f", ".2f", ".0f")
        print(tabulate(table, headers=headers, floatfmt=floats))
    return 0 if all(r.get("meets_target", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
