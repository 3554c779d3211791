"""The floors: a no-op Starlette endpoint, and the thinnest admission endpoint.

Each reads the body, parses the AdmissionReview with ``json.loads`` and answers allowed,
echoing the uid. Same TLS certificate, same uvicorn settings as the webhook (our own
``SSLContext``, no access log, no lifespan, no server header), so the difference between
a floor and the webhook is what the webhook does per request.

    python bench/floor.py --port 9443 --cert-dir certs [--starlette] [--guarded]

Without ``--starlette`` (the *thin* floor) a POST to an admission path is a plain ASGI
callable dispatched before Starlette's router: the least any admission server on this
stack can do. ``--starlette`` serves the paths as
a Starlette application is usually written, the speed goals' yardstick: a ``Route`` per
path, an endpoint that takes a ``Request``, ``await request.json()`` and answers with a
``JSONResponse``, behind Starlette's default middleware.

``--guarded`` serves the same app on the webhook's serving stack instead
(``webhook.serving.runner.build_server``: our listener and connection guard with their
default settings, the drain), so ``bench/guard_cost.py`` can price that stack alone as a
same-run ratio.
"""

from __future__ import annotations

import argparse
import json
import ssl
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send


class Admit:
    """A plain ASGI endpoint (no Request/Response objects, dispatched before Starlette's
    router), so the floor stays the thinnest."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        review = json.loads(b"".join(chunks))
        answer = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True},
        }
        body = json.dumps(answer, separators=(",", ":")).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def ok(request: Request) -> Response:
    return PlainTextResponse("ok")


router = Starlette(
    routes=[
        Route("/mutate", Admit(), methods=["POST"]),
        Route("/validate", Admit(), methods=["POST"]),
        Route("/readyz", ok, methods=["GET"]),
    ]
)
admit = Admit()


async def admit_request(request: Request) -> Response:
    """The no-op endpoint as a Starlette application writes it."""
    review = await request.json()
    answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    return JSONResponse({**answer, "response": {"uid": review["request"]["uid"], "allowed": True}})


starlette_app = Starlette(
    routes=[
        Route("/mutate", admit_request, methods=["POST"]),
        Route("/validate", admit_request, methods=["POST"]),
        Route("/readyz", ok, methods=["GET"]),
    ]
)


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The thin floor: POST to an admission path skips Starlette's router."""
    if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in ("/mutate", "/validate"):
        return await admit(scope, receive, send)
    await router(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", type=Path, required=True)
    parser.add_argument("--starlette", action="store_true", help="routed, Request in, JSONResponse out")
    parser.add_argument(
        "--guarded", action="store_true", help="serve on the webhook's serving stack (listener, connection guard)"
    )
    args = parser.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(args.cert_dir / "tls.crt", args.cert_dir / "tls.key")
    config = uvicorn.Config(
        starlette_app if args.starlette else app,
        host="127.0.0.1",
        port=args.port,
        ssl_certfile=str(args.cert_dir / "tls.crt"),
        ssl_keyfile=str(args.cert_dir / "tls.key"),
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="off",
        http="httptools",
    )
    if args.guarded:
        guarded(starlette_app if args.starlette else app, args.port, args.cert_dir)
        return
    config.load()
    config.ssl = context
    uvicorn.Server(config).run()


def guarded(served: ASGIApp, port: int, cert_dir: Path) -> None:
    """``served`` on the webhook's serving stack, default policy."""
    import asyncio

    from webhook.policy.config import Policy
    from webhook.serving.app import ServerState
    from webhook.serving.runner import TlsSettings, build_server, loop_factory, run_server

    tls = TlsSettings(cert=cert_dir / "tls.crt", key=cert_dir / "tls.key")
    server, reloader = build_server(ServerState(policy=Policy()), "127.0.0.1", port, tls, app=served)
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(run_server(server, reloader))


if __name__ == "__main__":
    main()
