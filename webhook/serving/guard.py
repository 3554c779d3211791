"""The connection guard: deadlines, caps and client checks in front of uvicorn's HTTP protocol.

Every accepted connection's protocol is a ``GuardedConnection`` of ours. It holds the
protocol uvicorn would have used (``config.http_protocol_class``, built as uvicorn builds
it) and hands that one a transport of ours (``OneWrite``), so every byte in and out
passes through code we own, and nothing of uvicorn's is overridden:

- Requests are read first by a parser of our own (httptools, framing only: where a head
  begins and ends, its size, its path), and only bytes that pass go on to uvicorn.
- Deadlines (``server.*`` in the policy): the request headers (from the connection or
  the request's first byte) and the body each have one; a connection that misses one
  gets ``408`` and is closed. They are not a timer per request: each connection notes
  when its current phase began, and one sweep a fraction of a second apart closes those
  past their deadline. An idle kept-alive connection is closed by uvicorn's own
  ``timeout_keep_alive``.
- Headers over ``maxHeaderBytes`` get ``431``: the header lines are counted as the
  parser hands them over (so a whole block over the cap in one read is refused), and the
  bytes read of a head not complete yet are counted too (so nothing buffers more than
  the cap and one read).
- mTLS: a connection without a client certificate may ask for the probes only (``GET
  /healthz``, ``/readyz``: the kubelet presents none); with ``client_names`` a
  certificate must name one of them (common name or DNS subject-alternative name), or
  the connection is closed right after the handshake.
- An answer's head and first body chunk go out in one write (one TLS record).
- Which connections are idle (every request answered and no byte of the next one read,
  a connection that has sent nothing since its handshake included) and since when, for
  the listener to close the oldest when ``maxConnections`` is reached. A request is
  answered when the app's call for it returns: ``Guard.track`` wraps the app and finds
  the connection by the ASGI scope's ``client``.

Refusals are JSON, ``{"error": ...}``, and close the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import httptools
from starlette.types import ASGIApp, Receive, Scope, Send

from webhook.policy.config import ServerPolicy
from webhook.serving.tls import peer_names
from webhook.wire.jsonwire import encode

log = logging.getLogger("tpu_admission.serving")

#: what a client without a certificate may ask when mTLS is on: the kubelet's probes
PROBES = frozenset({b"/healthz", b"/readyz"})
_REASONS = {403: b"Forbidden", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}

IDLE, HEADERS, BODY = 0, 1, 2  # what a connection is waiting for


def refusal(status: int, text: str) -> bytes:
    """A whole answer that ends the connection: ``status`` with ``{"error": text}``."""
    body = encode({"error": text})
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (
        status,
        _REASONS[status],
        len(body),
        body,
    )


class _Refused(Exception):
    """Raised in a parser callback to stop reading; the connection's ``refused`` says with what."""


class OneWrite(asyncio.Transport):
    """The transport uvicorn's protocol writes to: the connection's own, except that an
    answer's head waits for its body's first write and goes out with it, in one write.

    uvicorn writes the status line and headers, then the body: two TLS records, two
    ``send`` calls and, on a connection whose client sleeps between answers, two wake-ups
    of it. The head of an answer to ``HEAD`` is not held (no body write follows; ``heads``
    says, per request not answered yet and in order, whether it was one), nor an interim
    ``1xx`` (the client waits for it). A held head is written at the latest on close.
    """

    def __init__(self, transport: asyncio.Transport, heads: deque[bool]) -> None:
        super().__init__()
        self.transport = transport
        self.heads = heads
        self.held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self.held
        if held is not None:
            self.held = None
            self.transport.write(held + data)
        elif data[:5] == b"HTTP/" and data[9:10] != b"1":
            if self.heads and self.heads.popleft():
                self.transport.write(data)  # the answer to a HEAD: nothing follows it
            else:
                self.held = bytes(data)
        else:
            self.transport.write(data)

    def flush(self) -> None:
        if self.held is not None:
            held, self.held = self.held, None
            self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self.held = None
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        self.transport.resume_reading()

    def is_reading(self) -> bool:
        return self.transport.is_reading()

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self.transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.transport.set_write_buffer_limits(high, low)


class GuardedConnection(asyncio.Protocol):
    """One connection: our parser and deadlines in front of uvicorn's protocol (``inner``)."""

    inner: asyncio.Protocol | None = None
    transport: asyncio.Transport | None = None
    writer: OneWrite | None = None
    parser: Any = None
    #: the TLS handshake completed: from now on ``connection_lost`` gives the gate its slot back
    made = False
    #: the listener closed it to make room and gave its slot away already
    shed = False
    #: refused, expired or closed: read nothing more, never idle again
    ended = False
    #: no client certificate (mTLS): the probes only
    anonymous = False
    #: a byte of a request not complete yet has been read (the connection is not idle)
    begun = False
    key: tuple[str, int] | None = None
    #: the event loop's clock
    now: Callable[[], float]

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.phase = HEADERS
        #: loop time the current phase began; ``None`` between requests
        self.since: float | None = None
        #: loop time the last request was answered, while no other has begun
        self.idle_since: float | None = None
        #: requests whose head is in and whose app call has not returned
        self.pending = 0
        #: per request not answered yet: whether it is a HEAD (``OneWrite``)
        self.heads: deque[bool] = deque()
        #: bytes read since the current head began, and its header lines as counted
        self.head_read = 0
        self.header_bytes = 0
        self.url = b""
        self.refused: tuple[int, str] | None = None

    # --- asyncio's side --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # asyncio's or uvloop's TLS transport (uvloop's is no ``asyncio.Transport`` subclass)
        self.made = True
        self.transport = transport = cast(asyncio.Transport, transport)
        guard = self.guard
        # asyncio calls this after the TLS handshake, so a presented certificate is verified.
        if guard.mtls:
            peercert = transport.get_extra_info("peercert")
            if not peercert:
                self.anonymous = True
            elif guard.allowed:
                names = peer_names(peercert)
                if not names & guard.allowed:
                    log.warning(
                        "refused a client certificate naming %s (allowed: %s)",
                        ", ".join(sorted(names)) or "nothing",
                        ", ".join(sorted(guard.allowed)),
                    )
                    self.ended = True
                    transport.abort()
                    return
        self.parser = parser = httptools.HttpRequestParser(self)
        with contextlib.suppress(AttributeError):  # read pipelined requests as uvicorn's parser does
            parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.writer = OneWrite(transport, self.heads)
        self.inner = guard.inner_factory()
        self.inner.connection_made(self.writer)
        # Until the first request's headers are in: a connection that never sends one ends.
        self.now = guard.loop.time
        self.since = self.now()
        # Idle until its first byte: no request is in flight, so it may be shed to make room; the
        # header deadline (``since``) still closes it if it never sends one.
        self.idle_since = self.since
        peer = transport.get_extra_info("peername")
        if isinstance(peer, (tuple, list)) and len(peer) >= 2:
            self.key = (str(peer[0]), int(peer[1]))
        guard.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.discard(self)
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def data_received(self, data: bytes) -> None:
        if self.ended:
            return
        if self.phase != BODY:
            self.head_read += len(data)
            self.begun = True
            self.idle_since = None
            if self.phase == IDLE:  # the first bytes of a later request on a kept-alive connection
                self.phase = HEADERS
                self.since = self.now()
                self.idle_since = None
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # uvicorn's parser sees the same and answers it as uvicorn does
        except httptools.HttpParserError:
            if self.refused is not None:
                return self.refuse(*self.refused)
            # Malformed: uvicorn's parser fails on the same bytes and answers 400.
            assert self.inner is not None
            self.inner.data_received(data)
            self.end()
            return
        if self.phase == HEADERS and self.head_read > self.guard.max_header:
            return self.refuse(431, self.guard.too_large)
        assert self.inner is not None
        self.inner.data_received(data)

    # --- the parser's callbacks ------------------------------------------------------

    def on_url(self, url: bytes) -> None:
        # The first callback of every request (a request line has a target), so it also
        # begins a request that came behind another in the same read.
        self.begun = True
        if self.phase == IDLE:
            self.phase = HEADERS
            self.since = self.now()
            self.idle_since = None
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self.header_bytes > self.guard.max_header:
            self.refused = (431, self.guard.too_large)
            raise _Refused()

    def on_headers_complete(self) -> None:
        if self.header_bytes + len(self.url) > self.guard.max_header:
            self.refused = (431, self.guard.too_large)
            raise _Refused()
        if self.anonymous and httptools.parse_url(self.url).path not in PROBES:
            self.refused = (403, "a client certificate is required for this path")
            raise _Refused()
        self.phase = BODY
        self.since = self.now()
        self.head_read = 0
        self.pending += 1
        self.heads.append(self.parser.get_method() == b"HEAD")

    def on_message_complete(self) -> None:
        self.phase = IDLE
        self.begun = False
        self.since = None
        self.url = b""
        self.header_bytes = 0
        if self.pending == 0:
            self.idle_since = self.now()

    # --- ours ------------------------------------------------------------------------

    def answered(self) -> None:
        """The app's call for one request returned: its answer is out (or never will be)."""
        self.pending -= 1
        if self.pending == 0 and self.phase == IDLE:
            self.idle_since = self.now()

    def idle(self) -> bool:
        """No request in flight: every one answered and no byte of the next one read (a connection
        that has sent nothing since its handshake included)."""
        return self.pending == 0 and not self.begun and not self.ended

    def refuse(self, status: int, text: str) -> None:
        """Answer ``status`` and close; the bytes that caused it never reach uvicorn."""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(refusal(status, text))
            transport.close()
        self.end()

    def expired(self) -> None:
        """Past the current phase's deadline: 408 unless an answer is being written, then close."""
        self.since = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        writer = self.writer
        answering = writer is not None and writer.held is not None
        if not answering and (self.pending == 0 or (self.pending == 1 and self.phase == BODY)):
            transport.write(refusal(408, "the request did not arrive in time"))
        transport.close()
        self.end()

    def shed_now(self) -> None:
        """Reset it to make room (the listener's): an idle connection, so nothing is cut off.
        A reset, not a TLS close: its descriptor is free at once, whatever the client does
        (as nginx's ``reset_timedout_connection``), so the slot it hands on is really free."""
        self.shed = True
        self.ended = True
        self.since = self.idle_since = None
        if self.transport is not None:
            self.transport.abort()

    def end(self) -> None:
        self.ended = True
        self.since = None
        self.idle_since = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class Guard:
    """The guarded connections of one server: the protocol factory, the sweep of
    deadlines, the app wrapper that marks requests answered, the idle ones to shed."""

    #: the server's event loop (``start``)
    loop: asyncio.AbstractEventLoop

    #: builds uvicorn's protocol for a connection (the server's ``inner_protocol``)
    inner_factory: Callable[[], asyncio.Protocol]

    def __init__(
        self,
        limits: ServerPolicy,
        *,
        mtls: bool = False,
        allowed: frozenset[str] = frozenset(),
        released: Callable[[GuardedConnection], None] | None = None,
    ) -> None:
        self.mtls = mtls
        self.allowed = allowed
        self.released = released
        self.max_header = limits.max_header_bytes
        self.too_large = f"request headers over {self.max_header} bytes"
        self.header_timeout = limits.header_timeout_seconds
        self.body_timeout = limits.body_timeout_seconds
        self.sweep_every = min(1.0, self.header_timeout / 4, self.body_timeout / 4)
        self.connections: set[GuardedConnection] = set()
        self.by_peer: dict[tuple[str, int], GuardedConnection] = {}
        self.sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Called on the server's event loop before the first connection."""
        self.loop = asyncio.get_running_loop()

    def protocol(self) -> GuardedConnection:
        """A new connection's protocol (the listener's factory)."""
        return GuardedConnection(self)

    def add(self, connection: GuardedConnection) -> None:
        self.connections.add(connection)
        if connection.key is not None:
            self.by_peer[connection.key] = connection
        if self.sweeper is None:
            self.sweeper = self.loop.create_task(self.sweep())

    def discard(self, connection: GuardedConnection) -> None:
        self.connections.discard(connection)
        if connection.key is not None and self.by_peer.get(connection.key) is connection:
            del self.by_peer[connection.key]
        if connection.made:
            connection.made = False
            if not connection.shed and self.released is not None:
                self.released(connection)

    def track(self, app: ASGIApp) -> ASGIApp:
        """``app``, telling each request's connection when the app's call for it returns."""
        by_peer = self.by_peer

        async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
            client = scope.get("client")
            connection = by_peer.get(client) if client is not None else None
            try:
                await app(scope, receive, send)
            finally:
                if connection is not None:
                    connection.answered()

        return tracked

    def oldest_idle(self) -> GuardedConnection | None:
        """The connection idle the longest, if any is (a scan: only at the connection cap)."""
        oldest: GuardedConnection | None = None
        for connection in self.connections:
            if connection.idle() and (oldest is None or (connection.idle_since or 0) < (oldest.idle_since or 0)):
                oldest = connection
        return oldest

    def make_room(self) -> bool:
        """Close the connection idle the longest, if any is (at the connection cap): its slot is the new one's."""
        oldest = self.oldest_idle()
        if oldest is None:
            return False
        oldest.shed_now()
        return True

    async def sweep(self) -> None:
        """Close connections past their phase's deadline; ends when no connection is left."""
        loop = self.loop
        connections = self.connections
        while connections:
            await asyncio.sleep(self.sweep_every)
            now = loop.time()
            for connection in list(connections):
                since = connection.since
                if since is not None:
                    limit = self.body_timeout if connection.phase == BODY else self.header_timeout
                    if now - since > limit:
                        connection.expired()
        self.sweeper = None

    async def stop(self) -> None:
        """Cancel the sweep (at shutdown, so the loop does not close on a pending task)."""
        task, self.sweeper = self.sweeper, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
