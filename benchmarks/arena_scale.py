"""The arena at a season's size: its pages' latency, a refit, a pairing decision, serve's
memory and the database's size, with a season's authors, versions and matches in its
database.

Usage: python benchmarks/arena_scale.py [--matches N] [--authors N] [--versions N]
                                        [--database sqlite|postgresql|both] [--seconds S]
                                        [--clients N] [--workers N] [--chatty SHARE]
                                        [--refit-timeout S] [--json]

For each database it makes an arena in a temporary directory (SQLite there; PostgreSQL on a
server of its own on a unix socket in another, as the arena's tests make theirs), seeds a
season into it through the arena's own tables (benchmarks/_arena_season.py: --authors
authors, each with a bot, --versions versions, --matches finished matches), then runs the
real `referee arena serve` on it. While the ladder plays its field (every bot's current
version, the sample random player in the jail, as any bot) on its venue (its own process, or
--workers local workers), --clients clients ask, each back to back on a kept-alive
connection, in a shuffled round, for every page and API call below, for --seconds:

  pages        /, /bots/NAME, /me, /matches, /matches/KEY, /organiser, /organiser/audit
  leaderboard  /api/leaderboard (anonymous, as the public page), /api/running
  a bot        /api/bots/NAME, /api/matches?bot=NAME&limit=12 (its page's two calls)
  my bots      /api/me
  matches      /api/matches (the first page), /api/matches?cursor=C (a page from a random
               moment of the season: deep), ?bot=NAME&cursor=C, and ?bot=NAME of a bot
               suspended long ago (its matches are old)
  a match      /api/matches/KEY of a match whose transcript is on disk
  status       /api/status, as an author and as the organiser
  organiser    /api/bots, /api/authors, /api/audit, /api/disk

A bot, a cursor and a match are drawn anew for each request; a match page's first view
replays its transcript (the later ones are kept). Then, with serve stopped: the ladder's
pairing (one claim topping up the queue, in a transaction rolled back; and one pair planned
for a field of 3,000), and one refit of the ratings as the ladder makes it (its results
loaded, then fitted and saved; in a process of its own, given up after --refit-timeout s).
Serve's peak memory is the peaks (VmHWM) of its three processes added: serve and its two
rooms, the doors and the ladder; the database's size its files (SQLite) or
pg_database_size. Exit 1 when a target is missed: every page and call at p95 <= 250 ms, a
refit in at most 10 s, serve under 1 GiB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _arena_run import (
    BenchError,
    Deadline,
    Parser,
    Postgres,
    Serving,
    api,
    end_ladder,
    percentiles,
    progress,
    until,
)
from _arena_season import Season, SeasonSize, seed
from _help import described
from sqlalchemy import func, select, text, update

from referee.arena.ladder import pairing
from referee.arena.ladder.queue import (
    PAUSED_SETTING,
    claim,
    field_players,
    ladder_members,
    open_field,
)
from referee.arena.ladder.rating_fits import RatingFits
from referee.arena.reading.match_lists import Cursor
from referee.arena.store.config import PairingRule
from referee.arena.store.db import Match, MatchState, Setting, Version, utcnow
from referee.arena.store.home import Arena, init_arena, open_arena
from referee.arena.store.outages import Rider
from referee.errors import RefereeError

CONFIG = """\
name: arena-scale
games: [double-tictactoe]
start_clock: 5000
play_clock: 500
policy: forfeit
arena:
  placement_matches: 10
  # The clients measure the pages, not the arena's pace of one client's requests.
  requests: {per_s: 10000, burst: 10000}
"""
TARGET_P95_MS = 250.0
TARGET_REFIT_S = 10.0
TARGET_MEMORY = 1 << 30
# A field of this size for the pairing of the 3,000 versions.
PAIRING_FIELD = 3000
# A match's page, counted apart the first time it is shown (replayed) and after (kept).
MATCH_PAGE = "page /matches/KEY"
# The pairs a measured claim plans: a venue of 2 places of 4 matches, its queue twice that.
PLANNED = 8
DEADLINE_S = 120.0


@dataclass(frozen=True)
class Request:
    """One kind of request: what it is called, and how to make one (its path and token)."""

    name: str
    make: Callable[[random.Random], tuple[str, str | None]]


def requests(season: Season, cursors: list[str], author: str) -> list[Request]:
    """Every page and API call measured, each drawing its bot, cursor or match anew; those
    of an author's with the token `author`."""
    organiser = season.organiser_token

    def fixed(path: str, token: str | None = author) -> Callable[[random.Random], Any]:
        return lambda _rng: (path, token)

    def of_bot(path: str) -> Callable[[random.Random], Any]:
        return lambda rng: (path.format(bot=rng.choice(season.bots)), author)

    def deep(path: str) -> Callable[[random.Random], Any]:
        return lambda rng: (
            path.format(bot=rng.choice(season.bots), cursor=rng.choice(cursors)),
            author,
        )

    def of_match(path: str) -> Callable[[random.Random], Any]:
        return lambda rng: (path.format(key=rng.choice(season.samples)), author)

    made = [
        Request("page /", fixed("/", None)),
        Request("page /bots/NAME", of_bot("/bots/{bot}")),
        Request("page /me", fixed("/me")),
        Request("page /matches", fixed("/matches")),
        Request(MATCH_PAGE, of_match("/matches/{key}")),
        Request("page /organiser", fixed("/organiser", organiser)),
        Request("page /organiser/audit", fixed("/organiser/audit", organiser)),
        Request("/api/leaderboard", fixed("/api/leaderboard", None)),
        Request("/api/running", fixed("/api/running")),
        Request("/api/bots/NAME", of_bot("/api/bots/{bot}")),
        Request("/api/matches?bot=NAME&limit=12", of_bot("/api/matches?bot={bot}&limit=12")),
        Request("/api/me", fixed("/api/me")),
        Request("/api/matches", fixed("/api/matches")),
        Request("/api/matches?cursor (deep)", deep("/api/matches?cursor={cursor}")),
        Request(
            "/api/matches?bot=NAME&cursor (deep)", deep("/api/matches?bot={bot}&cursor={cursor}")
        ),
        Request("/api/matches/KEY", of_match("/api/matches/{key}")),
        Request("/api/status", fixed("/api/status")),
        Request("/api/status (organiser)", fixed("/api/status", organiser)),
        Request("/api/bots", fixed("/api/bots", organiser)),
        Request("/api/authors", fixed("/api/authors", organiser)),
        Request("/api/audit", fixed("/api/audit", organiser)),
        Request("/api/disk", fixed("/api/disk", organiser)),
    ]
    if season.dormant:
        made.append(
            Request(
                "/api/matches?bot=NAME (suspended long ago)",
                lambda rng: (f"/api/matches?bot={rng.choice(season.dormant)}", author),
            )
        )
    return made


def deep_cursors(arena: Arena, count: int, rng: random.Random) -> list[str]:
    """Cursors of pages that start at random moments of the season."""
    with arena.database.session() as session:
        last = session.scalar(select(Match.id).order_by(Match.id.desc()).limit(1)) or 0
        ids = sorted({rng.randint(1, last) for _ in range(count)}) if last else []
        rows = session.execute(
            select(Match.finished_at, Match.id).where(
                Match.id.in_(ids), Match.finished_at.is_not(None)
            )
        ).all()
    return [Cursor(at, match_id).encode() for at, match_id in rows]


@dataclass
class Answers:
    """What one kind of request got: each answer's time, and the failures."""

    seconds: list[float]
    errors: list[str]


def ask(
    url: str,
    kinds: list[Request],
    stop: threading.Event,
    answers: dict[str, Answers],
    lock: threading.Lock,
    rng: random.Random,
    seen: set[str],
) -> None:
    """One client: every kind of request in a shuffled round, again and again until `stop`,
    on one kept-alive connection. A match page is counted apart the first time any client
    asks for it (replayed then) and after (kept): `seen`, the match pages asked for."""
    parsed = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=DEADLINE_S)
    try:
        while not stop.is_set():
            order = list(kinds)
            rng.shuffle(order)
            for kind in order:
                if stop.is_set():
                    break
                path, token = kind.make(rng)
                name = kind.name
                if name == MATCH_PAGE:
                    with lock:
                        name += " (again)" if path in seen else " (first view)"
                        seen.add(path)
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                begun = time.perf_counter()
                try:
                    connection.request("GET", path, headers=headers)
                    answer = connection.getresponse()
                    answer.read()
                except (OSError, http.client.HTTPException) as error:
                    connection.close()
                    with lock:
                        answers[name].errors.append(f"{path}: {error}")
                    continue
                took = time.perf_counter() - begun
                with lock:
                    if answer.status == 200:
                        answers[name].seconds.append(took)
                    else:
                        answers[name].errors.append(f"{path}: HTTP {answer.status}")
    finally:
        connection.close()


def measure_pages(
    serving: Serving, season: Season, cursors: list[str], clients: int, seconds: float
) -> dict[str, Any]:
    """The clients' answers over `seconds`, by kind: each client an author of its own (a
    match page is replayed one at a time for each author), and the organiser."""
    kinds = [
        requests(season, cursors, season.authors[n % len(season.authors)][1])
        for n in range(clients)
    ]
    names = [kind.name for kind in kinds[0] if kind.name != MATCH_PAGE]
    names[1:1] = [f"{MATCH_PAGE} (first view)", f"{MATCH_PAGE} (again)"]
    answers = {name: Answers([], []) for name in names}
    lock = threading.Lock()
    stop = threading.Event()
    # The replays' workers start with the first match page a serve shows: once, not measured.
    warm = season.samples[-1]
    status, _ = api(serving.url, "GET", f"/matches/{warm}", season.authors[0][1], DEADLINE_S)
    if status != 200:
        raise BenchError(f"/matches/{warm}: HTTP {status}")
    seen = {f"/matches/{warm}"}
    threads = [
        threading.Thread(
            target=ask,
            args=(serving.url, kinds[n], stop, answers, lock, random.Random(n), seen),
        )
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(DEADLINE_S)
    return {
        name: {
            "requests": len(found.seconds),
            "errors": len(found.errors),
            "first_errors": found.errors[:3],
            **percentiles(found.seconds),
        }
        for name, found in answers.items()
    }


def ladder(serving: Serving, token: str) -> dict[str, Any]:
    status, body = api(serving.url, "GET", "/api/status", token, timeout=DEADLINE_S)
    if status != 200:
        raise BenchError(f"/api/status: HTTP {status}")
    found: dict[str, Any] = body["ladder"]
    return found


def peak_memory(pid: int) -> int:
    """The peak resident memory of process `pid` (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise BenchError(f"no VmHWM for process {pid}")


def serve_memory(pid: int) -> int:
    """Serve's peak resident memory: its own and its two rooms' (the doors, the ladder),
    each process's peak, added."""
    return sum(peak_memory(one) for one in (pid, *rooms_of(pid)))


def rooms_of(pid: int) -> list[int]:
    """The rooms of serve `pid`: its children that run `referee.arena.service`."""
    return [
        child
        for child, parent in _parents().items()
        if parent == pid and b"referee.arena.service" in _arguments(child)
    ]


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
    return parents


def _arguments(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def descendants_memory(pid: int) -> tuple[int, int]:
    """The processes under serve `pid`'s rooms (the bots' players and workers) and their
    resident memory."""
    parents = _parents()
    rooms = set(rooms_of(pid))
    under, found = {pid}, True
    while found:
        found = False
        for child, parent in parents.items():
            if parent in under and child not in under:
                under.add(child)
                found = True
    under -= {pid, *rooms}
    total = 0
    for child in under:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{child}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return len(under), total


def database_bytes(directory: Path, arena: Arena) -> int:
    """What the arena's database takes: its files (SQLite), or pg_database_size."""
    if arena.database.url.startswith("sqlite"):
        return sum(path.stat().st_size for path in directory.glob("arena.db*"))
    with arena.database.session() as session:
        return int(session.scalar(text("SELECT pg_database_size(current_database())")) or 0)


class _RolledBack(Exception):
    """Raised to roll a measured claim back."""


def measure_pairing(arena: Arena) -> dict[str, Any]:
    """The ladder's claim of a batch with its queue topped up by PLANNED pairs (what it
    reads of the database, and the pairs planned), in a transaction rolled back; and one
    pair planned for a field of PAIRING_FIELD versions."""
    members = ladder_members(arena)
    config = arena.config.field_config(field_players(arena, members.values()), arena.results)
    begun = time.perf_counter()
    the_field = open_field(arena, members, config)
    opened = time.perf_counter() - begun
    took = 0.0
    with contextlib.suppress(_RolledBack), arena.database.session(write=True) as session:
        # As the ladder finds it playing: not paused (the run paused it to end), its queue
        # short of PLANNED pairs.
        session.execute(update(Setting).where(Setting.key == PAUSED_SETTING).values(value="0"))
        queued = session.scalar(
            select(func.count()).select_from(Match).where(Match.state == MatchState.QUEUED)
        )
        begun = time.perf_counter()
        claim(session, arena.config, the_field, 4, (queued or 0) + 2 * PLANNED, utcnow())
        took = time.perf_counter() - begun
        raise _RolledBack
    rng = random.Random(0)
    entries = [
        pairing.Entry(
            version=v,
            bot=v,
            placing=False,
            matches=rng.randint(10, 2000),
            rating=rng.gauss(0, 200),
            margin=rng.uniform(20, 200),
            waited=rng.randint(0, 100),
        )
        for v in range(PAIRING_FIELD)
    ]
    begun = time.perf_counter()
    pairing.plan(entries, 1, {"double-tictactoe": 0}, PairingRule.CLOSE, 10, rng)
    one = time.perf_counter() - begun
    return {
        "field": len(members),
        "open_field_s": round(opened, 3),
        "claim_s": round(took, 4),
        "pairs_planned": PLANNED,
        "per_pair_s": round(took / PLANNED, 4),
        "field_of": PAIRING_FIELD,
        "one_pair_s": round(one, 4),
    }


def refit_in_child(directory: Path, timeout: float) -> dict[str, Any]:
    """One refit as the ladder makes it, in a process of its own given `timeout` s."""
    command = [sys.executable, str(Path(__file__).resolve()), "--refit-of", str(directory)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"finished": False, "timeout_s": timeout}
    if done.returncode != 0:
        raise BenchError(f"the refit failed: {' '.join(done.stderr.split())[-300:]}")
    found: dict[str, Any] = json.loads(done.stdout)
    return {"finished": True, **found}


def refit(directory: Path) -> dict[str, Any]:
    """The ladder's ratings of the arena in `directory`: its results loaded from the
    database as the ladder loads them when it starts, then one refit, fitted and saved."""
    arena = open_arena(directory)
    try:
        fits = RatingFits(arena, Rider(arena.config.database_wait_s))
        begun = time.perf_counter()
        pairs = asyncio.run(fits.load())
        loaded = time.perf_counter() - begun
        took = asyncio.run(fits.refit())
        with arena.database.session() as session:
            versions = session.scalar(
                select(func.count()).select_from(Version).where(Version.rating.is_not(None))
            )
    finally:
        arena.close()
    return {
        "load_s": round(loaded, 2),
        "refit_s": round(took, 2),
        "rated_versions": versions,
        "pairings": pairs,
        "peak_memory_bytes": peak_memory(os.getpid()),
    }


def run_one(args: argparse.Namespace, database: str, scratch: Path) -> dict[str, Any]:
    """The whole measure on one database."""
    deadline = Deadline.after(args.time_limit)
    server = Postgres.start() if database == "postgresql" else None
    directory = scratch / f"arena-{database}"
    try:
        config = scratch / "arena.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        url = None if server is None else server.url
        organiser = init_arena(directory, config, url)
        arena = open_arena(directory)
        try:
            size = SeasonSize(args.authors, args.versions, args.matches)
            progress(f"{database}: seeding {args.matches:,} matches")
            season = seed(arena, organiser, size, args.chatty, progress)
            progress(f"{database}: seeded in {season.seconds:.0f} s")
            seeded_bytes = database_bytes(directory, arena)
            cursors = deep_cursors(arena, 200, random.Random(1))
        finally:
            arena.close()
        report: dict[str, Any] = {
            "database": database,
            "seeded": season.rows,
            "seed_s": round(season.seconds, 1),
            "database_bytes_seeded": seeded_bytes,
        }
        report.update(serve_and_measure(args, directory, season, cursors, deadline))
        arena = open_arena(directory)
        try:
            report["pairing"] = measure_pairing(arena)
            report["database_bytes"] = database_bytes(directory, arena)
        finally:
            arena.close()
        if args.refit_timeout > 0:
            progress(f"{database}: one refit (at most {args.refit_timeout:g} s)")
            report["refit"] = refit_in_child(directory, args.refit_timeout)
        return report
    finally:
        if not args.keep_logs:
            shutil.rmtree(directory, ignore_errors=True)
        if server is not None:
            server.stop()


def serve_and_measure(
    args: argparse.Namespace,
    directory: Path,
    season: Season,
    cursors: list[str],
    deadline: Deadline,
) -> dict[str, Any]:
    """`serve` started on the seeded arena; once its ladder plays, the pages measured."""
    options = ("--workers", str(args.workers)) if args.workers else ()
    begun = time.monotonic()
    serving = Serving.start(directory, directory.parent / "logs", deadline, options=options)
    try:
        listening = time.monotonic() - begun
        seeded = season.rows["matches"]

        def playing() -> bool:
            return ladder(serving, season.organiser_token)["played"] > seeded

        progress(f"listening after {listening:.1f} s; waiting for the ladder's first matches")
        until("the ladder's first match", playing, deadline, args.time_limit)
        first = time.monotonic() - begun
        before = ladder(serving, season.organiser_token)["played"]
        progress(f"the ladder plays ({first:.0f} s after the start); {args.seconds:g} s of pages")
        started = time.monotonic()
        pages = measure_pages(serving, season, cursors, args.clients, args.seconds)
        status = ladder(serving, season.organiser_token)
        rate = (status["played"] - before) / (time.monotonic() - started)
        memory = serve_memory(serving.process.pid)
        processes, processes_bytes = descendants_memory(serving.process.pid)
    except BenchError as error:
        raise BenchError(f"{error}; serve's last line: {serving.said()}") from None
    finally:
        code = end_ladder(serving, season.organiser_token, deadline)
    return {
        "listening_s": round(listening, 1),
        "first_match_s": round(first, 1),
        "ladder_matches_per_s": round(rate, 1),
        "pages": pages,
        "serve_peak_memory_bytes": memory,
        "serve_children": {"processes": processes, "resident_bytes": processes_bytes},
        "serve_exit": code,
    }


def verdicts(report: dict[str, Any]) -> dict[str, bool]:
    """Each target, met or not, for each database."""
    found = {}
    for one in report["runs"]:
        name = one["database"]
        worst = max((p["p95_ms"] or 0.0) for p in one["pages"].values())
        failed = sum(p["errors"] for p in one["pages"].values())
        found[f"{name}: every page and call at p95 <= {TARGET_P95_MS:g} ms"] = (
            worst <= TARGET_P95_MS and failed == 0
        )
        found[f"{name}: serve under 1 GiB"] = one["serve_peak_memory_bytes"] < TARGET_MEMORY
        if "refit" in one:
            refitted = one["refit"]
            within = f"{name}: a refit in at most {TARGET_REFIT_S:g} s"
            if not refitted["finished"]:
                within += " (it did not finish within --refit-timeout)"
            found[within] = refitted["finished"] and refitted["refit_s"] <= TARGET_REFIT_S
    return found


def print_report(report: dict[str, Any]) -> None:
    for one in report["runs"]:
        seeded = one["seeded"]
        print(
            f"{one['database']}: {seeded['authors']:,} authors, {seeded['versions']:,} versions,"
            f" {seeded['matches']:,} matches (seeded in {one['seed_s']:g} s);"
            f" database {one['database_bytes'] / 2**20:,.0f} MiB"
        )
        print(
            f"  serve: listening after {one['listening_s']} s, first match after"
            f" {one['first_match_s']} s, {one['ladder_matches_per_s']} matches/s while measured,"
            f" peak memory {one['serve_peak_memory_bytes'] / 2**20:,.0f} MiB"
        )
        width = max(len(name) for name in [*one["pages"], "request (ms)"])
        print(
            f"  {'request (ms)':<{width}}  {'n':>6}  {'err':>4}  {'median':>7}  {'p95':>7}"
            f"  {'max':>7}"
        )
        for name, page in one["pages"].items():
            print(
                f"  {name:<{width}}  {page['requests']:>6}  {page['errors']:>4}"
                f"  {page['median_ms'] or 0:>7.1f}  {page['p95_ms'] or 0:>7.1f}"
                f"  {page['max_ms'] or 0:>7.1f}"
            )
        paired = one["pairing"]
        print(
            f"  pairing: a claim topping up the queue {paired['claim_s'] * 1000:.0f} ms"
            f" ({paired['pairs_planned']} pairs, field of {paired['field']:,});"
            f" one pair planned for a field of {paired['field_of']:,}"
            f" {paired['one_pair_s'] * 1000:.1f} ms"
        )
        if "refit" in one:
            refitted = one["refit"]
            if refitted["finished"]:
                print(
                    f"  refit: {refitted['refit_s']} s ({refitted['rated_versions']:,} versions,"
                    f" {refitted['pairings']:,} pairings; their results loaded in"
                    f" {refitted['load_s']} s first)"
                )
            else:
                print(f"  refit: not finished within --refit-timeout ({refitted})")
    for line, met in report["verdicts"].items():
        print(f"{'met' if met else 'MISSED'}: {line}")


def main() -> None:
    parser = Parser(**described(__doc__))
    parser.add_argument(
        "--matches", type=int, default=1_000_000, help="finished matches seeded (1,000,000)"
    )
    parser.add_argument("--authors", type=int, default=1000, help="authors, a bot each (1,000)")
    parser.add_argument("--versions", type=int, default=3000, help="their versions (3,000)")
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--seconds", type=float, default=60.0, help="of pages, per database")
    parser.add_argument("--clients", type=int, default=2, help="asking back to back (2)")
    parser.add_argument(
        "--workers", type=int, default=0, help="local workers (0: the ladder's own)"
    )
    parser.add_argument("--chatty", type=float, default=0.1, help="share of bots that log")
    parser.add_argument("--refit-timeout", type=float, default=600.0, help="0: no refit")
    parser.add_argument("--time-limit", type=float, default=3600.0, help="of serve's waits")
    parser.add_argument("--scratch", type=Path, help="where the arenas are made")
    parser.add_argument(
        "--keep-logs", action="store_true", help="keep serve's logs (under --scratch)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--refit-of", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.refit_of is not None:
        print(json.dumps(refit(args.refit_of)))
        return
    if args.matches < 2 or args.authors < 2 or args.versions < args.authors:
        parser.error("give at least 2 matches and 2 authors, and a version for each author")
    databases = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    scratch = Path(tempfile.mkdtemp(prefix="arena-scale-", dir=args.scratch))
    try:
        report = {
            "matches": args.matches,
            "runs": [run_one(args, database, scratch) for database in databases],
        }
    except (RefereeError, BenchError) as error:
        print(f"arena scale: {error}", file=sys.stderr)
        sys.exit(2)
    finally:
        if args.keep_logs:
            progress(f"serve's logs are in {scratch / 'logs'}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    report["verdicts"] = verdicts(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    sys.exit(0 if all(report["verdicts"].values()) else 1)


if __name__ == "__main__":
    main()
