"""`referee arena serve` as a process of its own, as a person starts it, for the tests: the
one way tests start it and talk to it over HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

# What a started process may take to listen, or to stop, on a loaded machine.
DEADLINE_S = 90
# The console script pip installed beside this Python: `referee` as a person types it.
REFEREE = Path(sys.executable).parent / "referee"
LISTENING = re.compile(r"listening on (http://\S+)$", re.MULTILINE)
# How much of its standard error a failure's message shows.
SAID_CHARS = 4000


def serve_command(directory: Path, *options: str, installed: bool = False) -> list[str]:
    """`referee arena serve DIR --port 0 OPTIONS` (a later `--port` wins), run from the
    checkout by `python -m referee`; or, if `installed`, by the console script, the command
    line a person runs."""
    referee = [str(REFEREE)] if installed else [sys.executable, "-m", "referee"]
    return [*referee, "arena", "serve", str(directory), "--port", "0", *options]


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status, its headers by their names in lower case, and its body
    (JSON decoded, or a page's text)."""

    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class Served:
    """A started `referee arena serve`: where it listens, its process, and the files its
    standard output and error go to (files, not pipes, so that a long run never blocks on
    a pipe nobody reads, and what it said is there after it ends)."""

    url: str
    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def get(self, path: str, token: str | None) -> tuple[int, Any]:
        """The status and JSON body of a GET, with `token` as the bearer if given."""
        answer = self.ask("GET", path, token)
        return answer.status, answer.body

    def post(self, path: str, token: str | None) -> tuple[int, Any]:
        """The status and JSON body of a POST with no body (an organiser's action)."""
        answer = self.ask("POST", path, token)
        return answer.status, answer.body

    def ask(self, method: str, path: str, token: str | None, body: bytes | None = None) -> Answer:
        """An API call's whole answer, headers too (a 503's Retry-After)."""
        status, headers, raw = self._exchange(method, path, token, body)
        return Answer(status, headers, json.loads(raw))

    def page(self, path: str, token: str | None) -> Answer:
        """A page's whole answer, its body as text."""
        status, headers, raw = self._exchange("GET", path, token, None)
        return Answer(status, headers, raw.decode())

    def _exchange(
        self, method: str, path: str, token: str | None, body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        """The answer, once the arena takes the request: as a polite client, a test waits
        out the arena's pace (`rates`: a 429 saying too many requests) and asks again, for a
        test polling a few versions at once asks faster than one client may."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            status, headers, raw = self._once(method, path, token, body)
            paced = status == 429 and b"too many requests" in raw
            if not paced or time.monotonic() > deadline:
                return status, headers, raw
            time.sleep(float(headers.get("retry-after", "1")))

    def _once(
        self, method: str, path: str, token: str | None, body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(
            f"{self.url}{path}", data=body, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=DEADLINE_S) as answer:
                return answer.status, _lower(answer.headers), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, _lower(error.headers), error.read()
        except urllib.error.URLError as error:
            # Unreachable: most likely it exited, and its standard error says why.
            raise AssertionError(f"{method} {path}: {error}; {self.said()}") from None

    def stderr(self) -> str:
        """What it has written on standard error so far."""
        return self.err.read_text(errors="replace")

    def said(self) -> str:
        """For a failure's message: whether it still runs, and the end of its standard
        error."""
        return _said(self.process, self.err)

    def stop(self) -> str:
        """A clean stop by SIGTERM, as a service manager stops it: exit 0, no traceback.
        What it wrote on standard error."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(DEADLINE_S) == 0, self.said()
        said = self.stderr()
        assert "Traceback" not in said, said
        return said


@contextlib.contextmanager
def serving(
    directory: Path, *options: str, logs: Path | None = None, installed: bool = False
) -> Iterator[Served]:
    """The arena in `directory` served on a free port (`serve_command`) until the block ends,
    then killed, with its process group, if the block did not stop it. Its output goes to a
    new folder in `logs` (default: beside the arena; a test that fills the arena's disk keeps
    it elsewhere)."""
    folder = Path(tempfile.mkdtemp(prefix="serve-", dir=logs or directory.parent))
    out, err = folder / "stdout", folder / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            serve_command(directory, *options, installed=installed),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        yield Served(_listening(process, out, err), process, out, err)
    finally:
        if process.poll() is None:
            # Its group (a session of its own) too: what it started there, and was never told
            # to end, ends with it. One the block stopped or killed is left as it left things.
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(DEADLINE_S)


def _listening(process: subprocess.Popen[bytes], out: Path, err: Path) -> str:
    """The URL the process says it listens on, once it says so."""
    deadline = time.monotonic() + DEADLINE_S
    while (found := LISTENING.search(out.read_text(errors="replace"))) is None:
        assert process.poll() is None, f"the arena did not listen: {_said(process, err)}"
        assert time.monotonic() < deadline, f"the arena did not listen within {DEADLINE_S} s"
        time.sleep(0.1)
    return found.group(1)


def _said(process: subprocess.Popen[bytes], err: Path) -> str:
    running = process.poll() is None
    state = "the arena is still running" if running else f"the arena exited {process.returncode}"
    said = err.read_text(errors="replace")[-SAID_CHARS:]
    return f"{state}; on standard error: {said}"


def _lower(headers: Message) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}
