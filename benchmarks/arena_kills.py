"""`kill -9` of `referee arena serve` at random moments of a ladder, again and again.

Whether, after all of them, every transcript in results/ verifies and every finished match
is there once (issue 51).

Usage: python benchmarks/arena_kills.py [--kills N] [--seed N] [--most S] [--bots N]
           [--database sqlite|postgresql] [--workers N] [--limit S] [--json]

Makes an arena in a temporary directory (SQLite there, or a throwaway PostgreSQL server made
with initdb) that plays double-tictactoe at short clocks, with --bots random players put on
its ladder directly. Then --kills times: starts the real `referee arena serve`, waits a
random moment (from 0 to --most seconds after it listens, drawn with --seed: while it
settles what the last kill left, or while matches are played and recorded) and sends it
SIGKILL. Then it starts it once more, lets it play until the ladder has recorded matches
again, pauses the ladder, lets the matches in flight end and stops it (SIGTERM), and audits
the record: every finished match in the database against the transcripts in results/ (one
each, no transcript of no finished match), all verified by `referee replay --verify`, and
each version's count of matches against its seats in finished matches (none lost, none
counted twice), and no match of a pair (its seating) done twice. Exit 1 when the record is
not whole or `serve` had exited by itself before a kill, 2 when the run could not be made
(a start that did not come up among them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from tabulate import tabulate

from referee.arena.store.db import Match, MatchState
from referee.arena.store.home import Arena, init_arena, open_arena
from referee.errors import RefereeError

from arena import place_bots  # isort: skip
from _help import described

from _arena_run import (  # isort: skip
    BenchError,
    Deadline,
    Parser,
    Postgres,
    Serving,
    audit,
    end_ladder,
    progress,
    until,
)

CONFIG = """\
name: arena-kills
games: [double-tictactoe]
start_clock: 5000
play_clock: 500
policy: forfeit
arena:
  placement_matches: 4
"""
# Matches the last start must record before it is stopped: the ladder plays on.
LAST_MATCHES = 10


@dataclass(frozen=True)
class Kill:
    """One start of `serve` and its SIGKILL: when, and what the database held then."""

    number: int
    after_s: float
    done: int
    running: int
    # Set when `serve` had exited by itself before its kill: its last line.
    exited: str | None


def counts(arena: Arena) -> tuple[int, int]:
    """Matches done, and matches running, as the database has them now."""
    with arena.database.session() as session:
        found = dict(
            session.execute(
                select(Match.state, func.count())
                .where(Match.state.in_([MatchState.DONE, MatchState.RUNNING]))
                .group_by(Match.state)
            ).all()
        )
    return found.get(MatchState.DONE, 0), found.get(MatchState.RUNNING, 0)


def run(args: argparse.Namespace) -> dict[str, Any]:
    deadline = Deadline.after(args.limit)
    moments = random.Random(args.seed)
    with contextlib.ExitStack() as stack:
        temporary = Path(
            stack.enter_context(
                tempfile.TemporaryDirectory(prefix="arena-kills-", ignore_cleanup_errors=True)
            )
        )
        postgres = None
        if args.database == "postgresql":
            progress("starting a PostgreSQL server")
            postgres = Postgres.start()
            stack.callback(postgres.stop)
        directory, logs = temporary / "arena", temporary / "logs"
        config = temporary / "arena.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        organiser = init_arena(directory, config, postgres.url if postgres else None)
        place_bots(directory, args.bots, prefix="seed-")
        arena = open_arena(directory)
        stack.callback(arena.close)
        options = ("--workers", str(args.workers)) if args.workers else ()
        kills = []
        for number in range(1, args.kills + 1):
            serving = Serving.start(directory, logs, deadline, options=options)
            stack.callback(serving.stop)
            after = round(moments.uniform(0.0, args.most), 2)
            deadline.wait(max(0.0, serving.started + after - time.monotonic()))
            exited = None if serving.alive() else serving.said()
            serving.kill()
            done, running = counts(arena)
            kills.append(Kill(number, after, done, running, exited))
            progress(f"kill {number}/{args.kills} at {after:g} s: {done} done, {running} running")
        progress("the last start: playing on, then stopped")
        serving = Serving.start(directory, logs, deadline, options=options)
        stack.callback(serving.stop)
        before = counts(arena)[0]

        def played() -> bool:
            if not serving.alive():
                raise BenchError(f"referee arena serve exited: {serving.said()}")
            return counts(arena)[0] >= before + LAST_MATCHES

        until(f"{LAST_MATCHES} matches after the last start", played, deadline, 120.0)
        last = {
            "stopped_cleanly": end_ladder(serving, organiser, deadline) == 0,
            "said": serving.said(),
        }
        record = audit(directory, deadline).to_json()
    return {
        "database": args.database,
        "bots": args.bots,
        "seed": args.seed,
        "most_s": args.most,
        "workers": args.workers,
        "kills": [asdict(kill) for kill in kills],
        "last_start": last,
        "record": record,
    }


def passed(report: dict[str, Any]) -> bool:
    """Whether the record is whole and `serve` went on after every kill."""
    return (
        report["record"]["clean"]
        and report["last_start"]["stopped_cleanly"]
        and not any(kill["exited"] for kill in report["kills"])
    )


def print_table(report: dict[str, Any]) -> None:
    print(
        f"arena kills on {report['database']}: {len(report['kills'])} kills, seed"
        f" {report['seed']}, within {report['most_s']:g} s of each start, {report['bots']}"
        f" bots, {os.cpu_count()} cores, python {sys.version.split()[0]}"
    )
    rows = [
        [kill["number"], kill["after_s"], kill["done"], kill["running"], kill["exited"] or ""]
        for kill in report["kills"]
    ]
    headers = ["kill", "after s", "done", "running", "had exited by itself"]
    print(tabulate(rows, headers=headers, floatfmt=".2f"))
    record = report["record"]
    print()
    print(
        f"finished matches {record['done']}, transcripts {record['transcripts']}, verified"
        f" {record['verified']}, failed {record['failed']}; done without a transcript"
        f" {record['missing']}, transcripts of no finished match {record['orphans']}, misnamed"
        f" {record['misnamed']}, versions miscounted {record['miscounted']}, matches done twice"
        f" {record['duplicated']}"
    )
    for kind, values in record["examples"].items():
        for value in values:
            print(f"  {kind}: {value}")
    last = report["last_start"]
    print(f"the last start stopped cleanly: {last['stopped_cleanly']} ({last['said']})")
    verdict = "pass" if report["passed"] else "FAIL"
    print(f"every transcript verifies, every finished match once: {verdict}")


def whole(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(f"{text!r}: a whole number from {low} to {high}")
        return int(text)

    return parse


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if not 0.1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds from 0.1 to 86400")
    return value


def main() -> None:
    parser = Parser(**described(__doc__))
    parser.add_argument("--kills", type=whole(1, 1000), default=20, help="(default 20)")
    parser.add_argument("--seed", type=whole(0, 2**32), help="for the moments (default: random)")
    parser.add_argument(
        "--most", type=seconds, default=10.0, help="latest moment after a start (default 10 s)"
    )
    parser.add_argument("--bots", type=whole(2, 100), default=4, help="on the ladder (default 4)")
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--workers", type=whole(1, 64), help="local workers (default: none)")
    parser.add_argument("--limit", type=seconds, default=1200.0, help="time limit (1200 s)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**32)
    # SIGTERM ends the run as Ctrl-C does: everything started is stopped and removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        report = run(args)
    except (RefereeError, BenchError) as error:
        print(f"arena kills: {error}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("arena kills: interrupted; everything it started is stopped", file=sys.stderr)
        sys.exit(130)
    report["passed"] = passed(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
