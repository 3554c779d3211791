"""Assembly of the advisor: its app on the serving stack the webhook uses (TLS, connection
guard, SIGTERM drain), a process of its own with its own watch cache.

The TLS layer asks every client for a certificate and verifies one presented against
the CAs the API server publishes (the requestheader client CA and the cluster's client
CA, as Kubernetes' own aggregated servers do); the app then believes the front-proxy
headers only under a certificate of the requestheader CA (``webhook.advisor.frontproxy``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from starlette.types import Scope

from webhook.advisor.access import Authorizer
from webhook.advisor.app import Advisor, create_app
from webhook.advisor.frontproxy import FrontProxy
from webhook.advisor.workqueue import WorkQueue
from webhook.serving.app import ServerState
from webhook.serving.drain import DrainingServer
from webhook.serving.guard import Guard
from webhook.serving.runner import build_server
from webhook.serving.tls import CertificateReloader, TlsSettings


def peer_certificates(guard: Guard) -> Callable[[Scope], bytes | None]:
    """The DER client certificate of a request's connection (found as the guard finds it: by peer address)."""

    def lookup(scope: Scope) -> bytes | None:
        client = scope.get("client")
        connection = guard.by_peer.get(tuple(client)) if client is not None else None
        transport = getattr(connection, "transport", None)
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_object is None:
            return None
        der = ssl_object.getpeercert(binary_form=True)
        return der if isinstance(der, bytes) else None

    return lookup


def trust_bundle(directory: Path, *pems: bytes) -> Path:
    """One PEM file of the CAs the TLS layer verifies client certificates against."""
    path = directory / "client-ca.crt"
    path.write_bytes(b"\n".join(pem.strip() + b"\n" for pem in pems if pem.strip()))
    return path


def build_advisor(
    state: ServerState,
    host: str,
    port: int,
    tls: TlsSettings,
    front_proxy: FrontProxy,
    authorizer: Authorizer,
    work: WorkQueue,
    *,
    sock: socket.socket | None = None,
    drain_seconds: float = 0.0,
    graceful_seconds: float = 20.0,
) -> tuple[DrainingServer, CertificateReloader, Advisor]:
    """A ready-to-run advisor server; ``tls.client_ca`` is the trust bundle (``trust_bundle``)."""
    if tls.client_ca is None:
        raise ValueError("the advisor needs the client CAs to verify the API server's front-proxy certificate")
    lookups: list[Callable[[Scope], bytes | None]] = []  # the guard exists once the server is built

    def peer(scope: Scope) -> bytes | None:
        return lookups[0](scope) if lookups else None

    advisor = Advisor(
        policy=state.policy,
        cluster=state.cluster,
        front_proxy=front_proxy,
        authorizer=authorizer,
        work=work,
        peer_certificate=peer,
        ready=lambda: state.ready,
    )
    server, reloader = build_server(
        state, host, port, tls, app=create_app(advisor), sock=sock, drain_seconds=drain_seconds,
        graceful_seconds=graceful_seconds, app_checks_clients=True,
    )  # fmt: skip
    lookups.append(peer_certificates(server.guard))
    return server, reloader, advisor
