"""The test suite's time, file by file.

Usage: python benchmarks/suite.py [--junit FILE] [--top N] [--json] [-- PYTEST-ARGS...]

Runs the suite (`python -m pytest`, with PYTEST-ARGS, e.g. `-n 2` or `-m "not browser"`)
and reads its JUnit XML, or reads the XML of a run made before (--junit FILE). Prints one
row per test file: its tests, their time added up (setup, call and teardown, as pytest
reports them), and its share of the whole; then the wall time of the run. With workers
(-n), the files' times add up to more than the wall time: each worker's tests are timed on
their own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from _help import described
from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class FileTime:
    file: str
    tests: int
    seconds: float
    failed: int
    skipped: int


def file_times(junit: Path) -> list[FileTime]:
    """Each test file's tests and time in a JUnit XML report, the slowest first."""
    tests: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    failed: dict[str, int] = defaultdict(int)
    skipped: dict[str, int] = defaultdict(int)
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        # pytest's classname is the module's dotted path, then the class if there is one.
        module = case.get("classname", "").split(".")
        while module and module[-1][:1].isupper():
            module.pop()
        name = "/".join(module) + ".py"
        tests[name] += 1
        seconds[name] += float(case.get("time", "0"))
        if case.find("failure") is not None or case.find("error") is not None:
            failed[name] += 1
        if case.find("skipped") is not None:
            skipped[name] += 1
    rows = [FileTime(n, tests[n], round(seconds[n], 1), failed[n], skipped[n]) for n in tests]
    return sorted(rows, key=lambda row: -row.seconds)


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--junit", type=Path, help="read this JUnit XML instead of running")
    parser.add_argument("--top", type=int, default=0, help="only the N slowest files")
    parser.add_argument("--json", action="store_true", help="print JSON, not tables")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args()
    wall = None
    if args.junit is None:
        junit = Path(tempfile.mkdtemp()) / "suite.xml"
        start = time.monotonic()
        command = [sys.executable, "-m", "pytest", "-q", f"--junitxml={junit}", *args.pytest_args]
        subprocess.run(command, cwd=ROOT)
        wall = time.monotonic() - start
    else:
        junit = args.junit
    rows = file_times(junit)
    total = sum(row.seconds for row in rows)
    shown = rows[: args.top] if args.top else rows
    if args.json:
        print(json.dumps({"wall_s": wall, "tests_s": total, "files": [asdict(r) for r in rows]}))
        return 0
    table = [
        (r.file, r.tests, f"{r.seconds:.1f}", f"{r.seconds / total:.1%}", r.failed, r.skipped)
        for r in shown
    ]
    headers = ("file", "tests", "seconds", "share", "failed", "skipped")
    print(tabulate(table, headers=headers))
    tests = sum(row.tests for row in rows)
    print(f"\n{tests} tests in {len(rows)} files: {total:.0f} s of tests", end="")
    print(f", {wall:.0f} s of wall time" if wall is not None else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
