"""The databases the arena's tests run on: SQLite in the arena's directory, and a PostgreSQL
server the suite starts itself, so that the same migrations and queries are proven on both.

A test takes `database_url` (None for SQLite, the arena's default; a PostgreSQL URL
otherwise) and runs once per database; `make_arena` makes an arena on it. The server is
Debian's `postgresql`: one per test session, made by `initdb` in a temporary directory as an
unprivileged user (initdb refuses root), reached only through a unix socket in that
directory, stopped and removed at the session's end. Each test gets a database of its own.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from referee.arena.store.home import Arena, init_arena, open_arena
from tests.support.facilities import missing

# Where Debian's packages put each major version's programs.
DEBIAN_POSTGRESQL = Path("/usr/lib/postgresql")
PACKAGE = "postgresql"
# Who runs the server when the tests run as root: Debian's package makes `postgres`.
SERVER_USERS = ("postgres", "nobody")
# Seconds pg_ctl waits for the server to start or stop: generous, the machine is shared.
SERVER_WAIT_S = 120
# A throwaway server: nothing it writes has to survive a crash.
THROWAWAY = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


def postgresql_bin() -> Path | None:
    """The programs of the newest PostgreSQL that Debian's packages installed, if any."""
    found = [
        path
        for path in DEBIAN_POSTGRESQL.glob("*/bin")
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file()
    ]
    numbers = [
        (tuple(int(n) for n in re.findall(r"\d+", path.parent.name)), path) for path in found
    ]
    return max(numbers)[1] if numbers else None


@dataclass
class PostgresServer:
    """A PostgreSQL server of the test session's own, on a unix socket in its directory."""

    bin: Path
    directory: Path
    user: str
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def socket(self) -> Path:
        return self.directory / "socket"

    @classmethod
    def start(cls, bin: Path) -> PostgresServer:
        directory = Path(tempfile.mkdtemp(prefix="referee-pg-"))
        server = cls(bin, directory, _server_user())
        try:
            server.socket.mkdir()
            account = pwd.getpwnam(server.user)
            for path in (directory, server.socket):
                os.chown(path, account.pw_uid, account.pw_gid)
            server._run(
                "initdb", "--auth=trust", "--no-sync", f"--username={server.user}",
                f"--pgdata={server.data}",
            )  # fmt: skip
            server.resume()
        except BaseException:
            server._remove()
            raise
        return server

    def stop(self) -> None:
        try:
            self.halt()
        finally:
            self._remove()

    def halt(self) -> None:
        """The server stopped at once, its clients cut off, its data kept (`resume`)."""
        self._run("pg_ctl", "stop", "--wait", "-m", "immediate", f"--pgdata={self.data}")

    def resume(self) -> None:
        """The server started on its data, as it was, once it listens."""
        self._run(
            "pg_ctl", "start", "--wait", f"--timeout={SERVER_WAIT_S}",
            f"--pgdata={self.data}", f"--log={self.directory / 'server.log'}",
            "--options",
            f"-c listen_addresses='' -k {shlex.quote(str(self.socket))} {THROWAWAY}",
        )  # fmt: skip

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@/{database}?host={self.socket}"

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A new empty database, dropped afterwards (whoever is still connected to it)."""
        name = f"test_{next(self._numbers)}"
        with self._connect() as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield self.url(name)
        finally:
            with self._connect() as connection:
                connection.execute(
                    sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
                )

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(
            dbname="postgres", user=self.user, host=str(self.socket), autocommit=True
        )

    def _run(self, program: str, *arguments: str) -> None:
        """One of the server's programs, as its user, failing with what it said."""
        command = [str(self.bin / program), *arguments]
        if os.geteuid() == 0:
            account = pwd.getpwnam(self.user)
            command = [
                "setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}",
                "--clear-groups", "--", *command,
            ]  # fmt: skip
        done = subprocess.run(
            command,
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SERVER_WAIT_S + 30,
        )
        if done.returncode != 0:
            log = self.directory / "server.log"
            said = log.read_text(errors="replace") if log.exists() else ""
            raise RuntimeError(
                f"{program} failed ({done.returncode}): {done.stderr.strip()} {said.strip()}"
            )

    def _remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _server_user() -> str:
    """An unprivileged user to run the server: the current one unless that is root."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    for name in SERVER_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError(f"no unprivileged user to run PostgreSQL as: none of {SERVER_USERS}")


class Databases:
    """New databases of one kind for a test: None, SQLite in the arena's directory (the
    default), or a new database on the session's PostgreSQL server."""

    def __init__(self, kind: str, server: PostgresServer | None, stack: contextlib.ExitStack):
        self.kind = kind
        self._server = server
        self._stack = stack

    def new(self) -> str | None:
        if self._server is None:
            return None
        return self._stack.enter_context(self._server.database())


class ArenaMaker:
    """`make_arena()`: a new arena on the test's kind of database, closed after the test."""

    def __init__(self, tmp_path: Path, databases: Databases, stack: contextlib.ExitStack):
        self._tmp_path = tmp_path
        self._databases = databases
        self._stack = stack
        self._tokens: dict[Path, str] = {}

    def __call__(self, directory: Path | None = None, config_text: str | None = None) -> Arena:
        """An arena in `directory` (default: a new one under tmp_path), with `config_text` as
        its arena.yaml (default: `referee arena init`'s), on a database of its own."""
        if directory is None:
            directory = self._tmp_path / f"arena{len(self._tokens) or ''}"
        config = None
        if config_text is not None:
            config = directory.parent / f"{directory.name}.yaml"
            config.write_text(config_text, encoding="utf-8")
        token = init_arena(directory, config, database=self._databases.new())
        arena = open_arena(directory)
        self._stack.callback(arena.close)
        self._tokens[arena.directory] = token
        return arena

    def organiser_token(self, arena: Arena) -> str:
        """The token `init_arena` printed for the arena's organiser."""
        return self._tokens[arena.directory]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server, started on first use."""
    bin = postgresql_bin()
    if bin is None:
        reason = (
            f"the arena's PostgreSQL tests need Debian's {PACKAGE} "
            f"(no {DEBIAN_POSTGRESQL}/*/bin/initdb): apt-get install {PACKAGE}"
        )
        missing(reason)
    server = PostgresServer.start(bin)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def arena_databases(request: pytest.FixtureRequest) -> Iterator[Databases]:
    """The kind of database the test runs on, once for each."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgresql" else None
    with contextlib.ExitStack() as stack:
        yield Databases(request.param, server, stack)


@pytest.fixture
def database_url(arena_databases: Databases) -> str | None:
    """A new empty database: None for SQLite (an arena's default), else its URL."""
    return arena_databases.new()


@pytest.fixture
def old_database_url(tmp_path: Path, database_url: str | None) -> str:
    """The URL of a new empty database that a test takes to an older schema itself:
    `database_url`, or on SQLite a file of its own."""
    return database_url or f"sqlite:///{tmp_path / 'old.db'}"


@pytest.fixture
def make_arena(tmp_path: Path, arena_databases: Databases) -> Iterator[ArenaMaker]:
    """Makes arenas on the test's kind of database; they are closed after the test."""
    with contextlib.ExitStack() as stack:
        yield ArenaMaker(tmp_path, arena_databases, stack)
