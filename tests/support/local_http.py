"""An HTTP server of the tests' own on a free port of this machine: another site, a stand-in
API, a player reached by URL."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextlib.contextmanager
def local_http(handler: type[BaseHTTPRequestHandler], **state: Any) -> Iterator[str]:
    """`handler` served in a thread until the block ends: its URL. Each of `state` is set on
    the server, where the handler reads it (`self.server.NAME`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    for name, value in state.items():
        setattr(server, name, value)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
