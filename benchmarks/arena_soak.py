"""The arena under attack and faults at once (issue 51's soak), and what it keeps doing.

Whether the honest authors are served, the ladder plays on, and the record stays whole.

Usage: python benchmarks/arena_soak.py [--database sqlite|postgresql] [--quick]
           [--seconds S] [--baseline S] [--authors N] [--holders N] [--trickles N]
           [--readers N] [--workers N] [--disk-bound MIB] [--grace S] [--limit S]
           [--json]

Loopback only. Makes an arena in a temporary directory (SQLite: on a tmpfs of its own, which
needs root; PostgreSQL: a throwaway server made with initdb beside it) that plays
double-tictactoe at short clocks, two matches at a time (as two cores allow), puts a few
random players on its ladder directly, and runs the real `referee arena serve` (its players'
$TMPDIR on the arena's disk). The clients below but the honest one run at nice 10, the
submitters together weighing as one process at nice 10 (a cpu cgroup): on a network they
would be other machines. Once matches flow
it measures a quiet baseline (the ladder's matches per second, and an honest client's
latency: GET /api/leaderboard every 0.2 s on a new connection), then for --seconds at once:

  authors       --authors authors each run `referee arena submit` of a random player with
                900 KiB of data (it retries while the arena answers 503)
  hostile       one more author submits a random player that fills its $TMPDIR
                (benchmarks/bots/filling_bot.py, twice --disk-bound)
  holders       --holders half-sent requests (a header line every 5 s, never the end of the
                headers) from 10 other loopback addresses, each opened again once closed
  trickles      --trickles uploads of 900 KiB at a byte every 2 s, each an author's, from
                other addresses, each started again once answered or closed
  pages         an author opening match pages not opened before, --readers at once
  faults        at a third and two thirds of the soak, PostgreSQL restarted (pg_ctl restart
                -m fast), or SQLite's disk filled to the last byte and freed 15 s later

The defaults are the issue's (30 authors, 300 held connections, 4 trickled uploads, 4
readers, 300 s); --quick is a trial (4, 40, 2, 2, 45 s). The honest client polls throughout.
After the soak, the submissions are given --grace to end; then the ladder is paused and
`serve` stopped (started again first if it had exited, so that what it decided is settled
as at any start), and the record audited: every finished match in the database against the
transcripts in results/, all verified (`referee replay --verify`), each version's count of
matches against its seats, no match of a pair done twice. Exit 1 when a criterion of the
issue is missed (serve ran throughout, every honest bot on the ladder, p95 under 200 ms, at
least half the quiet rate, a whole record, the disk under --disk-bound), 2 when the soak
could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from tabulate import tabulate

from referee.arena.store.home import init_arena
from referee.errors import RefereeError
from referee.sandbox.cgroups import WeightCgroup, controller_parent, weight_settings

from arena import place_bots  # isort: skip
from _help import described

from _arena_run import (  # isort: skip
    BOT,
    REFEREE,
    ROOT,
    BenchError,
    Deadline,
    Parser,
    Postgres,
    Serving,
    api,
    audit,
    authors,
    disk_use,
    done_between,
    end_ladder,
    on_ladder,
    percentiles,
    progress,
    until,
    utcnow,
    write_bot,
)

FILLING_BOT = Path(__file__).resolve().parent / "bots" / "filling_bot.py"
CONFIG = """\
name: arena-soak
games: [double-tictactoe]
start_clock: 5000
play_clock: 500
concurrency: 2
policy: forfeit
arena:
  placement_matches: 4
  submission: {per_hour: 100}
  validate: {matches_per_role: 1}
"""
# Bots on the ladder before the soak, put there directly.
SEEDS = 6
# What an honest submission carries besides its player: the 900 KiB.
PADDING = 900 * 1024
# The clients of the soak (the submitting authors, the holders, tricklers and page readers)
# run at this nice value, the honest client and `serve` at 0: on a network they would be
# other machines, and here they share its cores, where at the arena's priority the soak
# would measure its own clients' use of them (30 `arena submit` started at once take both
# cores for seconds). Niced alone they would still take the cores from it: where Linux
# groups the scheduling by session (autogroup), a nice value counts only within its group,
# and 30 submitters, each in a session of its own, weigh 30 times a nice-10 process. So the
# submitters run in one cpu cgroup of the weight of one nice-10 process, where the machine
# lets the soak make one (it runs as root), else each with its session's autogroup niced.
CLIENT_NICE = 10
# The kernel's weight of a process at that nice value, as cgroup v1's shares (nice 0: 1024).
CLIENT_WEIGHT = int(weight_settings(CLIENT_NICE)["cpu.shares"])
# The honest client: a request every POLL_S, each on a new connection; a request that fails
# or takes longer than REQUEST_S counts as REQUEST_S.
POLL_S = 0.2
REQUEST_S = 10.0
PAGE_S = 30.0
# The holders: from this many addresses (127.0.0.2, ...), a header line every HOLD_EVERY_S,
# at most OPEN_PER_S connections opened a second.
HOLDER_ADDRESSES = 10
HOLD_EVERY_S = 5.0
OPEN_PER_S = 100
# A trickled upload: this many bytes announced, one sent every TRICKLE_S.
TRICKLE_BYTES = 900 * 1024
TRICKLE_S = 2.0
DISK_EVERY_S = 2.0
# The targets.
TARGET_P95_MS = 200.0
TARGET_RATE_SHARE = 0.5


class Database(StrEnum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class Plan:
    """How big and how long the soak is."""

    database: Database
    seconds: float
    baseline: float
    authors: int
    holders: int
    trickles: int
    readers: int
    workers: int | None
    disk_bound_mib: int
    fill_hold_s: float
    grace: float
    limit: float


FULL = Plan(Database.SQLITE, 300.0, 30.0, 30, 300, 4, 4, None, 512, 15.0, 240.0, 1500.0)
QUICK = replace(
    FULL,
    seconds=45.0,
    baseline=10.0,
    authors=4,
    holders=40,
    trickles=2,
    readers=2,
    fill_hold_s=8.0,
    grace=60.0,
    limit=420.0,
)


@dataclass
class Held:
    """The half-sent connections: opened, closed by the arena, held at each moment."""

    opened: int = 0
    refused: int = 0
    closed: int = 0
    held: list[int] = field(default_factory=list)


def hold(stop: threading.Event, port: int, count: int, found: Held) -> None:
    """Keep `count` half-sent requests open from HOLDER_ADDRESSES addresses, a header line
    on each every HOLD_EVERY_S; one the arena closes (or answers) is opened again."""
    chosen = selectors.DefaultSelector()
    held: set[socket.socket] = set()
    next_line = time.monotonic() + HOLD_EVERY_S
    number = 0
    try:
        while not stop.is_set():
            for _ in range(min(count - len(held), int(OPEN_PER_S * 0.5))):
                if stop.is_set():
                    break
                address = f"127.0.0.{2 + number % HOLDER_ADDRESSES}"
                number += 1
                try:
                    connection = socket.create_connection(
                        ("127.0.0.1", port), timeout=1.0, source_address=(address, 0)
                    )
                    connection.sendall(b"GET /api/leaderboard HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                except OSError:
                    found.refused += 1
                    continue
                connection.setblocking(False)
                chosen.register(connection, selectors.EVENT_READ)
                held.add(connection)
                found.opened += 1
            for key, _ in chosen.select(0.5):
                closed = key.fileobj
                assert isinstance(closed, socket.socket)
                _let_go(chosen, held, closed)
                found.closed += 1
            if time.monotonic() >= next_line:
                next_line = time.monotonic() + HOLD_EVERY_S
                for connection in list(held):
                    try:
                        connection.send(b"X-Held: 1\r\n")
                    except OSError:
                        _let_go(chosen, held, connection)
                        found.closed += 1
            found.held.append(len(held))
    finally:
        for connection in list(held):
            _let_go(chosen, held, connection)
        chosen.close()


def _let_go(
    chosen: selectors.BaseSelector, held: set[socket.socket], connection: socket.socket
) -> None:
    chosen.unregister(connection)
    held.discard(connection)
    connection.close()


@dataclass
class Trickled:
    """The trickled uploads: begun, bytes sent, and how each ended (status or `closed`)."""

    begun: int = 0
    sent: int = 0
    ended: dict[str, int] = field(default_factory=dict)


def trickle(
    stop: threading.Event, port: int, address: str, token: str, name: str, found: Trickled
) -> None:
    """Upload a bot a byte every TRICKLE_S, begun again whenever the arena ends it."""
    head = (
        f"POST /api/bots/{name}/versions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {TRICKLE_BYTES}\r\n\r\n"
    ).encode()
    while not stop.is_set():
        try:
            connection = socket.create_connection(
                ("127.0.0.1", port), timeout=TRICKLE_S, source_address=(address, 0)
            )
        except OSError:
            found.ended["refused"] = found.ended.get("refused", 0) + 1
            stop.wait(1.0)
            continue
        found.begun += 1
        ended = "cut short"
        with connection:
            try:
                connection.sendall(head)
                while not stop.is_set():
                    connection.sendall(b"\0")
                    found.sent += 1
                    try:
                        answer = connection.recv(4096)
                    except TimeoutError:
                        continue
                    ended = answer[9:12].decode("ascii", "replace") if answer else "closed"
                    break
            except OSError:
                ended = "closed"
        found.ended[ended] = found.ended.get(ended, 0) + 1
        stop.wait(1.0)


@dataclass
class Answers:
    """Requests of one kind: when each was made, what it took, whether it was answered
    well, and the statuses."""

    at: list[float] = field(default_factory=list)
    took: list[float] = field(default_factory=list)
    good: list[bool] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    def add(self, at: float, took: float, status: int, good: bool) -> None:
        self.at.append(at)
        self.took.append(took)
        self.good.append(good)
        self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1

    def between(self, begun: float, ended: float) -> dict[str, Any]:
        """Figures of the requests made between the moments; one that failed counts as
        REQUEST_S (the time an honest client waits before it gives up)."""
        chosen = [
            (took if good else max(took, REQUEST_S), good)
            for at, took, good in zip(self.at, self.took, self.good, strict=True)
            if begun <= at < ended
        ]
        return {
            "requests": len(chosen),
            "failed": sum(not good for _, good in chosen),
            **percentiles([took for took, _ in chosen]),
        }


def get(url: str, token: str | None, timeout: float) -> int:
    """A GET on a new connection, its body read: the status, 0 if there was no answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            answer.read()
            return int(answer.status)
    except urllib.error.HTTPError as error:
        with error:
            error.read()
        return int(error.code)
    except (OSError, ValueError):
        return 0


def poll(stop: threading.Event, url: str, found: Answers) -> None:
    """The honest client: GET /api/leaderboard every POLL_S."""
    while not stop.is_set():
        begun = time.monotonic()
        status = get(f"{url}/api/leaderboard", None, REQUEST_S)
        found.add(begun, time.monotonic() - begun, status, status == 200)
        stop.wait(max(0.0, POLL_S - (time.monotonic() - begun)))


def read_pages(
    stop: threading.Event,
    url: str,
    token: str,
    asked: set[str],
    lock: threading.Lock,
    found: Answers,
) -> None:
    """Open the newest match page not opened before (not kept rendered: replayed), again
    and again."""
    while not stop.is_set():
        status, listed = api(url, "GET", "/api/matches?limit=200", token, REQUEST_S)
        keys = [match["key"] for match in listed["matches"]] if status == 200 and listed else []
        with lock:
            fresh = next((key for key in keys if key not in asked), None)
            if fresh is not None:
                asked.add(fresh)
        if fresh is None:
            stop.wait(0.5)
            continue
        begun = time.monotonic()
        status = get(f"{url}/matches/{urllib.parse.quote(fresh)}", token, PAGE_S)
        found.add(begun, time.monotonic() - begun, status, status == 200)


@dataclass
class Fault:
    """One of the database's faults: what, when (seconds into the soak), for how long."""

    what: str
    at_s: float
    took_s: float
    detail: str


def fill_disk(mount: Path, hold_s: float, stop: threading.Event) -> str:
    """Fill the tmpfs at `mount` to its last byte, hold it full `hold_s`, free it."""
    filler = mount / "filler"
    written = 0
    try:
        with filler.open("wb", buffering=0) as out:
            # MiB by MiB, then the last of it by pages.
            for size in (1024 * 1024, 4096):
                chunk = bytes(size)
                while True:
                    try:
                        written += out.write(chunk) or 0
                    except OSError:
                        break
        full = time.monotonic()
        stop.wait(hold_s)
    finally:
        filler.unlink(missing_ok=True)
    return f"{written / 2**20:.0f} MiB written, full for {time.monotonic() - full:.1f} s"


def fault(
    stop: threading.Event,
    plan: Plan,
    postgres: Postgres | None,
    mount: Path | None,
    begun: float,
    faults: list[Fault],
) -> None:
    """The database's faults, at a third and at two thirds of the soak."""
    for share in (1 / 3, 2 / 3):
        if stop.wait(max(0.0, begun + share * plan.seconds - time.monotonic())):
            return
        at = time.monotonic()
        try:
            if postgres is not None:
                postgres.restart()
                what, detail = "PostgreSQL restarted", "pg_ctl restart -m fast"
            else:
                assert mount is not None
                what, detail = "disk filled", fill_disk(mount, plan.fill_hold_s, stop)
        except (BenchError, OSError) as error:
            what, detail = "fault failed", str(error)
        faults.append(Fault(what, round(at - begun, 1), round(time.monotonic() - at, 1), detail))


def watch_disk(stop: threading.Event, paths: tuple[Path, ...], seen: list[int]) -> None:
    while not stop.is_set():
        seen.append(disk_use(*paths))
        stop.wait(DISK_EVERY_S)


@dataclass
class Submitter:
    """One author's `referee arena submit`, running."""

    name: str
    process: subprocess.Popen[bytes]
    output: Path

    def said(self) -> str:
        lines = self.output.read_text(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else ""

    def retries(self) -> int:
        return self.output.read_text(errors="replace").count("the arena is busy")


@contextlib.contextmanager
def clients_cgroup() -> Iterator[Path | None]:
    """A cpu cgroup of CLIENT_WEIGHT for the submitters, removed at the end (None where
    none can be made)."""
    cgroup = weighted_cgroup(f"arena-soak-clients-{os.getpid()}", CLIENT_WEIGHT)
    try:
        yield cgroup
    finally:
        # Its submitters are killed by now: removed once they have left it.
        if cgroup is not None:
            WeightCgroup(cgroup).remove()


def weighted_cgroup(name: str, weight: int) -> Path | None:
    """A new cpu cgroup of `weight` (as cgroup v1's shares) beside this process's, or None."""
    parent = controller_parent("cpu")
    if parent is None:
        return None
    cgroup = parent / name
    # v2's weight of a process at nice 0 is 100, v1's 1024.
    v1 = (parent / "cpu.shares").exists()
    setting = ("cpu.shares", weight) if v1 else ("cpu.weight", max(1, weight * 100 // 1024))
    try:
        cgroup.mkdir()
        (cgroup / setting[0]).write_text(str(setting[1]))
    except OSError:
        with contextlib.suppress(OSError):
            cgroup.rmdir()
        return None
    return cgroup


def niced(command: list[str], cgroup: Path | None) -> list[str]:
    """`command` at CLIENT_NICE, in `cgroup`, or else with its session's autogroup niced."""
    script = (
        f'echo $$ > "{cgroup}/cgroup.procs"'
        if cgroup
        else 'echo "$0" > /proc/self/autogroup 2>/dev/null'
    )
    return ["sh", "-c", f'{script}; exec nice -n "$0" "$@"', str(CLIENT_NICE), *command]


def submit(url: str, token: str, bot: Path, logs: Path, cgroup: Path | None) -> Submitter:
    output = logs / f"submit-{bot.name}.out"
    with output.open("wb") as out:
        process = subprocess.Popen(
            niced([*REFEREE, "arena", "submit", url, str(bot)], cgroup),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "REFEREE_TOKEN": token},
            start_new_session=True,
        )
    return Submitter(bot.name, process, output)


def end_submitters(submitters: list[Submitter]) -> None:
    """Kill those still running (their bots stay where the intake has them)."""
    for submitter in submitters:
        if submitter.process.poll() is None:
            submitter.process.kill()
            submitter.process.wait()


@contextlib.contextmanager
def threads(*targets: tuple[Any, ...], nice: int = 0) -> Iterator[threading.Event]:
    """Each (function, arguments...) called in a thread of its own as function(stop,
    arguments...), at `nice`, until the block ends: then `stop` is set and the threads
    joined."""
    stop = threading.Event()

    def run(target: Callable[..., None], *arguments: Any) -> None:
        # Linux keeps a nice value for each thread: this one's alone.
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        target(stop, *arguments)

    started = [
        threading.Thread(target=run, args=(target, *arguments), daemon=True)
        for target, *arguments in targets
    ]
    for thread in started:
        thread.start()
    try:
        yield stop
    finally:
        stop.set()
        for thread in started:
            thread.join(PAGE_S)


@contextlib.contextmanager
def tmpfs(directory: Path, mib: int) -> Iterator[Path]:
    """A tmpfs of `mib` MiB mounted at `directory` until the block ends."""
    directory.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0755", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        raise BenchError(f"cannot mount a tmpfs at {directory}: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "--lazy", str(directory)], capture_output=True, check=False)


def run(plan: Plan) -> dict[str, Any]:
    deadline = Deadline.after(plan.limit)
    with contextlib.ExitStack() as stack:
        temporary = Path(
            stack.enter_context(
                tempfile.TemporaryDirectory(prefix="arena-soak-", ignore_cleanup_errors=True)
            )
        )
        postgres = mount = None
        if plan.database == Database.POSTGRESQL:
            progress("starting a PostgreSQL server")
            postgres = Postgres.start()
            stack.callback(postgres.stop)
            disk = temporary / "disk"
            disk.mkdir()
        else:
            # Room for the arena within its bound, and a quarter more for the hostile bot to
            # fill: a fixed arena stays under the bound, a broken one fills the disk.
            mount = disk = stack.enter_context(
                tmpfs(temporary / "disk", plan.disk_bound_mib * 5 // 4)
            )
        directory, scratch, logs = disk / "arena", disk / "tmp", temporary / "logs"
        scratch.mkdir()
        logs.mkdir()
        config = temporary / "arena.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        organiser = init_arena(directory, config, postgres.url if postgres else None)
        place_bots(directory, SEEDS, prefix="seed-")
        honest = [f"author{index}" for index in range(plan.authors)]
        tricklers = [f"trickler{index}" for index in range(plan.trickles)]
        tokens = authors(directory, [*honest, "hostile", "reader", *tricklers])
        bots = temporary / "bots"
        for name in honest:
            write_bot(bots / f"{name}-bot", f"{name}-bot", padding=PADDING)
        hostile_mib = 2 * plan.disk_bound_mib
        write_bot(
            bots / "hostile-bot",
            "hostile-bot",
            (FILLING_BOT, BOT),
            f"/usr/bin/python3 {FILLING_BOT.name} {hostile_mib}",
        )

        options = ("--workers", str(plan.workers)) if plan.workers else ()
        serving = Serving.start(directory, logs, deadline, {"TMPDIR": str(scratch)}, options)
        stack.callback(serving.stop)
        progress(f"{serving.url}: waiting for matches to flow")

        def flowing() -> bool:
            if not serving.alive():
                raise BenchError(f"referee arena serve exited: {serving.said()}")
            status, body = api(serving.url, "GET", "/api/status", organiser)
            return status == 200 and body["ladder"]["played"] >= 2 * SEEDS

        until("the first matches", flowing, deadline, 120.0)
        honest_client = Answers()
        with threads((poll, serving.url, honest_client)):
            progress(f"quiet baseline: {plan.baseline:g} s")
            quiet_begun, quiet_from = time.monotonic(), utcnow()
            deadline.wait(plan.baseline)
            quiet_ended, quiet_to = time.monotonic(), utcnow()
            site = Site(
                plan, stack, serving, tokens, bots, logs, postgres, mount, (directory, scratch),
                deadline, stack.enter_context(clients_cgroup()),
            )  # fmt: skip
            report = soak(site, honest_client)
        report["baseline"] = {
            "seconds": round(quiet_ended - quiet_begun, 1),
            "matches": done_between(directory, quiet_from, quiet_to),
            "latency": honest_client.between(quiet_begun, quiet_ended),
        }
        window = report.pop("window")
        report["soak"]["matches"] = done_between(directory, *window)
        for phase in (report["baseline"], report["soak"]):
            phase["matches_per_s"] = round(phase["matches"] / phase["seconds"], 2)
        if not serving.alive():
            # What it decided before it ended is settled at its next start (transcripts on disk
            # recorded, matches left running played again): the record is audited after that.
            progress("serve started again, to settle its record")
            try:
                serving = Serving.start(
                    directory, logs, deadline, {"TMPDIR": str(scratch)}, options
                )
            except BenchError as error:
                progress(f"{error}: the record is audited as it is")
                report["serve"]["restart_failed"] = str(error)
            stack.callback(serving.stop)
        exit_code = end_ladder(serving, organiser, deadline)
        report["serve"]["stopped_cleanly"] = exit_code == 0
        report["serve"]["said"] = serving.said()
        # Placed is on the ladder at the end, whatever its client saw.
        placed = on_ladder(directory, [f"{name}-bot" for name in [*honest, "hostile"]])
        report["submissions"]["placed"] = sum(name != "hostile-bot" for name in placed)
        report["hostile"]["placed"] = "hostile-bot" in placed
        report["disk"]["end_mib"] = round(disk_use(directory, scratch) / 2**20, 1)
        report["record"] = audit(directory, deadline).to_json()
    return report


@dataclass
class Exited:
    """When `serve` was first seen to have exited (seconds into the soak), and what it said."""

    at_s: float | None = None
    said: str | None = None

    def look(self, serving: Serving, begun: float) -> None:
        if self.at_s is None and not serving.alive():
            self.at_s = round(time.monotonic() - begun, 1)
            self.said = f"exit {serving.process.poll()}: {serving.said()}"
            progress(f"referee arena serve exited: {self.said}")


@dataclass(frozen=True)
class Site:
    """The served arena the soak is made against, and what it needs to make it."""

    plan: Plan
    stack: contextlib.ExitStack
    serving: Serving
    tokens: dict[str, str]
    bots: Path
    logs: Path
    postgres: Postgres | None
    mount: Path | None
    # The arena's directory, and its players' temporary directories.
    disk: tuple[Path, Path]
    deadline: Deadline
    clients: Path | None


def soak(site: Site, honest_client: Answers) -> dict[str, Any]:
    """Everything at once for plan.seconds, then the submissions given plan.grace to end."""
    plan, serving, tokens, deadline = site.plan, site.serving, site.tokens, site.deadline
    port = urllib.parse.urlsplit(serving.url).port
    progress(f"soak: {plan.seconds:g} s")
    held, trickled, pages = Held(), Trickled(), Answers()
    faults: list[Fault] = []
    seen: list[int] = []
    asked: set[str] = set()
    lock = threading.Lock()
    begun, begun_at = time.monotonic(), utcnow()
    submitters = [
        submit(serving.url, tokens[name], site.bots / f"{name}-bot", site.logs, site.clients)
        for name in tokens
        if name.startswith("author") or name == "hostile"
    ]
    site.stack.callback(end_submitters, submitters)
    attackers: list[tuple[Any, ...]] = [
        (hold, port, plan.holders, held),
        (watch_disk, site.disk, seen),
        (fault, plan, site.postgres, site.mount, begun, faults),
        *(
            (
                trickle,
                port,
                f"127.0.0.{2 + HOLDER_ADDRESSES + index}",
                tokens[f"trickler{index}"],
                f"trickle{index}",
                trickled,
            )
            for index in range(plan.trickles)
        ),
        *(
            (read_pages, serving.url, tokens["reader"], asked, lock, pages)
            for _ in range(plan.readers)
        ),
    ]
    exited = Exited()
    with threads(*attackers, nice=CLIENT_NICE):
        while time.monotonic() < begun + plan.seconds:
            deadline.wait(1.0)
            exited.look(serving, begun)
    ended, ended_at = time.monotonic(), utcnow()
    progress(f"soak over; the submissions have {plan.grace:g} s more to end")
    grace = min(time.monotonic() + plan.grace, deadline.at)
    while any(s.process.poll() is None for s in submitters) and time.monotonic() < grace:
        time.sleep(1.0)
        exited.look(serving, begun)
    exited.look(serving, begun)
    end_submitters(submitters)
    hostile = next(s for s in submitters if s.name == "hostile-bot")
    honest = [s for s in submitters if s is not hostile]
    return {
        "window": (begun_at, ended_at),
        "soak": {
            "seconds": round(ended - begun, 1),
            "latency": honest_client.between(begun, ended),
        },
        "submissions": {
            "authors": len(honest),
            "clients_saw_placed": sum(s.process.returncode == 0 for s in honest),
            "busy_answers": sum(s.retries() for s in honest),
            "clients_failed": [
                f"{s.name}: {s.said()}" for s in honest if s.process.returncode != 0
            ],
        },
        "hostile": {"said": hostile.said()},
        "holders": {
            "wanted": plan.holders,
            "opened": held.opened,
            "refused": held.refused,
            "closed_by_arena": held.closed,
            "held_most": max(held.held, default=0),
            "held_median": int(statistics.median(held.held)) if held.held else 0,
        },
        "trickles": {
            "wanted": plan.trickles,
            "begun": trickled.begun,
            "bytes": trickled.sent,
            "ended": trickled.ended,
        },
        "pages": {**pages.between(begun, ended), "statuses": pages.statuses},
        "faults": [asdict(f) for f in faults],
        "serve": {"exited_at_s": exited.at_s, "exited_saying": exited.said},
        "disk": {
            "max_mib": round(max(seen, default=0) / 2**20, 1),
            "bound_mib": plan.disk_bound_mib,
        },
    }


@dataclass(frozen=True)
class Criterion:
    name: str
    figure: str
    target: str
    passed: bool


def criteria(report: dict[str, Any]) -> list[Criterion]:
    """The issue's Done-when criteria, each with its figure."""
    submissions, record = report["submissions"], report["record"]
    p95 = report["soak"]["latency"]["p95_ms"]
    quiet, busy = report["baseline"]["matches_per_s"], report["soak"]["matches_per_s"]
    disk = report["disk"]
    died = report["serve"]["exited_at_s"]
    return [
        Criterion(
            "serve rode out the soak",
            "ran throughout" if died is None else f"exited at {died} s",
            "runs",
            died is None,
        ),
        Criterion(
            "honest submissions placed",
            f"{submissions['placed']}/{submissions['authors']}",
            "all",
            submissions["placed"] == submissions["authors"],
        ),
        Criterion(
            "API p95 of the honest client",
            f"{p95} ms",
            f"< {TARGET_P95_MS:g} ms",
            p95 is not None and p95 < TARGET_P95_MS,
        ),
        Criterion(
            "ladder rate, soak vs quiet",
            f"{busy} vs {quiet} matches/s",
            f">= {TARGET_RATE_SHARE:g} x quiet",
            quiet > 0 and busy >= TARGET_RATE_SHARE * quiet,
        ),
        Criterion(
            "every finished match: one verifying transcript",
            f"{record['done']} done, {record['transcripts']} transcripts, "
            f"{record['verified']} verify; {record['missing']} missing, {record['orphans']}"
            f" orphans, {record['miscounted']} miscounted, {record['duplicated']} duplicated",
            "all, once",
            record["clean"],
        ),
        Criterion(
            "arena's disk (max seen)",
            f"{disk['max_mib']} MiB",
            f"< {disk['bound_mib']} MiB",
            disk["max_mib"] < disk["bound_mib"],
        ),
    ]


def print_table(report: dict[str, Any]) -> None:
    plan = report["plan"]
    print(
        f"arena soak on {plan['database']}, {plan['seconds']:g} s, {plan['authors']} authors,"
        f" {plan['holders']} held connections, {plan['trickles']} trickled uploads,"
        f" {plan['readers']} page readers, {os.cpu_count()} cores,"
        f" python {sys.version.split()[0]}"
    )
    rows = []
    for name in ("baseline", "soak"):
        phase = report[name]
        latency = phase["latency"]
        rows.append(
            [
                name,
                phase["seconds"],
                phase["matches"],
                phase["matches_per_s"],
                latency["requests"],
                latency["failed"],
                latency["median_ms"],
                latency["p95_ms"],
                latency["max_ms"],
            ]
        )
    print(
        tabulate(
            rows,
            headers=[
                "phase",
                "s",
                "matches",
                "matches/s",
                "requests",
                "failed",
                "median ms",
                "p95 ms",
                "max ms",
            ],
            floatfmt=".1f",
        )
    )
    submissions, holders, trickles = report["submissions"], report["holders"], report["trickles"]
    pages, serve = report["pages"], report["serve"]
    print()
    print(
        f"submissions: {submissions['placed']}/{submissions['authors']} on the ladder at the"
        f" end, {submissions['clients_saw_placed']} seen so by their client,"
        f" {submissions['busy_answers']} busy answers retried; the hostile bot placed:"
        f" {report['hostile']['placed']} ({report['hostile']['said']})"
    )
    for line in submissions["clients_failed"][:5]:
        print(f"  its client failed: {line}")
    print(
        f"held connections: {holders['opened']} opened, {holders['closed_by_arena']} closed by"
        f" the arena, {holders['refused']} refused; {holders['held_most']} held at most,"
        f" {holders['held_median']} at the median"
    )
    print(
        f"trickled uploads: {trickles['begun']} begun, {trickles['bytes']} bytes sent,"
        f" ended: {trickles['ended']}"
    )
    print(
        f"match pages: {pages['requests']} asked, statuses {pages['statuses']},"
        f" median {pages['median_ms']} ms"
    )
    for row in report["faults"]:
        print(f"fault at {row['at_s']} s: {row['what']} ({row['detail']}), {row['took_s']} s")
    died = serve["exited_at_s"]
    if died is not None:
        print(f"serve seen exited at {died} s ({serve['exited_saying']}); started again after")
    if "restart_failed" in serve:
        print(f"serve did not start again: {serve['restart_failed']}")
    print(f"serve stopped cleanly at the end: {serve['stopped_cleanly']} ({serve['said']})")
    print(f"disk: max {report['disk']['max_mib']} MiB, {report['disk']['end_mib']} MiB at the end")
    examples = report["record"]["examples"]
    for kind, values in examples.items():
        for value in values:
            print(f"  {kind}: {value}")
    print()
    print(
        tabulate(
            [
                [c["name"], c["figure"], c["target"], "pass" if c["passed"] else "FAIL"]
                for c in report["criteria"]
            ],
            headers=["criterion", "figure", "target", ""],
        )
    )


def count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number from 1 to 1000")
    return int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if not 1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds from 1 to 86400")
    return value


def parse(argv: list[str] | None = None) -> tuple[Plan, bool]:
    """The plan the options ask for, and whether to print JSON."""
    parser = Parser(**described(__doc__))
    parser.add_argument("--database", choices=[kind.value for kind in Database])
    parser.add_argument("--quick", action="store_true", help="a trial: smaller and shorter")
    parser.add_argument("--seconds", type=seconds, help="the soak (default 300, quick 45)")
    parser.add_argument("--baseline", type=seconds, help="the quiet baseline (30, quick 10)")
    parser.add_argument("--authors", type=count, help="honest submissions (30, quick 4)")
    parser.add_argument("--holders", type=count, help="half-sent connections (300, quick 40)")
    parser.add_argument("--trickles", type=count, help="trickled uploads (4, quick 2)")
    parser.add_argument("--readers", type=count, help="match page readers (4, quick 2)")
    parser.add_argument("--workers", type=count, help="local workers (default: none)")
    parser.add_argument(
        "--disk-bound",
        type=count,
        dest="disk_bound_mib",
        help="the arena's disk bound in MiB (512)",
    )
    parser.add_argument("--grace", type=seconds, help="for submissions after the soak (240)")
    parser.add_argument("--limit", type=seconds, help="the whole run's time limit (1500)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    chosen = {key: value for key, value in vars(args).items() if value is not None}
    for key in ("quick", "json"):
        chosen.pop(key)
    if args.database is not None:
        chosen["database"] = Database(args.database)
    return replace(QUICK if args.quick else FULL, **chosen), args.json


def main() -> None:
    plan, as_json = parse()
    if plan.database == Database.SQLITE and os.geteuid() != 0:
        print(
            "arena soak: SQLite's full disk is a tmpfs it mounts, which needs root: run it"
            " as root, or with --database postgresql",
            file=sys.stderr,
        )
        sys.exit(2)
    # SIGTERM ends the run as Ctrl-C does: everything started is stopped and removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        report = run(plan)
    except (RefereeError, BenchError) as error:
        print(f"arena soak: {error}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("arena soak: interrupted; everything it started is stopped", file=sys.stderr)
        sys.exit(130)
    report["plan"] = asdict(plan)
    report["criteria"] = [asdict(c) for c in criteria(report)]
    report["passed"] = all(c["passed"] for c in report["criteria"])
    if as_json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_table(report)
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
