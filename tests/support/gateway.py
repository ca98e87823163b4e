"""`referee serve` in a process of its own on a free port, as a game manager meets it, and a
request to it as ggp-base's game server writes one."""

from __future__ import annotations

import contextlib
import http.client
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from tests.support.paths import ROOT

HANG_GUARD_S = 300


@contextlib.contextmanager
def served(
    tmp_path: Path,
    command: str = "referee/players/starters/random_player.py",
    *options: str,
    said: list[str] | None = None,
    stop: signal.Signals = signal.SIGINT,
) -> Iterator[int]:
    """The port of `referee serve COMMAND [OPTIONS]`, running until the block ends and `stop`
    (Ctrl-C's signal) ends it, cleanly; what it said besides its address (its standard
    output and error, in the order they came) is put in `said`."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "referee",
            "serve",
            command,
            "--port",
            "0",
            "--logs",
            str(tmp_path / "logs"),
            *options,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Its output is read by a thread to its end: its address comes after any warnings (a
    # machine without the jail has one), and what follows it must not wait in a buffer.
    lines: list[str] = []
    ports: list[int] = []
    listening = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            found = None if ports else re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if found:
                ports.append(int(found[1]))
                listening.set()
            else:
                lines.append(line.rstrip("\n"))
        listening.set()  # it ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        listening.wait(HANG_GUARD_S)
        assert ports, "\n".join(lines)
        yield ports[0]
    finally:
        process.send_signal(stop)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(HANG_GUARD_S)
        if said is not None:
            said.extend(lines)
    # After a block that went well: stopping is how serving ends, no error. The name is the
    # program's (random_player for the built-in random).
    assert process.returncode == 0 and re.fullmatch(r"[\w.-]+: stopped", lines[-1]), lines


def ask(port: int, message: str, method: str = "POST") -> tuple[int, str]:
    """A request as ggp-base's server writes it (or a GET or OPTIONS): the status and body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        if method == "POST":
            headers = {"Content-Type": "text/acl", "Sender": "GAMESERVER", "Receiver": "x"}
            connection.request("POST", "/", message.encode(), headers)
        else:
            connection.request(method, "/" + quote(message))
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()
