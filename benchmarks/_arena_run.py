"""What the arena's soak and kill benchmarks share: a throwaway PostgreSQL server, an arena
with bots on its ladder, `referee arena serve` as a process, and the audit of the record
(every finished match in the database against the transcripts in results/, verified by
`referee replay --verify`).

The PostgreSQL server is made as the tests make theirs (tests/support/arena_databases.py,
which a benchmark may not import): Debian's programs, `initdb` in a temporary directory as
an unprivileged user, reached only through a unix socket there, nothing synced to disk.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from sqlalchemy import func, select

from referee.arena.store.db import (
    ON_LADDER,
    Bot,
    Match,
    MatchState,
    Seat,
    Version,
)
from referee.arena.store.home import add_author, open_arena
from referee.players.starter import STARTERS

ROOT = Path(__file__).resolve().parents[1]
REFEREE = [sys.executable, "-m", "referee"]
BOT = STARTERS / "random_player.py"
# The jail shows the system's directories: a bot runs the system's Python, not a venv's.
RUN = f"/usr/bin/python3 {BOT.name}"
# What a started process may take to listen, or a stopped one to end, on a busy machine.
DEADLINE_S = 120.0
POLL_S = 0.25
LISTENING = re.compile(r"listening on (http://\S+)")
DEBIAN_POSTGRESQL = Path("/usr/lib/postgresql")
# A throwaway server: nothing it writes has to survive a crash of the machine.
THROWAWAY = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class BenchError(Exception):
    """The benchmark could not run: one line saying why."""


class Parser(argparse.ArgumentParser):
    """Options as argparse reads them; a bad one refused in one line, without the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n")


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Deadline:
    """The run's time limit: every wait of the run ends by it."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self, what: str) -> None:
        if self.left() <= 0:
            raise BenchError(f"over the run's time limit while {what}")

    def wait(self, seconds: float) -> None:
        """Sleep `seconds`, or until the limit (then BenchError)."""
        time.sleep(max(0.0, min(seconds, self.left())))
        self.check("waiting")


def until(what: str, done: Callable[[], bool], deadline: Deadline, within: float) -> None:
    """Until `done()`, for at most `within` s and within the run's limit; BenchError else."""
    end = min(time.monotonic() + within, deadline.at)
    while not done():
        if time.monotonic() > end:
            raise BenchError(f"{what}: not within {within:.0f} s")
        time.sleep(POLL_S)


def percentiles(seconds: list[float]) -> dict[str, float | None]:
    """Median, p95, p99 and max of `seconds`, in ms (None for too few)."""
    if len(seconds) < 2:
        return {"median_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return {
        "median_ms": round(1000 * statistics.median(seconds), 1),
        "p95_ms": round(1000 * cuts[94], 1),
        "p99_ms": round(1000 * cuts[98], 1),
        "max_ms": round(1000 * max(seconds), 1),
    }


@dataclass
class Postgres:
    """A PostgreSQL server of the run's own, on a unix socket in `directory`, with one
    database, `arena`."""

    bin: Path
    directory: Path
    user: str

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def socket(self) -> Path:
        return self.directory / "socket"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{self.user}@/arena?host={self.socket}"

    @classmethod
    def start(cls) -> Postgres:
        """A new server in a new temporary directory (which its user must be able to
        enter: not under another that is root's alone), removed by `stop`."""
        versions = sorted(
            (tuple(int(n) for n in re.findall(r"\d+", path.parent.name)), path)
            for path in DEBIAN_POSTGRESQL.glob("*/bin")
            if (path / "initdb").is_file() and (path / "pg_ctl").is_file()
        )
        if not versions:
            raise BenchError(f"no PostgreSQL under {DEBIAN_POSTGRESQL}: apt-get install postgresql")
        directory = Path(tempfile.mkdtemp(prefix="arena-bench-pg-"))
        server = cls(versions[-1][1], directory, _unprivileged_user())
        try:
            server.socket.mkdir()
            account = pwd.getpwnam(server.user)
            for path in (directory, server.socket):
                os.chown(path, account.pw_uid, account.pw_gid)
            server._run(
                "initdb", "--auth=trust", "--no-sync", f"--username={server.user}",
                f"--pgdata={server.data}",
            )  # fmt: skip
            server._ctl("start")
            server._run("createdb", f"--host={server.socket}", f"--username={server.user}", "arena")
        except BaseException:
            server.stop()
            raise
        return server

    def restart(self) -> None:
        """Stopped (its clients cut off) and started again, as a DBA restarts it."""
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        """Stopped at once, and its directory removed."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "stop", "--wait", "-m", "immediate", f"--pgdata={self.data}")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _ctl(self, action: str, *options: str) -> None:
        self._run(
            "pg_ctl",
            action,
            "--wait",
            f"--timeout={DEADLINE_S:.0f}",
            *options,
            f"--pgdata={self.data}",
            f"--log={self.directory / 'server.log'}",
            "--options",
            f"-c listen_addresses='' -k {shlex.quote(str(self.socket))} {THROWAWAY}",
        )

    def _run(self, program: str, *arguments: str) -> None:
        command = [str(self.bin / program), *arguments]
        if os.geteuid() == 0:
            account = pwd.getpwnam(self.user)
            command = [
                "setpriv",
                f"--reuid={account.pw_uid}",
                f"--regid={account.pw_gid}",
                "--clear-groups",
                "--",
                *command,
            ]
        done = subprocess.run(
            command,
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S + 30,
            check=False,
        )
        if done.returncode != 0:
            said = " ".join(done.stderr.split())[-300:]
            raise BenchError(f"PostgreSQL's {program} failed ({done.returncode}): {said}")


def _unprivileged_user() -> str:
    """Who runs the server: the current user, or `postgres` for root (initdb refuses root)."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise BenchError("no unprivileged user to run PostgreSQL as (postgres, nobody)")


def write_bot(
    directory: Path, name: str, files: tuple[Path, ...] = (BOT,), run: str = RUN, padding: int = 0
) -> Path:
    """A bot's directory for `referee arena submit`: its `files`, a bot.yaml that runs `run`,
    and `padding` bytes of random data (an archive of about that size)."""
    directory.mkdir(parents=True)
    for source in files:
        shutil.copy(source, directory / source.name)
    (directory / "bot.yaml").write_text(f"name: {name}\nrun: {run}\n", encoding="utf-8")
    if padding:
        (directory / "data.bin").write_bytes(os.urandom(padding))
    return directory


def authors(directory: Path, names: list[str]) -> dict[str, str]:
    """New authors: each one's token."""
    arena = open_arena(directory)
    try:
        return {name: add_author(arena, name) for name in names}
    finally:
        arena.close()


@dataclass
class Serving:
    """`referee arena serve DIR` as a process of its own session, its output in files."""

    process: subprocess.Popen[bytes]
    url: str
    stderr: Path
    # When it began to listen (time.monotonic).
    started: float

    @classmethod
    def start(
        cls,
        directory: Path,
        logs: Path,
        deadline: Deadline,
        env: dict[str, str] | None = None,
        options: tuple[str, ...] = (),
    ) -> Serving:
        logs.mkdir(parents=True, exist_ok=True)
        number = len(list(logs.glob("serve*.out")))
        out, err = logs / f"serve{number}.out", logs / f"serve{number}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [*REFEREE, "arena", "serve", str(directory), "--port", "0", *options],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        serving = cls(process, "", err, time.monotonic())
        try:
            until(
                "referee arena serve to listen",
                lambda: LISTENING.search(out.read_text()) is not None or process.poll() is not None,
                deadline,
                DEADLINE_S,
            )
            found = LISTENING.search(out.read_text())
            if found is None:
                raise BenchError(f"referee arena serve exited {process.poll()}: {serving.said()}")
        except BaseException:
            serving.kill()
            raise
        serving.url = found.group(1)
        serving.started = time.monotonic()
        return serving

    def said(self) -> str:
        """The last error it wrote to its standard error (a database's error is followed by
        lines of its own), else its last line."""
        lines = self.stderr.read_text(errors="replace").strip().splitlines()
        errors = [line for line in lines if line.startswith("referee: error")]
        return (errors or lines or ["(nothing on its standard error)"])[-1][:300]

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, to `serve` alone: what it started must die with it, or at its next start."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def stop(self) -> int | None:
        """SIGTERM, as an organiser stops it; SIGKILL past DEADLINE_S. Its exit code (None
        when it had to be killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.kill()
            return None


def api(
    url: str, method: str, path: str, token: str | None = None, timeout: float = 10.0
) -> tuple[int, Any]:
    """One request: its status and JSON body (None when the body is not JSON); status 0 when
    the arena could not be reached."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(
        url + path, method=method, headers=headers, data=b"" if method == "POST" else None
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, body = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        with error:
            status, body = error.code, error.read()
    except (OSError, ValueError):
        return 0, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def end_ladder(serving: Serving, organiser: str, deadline: Deadline) -> int | None:
    """Pause the ladder, let its matches in flight end, then stop `serve` (SIGTERM): its exit
    code, None if it was killed or had exited already."""
    if not serving.alive():
        return None
    api(serving.url, "POST", "/api/ladder/pause", organiser)

    def settled() -> bool:
        status, body = api(serving.url, "GET", "/api/status", organiser)
        return not serving.alive() or (status == 200 and body["ladder"]["claimed"] == 0)

    try:
        until("the paused ladder's matches to end", settled, deadline, DEADLINE_S)
    except BenchError as error:
        progress(str(error))
    return serving.stop()


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def done_between(directory: Path, begun: dt.datetime, ended: dt.datetime) -> int:
    """Matches recorded done between the two moments (from the database: it is there even
    when `serve` is not)."""
    arena = open_arena(directory)
    try:
        with arena.database.session() as session:
            return (
                session.scalar(
                    select(func.count())
                    .select_from(Match)
                    .where(
                        Match.state == MatchState.DONE,
                        Match.finished_at >= begun,
                        Match.finished_at < ended,
                    )
                )
                or 0
            )
    finally:
        arena.close()


def on_ladder(directory: Path, bots: list[str]) -> list[str]:
    """Those of `bots` with a version on the ladder (placing or rated)."""
    arena = open_arena(directory)
    try:
        with arena.database.session() as session:
            found = session.scalars(
                select(Bot.name)
                .join(Version, Version.bot_id == Bot.id)
                .where(Bot.name.in_(bots), Version.state.in_(ON_LADDER))
                .distinct()
            )
            return sorted(found)
    finally:
        arena.close()


@dataclass
class Audit:
    """The record after a run: the database's finished matches against results/."""

    done: int = 0
    transcripts: int = 0
    # Done matches without their transcript, transcripts of no done match.
    missing: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    # Done matches whose row names another file than results/KEY.json.
    misnamed: list[str] = field(default_factory=list)
    verified: int = 0
    failed: list[str] = field(default_factory=list)
    # Versions whose count of matches is not their seats in done matches: a match counted
    # twice, or lost.
    miscounted: list[str] = field(default_factory=list)
    # A match of a pair (its seating) done more than once: played and recorded twice.
    duplicated: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Every finished match there once, with one verifying transcript, counted once."""
        return (
            not (self.missing or self.orphans or self.misnamed or self.failed)
            and not (self.miscounted or self.duplicated)
            and self.verified == self.transcripts == self.done
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "done": self.done,
            "transcripts": self.transcripts,
            "verified": self.verified,
            "failed": len(self.failed),
            "missing": len(self.missing),
            "orphans": len(self.orphans),
            "misnamed": len(self.misnamed),
            "miscounted": len(self.miscounted),
            "duplicated": len(self.duplicated),
            "clean": self.clean,
            # The first few of each, to look at.
            "examples": {
                name: values[:5]
                for name, values in (
                    ("failed", self.failed),
                    ("missing", self.missing),
                    ("orphans", self.orphans),
                    ("misnamed", self.misnamed),
                    ("miscounted", self.miscounted),
                    ("duplicated", self.duplicated),
                )
                if values
            },
        }


def results_of(seats: Iterable[Any]) -> dict[int, tuple[int, ...]]:
    """Each version's wins, draws and losses in the finished matches of `seats` (match,
    version, points): a ladder match's two seats against each other, where both have points.
    The ladder's bots are all of different authors here: no bot meets itself."""
    by_match: dict[int, list[tuple[int, float | None]]] = {}
    for match, version, points in seats:
        by_match.setdefault(match, []).append((version, points))
    counts: dict[int, list[int]] = {}
    for (mine, my_points), (_, their_points) in (
        pair for two in by_match.values() for pair in (two, two[::-1]) if len(two) == 2
    ):
        if my_points is None or their_points is None:
            continue
        sign = (my_points > their_points) - (my_points < their_points)
        counts.setdefault(mine, [0, 0, 0])[1 - sign] += 1
    return {version: tuple(count) for version, count in counts.items()}


def audit(directory: Path, deadline: Deadline) -> Audit:
    """The record of the arena in `directory`, which no `serve` runs: each done match against
    the transcripts in results/, and those verified with `referee replay --verify`."""
    arena = open_arena(directory)
    try:
        with arena.database.session() as session:
            rows = dict(
                session.execute(
                    select(Match.key, Match.transcript).where(Match.state == MatchState.DONE)
                ).all()
            )
            seats = dict(
                session.execute(
                    select(Seat.version_id, func.count())
                    .join(Match, Match.id == Seat.match_id)
                    .where(Match.state == MatchState.DONE)
                    .group_by(Seat.version_id)
                ).all()
            )
            counted = {
                version: (matches, (wins, draws, losses))
                for version, matches, wins, draws, losses in session.execute(
                    select(Version.id, Version.matches, Version.wins, Version.draws, Version.losses)
                )
            }
            played = session.execute(
                select(Seat.match_id, Seat.version_id, Seat.points)
                .join(Match, Match.id == Seat.match_id)
                .where(Match.state == MatchState.DONE)
            ).all()
            # The seats of a pair's two matches are swapped: the first seat tells them apart.
            seatings = session.execute(
                select(Match.pair, Seat.version_id, func.count())
                .join(Seat, Seat.match_id == Match.id)
                .where(Match.state == MatchState.DONE, Seat.index == 0)
                .group_by(Match.pair, Seat.version_id)
                .having(func.count() > 1)
            ).all()
        results = arena.results
    finally:
        arena.close()
    files = {path.stem for path in results.glob("*.json")}
    found = Audit(done=len(rows), transcripts=len(files))
    found.missing = sorted(set(rows) - files)
    found.orphans = sorted(files - set(rows))
    found.misnamed = sorted(key for key, path in rows.items() if path != f"results/{key}.json")
    decided = results_of(played)
    found.miscounted = [
        f"version {version}: {counted[version][0]} matches counted, {seats.get(version, 0)} played"
        for version in sorted(counted)
        if counted[version][0] != seats.get(version, 0)
    ] + [
        f"version {version}: wins, draws, losses {counted[version][1]} counted,"
        f" {decided.get(version, (0, 0, 0))} in its seats"
        for version in sorted(counted)
        if counted[version][1] != decided.get(version, (0, 0, 0))
    ]
    found.duplicated = [
        f"pair {pair}, version {version} first: done {times} times"
        for pair, version, times in seatings
    ]
    if files:
        progress(f"verifying {len(files)} transcripts (referee replay --verify)")
        deadline.check("verifying")
        try:
            verified = subprocess.run(
                [*REFEREE, "replay", str(results), "--verify", "--json"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=deadline.left(),
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise BenchError("over the run's time limit while verifying") from None
        try:
            report = json.loads(verified.stdout)
        except ValueError:
            said = " ".join(verified.stderr.split())[-300:]
            raise BenchError(f"referee replay --verify: {said}") from None
        found.verified = report["verified"]
        found.failed = [
            f"{Path(row['file']).name}: {row['problem']}"
            for row in report["files"]
            if row["outcome"] != "verified"
        ]
    return found


def disk_use(*paths: Path) -> int:
    """Bytes the files under `paths` take on their disks (as `du` counts them)."""
    total = 0
    for root in paths:
        for folder, _, names in os.walk(root):
            for name in (".", *names):
                try:
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
                except OSError:
                    continue
    return total
