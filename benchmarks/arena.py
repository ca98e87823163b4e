"""The arena under load: the ladder's matches per second, and the leaderboard API's latency
meanwhile.

Usage: python benchmarks/arena.py [--seconds S] [--clients N] [--bots N] [--workers N]
                                  [--game ID] [--database URL] [--submit] [--json]

Makes an arena in a temporary directory (SQLite there, or the empty database at
--database) that plays one game at short clocks, puts --bots instant bots on its ladder,
each its own author and bot (referee/players/starters/random_player.py, the sample bot of
docs/protocol.md: it needs only the standard library, as a bot in the jail must), and runs
`referee arena serve DIR --workers N` as a subprocess. Once matches flow it measures, for
--seconds each, in turn:

  ladder alone       matches recorded per second (from /api/status), no client asking
  ladder + clients   the same, while --clients clients each ask GET /api/leaderboard back
                     to back on a connection of their own: the latency of their answers
  paused + clients   the same clients with the ladder paused (its matches in flight ended):
                     what the leaderboard costs when nothing else runs

The bots are put on the ladder directly in the database, as versions `placing`: the intake
(unpacking, validating) is not what is measured. With --submit they go through the API and
the intake instead, as authors' bots do. Exit 1 when the issue's target is missed: at least
TARGET_RATE matches/s, and a p95 under TARGET_P95_MS ms with the ladder playing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _help import described
from sqlalchemy import func, select
from tabulate import tabulate

from referee.arena import client
from referee.arena.store.db import Author, Bot, Match, MatchState, Seat, Version, VersionState
from referee.arena.store.home import add_author, init_arena, open_arena
from referee.errors import RefereeError
from referee.players.starter import STARTERS

ROOT = Path(__file__).resolve().parents[1]
BOT = STARTERS / "random_player.py"
# The jail shows the system's directories: a bot runs the system's Python, not a venv's.
RUN = f"/usr/bin/python3 {BOT.name}"
TARGET_RATE = 50.0
TARGET_P95_MS = 100.0
# Generous: the machine may be busy, and the workers take seconds to start.
DEADLINE_S = 120.0
POLL_S = 0.5
# Among the quickest games to play (docs/benchmarks.md, "Tournament throughput"), and one of
# turns: a match takes one core, so each of two workers on two cores plays its own. Ticblock's
# simultaneous phase takes a core per seat, two a match: one worker on two cores.
DEFAULT_GAME = "double-tictactoe"
CONFIG = """\
name: arena-bench
games: [{game}]
start_clock: 5000
play_clock: 500
policy: forfeit
arena:
  placement_matches: 10
  submission: {{per_hour: 100}}
  validate: {{matches_per_role: 1}}
"""


class BenchError(Exception):
    """The benchmark could not run: one line saying why."""


@dataclass(frozen=True)
class Latency:
    """The leaderboard's answers in one phase: how many, how fast, how many failed."""

    requests: int
    errors: int
    median_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: list[float], errors: int) -> Latency:
        if len(seconds) < 2:
            raise BenchError(f"only {len(seconds)} leaderboard answers in the phase")
        cuts = statistics.quantiles(seconds, n=100, method="inclusive")
        return cls(
            requests=len(seconds),
            errors=errors,
            median_ms=round(1000 * statistics.median(seconds), 2),
            p95_ms=round(1000 * cuts[94], 2),
            p99_ms=round(1000 * cuts[98], 2),
            max_ms=round(1000 * max(seconds), 2),
        )


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    matches: int
    matches_per_s: float
    latency: Latency | None


class Server:
    """`referee arena serve` as a subprocess, and its API as the organiser."""

    def __init__(self, directory: Path, workers: int, token: str, logs: Path) -> None:
        self.stdout = logs / "serve.out"
        self.stderr = logs / "serve.err"
        command = [sys.executable, "-m", "referee", "arena", "serve", str(directory)]
        command += ["--workers", str(workers), "--port", "0"]
        with self.stdout.open("w") as out, self.stderr.open("w") as err:
            self.process = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT)
        self.url = self._listening()
        self.api = client.Api(self.url, token)

    def _listening(self) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+)", self.stdout.read_text())
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                raise BenchError(f"referee arena serve exited: {self.said()}")
            time.sleep(POLL_S)
        raise BenchError(f"referee arena serve did not listen within {DEADLINE_S:.0f} s")

    def said(self) -> str:
        """The last line the server wrote to its standard error."""
        lines = self.stderr.read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"(nothing on stderr, exit {self.process.poll()})"

    def ladder(self) -> dict[str, Any]:
        ladder: dict[str, Any] = self.api.get("/api/status")["ladder"]
        return ladder

    def until(self, what: str, done: Any) -> dict[str, Any]:
        """The ladder's status once `done(status)`; BenchError after DEADLINE_S."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"referee arena serve exited: {self.said()}")
            status = self.ladder()
            if done(status):
                return status
            time.sleep(POLL_S)
        raise BenchError(f"{what}: not within {DEADLINE_S:.0f} s (the server: {self.said()})")

    def stop(self) -> None:
        """SIGTERM, as an organiser stops it; it must end cleanly."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise BenchError(
                f"referee arena serve did not stop within {DEADLINE_S:.0f} s"
            ) from None
        if code != 0:
            raise BenchError(f"referee arena serve ended with exit {code}: {self.said()}")


def make_bot(directory: Path) -> Path:
    """A bot's directory, with the sample random player in it."""
    directory.mkdir(parents=True)
    shutil.copy(BOT, directory / BOT.name)
    return directory


def place_bots(directory: Path, count: int, prefix: str = "") -> list[str]:
    """`count` bots (`PREFIXbotN`), each its own author's (`PREFIXauthorN`), put on the ladder
    directly as versions placing: the intake is not what is measured. The authors' tokens."""
    arena = open_arena(directory)
    tokens = []
    try:
        for index in range(count):
            name, author_name = f"{prefix}bot{index}", f"{prefix}author{index}"
            tokens.append(add_author(arena, author_name))
            with arena.database.session() as session:
                author = session.scalar(select(Author).where(Author.name == author_name))
                version = Version(
                    bot=Bot(author=author, name=name),
                    number=1,
                    state=VersionState.PLACING,
                    run=RUN,
                    archive_sha256="0" * 64,
                )
                session.add(version)
                session.flush()
                version_id = version.id
            make_bot(arena.bot_directory(version_id))
    finally:
        arena.close()
    return tokens


def submit_bots(server: Server, directory: Path, count: int, sources: Path) -> None:
    """`count` bots, each its own author's, sent through the API and the intake, one after
    another: each must reach the ladder."""
    arena = open_arena(directory)
    try:
        tokens = [add_author(arena, f"author{index}") for index in range(count)]
    finally:
        arena.close()
    for index, token in enumerate(tokens):
        name = f"bot{index}"
        source = make_bot(sources / name)
        (source / "bot.yaml").write_text(f"name: {name}\nrun: {RUN}\n", encoding="utf-8")
        found = client.submit(client.Api(server.url, token), source)
        if not found.reached_ladder:
            raise BenchError(f"{name} did not reach the ladder: {found.version.get('reason')}")
        progress(f"{name}: on the ladder")


def ask_leaderboard(
    url: str, stop: threading.Event, seconds: list[float], errors: list[int]
) -> None:
    """GET /api/leaderboard back to back on one kept-alive connection until `stop`."""
    parsed = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=DEADLINE_S)
    try:
        while not stop.is_set():
            begun = time.perf_counter()
            try:
                connection.request("GET", "/api/leaderboard")
                answer = connection.getresponse()
                body = answer.read()
            except (OSError, http.client.HTTPException):
                errors.append(1)
                connection.close()
                continue
            took = time.perf_counter() - begun
            if answer.status != 200 or not body.startswith(b'{"leaderboard":'):
                errors.append(1)
                continue
            seconds.append(took)
    finally:
        connection.close()


@contextmanager
def clients(url: str, count: int) -> Iterator[tuple[list[float], list[int]]]:
    """`count` clients asking for the leaderboard while the block runs: their answers'
    times and their errors."""
    stop = threading.Event()
    seconds: list[float] = []
    errors: list[int] = []
    threads = [
        threading.Thread(target=ask_leaderboard, args=(url, stop, seconds, errors))
        for _ in range(count)
    ]
    for thread in threads:
        thread.start()
    try:
        yield seconds, errors
    finally:
        stop.set()
        for thread in threads:
            thread.join(DEADLINE_S)


def phase(server: Server, name: str, seconds: float, asking: int) -> Phase:
    """Matches recorded and (with `asking` clients) the leaderboard's latency over `seconds`."""
    progress(f"{name}: {seconds:g} s")
    before = server.ladder()["played"]
    begun = time.monotonic()
    latency = None
    if asking:
        with clients(server.url, asking) as (answers, errors):
            time.sleep(seconds)
        latency = Latency.of(list(answers), len(errors))
    else:
        time.sleep(seconds)
    played = server.ladder()["played"] - before
    took = time.monotonic() - begun
    return Phase(name, round(took, 1), played, round(played / took, 1), latency)


def pause(server: Server, paused: bool) -> None:
    server.api.request("POST", f"/api/ladder/{'pause' if paused else 'resume'}", b"")


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as temporary:
        directory = Path(temporary) / "arena"
        config = Path(temporary) / "arena.yaml"
        config.write_text(CONFIG.format(game=args.game), encoding="utf-8")
        token = init_arena(directory, config, args.database)
        if not args.submit:
            place_bots(directory, args.bots)
        server = Server(directory, args.workers, token, Path(temporary))
        try:
            if args.submit:
                submit_bots(server, directory, args.bots, Path(temporary) / "sources")
            progress(f"{server.url}: waiting for matches to flow")
            server.until("the first matches", lambda status: status["played"] >= 2 * args.bots)
            phases = [
                phase(server, "ladder alone", args.seconds, 0),
                phase(server, "ladder + clients", args.seconds, args.clients),
            ]
            pause(server, True)
            server.until("the paused ladder's matches ending", lambda s: s["claimed"] == 0)
            phases.append(phase(server, "paused + clients", args.seconds, args.clients))
        finally:
            server.stop()
        return {
            "game": args.game,
            "bots": args.bots,
            "workers": args.workers,
            "clients": args.clients,
            "database": "sqlite" if args.database is None else args.database.split(":")[0],
            "submitted": args.submit,
            "phases": [asdict(p) for p in phases],
            **recorded(directory),
        }


def recorded(directory: Path) -> dict[str, Any]:
    """What the arena's database holds at the end: matches done, those with a fault (an
    instant bot should have none: a rate of forfeits would mean nothing), bots rated."""
    arena = open_arena(directory)
    try:
        with arena.database.session() as session:
            done = session.scalar(
                select(func.count()).select_from(Match).where(Match.state == MatchState.DONE)
            )
            faulted = session.scalar(
                select(func.count(func.distinct(Seat.match_id))).where(Seat.faulted)
            )
            rated = session.scalar(
                select(func.count()).select_from(Version).where(Version.state == VersionState.RATED)
            )
    finally:
        arena.close()
    return {"matches_done": done, "matches_faulted": faulted, "bots_rated": rated}


def meets_target(report: dict[str, Any]) -> bool:
    playing = next(p for p in report["phases"] if p["name"] == "ladder + clients")
    return (
        playing["matches_per_s"] >= TARGET_RATE
        and playing["latency"]["p95_ms"] < TARGET_P95_MS
        and report["matches_faulted"] == 0
    )


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0")
    return value


def count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number from 1 to 1000")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--seconds", type=positive, default=30.0, help="length of each phase")
    parser.add_argument("--clients", type=count, default=4, help="leaderboard clients at once")
    parser.add_argument("--bots", type=count, default=10, help="instant bots on the ladder")
    parser.add_argument("--workers", type=count, default=2, help="local Dask workers")
    parser.add_argument("--game", default=DEFAULT_GAME, help=f"(default {DEFAULT_GAME})")
    parser.add_argument("--database", metavar="URL", help="an empty database (default SQLite)")
    parser.add_argument("--submit", action="store_true", help="bots through the API and intake")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    if args.bots < 2:
        parser.error("--bots: a ladder needs at least 2")
    try:
        report = run(args)
    except (RefereeError, BenchError) as error:
        print(f"arena benchmark: {error}", file=sys.stderr)
        sys.exit(2)
    report["meets_target"] = meets_target(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    sys.exit(0 if report["meets_target"] else 1)


def print_table(report: dict[str, Any]) -> None:
    print(
        f"{report['game']}, {report['bots']} instant bots, {report['workers']} local workers,"
        f" {report['clients']} leaderboard clients, {report['database']},"
        f" {os.cpu_count()} cores, python {sys.version.split()[0]}"
    )
    rows = []
    for p in report["phases"]:
        latency = p["latency"] or {}
        rows.append(
            [
                p["name"],
                p["seconds"],
                p["matches"],
                p["matches_per_s"],
                *(
                    latency.get(key, "")
                    for key in ("requests", "errors", "median_ms", "p95_ms", "p99_ms", "max_ms")
                ),
            ]
        )
    headers = ["phase", "s", "matches", "matches/s", "requests", "errors", "median ms"]
    print(tabulate(rows, headers=[*headers, "p95 ms", "p99 ms", "max ms"], floatfmt=".1f"))
    print(
        f"matches done {report['matches_done']}, with a fault {report['matches_faulted']},"
        f" bots rated {report['bots_rated']}; target (>= {TARGET_RATE:g} matches/s, p95 <"
        f" {TARGET_P95_MS:g} ms while playing): {'met' if report['meets_target'] else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
