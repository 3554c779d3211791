"""uvicorn's ``Server`` with our listener and a drain on SIGTERM.

SIGTERM: readiness goes false at once, the server keeps answering for ``drain_seconds``
(endpoints controllers need a moment to take the pod out of the Service), then stops
accepting and lets in-flight requests finish, and the process exits 0. A second SIGTERM
(or SIGINT) during the drain stops at once, as uvicorn does.

Through ``Server``'s public methods only: ``handle_exit`` (uvicorn's signal handler),
``on_tick`` (its once-a-tick check), ``startup`` and ``shutdown``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
import time
from types import FrameType

import uvicorn

from webhook.serving.app import ServerState
from webhook.serving.guard import Guard
from webhook.serving.listener import ConnectionGate, Listener
from webhook.serving.metrics_port import MetricsListener

log = logging.getLogger("tpu_admission.serving")


class DrainingServer(uvicorn.Server):
    """uvicorn, but SIGTERM first turns readiness off and keeps serving for a while."""

    def __init__(
        self,
        config: uvicorn.Config,
        state: ServerState,
        guard: Guard,
        gate: ConnectionGate,
        sock: socket.socket,
        drain_seconds: float,
        metrics_sock: socket.socket | None = None,
    ) -> None:
        super().__init__(config)
        self.state = state
        self.guard = guard
        self.gate = gate
        #: bound and listening already (``listen_socket``), so a port in use is found before anything is announced
        self.sock = sock
        self.metrics_sock = metrics_sock
        self.metrics_port = int(metrics_sock.getsockname()[1]) if metrics_sock is not None else None
        self.metrics: MetricsListener | None = None
        self.drain_seconds = drain_seconds
        self.drain_started: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's signal handler. Not handed on to uvicorn's: that one notes the signal to
        raise it again once stopped, which would end a drained process "killed by signal"."""
        self.state.ready = False
        if self.drain_started is None and self.drain_seconds > 0 and not self.should_exit:
            self.drain_started = time.monotonic()
            log.info("signal %s: not ready; draining for %.1fs", sig, self.drain_seconds)
            return
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True

    async def on_tick(self, counter: int) -> bool:
        if self.drain_started is not None and time.monotonic() - self.drain_started >= self.drain_seconds:
            self.should_exit = True
        return await super().on_tick(counter)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Our listener in place of ``loop.create_server``: TLS on the bound socket, each
        socket counted from ``accept``, the handshake deadline, the connection guard."""
        config = self.config
        assert isinstance(config.ssl, ssl.SSLContext)
        self.guard.start()
        listener = Listener(
            self.sock,
            self.guard.protocol,
            config.ssl,
            self.state.policy.server.handshake_timeout_seconds,
            self.gate,
            config.backlog,
        )
        listener.start()
        self.servers = [listener]  # type: ignore[list-item]  # what uvicorn uses of asyncio.Server
        if self.metrics_sock is not None:
            self.metrics = MetricsListener(lambda: render_metrics(self.state))
            await self.metrics.start(self.metrics_sock)
        self.started = True
        if not self.should_exit:
            self.state.ready = True

    def inner_protocol(self) -> asyncio.Protocol:
        """The HTTP protocol uvicorn would give a connection, built as uvicorn builds it."""
        config = self.config
        protocol: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=self.server_state, app_state=self.lifespan.state
        )
        return protocol

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.state.ready = False
        if self.metrics is not None:
            await self.metrics.close()
        await super().shutdown(sockets)
        await self.guard.stop()
        log.info("stopped: in-flight requests answered")


def render_metrics(state: ServerState) -> bytes:
    state.metrics.ready.set(1 if state.ready else 0)
    return state.metrics.render()
