"""Whether the ladder keeps its pace while one author floods the doors (issue 71).

Usage: python benchmarks/arena_flood.py [--database sqlite|postgresql|both] [--quiet S]
                                        [--flood S] [--threads N] [--bots N] [--json]

About two and a half minutes for both databases at the defaults (30 s quiet, 30 s of flood).

For each database it makes an arena in a temporary directory (SQLite there; PostgreSQL on a
throwaway server of its own) that plays double-tictactoe at short clocks, two matches at a
time, puts --bots random players on its ladder directly and runs the real `referee arena
serve`. Once matches flow it counts the matches recorded in --quiet seconds, the ladder's
quiet pace; then, for --flood seconds, one author's client fetches match pages
(`/matches/KEY` of finished matches, drawn at random) as fast as they are answered, from
--threads threads on kept-alive connections, in a process of its own pinned to the
machine's last core (`taskset`: a remote client would cost the machine nothing, and pinned
it takes at most that core), and the matches recorded meanwhile are counted again. The
flood's answers are counted by status, with their rate: most are refused, 429 once the
author's allowance of requests is spent (50 at once, then 10 a second) and 503 while the
author's one match page at a time is being made; a flood of fewer than 100 requests a
second is said to be no flood.

Exit 1 when the ladder's rate under the flood is below 80% of the quiet one, or the flood
was no flood, on any database (issue 71's target); 2 when the run could not be made.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

from _arena_run import (
    BenchError,
    Deadline,
    Parser,
    Postgres,
    Serving,
    api,
    done_between,
    end_ladder,
    progress,
    until,
    utcnow,
)
from _help import described
from arena import place_bots
from sqlalchemy import select
from tabulate import tabulate

from referee.arena.store.db import Match, MatchState
from referee.arena.store.home import add_author, init_arena, open_arena

CONFIG = """\
name: arena-flood
games: [double-tictactoe]
start_clock: 5000
play_clock: 500
concurrency: 2
policy: forfeit
arena:
  placement_matches: 4
"""
TARGET_SHARE = 0.8
# Fewer requests a second than this is no flood: the run measured nothing.
FLOOD_PER_S = 100
# The matches to draw the flood's pages from, once the ladder has played them.
KEYS = 40
REQUEST_S = 30.0


def flood(url: str, token: str, keys: list[str], seconds: float, threads: int) -> Counter[str]:
    """Match pages fetched back to back for `seconds` from `threads` threads: the answers
    counted by status ("error" for a connection that failed)."""
    counted: Counter[str] = Counter()
    lock = threading.Lock()
    end = time.monotonic() + seconds
    parsed = urllib.parse.urlsplit(url)

    def fetch(seed: int) -> None:
        rng = random.Random(seed)
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=REQUEST_S)
        headers = {"Authorization": f"Bearer {token}"}
        while time.monotonic() < end:
            try:
                connection.request("GET", f"/matches/{rng.choice(keys)}", headers=headers)
                answer = connection.getresponse()
                answer.read()
                status = str(answer.status)
            except (OSError, http.client.HTTPException):
                connection.close()
                status = "error"
            with lock:
                counted[status] += 1
        connection.close()

    workers = [threading.Thread(target=fetch, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return counted


def finished_keys(directory: Path, count: int) -> list[str]:
    arena = open_arena(directory)
    try:
        with arena.database.session() as session:
            query = select(Match.key).where(Match.state == MatchState.DONE).limit(count)
            return list(session.scalars(query))
    finally:
        arena.close()


def pinned_flood(
    url: str, token: str, keys: list[str], seconds: float, threads: int
) -> tuple[dict[str, int], dt.datetime, dt.datetime]:
    """`flood` in a process of its own, pinned to the last core: its answers, and when it
    began and ended."""
    core = str(max(os.sched_getaffinity(0)))
    command = [
        *(["taskset", "-c", core] if shutil.which("taskset") else []),
        sys.executable,
        __file__,
        "--flood-of",
        json.dumps({"url": url, "token": token, "keys": keys, "seconds": seconds}),
        "--threads",
        str(threads),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise BenchError(f"the flooding client failed: {done.stderr.strip()[-300:]}")
    said = json.loads(done.stdout)
    moments = (dt.datetime.fromisoformat(said[name]) for name in ("begun", "ended"))
    return said["answers"], *moments


def run_one(args: argparse.Namespace, database: str, scratch: Path) -> dict[str, Any]:
    deadline = Deadline.after(args.limit)
    server = Postgres.start() if database == "postgresql" else None
    directory = scratch / f"arena-{database}"
    try:
        config = scratch / "arena.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        organiser = init_arena(directory, config, None if server is None else server.url)
        place_bots(directory, args.bots)
        arena = open_arena(directory)
        try:
            flooder = add_author(arena, "flooder")
        finally:
            arena.close()
        serving = Serving.start(directory, scratch / f"logs-{database}", deadline)
        try:

            def flowing() -> bool:
                if not serving.alive():
                    raise BenchError(f"referee arena serve exited: {serving.said()}")
                status, body = api(serving.url, "GET", "/api/status", organiser)
                return status == 200 and body["ladder"]["played"] >= KEYS

            until(f"{KEYS} matches", flowing, deadline, 300.0)
            keys = finished_keys(directory, KEYS)
            progress(f"{database}: quiet, {args.quiet:g} s")
            quiet_from = utcnow()
            deadline.wait(args.quiet)
            quiet_to = utcnow()
            progress(f"{database}: flood of {args.threads} threads, {args.flood:g} s")
            flooding = pinned_flood(serving.url, flooder, keys, args.flood, args.threads)
            answers, flood_from, flood_to = flooding
        finally:
            code = end_ladder(serving, organiser, deadline)
        quiet = done_between(directory, quiet_from, quiet_to)
        flooded = done_between(directory, flood_from, flood_to)
        quiet_s = (quiet_to - quiet_from).total_seconds()
        flood_s = (flood_to - flood_from).total_seconds()
        quiet_rate, flood_rate = quiet / quiet_s, flooded / flood_s
        return {
            "database": database,
            "quiet": {"seconds": round(quiet_s, 1), "matches": quiet},
            "flood": {"seconds": round(flood_s, 1), "matches": flooded, "answers": answers},
            "quiet_per_s": round(quiet_rate, 2),
            "flood_per_s": round(flood_rate, 2),
            "share": round(flood_rate / quiet_rate, 3) if quiet_rate else None,
            "requests_per_s": round(sum(answers.values()) / flood_s, 1),
            "serve_exit": code,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if server is not None:
            server.stop()


def main() -> None:
    parser = Parser(**described(__doc__))
    parser.add_argument(
        "--database", choices=("sqlite", "postgresql", "both"), default="both", help="(both)"
    )
    parser.add_argument("--quiet", type=float, default=30.0, help="seconds without a flood (30)")
    parser.add_argument("--flood", type=float, default=30.0, help="seconds of the flood (30)")
    parser.add_argument("--threads", type=int, default=4, help="of the flooding client (4)")
    parser.add_argument("--bots", type=int, default=6, help="random players on the ladder (6)")
    parser.add_argument("--limit", type=float, default=1200.0, help="seconds in all (1200)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--flood-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood_of is not None:
        asked = json.loads(args.flood_of)
        begun = utcnow()
        counted = flood(asked["url"], asked["token"], asked["keys"], asked["seconds"], args.threads)
        ended = utcnow()
        moments = {"begun": begun.isoformat(), "ended": ended.isoformat()}
        print(json.dumps({"answers": counted, **moments}))
        return
    databases = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    scratch = Path(tempfile.mkdtemp(prefix="arena-flood-"))
    try:
        runs = [run_one(args, database, scratch) for database in databases]
    except (BenchError, OSError) as error:
        print(f"arena flood: {error}", file=sys.stderr)
        sys.exit(2)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    verdicts = {}
    for one in runs:
        share = f"{one['database']}: the ladder at {TARGET_SHARE:.0%} of its quiet rate or more"
        verdicts[share] = one["share"] is not None and one["share"] >= TARGET_SHARE
        flooded = f"{one['database']}: a flood of {FLOOD_PER_S} requests a second or more"
        verdicts[flooded] = one["requests_per_s"] >= FLOOD_PER_S
    if args.json:
        print(json.dumps({"runs": runs, "verdicts": verdicts}, indent=2))
    else:
        rows = [
            [
                one["database"],
                f"{one['quiet']['matches']} in {one['quiet']['seconds']:g} s",
                f"{one['quiet_per_s']:.2f}",
                f"{one['flood']['matches']} in {one['flood']['seconds']:g} s",
                f"{one['flood_per_s']:.2f}",
                f"{one['share']:.0%}" if one["share"] is not None else "-",
                f"{one['requests_per_s']:,.0f}",
                ", ".join(f"{n:,} {s}" for s, n in sorted(one["flood"]["answers"].items())),
            ]
            for one in runs
        ]
        headers = [
            "database", "quiet", "/s", "flooded", "/s", "share", "requests/s", "the flood's answers"
        ]  # fmt: skip
        print(tabulate(rows, headers=headers))
        for verdict, met in verdicts.items():
            print(f"{'met' if met else 'MISSED'}: {verdict}")
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    sys.exit(0 if all(verdicts.values()) else 1)


if __name__ == "__main__":
    main()
