"""The listening socket: every accepted socket counts against ``server.maxConnections``
from ``accept`` on, TLS handshake included, and the open-files limit is made to fit them.

At the limit, the connection idle the longest (kept alive, every request answered, none
begun) is reset to make room for the new one; only when every connection is busy is
the new one closed as it is accepted. Both are counted
(``tpu_admission_connections_at_limit_total``). An idle keep-alive connection costs the
client nothing to lose (it opens another, as it would after ``keepAliveSeconds``), while
refusing the new one could refuse the API server's next call; nginx's
``reset_timedout_connection`` and Envoy's overload manager make the same trade.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from webhook.policy.config import ConfigError, ServerPolicy
from webhook.serving.metrics import LabelledCounter

log = logging.getLogger("tpu_admission.serving")


class ConnectionGate:
    """The sockets open now, from ``accept`` to close, TLS handshakes included, against
    ``server.maxConnections`` (``Listener`` admits, the guard's ``connection_lost``
    releases). At the limit ``make_room`` may close an idle connection and hand its slot
    to the new one. Refusals are logged, one line per 10 s rather than one per socket."""

    def __init__(
        self,
        limit: int,
        make_room: Callable[[], bool] | None = None,
        counted: LabelledCounter | None = None,
    ) -> None:
        self.limit = limit
        self.make_room = make_room
        self.counted = counted
        self.open = 0
        self.refused = 0
        self.closed_idle = 0
        #: per outcome, when it was last logged (one line per 10 s)
        self._logged: dict[str, float] = {}

    def admit(self) -> bool:
        if self.open < self.limit:
            self.open += 1
            return True
        if self.make_room is not None and self.make_room():
            self.closed_idle += 1
            self._note(
                "closed_idle",
                logging.INFO,
                "at server.maxConnections=%d: closing the connection idle the longest for each new one "
                "(%d closed so far)",
                self.limit,
                self.closed_idle,
            )
            return True
        self.refused += 1
        self._note(
            "refused",
            logging.WARNING,
            "refusing connections: %d open (TLS handshakes included), none of them idle, the limit is "
            "server.maxConnections=%d (%d refused so far)",
            self.open,
            self.limit,
            self.refused,
        )
        return False

    def _note(self, outcome: str, level: int, message: str, *args: object) -> None:
        """Count ``outcome`` in the metric and log it, at most once per 10 s per outcome."""
        if self.counted is not None:
            self.counted.inc(outcome)
        now = time.monotonic()
        if now - self._logged.get(outcome, -math.inf) > 10:
            self._logged[outcome] = now
            log.log(level, message, *args)

    def release(self) -> None:
        self.open -= 1


#: descriptors besides the connections: the listener, /metrics and its scrapers, the watch
#: cache's pool, the certificate files on reload, logs, the event loop's own
RESERVED_FILES = 64


def ensure_open_files(limits: ServerPolicy) -> str | None:
    """Make room for ``maxConnections`` sockets in the open-files limit, or refuse to start;
    returns what was raised, for the log, or ``None`` when nothing needed to be.

    The soft limit is raised to what is needed where the hard limit allows (a container's
    default soft limit is often 1024, or lower); over the hard limit it is a ``ConfigError``
    naming both numbers. Otherwise the descriptors could run out before the connection
    cap is reached, and new clients would get resets with nothing logged.
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


class Listener:
    """Accepts the TLS connections itself, so that each socket counts from ``accept`` on.

    ``loop.create_server`` hands the app a connection only once its handshake is done and
    says nothing of one that fails, so a count in the app would miss every socket still in
    its handshake, and raw TCP connections over the cap would all stay until the handshake
    deadline. Here a socket over ``server.maxConnections`` (``ConnectionGate``) is closed
    as it is accepted (unless an idle connection can make room); the others get their
    handshake (``connect_accepted_socket``, with its deadline) and, once it is done, the
    HTTP protocol. Quacks like ``asyncio.Server`` as far as uvicorn and ``bound_port``
    look (``sockets``, ``close``, ``wait_closed``).
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
            if not (made and getattr(made[0], "made", False)):
                self.gate.release()  # else the protocol's connection_lost releases it

    def close(self) -> None:
        self._pause()
        self.sockets[0].close()
        for task in list(self._handshakes):
            task.cancel()

    async def wait_closed(self) -> None:
        if self._handshakes:
            await asyncio.gather(*self._handshakes, return_exceptions=True)


def listen_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A TCP socket listening on ``host:port``, or ``OSError`` (port in use ...).

    Listening at once, not only bound: a second socket on the same port then fails here
    (two bound sockets that do not listen yet may share a port under ``SO_REUSEADDR``).
    Connections wait in the backlog until the server accepts them.
    """
    sock = socket.socket(family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock
