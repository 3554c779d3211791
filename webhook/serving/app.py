"""The HTTP layer: bytes → review → engine → response. It translates and nothing else.

Every malformed input is a 4xx with a reason in the body (JSON ``{"error": ...}``); no
input makes it answer 5xx. One JSON log line per decision: a msgspec struct the buffered
handler ``serve`` installs encodes and writes in batches. Metrics are counted after the
answer is sent, so a send that fails counts nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from webhook.admin.admission import KueueRequest, decide_kueue
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.store import ClusterStore
from webhook.cluster.view import ClusterState
from webhook.engine.decision import AdmissionFacts, Decision, Stage, decide
from webhook.policy.config import Policy
from webhook.serving.bodies import BodyTooLarge, ClientGone, body_headers, is_json, read_body
from webhook.serving.logsink import DECISION_LOGGER, DecisionLog
from webhook.serving.metrics import Metrics
from webhook.serving.simulateline import SimulateLines
from webhook.wire.jsonwire import encode
from webhook.wire.reviews import AdmissionRequest, ReviewError, error_response, parse_review, review_response

decisions = DecisionLog()
errors = logging.getLogger("tpu_admission.server")


@dataclass
class ServerState:
    """Mutable facts the probes report; ``serving`` flips them on start and SIGTERM."""

    policy: Policy
    cluster: ClusterState | None = None
    metrics: Metrics = field(default_factory=Metrics)
    ready: bool = False

    def __post_init__(self) -> None:
        # The cache's per-kind synced/age gauges belong on this server's registry,
        # however the server was started (CLI, tests, benchmarks).
        kind_metrics = getattr(self.cluster, "kind_metrics", None)
        if kind_metrics is not None:
            self.metrics.observe_cluster(kind_metrics)
        cluster = self.cluster
        if cluster is not None:
            self.metrics.observe_caches(lambda: _cache_sizes(cluster))


def _cache_sizes(cluster: ClusterState) -> list[tuple[str, int, int]]:
    if isinstance(cluster, ClusterStore):
        return cluster.cache_sizes()
    snapshot = cluster.snapshot()
    return snapshot.cache_sizes() if isinstance(snapshot, Snapshot) else []


_JSON_HEADERS = (b"content-type", b"application/json")
_RETRY_AFTER = (b"retry-after", b"5")


async def _send_json(send: Send, status: int, content: Any) -> None:
    # msgspec; a lone surrogate from the request (a uid of "\ud800"), which UTF-8 cannot
    # carry, is written as a \u escape (``webhook.wire.jsonwire``) rather than become a 500.
    body = encode(content)
    headers = [_JSON_HEADERS, (b"content-length", b"%d" % len(body))]
    if status == 503:  # not synced yet: as the advisor says it
        headers.append(_RETRY_AFTER)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


#: the admin guard's path: Kueue's own objects (``webhook.admin.admission``)
KUEUE_PATH = "/validate-kueue"
#: its endpoint label in metrics and the decision log
KUEUE_ENDPOINT = "validate-kueue"


async def _refuse(send: Send, metrics: Metrics, stage: str, status: int, reason: str) -> None:
    """A malformed request: a 4xx with the reason, counted as ``invalid`` once it is sent."""
    await _send_json(send, status, {"error": reason})
    metrics.requests.inc(stage, "invalid")


async def _review(
    scope: Scope, receive: Receive, send: Send, metrics: Metrics, endpoint: str, limit: int
) -> AdmissionRequest | None:
    """The request's AdmissionReview, or ``None`` once a malformed one is refused (4xx with
    its reason) or the client is gone (nobody to answer, so nothing is counted)."""
    media, declared = body_headers(scope)
    if not is_json(media):
        await _refuse(send, metrics, endpoint, 415, "content-type must be application/json")
        return None
    try:
        return parse_review(await read_body(receive, declared, limit))
    except ReviewError as exc:
        await _refuse(send, metrics, endpoint, exc.status, exc.reason)
    except BodyTooLarge as exc:
        await _refuse(send, metrics, endpoint, 413, str(exc))
    except ClientGone:
        pass
    return None


def admission_facts(review: AdmissionRequest, stage: Stage, tier: str | None) -> AdmissionFacts:
    """What the engine is told about a request besides its object."""
    return AdmissionFacts(
        operation=review.operation,
        stage=stage,
        namespace=review.namespace,
        user=review.user,
        old_object=review.old_object,
        path_tier=tier,
        kind=review.judged_kind or "",
    )


class DecisionLine(msgspec.Struct, rename="camel", gc=False):
    """The decision log line (docs/operations.md, "The decision log"): what was asked, by whom, and the answer.

    A struct, not a dict: its fields are the documented line, in order. ``gc=False``: it
    holds only strings, lists of strings and scalars, so it can never be part of a cycle,
    and the collector need not track it. ``level``, ``logger`` and ``msg`` come first, as in
    the server's other lines (``webhook.serving.logsink.json_line``): one structured format.
    """

    level: str
    logger: str
    msg: str
    endpoint: str
    uid: str
    operation: str
    kind: str
    namespace: str
    name: str
    user: str
    tier: str | None
    dry_run: bool
    allowed: bool
    rules: list[str]
    skipped: list[str]
    excepted: list[str]
    patched: bool
    duration_ms: float


def decision_line(endpoint: str, review: AdmissionRequest, decision: Decision, elapsed: float) -> DecisionLine:
    """The line for one decision; ``elapsed`` in seconds, logged in ms to the µs."""
    return DecisionLine(
        "info",
        DECISION_LOGGER,
        "decision",
        endpoint,
        review.uid,
        review.operation,
        review.kind,
        review.namespace,
        review.object_name,
        review.user.username,
        decision.tier,
        review.dry_run,
        decision.allowed,
        decision.rule_ids(),
        decision.skipped,
        decision.excepted,
        bool(decision.patch),
        round(elapsed * 1000, 3),
    )


def create_app(state: ServerState, *, serve_metrics: bool = True) -> ASGIApp:
    """The app; ``serve_metrics=False`` when ``/metrics`` has a port of its own (``metrics_port``)."""
    policy = state.policy
    metrics = state.metrics
    # the [simulate] line as already worked out for the snapshot, or none: never waited for
    simulate_lines = SimulateLines(metrics.simulate_lines)

    async def admit(scope: Scope, receive: Receive, send: Send, stage: Stage, tier: str | None) -> None:
        endpoint = scope["path"]
        started = time.perf_counter()
        # Metrics count an answer once it is sent: a send that fails counts nothing. The
        # decision log line is written before the send (it is about the decision, and a
        # client that has its answer can then find the line); it is a buffered append.
        if tier is not None and tier not in policy.tiers:
            reason = f"unknown tier {tier!r} in the path; configured tiers: {', '.join(policy.tiers)}"
            return await _refuse(send, metrics, stage, 404, reason)
        review = await _review(scope, receive, send, metrics, stage, policy.server.max_body_bytes)
        if review is None:
            return
        facts = admission_facts(review, stage, tier)
        try:
            # facts.kind is "" for a kind we do not judge (Pods never are): allowed unchanged
            decision = decide(review.object, facts, policy, state.cluster, simulate_lines) if facts.kind else Decision()
            answer = review_response(review.uid, decision)
        except Exception:  # a bug must not become a 5xx or a dropped connection
            errors.exception("internal error judging %r", review.uid)
            message = "tpu-admission failed to judge this request; see its logs"
            await _send_json(send, 200, error_response(review.uid, message))
            metrics.requests.inc(stage, "error")
            return

        elapsed = time.perf_counter() - started
        if decisions.enabled():
            decisions.write(decision_line(endpoint, review, decision, elapsed))
        await _send_json(send, 200, answer)
        metrics.answered(stage, decision, elapsed)

    # The admin guard judges one Kueue object against the whole cached cluster: every
    # ClusterQueue and every Node, far more than a job's rules read. It runs in
    # a worker thread, one at a time, so the event loop keeps answering job requests
    # meanwhile; Kueue's objects change a few times a day, not per job.
    # It reads the store's snapshot of the moment (``webhook.admin.live``).
    kueue_cluster = state.cluster if isinstance(state.cluster, ClusterStore) else None
    kueue_limiter = anyio.CapacityLimiter(1)

    async def admit_kueue(scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        review = await _review(scope, receive, send, metrics, KUEUE_ENDPOINT, policy.server.max_body_bytes)
        if review is None:
            return
        request = KueueRequest(review.operation, review.namespace, review.object, review.old_object)
        try:
            decision = await anyio.to_thread.run_sync(
                decide_kueue, request, policy, kueue_cluster, limiter=kueue_limiter
            )
            answer = review_response(review.uid, decision)
        except Exception:  # failurePolicy Ignore: a fault of ours never blocks Kueue's objects
            errors.exception("internal error judging %r", review.uid)
            warning = "tpu-admission could not judge this Kueue object (an internal error; see its logs): allowed"
            decision = Decision(warnings=[warning])
            answer = review_response(review.uid, decision)
            await _send_json(send, 200, answer)
            metrics.requests.inc(KUEUE_ENDPOINT, "error")
            return
        elapsed = time.perf_counter() - started
        if decisions.enabled():
            decisions.write(decision_line(scope["path"], review, decision, elapsed))
        await _send_json(send, 200, answer)
        metrics.answered(KUEUE_ENDPOINT, decision, elapsed)

    async def mutate(scope: Scope, receive: Receive, send: Send) -> None:
        await admit(scope, receive, send, "mutate", scope.get("path_params", {}).get("tier"))

    async def validate(scope: Scope, receive: Receive, send: Send) -> None:
        await admit(scope, receive, send, "validate", scope.get("path_params", {}).get("tier"))

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        # Readiness never depends on the API server: a cold cache still serves
        # the structural rules.
        if state.ready:
            return PlainTextResponse("ok")
        return PlainTextResponse("not ready", status_code=503)

    async def metrics_endpoint(request: Request) -> Response:
        metrics.ready.set(1 if state.ready else 0)
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    # The tiered paths first: the deployed webhook configurations call those (their patterns
    # are disjoint from the untiered ones, so the order changes no match, only how many are tried).
    job_routes = (
        Route("/validate/{tier}", _Asgi(validate), methods=["POST"]),
        Route("/mutate/{tier}", _Asgi(mutate), methods=["POST"]),
        Route("/validate", _Asgi(validate), methods=["POST"]),
        Route("/mutate", _Asgi(mutate), methods=["POST"]),
    )
    routes = [
        *job_routes,
        Route(KUEUE_PATH, _Asgi(admit_kueue), methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
    if serve_metrics:
        routes.append(Route("/metrics", metrics_endpoint, methods=["GET"]))
    served = ", ".join(f"{'/'.join(sorted(route.methods or ()))} {route.path}" for route in routes)

    async def refused(request: Request, exc: Exception) -> Response:
        """Starlette's 404 and 405, as JSON ``{"error": ...}`` like every other refusal (they were text)."""
        status = getattr(exc, "status_code", 404)
        headers = getattr(exc, "headers", None)
        path = request.url.path if len(request.url.path) <= 200 else request.url.path[:200] + "..."
        if status == 405:
            allowed = (headers or {}).get("Allow", "")
            reason = f"method {request.method} is not allowed on {path}; use {allowed}"
        else:
            reason = f"no such path {path}; served: {served}"
        return Response(encode({"error": reason}), status, headers, media_type="application/json")

    application = Starlette(routes=routes, exception_handlers={HTTPException: refused})

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        """The job admission paths with their own routes, without the application's middleware.

        Every job create waits on these (failurePolicy Fail), so a request that fully matches
        one of their routes (path and method, as Starlette's router would match it) goes
        straight to it: ``admit`` answers every error of its own. Anything else, another
        method on these paths included, goes through the whole application (its 404 and 405,
        its exception handlers).
        """
        if scope["type"] == "http":
            for route in job_routes:
                match, child = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child)
                    return await route.app(scope, receive, send)
        await application(scope, receive, send)

    return dispatch


class _Asgi:
    """Wraps an ASGI function so Starlette's Route calls it as an app, not a request handler."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
