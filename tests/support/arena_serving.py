"""`referee arena serve` as a process of its own, as a person starts it, for the tests."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

# What a started process may take to listen, or to stop, on a loaded machine.
DEADLINE_S = 90


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]

    def get(self, path: str, token: str | None) -> tuple[int, Any]:
        """The status and JSON body of a GET, with `token` as the bearer if given."""
        return self.request("GET", path, token)

    def post(self, path: str, token: str | None) -> tuple[int, Any]:
        """The status and JSON body of a POST with no body (an organiser's action)."""
        return self.request("POST", path, token)

    def request(self, method: str, path: str, token: str | None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(f"{self.url}{path}", headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=DEADLINE_S) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
        except urllib.error.URLError as error:
            raise AssertionError(f"{method} {path}: {error}; {self.said()}") from None

    def said(self) -> str:
        """Whether the process still runs, and what it wrote on standard error if not."""
        if self.process.poll() is None:
            return "the arena is still running"
        assert self.process.stderr is not None
        return f"the arena exited {self.process.returncode}: {self.process.stderr.read()[-4000:]}"


@contextlib.contextmanager
def serving(directory: Path, *options: str) -> Iterator[Served]:
    """The arena in `directory` served on a free port until the block ends (then killed, if
    the block did not stop it)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "referee",
            "arena",
            "serve",
            str(directory),
            "--port",
            "0",
            *options,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    urls: list[str] = []
    listening = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            found = re.search(r"listening on (http://\S+)$", line.strip())
            if found:
                urls.append(found.group(1))
                listening.set()
        listening.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert listening.wait(DEADLINE_S) and urls, "the arena did not say where it listens"
        yield Served(urls[0], process)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE_S)
