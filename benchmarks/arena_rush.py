"""A deadline rush on the arena's intake (issue 52): authors submit at once, each a bot that
thinks for most of its clock; how long each version waits to be placed, and whether the
intake serves the authors in turn.

Usage: python benchmarks/arena_rush.py [--authors N] [--submissions N] [--window S]
           [--concurrency N,N...] [--think F] [--play-clock MS] [--seed N] [--quick]
           [--workers N [--ladder] [--kill-worker-at S [--restart-after S]]]
           [--limit S] [--json]

For each intake concurrency given (default 1 and 2: one version at a time, and two), on a
new arena (SQLite, in a temporary directory) that plays ticblock at --play-clock and
validates with one match a role, the real `referee arena serve` takes the same rush: the
--submissions versions, author k sending its versions in turn (author k's first, then its
second, ...), each at a time drawn uniformly in --window s from --seed, sent as
`referee arena submit` sends them (POST /api/bots/NAME/versions). Each is a bot
(benchmarks/bots/fair_bot.py think F) that spins the CPU for F of its clock at every move.
The ladder is paused throughout unless --ladder: its matches would share the cores with
the validations, and it is the intake that is measured.

With --workers N (root, iproute2, util-linux), `serve` builds, validates and plays on N
Dask workers that share nothing with it but a network (`_isolated_workers.py`): each in a
network namespace of its own, in a mount namespace in which the arena's directory is empty,
with its share of the cores, a match (or validation) at a time on each. --kill-worker-at S
kills the first worker, nanny and all, S s into the rush (--restart-after T starts it again
T s later, its machine back): then the record is audited as
the soak benchmark audits it (every done match once, with its verifying transcript, counted
once in its versions' results), and the plays the worker took with it, and the intake
steps it cut short, are counted.

The defaults are the issue's (50 authors, 100 submissions in 600 s, 1 s clock, 80%); on two
cores they take about an hour for each concurrency. --quick is a trial (4 authors, 8
submissions in 20 s, clock 500 ms). Exit 1 when a version failed, an author was passed over
or the audit found the record wrong, 2 when the rush could not run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import random
import statistics
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _help import described
from sqlalchemy import func, select
from tabulate import tabulate

from referee.arena.store.db import (
    IN_INTAKE,
    ON_LADDER,
    Author,
    Bot,
    Match,
    Step,
    StepKind,
    Version,
    VersionState,
)
from referee.arena.store.home import init_arena, open_arena

from _arena_run import (  # isort: skip
    BenchError,
    Deadline,
    Parser,
    Serving,
    api,
    audit,
    authors,
    progress,
    until,
)
from _isolated_workers import IsolatedWorkers, missing, wait_for_workers  # isort: skip

FAIR_BOT = Path(__file__).resolve().parent / "bots" / "fair_bot.py"
CONFIG = """\
name: arena-rush
games: [ticblock]
start_clock: 5000
play_clock: {play_clock}
policy: forfeit
arena:
  validate: {{matches_per_role: 1}}
  intake: {{concurrency: {concurrency}}}
  submission: {{per_hour: 100}}
  requests: {{per_s: 1000, burst: 1000}}
"""
POLL_S = 1.0


@dataclass(frozen=True)
class Sent:
    """A submission of the rush: whose, which of theirs (from 1), and when (s from the
    rush's start)."""

    author: int
    nth: int
    at: float


@dataclass
class Rush:
    """One intake concurrency's run of the rush."""

    concurrency: int
    submissions: int
    placed: int
    failed: list[str]
    median_s: float | None
    p95_s: float | None
    max_s: float | None
    passed_over: int
    seconds: float
    # Where the intake and the ladder ran: "this process" or "N isolated workers".
    venue: str = "this process"
    # When the first worker was killed (s into the rush), and what it took with it: the
    # ladder's plays lost (played again) and the intake's steps cut short (taken up again).
    killed_at_s: float | None = None
    lost_plays: int = 0
    cut_short: int = 0
    # The record's audit (`_arena_run.audit`), when a worker was killed.
    audit: dict[str, Any] | None = None


def schedule(authors_count: int, submissions: int, window: float, seed: int) -> list[Sent]:
    """The rush's submissions in the order they are sent: author k's n-th version is its
    n-th time drawn, so that each author's versions go in order."""
    rng = random.Random(seed)
    times = sorted(rng.uniform(0, window) for _ in range(submissions))
    owners = [index % authors_count for index in range(submissions)]
    rng.shuffle(owners)
    counts: dict[int, int] = {}
    sent = []
    for at, owner in zip(times, owners, strict=True):
        counts[owner] = counts.get(owner, 0) + 1
        sent.append(Sent(owner, counts[owner], at))
    return sent


def archive(name: str, think: float) -> bytes:
    """A bot's archive as `referee arena submit` packs it: bot.yaml and the thinking bot."""
    manifest = f"name: {name}\nrun: /usr/bin/python3 fair_bot.py think {think}\n"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member, data in (
            ("bot.yaml", manifest.encode()),
            ("fair_bot.py", FAIR_BOT.read_bytes()),
        ):
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def send(url: str, token: str, name: str, data: bytes, deadline: Deadline) -> None:
    """POST a version, sent again while the arena is busy (503), as the client does."""
    path = f"/api/bots/{name}/versions"
    while True:
        status, body = api_post(url, path, token, data)
        if 200 <= status < 300:
            return
        if status != 503:
            raise BenchError(f"{name}: submission refused ({status}): {body}")
        deadline.wait(1.0)


def api_post(url: str, path: str, token: str, data: bytes) -> tuple[int, Any]:
    """One POST of `data`: its status and body."""
    request = urllib.request.Request(
        url + path,
        method="POST",
        data=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/octet-stream"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()[:200]


def run_rush(args: Any, concurrency: int, sends: list[Sent], deadline: Deadline) -> Rush:
    with tempfile.TemporaryDirectory(prefix="arena-rush-", ignore_cleanup_errors=True) as name:
        temporary = Path(name)
        directory, logs = temporary / "arena", temporary / "logs"
        config = temporary / "arena.yaml"
        text = CONFIG.format(play_clock=args.play_clock, concurrency=concurrency)
        config.write_text(text, encoding="utf-8")
        organiser = init_arena(directory, config)
        tokens = authors(directory, [f"author{k}" for k in range(args.authors)])
        workers = None
        options: tuple[str, ...] = ()
        if args.workers:
            # Nothing of the arena's directory is seen by a worker: not its bots either.
            workers = IsolatedWorkers.start(args.workers, [temporary], deadline)
            wait_for_workers(workers.address, args.workers, deadline)
            options = ("--cluster", workers.address)
        try:
            return _rush(
                args,
                concurrency,
                sends,
                deadline,
                directory,
                logs,
                organiser,
                tokens,
                workers,
                options,
            )
        finally:
            if workers is not None:
                workers.stop()


def _rush(
    args: Any,
    concurrency: int,
    sends: list[Sent],
    deadline: Deadline,
    directory: Path,
    logs: Path,
    organiser: str,
    tokens: dict[str, str],
    workers: IsolatedWorkers | None,
    options: tuple[str, ...],
) -> Rush:
    serving = Serving.start(directory, logs, deadline, options=options)
    killer = None
    killed = threading.Event()
    try:
        if not args.ladder:
            status, _ = api(serving.url, "POST", "/api/ladder/pause", organiser)
            if status != 200:
                raise BenchError(f"the ladder could not be paused ({status})")
        began = time.monotonic()
        if workers is not None and args.kill_worker_at is not None:
            killer = threading.Timer(
                args.kill_worker_at, _kill_first, (workers, killed, args.restart_after)
            )
            # Its wait to start the worker again ends with the run, not after it.
            killer.daemon = True
            killer.start()
        progress(f"concurrency {concurrency}: {len(sends)} submissions in {args.window:g} s")
        for number, sent in enumerate(sends, start=1):
            deadline.wait(max(0.0, began + sent.at - time.monotonic()))
            bot = f"bot{sent.author}-{sent.nth}"
            send(
                serving.url,
                tokens[f"author{sent.author}"],
                bot,
                archive(bot, args.think),
                deadline,
            )
            if number % 10 == 0:
                progress(f"  {number}/{len(sends)} sent")
        arena = open_arena(directory)
        try:

            def intake_done() -> bool:
                if not serving.alive():
                    raise BenchError(f"referee arena serve exited: {serving.said()}")
                waiting = (VersionState.QUEUED, *IN_INTAKE)
                with arena.database.session() as session:
                    left = session.scalars(
                        select(Version.id).where(Version.state.in_(waiting))
                    ).all()
                return not left

            until("every version through the intake", intake_done, deadline, deadline.left())
            seconds = time.monotonic() - began
            rush = measured(arena, concurrency, len(sends), seconds)
            rush.lost_plays, rush.cut_short = losses(arena)
        finally:
            arena.close()
    finally:
        if killer is not None:
            killer.cancel()
        serving.stop()
    if workers is not None:
        rush.venue = f"{args.workers} isolated workers"
    if killer is not None:
        if not killed.is_set():
            raise BenchError("the rush ended before the worker was to be killed")
        rush.killed_at_s = args.kill_worker_at
        # Counted again once `serve` has stopped: its matches in flight are queued again.
        opened = open_arena(directory)
        try:
            rush.lost_plays = losses(opened)[0]
        finally:
            opened.close()
        rush.audit = audit(directory, deadline).to_json()
    return rush


def _kill_first(
    workers: IsolatedWorkers, killed: threading.Event, back_after: float | None
) -> None:
    progress("killing the first worker")
    workers.kill(0)
    killed.set()
    if back_after is not None:
        time.sleep(back_after)
        progress("starting the first worker again")
        workers.restart(0)


def losses(arena: Any) -> tuple[int, int]:
    """The ladder's plays lost to the arena's failures (each match's count, and the attempts
    a venue played again within one play), and the intake's steps cut short."""
    with arena.database.session() as session:
        lost = session.scalar(select(func.coalesce(func.sum(Match.lost), 0))) or 0
        cut = session.scalar(
            select(func.count()).select_from(Step).where(Step.verdict.like("cut short:%"))
        )
    for path in arena.results.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            lost += int(json.loads(path.read_text()).get("lost_attempts") or 0)
    return int(lost), int(cut or 0)


def measured(arena: Any, concurrency: int, submissions: int, seconds: float) -> Rush:
    """The rush as the database recorded it."""
    with arena.database.session() as session:
        rows = session.execute(
            select(Version.id, Author.name, Version.submitted_at, Version.state, Version.reason)
            .join(Bot, Bot.id == Version.bot_id)
            .join(Author, Author.id == Bot.author_id)
        ).all()
        steps = session.execute(
            select(Step.version_id, Step.kind, Step.started_at, Step.finished_at)
        ).all()
    taken: dict[int, dt.datetime] = {}
    ended: dict[int, dt.datetime] = {}
    for version, kind, started, finished in steps:
        if kind == StepKind.UNPACK:
            taken[version] = min(started, taken.get(version, started))
        if kind == StepKind.VALIDATE and finished is not None:
            ended[version] = finished
    waits = [
        (ended[version] - submitted).total_seconds()
        for version, _, submitted, state, _ in rows
        # Placed: it reached the ladder (with the ladder playing, it may be rated by now).
        if state in ON_LADDER and version in ended
    ]
    failed = [
        f"version {v}: {reason}" for v, _, _, state, reason in rows if state == VersionState.FAILED
    ]
    by_author: dict[str, list[tuple[dt.datetime, int]]] = {}
    for version, author, submitted, _, _ in rows:
        by_author.setdefault(author, []).append((submitted, version))
    nth = {
        version: index
        for versions in by_author.values()
        for index, (_, version) in enumerate(sorted(versions), start=1)
    }
    submitted_at = {version: submitted for version, _, submitted, _, _ in rows}
    owner = {version: author for version, author, _, _, _ in rows}
    passed_over = 0
    for waiting in taken:
        for other in taken:
            if owner[other] == owner[waiting] or nth[other] <= nth[waiting]:
                continue
            # `other`, a later version of its author's, was taken in while `waiting` was
            # queued, and submitted after `waiting` was.
            if (
                submitted_at[waiting] <= taken[other] < taken[waiting]
                and submitted_at[other] > submitted_at[waiting]
            ):
                passed_over += 1
    cuts = statistics.quantiles(waits, n=100, method="inclusive") if len(waits) >= 2 else None
    return Rush(
        concurrency=concurrency,
        submissions=submissions,
        placed=len(waits),
        failed=failed,
        median_s=round(statistics.median(waits), 1) if waits else None,
        p95_s=round(cuts[94], 1) if cuts else None,
        max_s=round(max(waits), 1) if waits else None,
        passed_over=passed_over,
        seconds=round(seconds, 1),
    )


def _audited(found: dict[str, Any] | None) -> str:
    """The audit in a few words: clean, or what it found wrong."""
    if found is None:
        return ""
    if found["clean"]:
        return f"clean: {found['done']} done, {found['verified']} verified"
    return "WRONG: " + json.dumps(found["examples"])[:200]


def main() -> int:
    parser = Parser(**described(__doc__))
    parser.add_argument("--authors", type=int, default=50, help="authors (default 50)")
    parser.add_argument("--submissions", type=int, default=100, help="versions sent (default 100)")
    parser.add_argument(
        "--window", type=float, default=600.0, help="s they are sent over (default 600)"
    )
    parser.add_argument(
        "--concurrency",
        default="1,2",
        help="intake concurrencies to run, comma-separated (default 1,2)",
    )
    parser.add_argument(
        "--think", type=float, default=0.8, help="share of its clock a bot thinks (default 0.8)"
    )
    parser.add_argument("--play-clock", type=int, default=1000, help="ms (default 1000)")
    parser.add_argument(
        "--seed", type=int, default=52, help="the submission times' seed (default 52)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a trial: 4 authors, 8 versions in 20 s"
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="isolated Dask workers (default 0: in serve)"
    )
    parser.add_argument("--ladder", action="store_true", help="let the ladder play during the rush")
    parser.add_argument(
        "--kill-worker-at", type=float, default=None, help="s into the rush to kill a worker"
    )
    parser.add_argument(
        "--restart-after",
        type=float,
        default=None,
        help="s after the kill to start the worker again (default: never)",
    )
    parser.add_argument("--limit", type=float, default=3 * 3600.0, help="s the whole run may take")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.quick:
        args.authors, args.submissions, args.window, args.play_clock = 4, 8, 20.0, 500
    try:
        levels = [int(level) for level in args.concurrency.split(",") if level.strip()]
    except ValueError:
        parser.error(f"--concurrency {args.concurrency!r}: whole numbers, comma-separated")
    if not levels or min(levels) < 1 or args.authors < 1 or args.submissions < 1:
        parser.error("--authors, --submissions and each --concurrency must be at least 1")
    if args.kill_worker_at is not None and not args.workers:
        parser.error("--kill-worker-at needs --workers")
    if args.workers and (why := missing()):
        print(f"arena_rush: {why}", file=sys.stderr)
        return 2
    deadline = Deadline.after(args.limit)
    sends = schedule(args.authors, args.submissions, args.window, args.seed)
    try:
        rushes = [run_rush(args, level, sends, deadline) for level in levels]
    except BenchError as error:
        print(f"arena_rush: {error}", file=sys.stderr)
        return 2
    if args.json:
        shown = {
            "authors": args.authors,
            "submissions": args.submissions,
            "window_s": args.window,
            "think": args.think,
            "play_clock_ms": args.play_clock,
            "rushes": [asdict(rush) for rush in rushes],
        }
        print(json.dumps(shown, indent=2))
    else:
        print(
            f"{args.submissions} submissions of {args.authors} authors in {args.window:g} s,"
            f" bots thinking {args.think:.0%} of a {args.play_clock} ms clock"
        )
        killed = any(rush.killed_at_s is not None for rush in rushes)
        rows = [
            [
                rush.venue,
                rush.concurrency,
                f"{rush.placed}/{rush.submissions}",
                rush.median_s,
                rush.p95_s,
                rush.max_s,
                rush.passed_over,
                rush.seconds,
                *([rush.lost_plays, rush.cut_short, _audited(rush.audit)] if killed else []),
            ]
            for rush in rushes
        ]
        headers = [
            "venue",
            "concurrency",
            "placed",
            "wait median s",
            "p95 s",
            "max s",
            "passed over",
            "run s",
            *(["plays lost", "steps cut short", "record"] if killed else []),
        ]
        print(tabulate(rows, headers=headers))
        for rush in rushes:
            for line in rush.failed[:5]:
                print(f"concurrency {rush.concurrency}: failed: {line}")
    sound = all(
        not rush.failed and rush.passed_over == 0 and (rush.audit or {}).get("clean", True)
        for rush in rushes
    )
    return 0 if sound else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
