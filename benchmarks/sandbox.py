"""What watching a player's use costs the referee: one sample of its processes, by each method.

Usage: python benchmarks/sandbox.py [--samples N] [--background N] [--json]

A sample sums the memory (Pss), CPU time and processes of one player's processes, found by a
scan of all of /proc (its process group), or listed by its pids cgroup when the machine has
one. The player here is a process with 4 children; --background starts that many more idle
processes on the machine, which a scan of /proc has to read too. Each player is sampled every
100 ms, so C matches at a time take 2 * C samples per 100 ms; a tournament shares one scan of
/proc among all its players, so it takes one scan per 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable

from _help import described
from tabulate import tabulate

from referee.sandbox.cgroups import PidsCgroup
from referee.sandbox.isolation import machine_protections
from referee.sandbox.limits import SAMPLE_EVERY_S
from referee.sandbox.proc import group_stats, group_usage, stats_of

CHILDREN = 4
CONCURRENCY = (1, 4, 16)


def _median_ms(sample: Callable[[], object], samples: int) -> float:
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        sample()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def _row(method: str, sample_ms: float, shared: bool = False) -> dict[str, object]:
    """A method's cost per sample, and its share of one core at each concurrency.

    A shared scan is taken once per period for all players; the others once per player.
    """
    share = {
        f"core_share_c{c}": (1 if shared else 2 * c) * sample_ms / 1000 / SAMPLE_EVERY_S
        for c in CONCURRENCY
    }
    return {"method": method, "ms_per_sample": sample_ms, "shared": shared, **share}


def measure(samples: int, background: int) -> dict[str, object]:
    """Start the player and the background processes, time each method, and stop them all."""
    idle = [subprocess.Popen(["sleep", "600"]) for _ in range(background)]
    cgroup = None
    parent = machine_protections().cgroups
    if parent is not None:
        cgroup = PidsCgroup.make(parent, CHILDREN + 8)
    script = f"for i in $(seq {CHILDREN}); do sleep 600 & done; wait"
    player = subprocess.Popen(
        ["sh", "-c", script],
        start_new_session=True,
        preexec_fn=cgroup.join if cgroup is not None else None,
    )
    try:
        while len(group_stats(player.pid)) < CHILDREN + 1:
            time.sleep(0.01)
        machine = sum(1 for entry in os.scandir("/proc") if entry.name.isdigit())
        scan_ms = _median_ms(lambda: group_usage(group_stats(player.pid)), samples)
        rows = [
            _row("process group, a scan of /proc per player", scan_ms),
            _row("process group, one shared scan (tournaments)", scan_ms, shared=True),
        ]
        if cgroup is not None:
            rows.append(
                _row(
                    "pids cgroup",
                    _median_ms(lambda: group_usage(stats_of(cgroup.members())), samples),
                )
            )
    finally:
        os.killpg(player.pid, 9)
        player.wait()
        for process in idle:
            process.kill()
            process.wait()
        if cgroup is not None:
            while cgroup.members():
                time.sleep(0.01)
            cgroup.remove()
    return {"processes_on_machine": machine, "player_processes": CHILDREN + 1, "results": rows}


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--samples", type=int, default=200, help="samples per method (200)")
    parser.add_argument("--background", type=int, default=0, help="idle processes to add (0)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    report = measure(args.samples, args.background)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{report['processes_on_machine']} processes on the machine; the player has "
        f"{report['player_processes']}; median of {args.samples} samples\n"
    )
    headers = ["method", "ms/sample", *(f"core share, {c} matches at a time" for c in CONCURRENCY)]
    table = [
        [row["method"], f"{row['ms_per_sample']:.3f}"]
        + [f"{row[f'core_share_c{c}']:.1%}" for c in CONCURRENCY]
        for row in report["results"]
    ]
    print(tabulate(table, headers=headers))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
