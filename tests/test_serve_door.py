"""`referee serve` holds its door: only the allowed addresses get in, and the slow
connections of one address never stop another's requests."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.errors import ConfigError
from referee.games import as_gdl, get_game
from referee.ggp.door import PER_ADDRESS, Door, Refusal, network
from referee.ggp.messages import Start, format_request
from referee.ggp.wire import post
from referee.records.transcript import read_transcript
from tests.support.gateway import ask, served
from tests.support.paths import ROOT

pytestmark = pytest.mark.usefixtures("every_transcript_verifies")


def test_the_door_lets_in_only_the_allowed_networks() -> None:
    door = Door.allowing(["127.0.0.1", "10.1.0.0/16", "2001:db8::/32"])
    assert door.enter("127.0.0.1") is None
    assert door.enter("10.1.200.3") is None
    assert door.enter("::ffff:10.1.0.9") is None  # IPv4 mapped into IPv6, as a dual stack has it
    assert door.enter("2001:db8::7") is None
    for stranger in ("127.0.0.2", "10.2.0.1", "::1", "2001:db9::1", "", "not an address"):
        assert door.enter(stranger) is Refusal.NOT_ALLOWED, stranger
    assert Door().enter("203.0.113.9") is None  # no list: everyone


def test_the_door_counts_connections_per_address_and_in_all() -> None:
    door = Door(per_address=2, total=3)
    assert [door.enter("10.0.0.1") for _ in range(3)] == [None, None, Refusal.ADDRESS_FULL]
    assert door.enter("10.0.0.2") is None
    assert door.enter("10.0.0.3") is Refusal.FULL
    door.leave("10.0.0.1")
    assert door.enter("10.0.0.3") is None
    assert door.enter("10.0.0.1") is Refusal.FULL


def test_an_address_that_is_none_is_refused_with_the_text() -> None:
    assert network("10.0.0.0/8") == ipaddress.ip_network("10.0.0.0/8")
    assert network("10.0.0.7/8") == ipaddress.ip_network("10.0.0.0/8")
    with pytest.raises(ConfigError, match=r"--allow '10\.0\.0\.300'"):
        network("10.0.0.300")
    done = subprocess.run(
        [sys.executable, "-m", "referee", "serve", "random", "--port", "0", "--allow", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "referee: error: --allow 'nope': not an IP address or network"
        " (e.g. 10.0.0.5, 10.0.0.0/24, ::1)"
    ]


@contextlib.contextmanager
def slow_connections(port: int, source: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections from `source` that send half a request and hold on."""
    with contextlib.ExitStack() as stack:
        held = []
        for _ in range(count):
            connection = stack.enter_context(socket.socket())
            connection.settimeout(10)
            connection.bind((source, 0))
            connection.connect(("127.0.0.1", port))
            with contextlib.suppress(OSError):  # closed by the door already
                connection.sendall(b"POST / HTTP/1.0\r\nContent-Length: 100\r\n\r\n(INF")
            held.append(connection)
        yield held


def foreign_start(port: int, source: str, match_id: str) -> str:
    """A START sent from `source`: the answer's body, or how the connection ended."""
    rules = as_gdl(get_game("ticblock")).one_line
    message = format_request(Start(match_id, "xcplayer", rules, 3600, 3600))
    try:
        with socket.socket() as connection:
            connection.settimeout(30)
            connection.bind((source, 0))
            connection.connect(("127.0.0.1", port))
            connection.sendall(post("127.0.0.1", "x", message))
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
    except OSError as error:
        return f"closed: {error.strerror or type(error).__name__}"
    return answer.decode(errors="replace").partition("\r\n\r\n")[2] or "closed: no answer"


@pytest.mark.slow
def test_strangers_neither_start_a_match_nor_stop_the_managers(tmp_path: Path) -> None:
    """100 slow connections from 127.0.0.2 and STARTs from 127.0.0.3 while the manager at
    127.0.0.1 plays a whole match with `referee play`, in each seat, through
    `serve --allow 127.0.0.1`."""
    game = get_game("ticblock")
    answers: list[str] = []
    stop = threading.Event()

    def strangers(port: int) -> None:
        for attempt in range(10_000):  # bounded; stopped when the matches are over
            if stop.is_set():
                return
            answers.append(foreign_start(port, "127.0.0.3", f"stranger{attempt}"))
            time.sleep(0.02)

    with served(
        tmp_path, "referee/players/starters/random_player.py", "--allow", "127.0.0.1"
    ) as port:
        with slow_connections(port, "127.0.0.2", 100):
            thread = threading.Thread(target=strangers, args=(port,))
            thread.start()
            try:
                for seat, role in enumerate(game.roles):
                    seats = [
                        f"{name}=http://127.0.0.1:{port}" if name == role else f"{name}=random"
                        for name in game.roles
                    ]
                    out = tmp_path / f"seat{seat}.json"
                    done = subprocess.run(
                        [sys.executable, "-m", "referee", "play", game.id, "--out", str(out)]
                        + [arg for seat_arg in seats for arg in ("--player", seat_arg)],
                        cwd=ROOT,
                        capture_output=True,
                        text=True,
                        timeout=300,
                    )
                    assert done.returncode == 0, done.stderr
                    transcript = read_transcript(out)
                    assert transcript.end_reason == "terminal", transcript.faults
                    assert transcript.faults == []
            finally:
                stop.set()
                thread.join(60)
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
    assert answers, "no foreign START was sent"
    assert all(answer.startswith("closed") for answer in answers), set(answers)


@pytest.mark.slow
def test_the_slow_connections_of_one_address_leave_room_for_another(tmp_path: Path) -> None:
    with served(tmp_path) as port, slow_connections(port, "127.0.0.2", 3 * PER_ADDRESS):
        # Past its own bound the stranger's connections are refused, not the manager's.
        rules = as_gdl(get_game("ticblock")).one_line
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
        assert ask(port, format_request(Start("m1", "xcplayer", rules, 10, 2))) == (200, "ready")
        assert ask(port, "(ABORT m1)") == (200, "aborted")


@pytest.mark.slow
def test_serve_without_an_allow_list_says_who_can_start_a_match(tmp_path: Path) -> None:
    said: list[str] = []
    with served(tmp_path, "random", said=said) as port:
        # Answered only once serving has begun, after the warning: Ctrl-C cannot cut it off.
        assert ask(port, "(INFO)")[0] == 200
    warned = [line for line in said if "anyone who can reach" in line]
    assert warned == [
        f"referee: warning: anyone who can reach 127.0.0.1:{port} can start a match;"
        " --allow ADDRESS lets only the game manager in"
    ], said
