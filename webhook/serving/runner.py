"""Assembly: the ASGI app on uvicorn over TLS, behind our listener and connection guard.

The parts, one module each:

- ``webhook.serving.tls``: the TLS contexts, the certificate reload (polling, SIGHUP);
- ``webhook.serving.listener``: the listening socket, the connection cap (idle ones
  closed to make room) and the open-files limit;
- ``webhook.serving.guard``: per connection, the header and body deadlines, the header
  cap, the mTLS checks, one write per answer;
- ``webhook.serving.drain``: uvicorn's ``Server`` with the listener and the SIGTERM drain.

uvicorn is used through its public surface: ``Config`` (its options for keep-alive,
shutdown grace, headers and logging), the protocol class ``Config`` picks, and
``Server``'s public methods.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from webhook.serving.app import ServerState, create_app
from webhook.serving.drain import DrainingServer
from webhook.serving.guard import Guard
from webhook.serving.listener import ConnectionGate, ensure_open_files, listen_socket
from webhook.serving.tls import CertificateReloader, TlsSettings, certificate_problem, on_sighup, switching_context

__all__ = ["TlsSettings", "bound_port", "build_server", "loop_factory", "run_server", "serve"]

log = logging.getLogger("tpu_admission.serving")


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
    metrics_sock: socket.socket | None = None,
    app_checks_clients: bool = False,
) -> tuple[DrainingServer, CertificateReloader]:
    """A ready-to-run server on our TLS context, and the reloader of that context.

    With ``metrics_port`` (or ``metrics_sock``), ``/metrics`` is served there (plain HTTP,
    same host) and not on the HTTPS port. ``app`` replaces the webhook's app on the same
    serving stack (TLS, connection guard, drain): ``bench/stages.py`` serves cut-down apps
    that way to price each stage of a request. ``sock`` and ``metrics_sock``: sockets
    ``listen_socket`` made (else made here, so a port in use is an ``OSError`` now).
    ``app_checks_clients``: the TLS layer still asks for (and verifies) client
    certificates against ``tls.client_ca``, but the guard lets requests without one
    through, for ``app`` to refuse in its own terms (the advisor answers those 401).
    Raises ``OSError`` or ``ssl.SSLError`` when the certificate files cannot be used.
    """
    limits = state.policy.server
    raised = ensure_open_files(limits)
    if raised is not None:
        log.info("%s", raised)
    reloader_seen = CertificateReloader.stamp_files(tls)  # before loading: never miss a swap
    context = switching_context(tls)
    problem = certificate_problem(tls.cert.read_bytes())
    if problem is not None:  # nothing better to serve: say so loudly, the API server will refuse it
        log.error("the serving certificate in %s is %s; replace it", tls.cert, problem)
    mtls = tls.client_ca is not None and not app_checks_clients
    guard = Guard(limits, mtls=mtls, allowed=frozenset(tls.client_names))
    gate = ConnectionGate(limits.max_connections, guard.make_room, state.metrics.connections)
    guard.released = lambda _connection: gate.release()
    config = uvicorn.Config(
        guard.track(app if app is not None else create_app(state, serve_metrics=metrics_port is None)),
        host=host,
        port=port,
        ssl_certfile=str(tls.cert),
        ssl_keyfile=str(tls.key),
        log_config=None,
        access_log=access_log,
        timeout_graceful_shutdown=int(graceful_seconds),
        http="httptools",
        ws="none",  # no WebSocket: an upgrade would take the connection past the guard
        timeout_keep_alive=limits.keep_alive_seconds,  # type: ignore[arg-type]  # a float works
        server_header=False,
        lifespan="off",
        # The API server calls the webhook directly: X-Forwarded-* headers would only be
        # a client's claims, and uvicorn's middleware that reads them costs every request.
        proxy_headers=False,
    )
    config.load()
    config.ssl = context  # the live context the reloader updates
    if sock is None:
        sock = listen_socket(host, port, config.backlog)
    if metrics_sock is None and metrics_port is not None:
        try:
            metrics_sock = listen_socket(host, metrics_port)
        except OSError:
            sock.close()
            raise
    server = DrainingServer(config, state, guard, gate, sock, drain_seconds, metrics_sock)
    guard.inner_factory = server.inner_protocol
    return server, CertificateReloader(context, tls, reloader_seen)


async def run_server(server: uvicorn.Server, reloader: CertificateReloader) -> None:
    """Serve until a signal (or ``should_exit``); returns after in-flight requests finish."""
    task = asyncio.create_task(reloader.run())
    restore = on_sighup(asyncio.get_running_loop(), reloader)
    try:
        await server.serve()
    finally:
        restore()
        task.cancel()
        if isinstance(server, DrainingServer):
            server.state.ready = False


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
