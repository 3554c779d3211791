"""Run the ASGI app on uvicorn over TLS, with certificate hot reload, connection deadlines
and a clean drain.

- TLS: our own ``SSLContext`` (TLS 1.2 minimum, 1.3 selectable), handed to uvicorn. A
  reload builds a *fresh* context from the new files, and the listening context
  (``SwitchingContext``) wraps each new connection with it, so the whole handshake is
  the new generation's: certificate, client CA, session cache and ticket keys. Loading
  into the live context would not do: one context keeps one certificate per key type,
  so an ECDSA -> RSA swap kept serving the old ECDSA one; nor would switching contexts
  in the ``sni_callback``: OpenSSL resumes sessions against the context a connection
  began with, so an mTLS client resumed its session after its CA was rotated out. A
  certificate that is expired, not yet valid or does not match its key is refused with
  a log line and the current one stays. Open connections keep theirs.
- mTLS (optional): ``client_ca`` makes a client certificate from that CA required for
  every request but the probes (``GET /healthz``, ``/readyz``: the kubelet presents
  none); ``client_names`` further limits it to certificates whose common name or a DNS
  subject-alternative name is listed. uvicorn does not hand the peer certificate to the
  app, so these checks sit in the HTTP protocol of each connection, before the app.
  The client CA is reloaded with the serving certificate.
- Deadlines (``server.*`` in the policy): the TLS handshake, the request headers (from
  the connection or the request's first byte) and the body each have one; a connection
  that misses one gets ``408`` and is closed. Headers over ``maxHeaderBytes`` get
  ``431`` (the header lines are counted, not the reads); sockets over ``maxConnections``
  are closed as they are accepted, handshakes counted (``_Listener``), and the soft
  open-files limit is raised to fit them or the server refuses to start
  (``ensure_open_files``); an idle keep-alive connection is closed after
  ``keepAliveSeconds``. Refusals are JSON, ``{"error": ...}``.
- SIGTERM: readiness goes false at once, the server keeps answering for
  ``drain_seconds`` (endpoints controllers need a moment to take the pod out of the
  Service), then stops accepting and lets in-flight requests finish, and the process
  exits 0. SIGHUP re-reads the certificate files at once and is otherwise ignored
  (its default action would kill the process).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import logging
import math
import os
import signal
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httptools
import uvicorn
from cryptography import x509
from starlette.types import ASGIApp

from webhook.policy.config import ConfigError, ServerPolicy
from webhook.serving.app import ServerState, create_app
from webhook.serving.metrics_port import MetricsListener
from webhook.wire.jsonwire import encode

log = logging.getLogger("tpu_admission.serving")


@dataclass(frozen=True)
class TlsSettings:
    cert: Path
    key: Path
    min_version: str = "1.2"
    client_ca: Path | None = None
    client_names: tuple[str, ...] = ()
    reload_interval: float = 2.0

    def __post_init__(self) -> None:
        if self.client_names and self.client_ca is None:
            raise ValueError("client_names needs client_ca: only a verified certificate has trustworthy names")


class CertificateRefused(Exception):
    """The files hold a certificate the server must not switch to; the message says why."""


@dataclass(frozen=True)
class _Material:
    """The bytes of one certificate generation: serving pair and, with mTLS, the client CA."""

    cert: bytes
    key: bytes
    client_ca: bytes | None

    @classmethod
    def read(cls, settings: TlsSettings) -> _Material:
        return cls(
            settings.cert.read_bytes(),
            settings.key.read_bytes(),
            settings.client_ca.read_bytes() if settings.client_ca is not None else None,
        )


def certificate_problem(cert_pem: bytes, now: dt.datetime | None = None) -> str | None:
    """Why the (first) certificate of ``cert_pem`` must not be served now, or ``None``."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        return f"not a PEM certificate: {exc}"
    now = now or dt.datetime.now(dt.UTC)
    if now < cert.not_valid_before_utc:
        return f"not valid before {cert.not_valid_before_utc.isoformat()} (now {now.isoformat(timespec='seconds')})"
    if now > cert.not_valid_after_utc:
        return f"expired at {cert.not_valid_after_utc.isoformat()} (now {now.isoformat(timespec='seconds')})"
    return None


def _context(settings: TlsSettings, material: _Material) -> ssl.SSLContext:
    """A fresh server context holding exactly ``material``; raises ``ssl.SSLError`` on a bad pair."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3 if settings.min_version == "1.3" else ssl.TLSVersion.TLSv1_2
    with _pem_files(material.cert, material.key) as (cert_path, key_path):
        context.load_cert_chain(cert_path, key_path)
    if material.client_ca is not None:
        # mTLS: a client certificate must come from this CA (the API server's). Optional at
        # the TLS layer so that the kubelet's probes, which carry none, still get through;
        # the HTTP protocol refuses every other request without one.
        context.load_verify_locations(cadata=material.client_ca.decode("ascii", "replace"))
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def make_ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    """A context from the files as they are now (no validity checks: see ``CertificateReloader``)."""
    return _context(settings, _Material.read(settings))


class SwitchingContext(ssl.SSLContext):
    """The listener's context: it hands each new connection to ``current``, the context of
    one generation of the certificate files.

    asyncio and uvloop wrap every accepted connection with ``wrap_bio`` of the context the
    listener was given; passed on to ``current``, everything of that handshake is the
    generation's own, including the session cache and the ticket keys OpenSSL keeps per
    context. A session (TLS 1.2 session ID or TLS 1.3 ticket) from before a reload is
    therefore unknown after it: the client makes a full handshake, and with mTLS its
    certificate is checked against the client CA in force now. Within one generation
    sessions resume as usual. This context itself holds no certificate.
    """

    current: ssl.SSLContext

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return self.current.wrap_bio(
            incoming, outgoing, server_side=server_side, server_hostname=server_hostname, session=session
        )


def switching_context(settings: TlsSettings) -> SwitchingContext:
    """The listening context, handing connections to a context from the files as they are now."""
    context = SwitchingContext(ssl.PROTOCOL_TLS_SERVER)
    context.current = make_ssl_context(settings)
    return context


@contextmanager
def _pem_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    """Paths holding exactly these bytes (``load_cert_chain`` only reads files): anonymous
    in-memory files where Linux offers them, else a private temporary directory."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = [os.memfd_create("tls.crt"), os.memfd_create("tls.key")]
        try:
            for fd, data in zip(fds, (cert, key), strict=True):
                with open(fd, "wb", closefd=False) as handle:
                    handle.write(data)
            yield f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}"
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory() as directory:
        paths = (os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key"))
        for path, data in zip(paths, (cert, key), strict=True):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as handle:
                handle.write(data)
        yield paths


def peer_names(peercert: Any) -> set[str]:
    """The common name(s) and DNS subject-alternative names of ``SSLSocket.getpeercert()``."""
    names: set[str] = set()
    if not isinstance(peercert, dict):
        return names
    for rdn in peercert.get("subject", ()):
        names.update(value for key, value in rdn if key == "commonName")
    names.update(value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS")
    return names


#: what a client without a certificate may ask when mTLS is on: the kubelet's probes
PROBES = frozenset({b"/healthz", b"/readyz"})
_REASONS = {403: b"Forbidden", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


IDLE, HEADERS, BODY = 0, 1, 2  # what a connection is waiting for


class _OneWrite:
    """A connection's transport that sends each response's head and first body chunk in one write.

    uvicorn writes the status line and headers, then the body: two TLS records, two
    ``send`` calls and, on a connection whose client sleeps between answers, two
    wake-ups of it. Held until the body's first write (uvicorn writes one for every body
    message of a non-HEAD response, even an empty one) or until the connection closes,
    the head goes out with the body. HEAD responses are not wrapped: they have no body
    write to wait for. Everything else is the connection's transport.
    """

    __slots__ = ("_head", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head + data)
        elif data.startswith(b"HTTP/") and not data.startswith(b"HTTP/1.1 1"):
            self._head = data  # the head; an interim "100 Continue" goes out at once (the client waits for it)
        else:
            self._transport.write(data)

    def close(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            self._transport.write(head)
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _Refuse(Exception):
    """Raised in a parser callback to end the request with ``status`` (via uvicorn's error path)."""


class ConnectionGate:
    """The sockets open now, from ``accept`` to close, TLS handshakes included, against
    ``server.maxConnections`` (``_Listener`` admits, the protocol's ``connection_lost``
    releases). Refusals are logged, one line per 10 s rather than one per socket."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0
        self.refused = 0
        self._logged = -math.inf

    def admit(self) -> bool:
        if self.open < self.limit:
            self.open += 1
            return True
        self.refused += 1
        now = time.monotonic()
        if now - self._logged > 10:
            self._logged = now
            log.warning(
                "refusing connections: %d open (TLS handshakes included), the limit is server.maxConnections=%d "
                "(%d refused so far)",
                self.open,
                self.limit,
                self.refused,
            )
        return False

    def release(self) -> None:
        self.open -= 1


def _guarded(
    protocol_class: type[asyncio.Protocol],
    limits: ServerPolicy,
    mtls: bool,
    allowed: frozenset[str],
    gate: ConnectionGate | None = None,
) -> type[asyncio.Protocol]:
    """``protocol_class`` (uvicorn's httptools protocol) with deadlines, caps and client checks.

    ``gate``: the listener's count of open sockets, which ``connection_lost`` releases
    (without one, under a plain ``create_server`` as ``bench/floor.py`` runs it, a count
    of its own that nothing reads).

    The checks hook the parser's callbacks, so a request is refused before the app sees
    it. Deadlines are not a timer per request: each connection notes when its current
    phase (headers, body) began, and one sweep a fraction of a second apart closes those
    past their deadline, so a well-behaved request pays a few attribute writes.
    """
    header_timeout = limits.header_timeout_seconds
    body_timeout = limits.body_timeout_seconds
    keep_alive = limits.keep_alive_seconds
    max_header = limits.max_header_bytes
    sweep_every = min(1.0, header_timeout / 4, body_timeout / 4, keep_alive / 4)
    too_large = f"request headers over {max_header} bytes"
    counted = gate if gate is not None else ConnectionGate(limits.max_connections)
    sweeper: list[asyncio.Task[None] | None] = [None]

    async def sweep(connections: set[Any]) -> None:
        """Close connections past their phase's deadline; ends when no connection is left."""
        loop = asyncio.get_running_loop()
        while connections:
            await asyncio.sleep(sweep_every)
            now = loop.time()
            for connection in list(connections):
                since = getattr(connection, "_since", None)
                if since is None:
                    idle = getattr(connection, "_idle_since", None)
                    if idle is not None and now - idle > keep_alive:
                        connection._idle_expired()
                    continue
                limit = body_timeout if connection._reading == BODY else header_timeout
                if now - since > limit:
                    connection._expired()
        sweeper[0] = None

    class GuardedProtocol(protocol_class):  # type: ignore[valid-type,misc]
        #: loop time the current phase began; ``None`` between requests
        _since: float | None = None
        #: loop time the last answer completed, while the connection waits for another request
        _idle_since: float | None = None
        #: the connection's transport behind ``_OneWrite`` (made at its first answer)
        _one_write: _OneWrite | None = None
        _reading = HEADERS
        #: bytes read since the current request began: bounds a header block still incomplete
        _read_bytes = 0
        #: the current request's header lines, counted exactly as the parser hands them over
        _header_bytes = 0
        _refusal = 0
        _refusal_text = ""
        _anonymous = False
        #: the TLS handshake completed (the gate's slot is then released by ``connection_lost``)
        _made = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._made = True
            super().connection_made(transport)
            # asyncio calls this after the TLS handshake, so a presented certificate is verified.
            if mtls:
                peercert = transport.get_extra_info("peercert")
                if not peercert:
                    self._anonymous = True  # probes only
                elif allowed:
                    names = peer_names(peercert)
                    if not names & allowed:
                        log.warning(
                            "refused a client certificate naming %s (allowed: %s)",
                            ", ".join(sorted(names)) or "nothing",
                            ", ".join(sorted(allowed)),
                        )
                        transport.abort()  # type: ignore[attr-defined]
                        return
            # Until the first request's headers are in: a connection that never sends one ends.
            self._since = self.loop.time()
            if sweeper[0] is None:
                sweeper[0] = self.loop.create_task(sweep(self.connections))

        def _idle_expired(self) -> None:
            # What uvicorn's keep-alive timer does when it fires.
            self._idle_since = None
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()

        def _expired(self) -> None:
            self._since = None
            if self.transport is None or self.transport.is_closing():
                return
            if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
                self._write_status(408, "the request did not arrive in time")
            self.transport.close()

        def _write_status(self, status: int, text: str) -> None:
            body = encode({"error": text})  # JSON, as every other refusal of the server
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s" % (status, _REASONS[status], len(body), body)
            )

        def connection_lost(self, exc: Exception | None) -> None:
            if self._made:
                self._made = False
                counted.release()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            # Two counts: the reads bound a header block that is not complete yet (what is
            # read of it stays under the cap plus one read, and the parser buffers no more);
            # ``on_header`` counts the header lines themselves, so a block over the cap is
            # refused even when all of it, or a pipelined second request, came in one read.
            if self._reading != BODY:
                if self._since is None:  # the first bytes of a later request on a kept-alive connection
                    self._since = self.loop.time()
                    self._idle_since = None
                self._read_bytes += len(data)
            super().data_received(data)
            if self._reading != BODY and self._read_bytes > max_header and not self.transport.is_closing():
                self._write_status(431, too_large)
                self.transport.close()

        def _refuse(self, status: int, text: str) -> None:
            self._refusal, self._refusal_text = status, text
            raise _Refuse()

        def on_header(self, name: bytes, value: bytes) -> None:
            # uvicorn's, with the count (no call up: this runs for every header of every request)
            self._header_bytes += len(name) + len(value) + 4  # ": " and CRLF
            if self._header_bytes > max_header:
                self._refuse(431, too_large)
            name = name.lower()
            if name == b"expect" and value.lower() == b"100-continue":
                self.expect_100_continue = True
            self.headers.append((name, value))

        def on_headers_complete(self) -> None:
            if self._header_bytes + len(self.url) > max_header:
                self._refuse(431, too_large)
            if self._anonymous and httptools.parse_url(self.url).path not in PROBES:
                self._refuse(403, "a client certificate is required for this path")
            self._reading = BODY
            self._since = self.loop.time()
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None and cycle.scope["method"] != "HEAD":
                # One wrapper per connection, not per request: an answer leaves it empty.
                one_write = self._one_write
                if one_write is None:
                    one_write = self._one_write = _OneWrite(self.transport)
                cycle.transport = one_write

        def on_response_complete(self) -> None:
            """uvicorn's, but the usual case arms no keep-alive timer: a ``call_later`` per
            answer and its ``cancel`` at the next request cost ~1.7 µs; the sweep closes a
            connection idle past ``keepAliveSeconds`` instead (within a quarter of it)."""
            if self.pipeline or self.transport.is_closing():
                super().on_response_complete()  # uvicorn's own; it arms no timer on these paths
                return
            self.server_state.total_requests += 1
            self._unset_keepalive_if_required()
            self.flow.resume_reading()
            self._idle_since = self.loop.time()

        def on_message_complete(self) -> None:
            self._since = None
            self._reading = IDLE
            self._read_bytes = self._header_bytes = 0
            super().on_message_complete()

        @staticmethod
        async def stop_sweeping() -> None:
            """Cancel the sweep (at shutdown, so the loop does not close on a pending task)."""
            task, sweeper[0] = sweeper[0], None
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

        def send_400_response(self, msg: str) -> None:
            # uvicorn's answer to a parser error, which is how a callback ends a request.
            if not self._refusal:
                return super().send_400_response(msg)  # type: ignore[no-any-return]
            self._write_status(self._refusal, self._refusal_text)
            self.transport.close()

    return GuardedProtocol


class CertificateReloader:
    """Polls the certificate files and switches new connections to a fresh context when they change.

    ``context`` is the listening context given to the server; ``current`` the one new
    connections are wrapped with (``SwitchingContext.current``).
    """

    def __init__(self, context: SwitchingContext, settings: TlsSettings, seen: tuple[float, ...] | None = None) -> None:
        self.context = context
        self.settings = settings
        self.reloads = 0
        self._seen = seen if seen is not None else self._stamp()
        self._failed: tuple[float, ...] | None = None

    @property
    def current(self) -> ssl.SSLContext:
        return self.context.current

    @staticmethod
    def stamp_files(settings: TlsSettings) -> tuple[float, ...] | None:
        files = [settings.cert, settings.key] + ([settings.client_ca] if settings.client_ca else [])
        try:
            stats = [path.stat() for path in files]
        except OSError:
            return None
        # Kubernetes swaps Secret volumes through a symlink: compare inode too, not only mtime.
        return tuple(x for stat in stats for x in (stat.st_mtime, stat.st_ino))

    def _stamp(self) -> tuple[float, ...]:
        stamp = self.stamp_files(self.settings)
        if stamp is None:  # mid-swap or briefly missing: treat as unchanged
            return self._seen if hasattr(self, "_seen") else ()
        return stamp

    def check(self) -> bool:
        """Switch to the files' certificate if they changed and it is fit to serve; else keep the current one."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            material = _Material.read(self.settings)
            problem = certificate_problem(material.cert)
            if problem is not None:
                raise CertificateRefused(f"the new certificate in {self.settings.cert} is {problem}")
            fresh = _context(self.settings, material)
        except (ssl.SSLError, OSError, CertificateRefused) as exc:
            # Mid-rotation the cert and key may not match yet: try again next tick, one line per state.
            if stamp != self._failed:
                log.warning("certificate reload failed, keeping the current one: %s", exc)
                self._failed = stamp
            return False
        self.context.current = fresh  # new connections only: a session from before is unknown to it
        self._seen = stamp
        self.reloads += 1
        log.info("reloaded the serving certificate from %s", self.settings.cert)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reload_interval)
            self.check()


#: descriptors besides the connections: the listener, /metrics and its scrapers, the watch
#: cache's pool, the certificate files on reload, logs, the event loop's own
RESERVED_FILES = 64


def ensure_open_files(limits: ServerPolicy) -> str | None:
    """Make room for ``maxConnections`` sockets in the open-files limit, or refuse to start;
    returns what was raised, for the log, or ``None`` when nothing needed to be.

    The soft limit is raised to what is needed where the hard limit allows (a container's
    default soft limit is often 1024, or lower); over the hard limit it is a ``ConfigError``
    naming both numbers. (With 1000 connections allowed under a soft limit of 200, the
    descriptors ran out first: new clients got resets and nothing was logged.)
    """
    try:
        import resource
    except ImportError:  # not a Unix: no such limit to fit
        return None
    needed = limits.max_connections + RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise ConfigError(
            f"server.maxConnections is {limits.max_connections}, which needs {needed} open files "
            f"({RESERVED_FILES} besides the connections), but the hard limit is {hard} (ulimit -Hn): "
            f"lower server.maxConnections to {max(hard - RESERVED_FILES, 0)} or raise the limit"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return f"raised the open-files limit from {soft} to {needed} for server.maxConnections={limits.max_connections}"


class _Listener:
    """Accepts the TLS connections itself, so that each socket counts from ``accept`` on.

    ``loop.create_server`` hands the app a connection only once its handshake is done and
    says nothing of one that fails, so a count in the app missed every socket still in its
    handshake (120 raw TCP connections over a limit of 40 all stayed until the handshake
    deadline). Here a socket over ``server.maxConnections`` (``ConnectionGate``) is closed
    as it is accepted; the others get their handshake (``connect_accepted_socket``, with
    its deadline) and, once it is done, the HTTP protocol. Quacks like ``asyncio.Server``
    as far as uvicorn and ``bound_port`` look (``sockets``, ``close``, ``wait_closed``).
    """

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        context: ssl.SSLContext,
        handshake_timeout: float,
        gate: ConnectionGate,
        backlog: int,
    ) -> None:
        self.sockets = [sock]
        self.loop = asyncio.get_running_loop()
        self.protocol_factory = protocol_factory
        self.context = context
        self.handshake_timeout = handshake_timeout
        self.gate = gate
        self.backlog = backlog
        self._handshakes: set[asyncio.Task[None]] = set()
        self._serving = False
        self._logged = -math.inf

    def start(self) -> None:
        sock = self.sockets[0]
        sock.listen(self.backlog)
        sock.setblocking(False)
        self._resume()

    def _resume(self) -> None:
        if not self._serving and self.sockets[0].fileno() != -1:
            self._serving = True
            self.loop.add_reader(self.sockets[0].fileno(), self._accept)

    def _pause(self) -> None:
        if self._serving:
            self._serving = False
            self.loop.remove_reader(self.sockets[0].fileno())

    def _accept(self) -> None:
        listening = self.sockets[0]
        for _ in range(self.backlog):
            try:
                conn, _ = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    raise
                # As asyncio does: stop accepting for a second rather than spin. Said, not silent.
                now = time.monotonic()
                if now - self._logged > 10:
                    self._logged = now
                    log.error("cannot accept connections: %s (%d open); retrying in 1 s", exc.strerror,
                              self.gate.open)  # fmt: skip
                self._pause()
                self.loop.call_later(1.0, self._resume)
                return
            if not self.gate.admit():
                conn.close()
                continue
            task = self.loop.create_task(self._handshake(conn))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, conn: socket.socket) -> None:
        made: list[Any] = []

        def factory() -> asyncio.Protocol:
            protocol = self.protocol_factory()
            made.append(protocol)
            return protocol

        try:
            conn.setblocking(False)
            await self.loop.connect_accepted_socket(
                factory, conn, ssl=self.context, ssl_handshake_timeout=self.handshake_timeout
            )
        except (Exception, asyncio.CancelledError):
            # Failed or timed out (the loop closed the socket), or cancelled at shutdown.
            if not made:
                conn.close()  # no transport took it over
            if not (made and getattr(made[0], "_made", False)):
                self.gate.release()  # else the protocol's connection_lost releases it

    def close(self) -> None:
        self._pause()
        self.sockets[0].close()
        for task in list(self._handshakes):
            task.cancel()

    async def wait_closed(self) -> None:
        if self._handshakes:
            await asyncio.gather(*self._handshakes, return_exceptions=True)


class _DrainingServer(uvicorn.Server):
    """uvicorn, but SIGTERM first turns readiness off and keeps serving for a while."""

    def __init__(
        self,
        config: uvicorn.Config,
        state: ServerState,
        drain_seconds: float,
        metrics_port: int | None = None,
        sock: socket.socket | None = None,
    ) -> None:
        super().__init__(config)
        self.state = state
        #: bound already (``listen_socket``), so a port in use is found before anything is announced
        self.sock = sock
        self.gate = ConnectionGate(state.policy.server.max_connections)
        self.metrics_port = metrics_port
        self.metrics: MetricsListener | None = None
        self.drain_seconds = drain_seconds
        self._drain_started: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.state.ready = False
        if self._drain_started is None and self.drain_seconds > 0:
            self._drain_started = time.monotonic()
            log.info("signal %s: not ready; draining for %.1fs", sig, self.drain_seconds)
            self._captured_signals.append(sig)
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self._drain_started is not None and time.monotonic() - self._drain_started >= self.drain_seconds:
            self.should_exit = True
        return await super().on_tick(counter)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's startup for our one case (TLS on host:port, no lifespan), plus the
        TLS handshake deadline, which uvicorn does not pass to ``create_server``."""
        config = self.config

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop
            )

        sock = sockets[0] if sockets else self.sock or config.bind_socket()
        assert isinstance(config.ssl, ssl.SSLContext)
        listener = _Listener(
            sock,
            create_protocol,
            config.ssl,
            self.state.policy.server.handshake_timeout_seconds,
            self.gate,
            config.backlog,
        )
        listener.start()
        self.servers = [listener]  # type: ignore[list-item]  # what uvicorn uses of asyncio.Server
        if self.metrics_port is not None:
            self.metrics = MetricsListener(lambda: _render_metrics(self.state))
            self.metrics_port = await self.metrics.start(config.host, self.metrics_port)
        self.started = True
        if not self.should_exit:
            self.state.ready = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.state.ready = False
        if self.metrics is not None:
            await self.metrics.close()
        await super().shutdown(sockets)
        stop_sweeping = getattr(self.config.http_protocol_class, "stop_sweeping", None)
        if stop_sweeping is not None:
            await stop_sweeping()
        # uvicorn re-raises the captured SIGTERM after a graceful shutdown, which would
        # end the process "killed by signal" (exit 143). The drain is the expected way to
        # stop, so end normally instead.
        self._captured_signals.clear()
        log.info("stopped: in-flight requests answered")


def build_server(
    state: ServerState,
    host: str,
    port: int,
    tls: TlsSettings,
    *,
    drain_seconds: float = 0.0,
    graceful_seconds: float = 20.0,
    access_log: bool = False,
    metrics_port: int | None = None,
    app: ASGIApp | None = None,
    sock: socket.socket | None = None,
) -> tuple[uvicorn.Server, CertificateReloader]:
    """A ready-to-run uvicorn server on our TLS context, and the reloader of that context.

    With ``metrics_port``, ``/metrics`` is served there (plain HTTP, same host) and not on
    the HTTPS port. ``app`` replaces the webhook's app on the same serving stack (TLS,
    connection guard, drain): ``bench/stages.py`` serves cut-down apps that way to price
    each stage of a request. ``sock``: a socket ``listen_socket`` bound (else bound at start).
    Raises ``OSError`` or ``ssl.SSLError`` when the certificate files cannot be used.
    """
    raised = ensure_open_files(state.policy.server)
    if raised is not None:
        log.info("%s", raised)
    reloader_seen = CertificateReloader.stamp_files(tls)  # before loading: never miss a swap
    context = switching_context(tls)
    problem = certificate_problem(tls.cert.read_bytes())
    if problem is not None:  # nothing better to serve: say so loudly, the API server will refuse it
        log.error("the serving certificate in %s is %s; replace it", tls.cert, problem)
    limits = state.policy.server
    config = uvicorn.Config(
        app if app is not None else create_app(state, serve_metrics=metrics_port is None),
        host=host,
        port=port,
        ssl_certfile=str(tls.cert),
        ssl_keyfile=str(tls.key),
        log_config=None,
        access_log=access_log,
        timeout_graceful_shutdown=int(graceful_seconds),
        http="httptools",  # the deadlines and caps hook its parser callbacks
        timeout_keep_alive=limits.keep_alive_seconds,  # type: ignore[arg-type]  # a float works
        server_header=False,
        lifespan="off",
        # The API server calls the webhook directly: X-Forwarded-* headers would only be
        # a client's claims, and uvicorn's middleware that reads them costs every request.
        proxy_headers=False,
    )
    config.load()
    config.ssl = context  # the live context the reloader updates
    server = _DrainingServer(config, state, drain_seconds, metrics_port, sock)
    config.http_protocol_class = _guarded(
        config.http_protocol_class, limits, tls.client_ca is not None, frozenset(tls.client_names), server.gate
    )
    return server, CertificateReloader(context, tls, reloader_seen)


async def run_server(server: uvicorn.Server, reloader: CertificateReloader) -> None:
    """Serve until a signal (or ``should_exit``); returns after in-flight requests finish."""
    task = asyncio.create_task(reloader.run())
    restore = _on_sighup(asyncio.get_running_loop(), reloader)
    try:
        await server.serve()
    finally:
        restore()
        task.cancel()
        if isinstance(server, _DrainingServer):
            server.state.ready = False


def _render_metrics(state: ServerState) -> bytes:
    state.metrics.ready.set(1 if state.ready else 0)
    return state.metrics.render()


def _on_sighup(loop: asyncio.AbstractEventLoop, reloader: CertificateReloader) -> Callable[[], None]:
    """SIGHUP: re-read the certificate now, keep serving (its default action ends the process).

    Returns the function that restores the previous handler. Only the main thread may
    set signal handlers; a server run in another thread (tests) leaves SIGHUP alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handle(sig: int, frame: FrameType | None) -> None:
        log.info("SIGHUP: checking the certificate files now")
        loop.call_soon_threadsafe(reloader.check)

    previous = signal.signal(signal.SIGHUP, handle)

    def restore() -> None:
        signal.signal(signal.SIGHUP, previous)

    return restore


def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (as uvicorn binds one), or ``OSError`` (port in use ...)."""
    sock = socket.socket(family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def serve(state: ServerState, host: str, port: int, tls: TlsSettings, **options: Any) -> None:
    server, reloader = build_server(state, host, port, tls, **options)
    await run_server(server, reloader)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (as uvicorn's ``loop="auto"`` would pick), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def bound_port(server: uvicorn.Server) -> int:
    """The port actually bound (useful with ``port=0``)."""
    return int(server.servers[0].sockets[0].getsockname()[1])
