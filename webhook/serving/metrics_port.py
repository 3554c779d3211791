"""``GET /metrics`` on its own plain-HTTP port, for the scraper only.

The admission port is reachable by the control plane; the scraper is a pod. With the
metrics on their own port the NetworkPolicy can admit each to its own port and no
further. The listener runs on the server's event loop and is as strict as the
admission port: one request per connection, a deadline for the whole request, a cap
on its size and on open connections. Rendering is the same registry the HTTPS app
would render.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable

log = logging.getLogger("tpu_admission.serving")

#: a scrape's request is a line and a few headers
MAX_REQUEST_BYTES = 8 * 1024
#: scrapers keep one or two connections at a time
MAX_CONNECTIONS = 16
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


def _reply(status: bytes, body: bytes, content_type: bytes = b"text/plain; charset=utf-8") -> bytes:
    head = b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
    return head % (status, content_type, len(body)) + body


class MetricsListener:
    """Serves ``render()`` at ``GET /metrics`` on ``host:port`` until ``close``."""

    def __init__(self, render: Callable[[], bytes], timeout: float = 10.0) -> None:
        self.render = render
        self.timeout = timeout
        self.open = 0
        self.server: asyncio.Server | None = None

    async def start(self, sock: socket.socket) -> None:
        """Serve on ``sock``, bound already (``listen_socket``), so a port in use was found at start."""
        self.server = await asyncio.start_server(self._handle, sock=sock, limit=MAX_REQUEST_BYTES)
        host, port = sock.getsockname()[:2]
        log.info("serving /metrics on http://%s:%d", host, port)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            if self.open > MAX_CONNECTIONS:
                return
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return  # too slow, too big or gone: nothing worth an answer
            method, _, rest = head.partition(b" ")
            target = rest.partition(b" ")[0].partition(b"?")[0]
            if target != b"/metrics":
                writer.write(_reply(b"404 Not Found", b"only /metrics is served on this port"))
            elif method != b"GET":
                writer.write(_reply(b"405 Method Not Allowed", b"GET only"))
            else:
                writer.write(_reply(b"200 OK", self.render(), CONTENT_TYPE))
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(writer.drain(), self.timeout)
        finally:
            self.open -= 1
            writer.close()
