"""Run the ASGI app on uvicorn over TLS, with certificate hot reload and a clean drain.

- TLS: our own ``SSLContext`` (TLS 1.2 minimum, 1.3 selectable), handed to uvicorn.
  Reloading calls ``load_cert_chain`` on that same context, so every new handshake uses
  the new certificate while open connections keep theirs: no restart, no failed request.
- mTLS (optional): ``client_ca`` makes a client certificate from that CA mandatory;
  ``client_names`` further limits it to certificates whose common name or a DNS
  subject-alternative name is listed. uvicorn does not hand the peer certificate to the
  app, so that check sits in the TLS layer: the HTTP protocol of each connection looks
  at the verified certificate right after the handshake and closes the connection
  before reading a byte of a request from an unlisted client.
- SIGTERM: readiness goes false at once, the server keeps answering for
  ``drain_seconds`` (endpoints controllers need a moment to take the pod out of the
  Service), then stops accepting and lets in-flight requests finish, and the process
  exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from webhook.server import ServerState, create_app

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


def make_ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3 if settings.min_version == "1.3" else ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(settings.cert, settings.key)
    if settings.client_ca is not None:
        # mTLS: only clients with a certificate from this CA (the API server's) may call.
        context.load_verify_locations(settings.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
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


def _name_checking(protocol_class: type[asyncio.Protocol], allowed: frozenset[str]) -> type[asyncio.Protocol]:
    """``protocol_class`` that closes connections whose client certificate names none of ``allowed``."""

    class NameCheckingProtocol(protocol_class):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            # asyncio calls this after the TLS handshake, so the peer is already verified.
            names = peer_names(transport.get_extra_info("peercert"))
            if not names & allowed:
                log.warning(
                    "refused a client certificate naming %s (allowed: %s)",
                    ", ".join(sorted(names)) or "nothing",
                    ", ".join(sorted(allowed)),
                )
                transport.abort()  # type: ignore[attr-defined]

    return NameCheckingProtocol


class CertificateReloader:
    """Polls the certificate files and reloads them into the live context when they change."""

    def __init__(
        self, context: ssl.SSLContext, settings: TlsSettings, seen: tuple[float, float, int, int] | None = None
    ) -> None:
        self.context = context
        self.settings = settings
        self.reloads = 0
        self._seen = seen if seen is not None else self._stamp()

    @staticmethod
    def stamp_files(settings: TlsSettings) -> tuple[float, float, int, int] | None:
        try:
            cert, key = settings.cert.stat(), settings.key.stat()
        except OSError:
            return None
        # Kubernetes swaps Secret volumes through a symlink: compare inode too, not only mtime.
        return (cert.st_mtime, key.st_mtime, cert.st_ino, key.st_ino)

    def _stamp(self) -> tuple[float, float, int, int]:
        stamp = self.stamp_files(self.settings)
        if stamp is None:  # mid-swap or briefly missing: treat as unchanged
            return self._seen if hasattr(self, "_seen") else (0.0, 0.0, 0, 0)
        return stamp

    def check(self) -> bool:
        """Reload if the files changed; keep serving the old certificate if the new pair is bad."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            cert, key = self.settings.cert.read_bytes(), self.settings.key.read_bytes()
            with _pem_files(cert, key) as (cert_path, key_path):
                # Try the pair on a scratch context first: a failed load_cert_chain leaves
                # the context it ran on with the new certificate and the old key, and every
                # later handshake would fail. The live context then loads the very same
                # bytes, so it cannot fail differently.
                ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path)
                self.context.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError) as exc:
            # Mid-rotation the cert and key may not match yet; try again next tick.
            log.warning("certificate reload failed, keeping the current one: %s", exc)
            return False
        self._seen = stamp
        self.reloads += 1
        log.info("reloaded the serving certificate from %s", self.settings.cert)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reload_interval)
            self.check()


class _DrainingServer(uvicorn.Server):
    """uvicorn, but SIGTERM first turns readiness off and keeps serving for a while."""

    def __init__(self, config: uvicorn.Config, state: ServerState, drain_seconds: float) -> None:
        super().__init__(config)
        self.state = state
        self.drain_seconds = drain_seconds
        self._drain_started: float | None = None
        self.drained = False

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
        await super().startup(sockets)
        if not self.should_exit:
            self.state.ready = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.state.ready = False
        await super().shutdown(sockets)
        # uvicorn re-raises the captured SIGTERM after a graceful shutdown, which would
        # end the process "killed by signal" (exit 143). The drain is the expected way to
        # stop, so end normally instead.
        self.drained = bool(self._captured_signals)
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
) -> tuple[uvicorn.Server, CertificateReloader]:
    """A ready-to-run uvicorn server on our TLS context, and the reloader of that context."""
    reloader_seen = CertificateReloader.stamp_files(tls)  # before loading: never miss a swap
    context = make_ssl_context(tls)
    config = uvicorn.Config(
        create_app(state),
        host=host,
        port=port,
        ssl_certfile=str(tls.cert),
        ssl_keyfile=str(tls.key),
        log_config=None,
        access_log=access_log,
        timeout_graceful_shutdown=int(graceful_seconds),
        server_header=False,
        lifespan="off",
    )
    config.load()
    config.ssl = context  # the live context the reloader updates
    if tls.client_names:
        config.http_protocol_class = _name_checking(config.http_protocol_class, frozenset(tls.client_names))
    server = _DrainingServer(config, state, drain_seconds)
    return server, CertificateReloader(context, tls, reloader_seen)


async def run_server(server: uvicorn.Server, reloader: CertificateReloader) -> None:
    """Serve until a signal (or ``should_exit``); returns after in-flight requests finish."""
    task = asyncio.create_task(reloader.run())
    try:
        await server.serve()
    finally:
        task.cancel()
        if isinstance(server, _DrainingServer):
            server.state.ready = False


async def serve(state: ServerState, host: str, port: int, tls: TlsSettings, **options: float) -> None:
    server, reloader = build_server(state, host, port, tls, **options)  # type: ignore[arg-type]
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
