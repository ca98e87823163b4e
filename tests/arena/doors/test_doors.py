"""The arena's doors (issue 51): a stranger cannot hold its connections, nor an author its
upload slots. The API served by uvicorn on loopback behind `doors.Doors`, with short limits,
its clients from addresses of their own (all of 127/8 is loopback on Linux); and once as
`referee arena serve` with its own limits."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import select

from referee.arena.accounts import audit, auth
from referee.arena.accounts.audit import Action
from referee.arena.doors.bodies import Pace
from referee.arena.doors.connections import Doors, Limits
from referee.arena.doors.uploads import RETRY_AFTER_S, Uploads
from referee.arena.intake import submissions
from referee.arena.intake.submissions import Refusal, SubmissionRefused
from referee.arena.service import doors_room
from referee.arena.store.db import AuditEntry
from referee.arena.store.home import Arena, add_author, init_arena, open_arena
from referee.arena.web.api import create_app
from tests.support.arena import API_CONFIG, StandIn
from tests.support.arena_databases import ArenaMaker
from tests.support.arena_serving import serving

# How long a test waits for what it started: generous, the machine is shared.
PATIENCE_S = 60
# Limits under which nothing times out while a test looks.
LASTING = Limits(header_s=10 * PATIENCE_S, body_s=10 * PATIENCE_S, idle_s=10 * PATIENCE_S)
# The addresses of the tests' clients: the arena's own loopback address counts as a local
# proxy's, so the strangers and the honest come from others.
STRANGER, HONEST, OTHER = "127.0.0.2", "127.0.0.3", "127.0.0.4"
# How a client meets a connection the arena closed: at its end, or reset (if the arena had
# not read all it was sent).
CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass
class OpenArena:
    """An arena, and its authors' tokens by name."""

    arena: Arena
    tokens: dict[str, str]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[OpenArena]:
    """A SQLite arena of the API's tests, with authors alice and bob."""
    config = tmp_path / "arena.yaml"
    config.write_text(API_CONFIG.format(public="true"))
    init_arena(tmp_path / "arena", config)
    arena = open_arena(tmp_path / "arena")
    try:
        yield OpenArena(arena, {name: add_author(arena, name) for name in ("alice", "bob")})
    finally:
        arena.close()


@contextlib.contextmanager
def served(arena: Arena, limits: Limits, uploads: Uploads | None = None) -> Iterator[int]:
    """The arena's API on a loopback port behind doors of `limits`, until the block ends:
    the port."""
    app = create_app(arena, StandIn().hooks(), uploads)
    server = uvicorn.Server(Doors(limits).config(app, log_level="warning", lifespan="off"))
    listener = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        wait_until("the server to start", lambda: server.started)
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(PATIENCE_S)
        listener.close()


def wait_until(what: str, done: Callable[[], object]) -> None:
    """Until `done()`, for at most PATIENCE_S."""
    deadline = time.monotonic() + PATIENCE_S
    while not done():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.02)


def connect(port: int, source: str) -> socket.socket:
    """A connection to the arena from `source`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.settimeout(PATIENCE_S)
    sock.connect(("127.0.0.1", port))
    return sock


def half_sent(port: int, source: str) -> socket.socket:
    """A connection from `source` that has sent half a request's headers."""
    sock = connect(port, source)
    sock.sendall(b"GET /api/leaderboard HTTP/1.1\r\nHost: arena\r\nX-Wait: ")
    return sock


def ended(sock: socket.socket) -> bool:
    """Whether the arena has closed the connection, at the moment (it sends nothing first)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.settimeout(PATIENCE_S)


def closed_by_arena(sock: socket.socket) -> bool:
    """Wait until the arena closes the connection, sending nothing (True), or says something
    first (False)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def trickled_until_closed(sock: socket.socket, until_answered: bool = False) -> str:
    """Send a byte every 50 ms until the arena closes the connection (or, `until_answered`,
    until it answers, then read on until it closes): what it answered, if anything."""
    received = b""
    deadline = time.monotonic() + PATIENCE_S
    sock.settimeout(0.05)
    try:
        while time.monotonic() < deadline:
            if not (received and until_answered):
                sock.sendall(b"x")
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                return received.decode()
            received += data
    except (BrokenPipeError, ConnectionResetError):
        return received.decode()
    raise AssertionError(f"the connection was still open after {PATIENCE_S} s")


def get(port: int, source: str) -> int:
    """The status of a GET from `source`, on a connection of its own."""
    connection = kept_alive(port, source)
    try:
        return connection.getresponse().status
    finally:
        connection.close()


def kept_alive(port: int, source: str) -> http.client.HTTPConnection:
    """A connection from `source` that has asked for the leaderboard: its response to read."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=PATIENCE_S, source_address=(source, 0)
    )
    connection.request("GET", "/api/leaderboard", headers={"Host": "arena"})
    return connection


def upload_begun(port: int, source: str, token: str, bot: str, length: int) -> socket.socket:
    """An upload of `length` bytes to come, once the arena reads it (in an upload slot): it
    has asked for the body (100 Continue)."""
    sock = connect(port, source)
    head = (
        f"POST /api/bots/{bot}/versions HTTP/1.1\r\nHost: arena\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {length}\r\n"
        "Expect: 100-continue\r\n\r\n"
    )
    sock.sendall(head.encode())
    said = b""
    while b"\r\n\r\n" not in said:
        data = sock.recv(4096)
        assert data, f"closed before 100 Continue: {said!r}"
        said += data
    assert said.startswith(b"HTTP/1.1 100 "), said
    return sock


def answer(text: str) -> tuple[int, dict[str, str], Any]:
    """The status, headers (lower-case names) and JSON body of a response's text."""
    head, _, body = text.partition("\r\n\r\n")
    status_line, *lines = head.split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (x.partition(":") for x in lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


def upload(port: int, source: str, token: str, bot: str, archive: bytes) -> tuple[int, Any]:
    status, _, body = upload_answer(port, source, token, bot, archive)
    return status, body


def upload_answer(
    port: int, source: str, token: str, bot: str, archive: bytes
) -> tuple[int, dict[str, str], Any]:
    """An upload's status, headers (lower-case names) and JSON body."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=PATIENCE_S, source_address=(source, 0)
    )
    try:
        headers = {"Host": "arena", "Authorization": f"Bearer {token}"}
        connection.request("POST", f"/api/bots/{bot}/versions", body=archive, headers=headers)
        response = connection.getresponse()
        answered = {name.lower(): value for name, value in response.getheaders()}
        return response.status, answered, json.loads(response.read())
    finally:
        connection.close()


def test_an_address_holding_half_sent_requests_is_refused_more_while_others_are_served(
    site: OpenArena,
) -> None:
    with served(site.arena, LASTING) as port:
        held = [half_sent(port, STRANGER) for _ in range(LASTING.per_address)]
        assert closed_by_arena(half_sent(port, STRANGER)), "closed at once, unanswered"
        assert not any(ended(sock) for sock in held)
        assert get(port, HONEST) == 200
        with pytest.raises(CLOSED):
            get(port, STRANGER)
        held.pop().close()
        wait_until("the closed connection to be counted out", lambda: get_or_none(port) == 200)
        for sock in held:
            sock.close()


def get_or_none(port: int) -> int | None:
    """The status of a GET from the stranger's address, None if it was refused."""
    try:
        return get(port, STRANGER)
    except CLOSED:
        return None


def test_an_address_at_its_cap_gives_up_its_idle_connection_for_a_new_request(
    site: OpenArena,
) -> None:
    with served(site.arena, LASTING) as port:
        idle = [kept_alive(port, OTHER) for _ in range(LASTING.per_address)]
        for connection in idle:
            response = connection.getresponse()
            assert response.status == 200
            response.read()
        assert get(port, OTHER) == 200
        sockets = [connection.sock for connection in idle]
        assert closed_by_arena(sockets[0]), "the longest idle is closed"
        assert not any(ended(sock) for sock in sockets[1:])
        for connection in idle:
            connection.close()


def test_a_local_proxy_is_counted_in_all_only(site: OpenArena) -> None:
    with served(site.arena, LASTING) as port:
        held = [half_sent(port, "127.0.0.1") for _ in range(LASTING.per_address + 1)]
        assert get(port, "127.0.0.1") == 200
        assert not any(ended(sock) for sock in held)
        for sock in held:
            sock.close()


def test_past_the_cap_in_all_a_half_sent_request_of_the_fullest_address_gives_way(
    site: OpenArena,
) -> None:
    limits = Limits(header_s=LASTING.header_s, in_all=6)
    with served(site.arena, limits) as port:
        # Strangers from two addresses hold every connection, half-sent: 4 and 2.
        most = [half_sent(port, STRANGER) for _ in range(4)]
        fewer = [half_sent(port, OTHER) for _ in range(2)]
        assert get(port, HONEST) == 200
        # The longest held of the address holding the most gave way; no other did.
        assert closed_by_arena(most[0])
        assert not any(ended(sock) for sock in [*most[1:], *fewer])
        # The stranger comes back, into the place the honest request left (the listener
        # takes connections in order); at the next, the longest held of its address gives
        # way again, the fullest still.
        again = half_sent(port, STRANGER)
        assert get(port, HONEST) == 200
        assert closed_by_arena(most[1])
        assert not any(ended(sock) for sock in [*most[2:], *fewer, again])
        # The arena full again, of two addresses holding 3 each: a stranger's new connection
        # is refused, not let in for another's, which would only be opened again at once.
        fewer.append(half_sent(port, OTHER))
        assert closed_by_arena(half_sent(port, STRANGER))
        assert closed_by_arena(half_sent(port, OTHER))
        assert not any(ended(sock) for sock in [*most[2:], *fewer, again])
        assert get(port, HONEST) == 200
        for sock in [*most, *fewer, again]:
            sock.close()


def test_headers_sent_a_byte_at_a_time_are_cut_off_at_the_header_deadline(
    site: OpenArena,
) -> None:
    limits = Limits(header_s=0.5)
    with served(site.arena, limits) as port:
        began = time.monotonic()
        assert trickled_until_closed(half_sent(port, STRANGER)) == ""
        assert time.monotonic() - began >= limits.header_s
        # A kept-alive connection's next request is under the deadline again.
        sock = connect(port, HONEST)
        sock.sendall(b"GET /api/leaderboard HTTP/1.1\r\nHost: arena\r\n\r\n")
        said = b""
        while b"\r\n\r\n" not in said:
            said += sock.recv(65536)
        assert said.startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /api/leaderboard HTTP/1.1\r\nX-Wait: ")
        trickled_until_closed(sock)


def test_a_body_the_arena_did_not_read_is_cut_off_after_its_answer(site: OpenArena) -> None:
    with served(site.arena, Limits(body_s=0.5)) as port:
        sock = connect(port, STRANGER)
        sock.sendall(b"GET /api/me HTTP/1.1\r\nHost: arena\r\nContent-Length: 100000\r\n\r\nab")
        said = trickled_until_closed(sock)
        assert said.startswith("HTTP/1.1 401 "), said


def test_a_trickled_upload_is_refused_and_its_slot_goes_to_another_author(
    site: OpenArena,
) -> None:
    uploads = Uploads(slots=1, pace=Pace(bytes_per_s=16 * 1024, grace_s=0.5))
    with served(site.arena, LASTING, uploads) as port:
        sock = upload_begun(port, STRANGER, site.tokens["alice"], "ace", 100_000)
        status, headers, body = answer(trickled_until_closed(sock, until_answered=True))
        assert status == 408
        assert headers["connection"] == "close"
        assert "slower than 16 KiB/s" in body["error"] and "\n" not in body["error"]
        status, _ = upload(port, HONEST, site.tokens["bob"], "bee", b"an archive")
        assert status == 202
    stalls = [e for e in audit.entries(site.arena.database, None, 50) if e.author == "alice"]
    assert [(e.action, e.subject, e.address) for e in stalls] == [
        (Action.UPLOAD_STALLED, "bot ace", STRANGER)
    ]


def test_an_author_has_one_upload_slot_at_a_time(site: OpenArena) -> None:
    uploads = Uploads(slots=2, pace=Pace(grace_s=10 * PATIENCE_S))
    archive = b"an archive of alice's"
    with served(site.arena, LASTING, uploads) as port:
        first = upload_begun(port, STRANGER, site.tokens["alice"], "ace", len(archive))
        status, body = upload(port, HONEST, site.tokens["alice"], "ace", b"another")
        assert status == 503 and "still arriving" in body["error"]
        assert upload(port, HONEST, site.tokens["bob"], "bee", b"bob's")[0] == 202
        first.sendall(archive)
        said = b""
        while b"}" not in said:
            said += first.recv(65536)
        assert said.startswith(b"HTTP/1.1 202 ")
        first.close()


def test_an_upload_past_every_slot_is_asked_to_come_back_when_the_docs_say(
    site: OpenArena,
) -> None:
    uploads = Uploads(slots=1, pace=Pace(grace_s=10 * PATIENCE_S))
    archive = b"an archive of alice's"
    with served(site.arena, LASTING, uploads) as port:
        first = upload_begun(port, STRANGER, site.tokens["alice"], "ace", len(archive))
        status, headers, body = upload_answer(port, HONEST, site.tokens["bob"], "bee", b"bob's")
        assert status == 503, body
        assert headers["retry-after"] == str(RETRY_AFTER_S) == "5"
        assert body["error"].endswith(f"try again in {RETRY_AFTER_S} s"), body
        first.close()


def test_stalled_uploads_count_in_the_authors_hourly_cap(make_arena: ArenaMaker) -> None:
    arena = make_arena(config_text=API_CONFIG.format(public="true"))
    per_hour = arena.config.submission.per_hour
    for _ in range(per_hour):
        audit.record(arena.database, Action.UPLOAD_STALLED, "alice", STRANGER, "bot ace")
    alice, bob = (auth.author_of(arena, add_author(arena, name)) for name in ("alice", "bob"))
    assert alice is not None and bob is not None
    with pytest.raises(SubmissionRefused) as refused:
        submissions.check(arena, alice, "ace")
    assert refused.value.why is Refusal.TOO_OFTEN
    assert "stalled" in str(refused.value)
    assert refused.value.retry_after_s is not None
    submissions.check(arena, bob, "bee")


def test_after_a_stalled_upload_its_author_waits_a_minute_for_a_slot(
    make_arena: ArenaMaker,
) -> None:
    arena = make_arena(config_text=API_CONFIG.format(public="true"))
    alice = auth.author_of(arena, add_author(arena, "alice"))
    assert alice is not None
    audit.record(arena.database, Action.UPLOAD_STALLED, "alice", STRANGER, "bot ace")
    with pytest.raises(SubmissionRefused) as refused:
        submissions.check(arena, alice, "ace")
    assert refused.value.why is Refusal.TOO_OFTEN
    assert "your last upload stalled" in str(refused.value)
    assert refused.value.retry_after_s is not None and 1 <= refused.value.retry_after_s <= 60
    # A minute later, it may send again.
    with arena.database.session(write=True) as session:
        for entry in session.scalars(select(AuditEntry)):
            entry.at -= submissions.STALL_PAUSE
    submissions.check(arena, alice, "ace")


def test_a_served_arena_answers_while_a_stranger_holds_260_half_sent_requests(
    tmp_path: Path,
) -> None:
    config = tmp_path / "arena.yaml"
    config.write_text(API_CONFIG.format(public="true"))
    init_arena(tmp_path / "arena", config)
    with serving(tmp_path / "arena") as arena:
        port = int(arena.url.rsplit(":", 1)[1])
        held = [half_sent(port, STRANGER) for _ in range(260)]
        assert get(port, HONEST) == 200
        for sock in held:
            sock.close()


@pytest.mark.parametrize(
    ("soft", "hard", "raised_to", "in_all"),
    [
        (1024, 1024, None, 1024 - doors_room.FILES_BESIDE),
        (1024, 524288, Limits().in_all + doors_room.FILES_BESIDE, Limits().in_all),
        (100_000, 100_000, None, Limits().in_all),
    ],
)
def test_serve_raises_its_open_files_to_hold_the_connections_or_holds_fewer(
    monkeypatch: pytest.MonkeyPatch, soft: int, hard: int, raised_to: int | None, in_all: int
) -> None:
    set_to: list[tuple[int, int]] = []
    monkeypatch.setattr(doors_room.resource, "getrlimit", lambda _which: (soft, hard))
    monkeypatch.setattr(doors_room.resource, "setrlimit", lambda _which, pair: set_to.append(pair))
    assert doors_room.doors_limits().in_all == in_all
    assert set_to == ([] if raised_to is None else [(raised_to, hard)])
