"""Run the ASGI app on uvicorn over TLS, with certificate hot reload and a clean drain.

- TLS: our own ``SSLContext`` (TLS 1.2 minimum, 1.3 selectable), handed to uvicorn.
  Reloading calls ``load_cert_chain`` on that same context, so every new handshake uses
  the new certificate while open connections keep theirs: no restart, no failed request.
- SIGTERM: readiness goes false at once, the server keeps answering for
  ``drain_seconds`` (endpoints controllers need a moment to take the pod out of the
  Service), then stops accepting and lets in-flight requests finish.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from webhook.server import ServerState, create_app

log = logging.getLogger("tpu_admission.serving")


@dataclass(frozen=True)
class TlsSettings:
    cert: Path
    key: Path
    min_version: str = "1.2"
    client_ca: Path | None = None
    reload_interval: float = 2.0


def make_ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = (
        ssl.TLSVersion.TLSv1_3 if settings.min_version == "1.3" else ssl.TLSVersion.TLSv1_2
    )
    context.load_cert_chain(settings.cert, settings.key)
    if settings.client_ca is not None:
        # mTLS: only clients with a certificate from this CA (the API server's) may call.
        context.load_verify_locations(settings.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


class CertificateReloader:
    """Polls the certificate files and reloads them into the live context when they change."""

    def __init__(self, context: ssl.SSLContext, settings: TlsSettings) -> None:
        self.context = context
        self.settings = settings
        self.reloads = 0
        self._seen = self._stamp()

    def _stamp(self) -> tuple[float, float, int, int]:
        try:
            cert, key = self.settings.cert.stat(), self.settings.key.stat()
        except OSError:
            return self._seen if hasattr(self, "_seen") else (0.0, 0.0, 0, 0)
        # Kubernetes swaps Secret volumes through a symlink: compare inode too, not only mtime.
        return (cert.st_mtime, key.st_mtime, cert.st_ino, key.st_ino)

    def check(self) -> bool:
        """Reload if the files changed; keep serving the old certificate if the new pair is bad."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            self.context.load_cert_chain(self.settings.cert, self.settings.key)
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

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets)  # type: ignore[arg-type]
        if not self.should_exit:
            self.state.ready = True


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
    return _DrainingServer(config, state, drain_seconds), CertificateReloader(context, tls)


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


def bound_port(server: uvicorn.Server) -> int:
    """The port actually bound (useful with ``port=0``)."""
    return int(server.servers[0].sockets[0].getsockname()[1])
