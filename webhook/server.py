"""The HTTP layer: bytes → review → engine → response. It translates and nothing else.

Every malformed input is a 4xx with a reason in the body (JSON ``{"error": ...}``); no
input makes it answer 5xx. One JSON log line per decision.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from webhook.cluster.state import ClusterState
from webhook.config import Policy
from webhook.engine import AdmissionFacts, Decision, Stage, decide
from webhook.metrics import Metrics
from webhook.reviews import ReviewError, error_response, parse_review, review_response

log = logging.getLogger("tpu_admission.decision")
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


class _JSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":"), ensure_ascii=False).encode()


def _problem(status: int, reason: str) -> Response:
    return _JSON({"error": reason}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ReviewError(f"body of {declared} bytes is over the limit of {limit}", 413)
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ReviewError(f"body is over the limit of {limit} bytes", 413)
        chunks.append(chunk)
    return b"".join(chunks)


def _content_type_ok(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media == "application/json"


def create_app(state: ServerState) -> Starlette:
    policy = state.policy
    metrics = state.metrics
    # Label children bound once: ``.labels()`` costs microseconds on every request.
    counted = {stage: metrics.latency.labels(stage) for stage in ("mutate", "validate")}
    outcome = {
        (stage, allowed): metrics.requests.labels(stage, "allowed" if allowed else "denied")
        for stage in ("mutate", "validate")
        for allowed in (True, False)
    }

    async def admit(request: Request, stage: Stage) -> Response:
        endpoint = request.scope["path"]  # request.url builds a whole URL object: ~12 µs a request
        started = time.perf_counter()
        tier = request.path_params.get("tier")
        if tier is not None and tier not in policy.tiers:
            metrics.requests.labels(stage, "invalid").inc()
            return _problem(404, f"unknown tier {tier!r} in the path; configured tiers: {', '.join(policy.tiers)}")
        if not _content_type_ok(request):
            metrics.requests.labels(stage, "invalid").inc()
            return _problem(415, "content-type must be application/json")
        try:
            body = await _read_body(request, policy.server.max_body_bytes)
            review = parse_review(body)
        except ReviewError as exc:
            metrics.requests.labels(stage, "invalid").inc()
            return _problem(exc.status, exc.reason)

        facts = AdmissionFacts(
            operation=review.operation,
            stage=stage,
            namespace=review.namespace,
            user=review.user,
            old_object=review.old_object,
            path_tier=tier,
        )
        try:
            decision = decide(review.object, facts, policy, state.cluster) if review.is_jobset else Decision()
            answer = review_response(review.uid, decision)
        except Exception:  # a bug must not become a 5xx or a dropped connection
            errors.exception("internal error judging %s", review.uid)
            metrics.requests.labels(stage, "error").inc()
            return _JSON(error_response(review.uid, "tpu-admission failed to judge this request; see its logs"))

        elapsed = time.perf_counter() - started
        counted[stage].observe(elapsed)
        outcome[stage, decision.allowed].inc()
        for finding in decision.findings:
            metrics.findings.labels(finding.rule, finding.action.value).inc()
        for rule_id in decision.skipped:
            metrics.skipped.labels(rule_id).inc()
        if log.isEnabledFor(logging.INFO):
            # A dict: the JSON formatter ``serve`` installs encodes it once, as one line.
            log.info(
                {
                    "msg": "decision",
                    "endpoint": endpoint,
                    "uid": review.uid,
                    "operation": review.operation,
                    "kind": review.kind,
                    "namespace": review.namespace,
                    "name": review.name or _object_name(review.object),
                    "user": review.user.username,
                    "tier": decision.tier,
                    "dryRun": review.dry_run,
                    "allowed": decision.allowed,
                    "rules": sorted({f.rule for f in decision.findings}) if decision.findings else [],
                    "skipped": decision.skipped,
                    "patched": bool(decision.patch),
                    "durationMs": round(elapsed * 1000, 3),
                }
            )
        return _JSON(answer)

    async def mutate(request: Request) -> Response:
        return await admit(request, "mutate")

    async def validate(request: Request) -> Response:
        return await admit(request, "validate")

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        # Readiness never depends on the API server (SPEC §5): a cold cache still serves
        # the structural rules.
        if state.ready:
            return PlainTextResponse("ok")
        return PlainTextResponse("not ready", status_code=503)

    async def metrics_endpoint(request: Request) -> Response:
        metrics.ready.set(1 if state.ready else 0)
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    routes = [
        Route("/mutate", mutate, methods=["POST"]),
        Route("/mutate/{tier}", mutate, methods=["POST"]),
        Route("/validate", validate, methods=["POST"]),
        Route("/validate/{tier}", validate, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]
    return Starlette(routes=routes)


def _object_name(obj: Any) -> str:
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        name = obj["metadata"].get("name") or obj["metadata"].get("generateName")
        return name if isinstance(name, str) else ""
    return ""
