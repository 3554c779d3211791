"""``GET /explain/<namespace>/<kind>/<name>``: SPEC §13's answer, for AIStudio's UI.

It answers from the watch cache's snapshot through the same code as ``tpu-admission
explain`` (``webhook.explain.lookup``); the request never calls the API server. It sits
behind the connection guard like the admission paths (``webhook.serving.guard``: with
mTLS, a client without a certificate reaches the probes only, and with allowed client
names a certificate must carry one), so AIStudio presents a client certificate the
admission paths would accept.

The body is always §13's JSON, ``{"results": [...], "errors": [...]}``; the status is
what a Kubernetes user expects of a read:

- 200: found and explained (one result);
- 400: a kind explain does not answer for (with "did you mean"), or a namespace or name
  that is not a Kubernetes name (cut to 100 characters in the message);
- 404: no such Workload, or no Workload names such a job (the jobs themselves are not
  watched: a job Kueue does not manage has no Workload, and is not known);
- 503 with ``Retry-After``: the Workloads cannot be read now (the watch has not synced,
  or is stale), or the server watches no cluster at all.

Bounded: the answer is one result; the work (an index of the snapshot's Workloads, built
once per snapshot, and one explanation) runs in a worker thread, one request at a time,
so the event loop keeps answering admission requests meanwhile.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from webhook.cluster.snapshot import Snapshot
from webhook.cluster.state import ClusterState
from webhook.explain.explainer import ExplainError, explain
from webhook.explain.lookup import BadTarget, NotFound, NotSynced, parse_kind, request_from_snapshot, stored_simulator
from webhook.explain.result import document
from webhook.wire.jsonwire import encode

PATH: Final = "/explain/{namespace}/{kind}/{name}"
#: a Kubernetes object name (DNS subdomain): what a namespace and a name may be
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_RETRY_AFTER: Final = {"Retry-After": "5"}

errors = logging.getLogger("tpu_admission.server")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 100 else text[:100] + "...")


def answer(cluster: ClusterState | None, namespace: str, kind_text: str, name: str) -> tuple[int, dict[str, Any]]:
    """(status, §13 body) for one request (see the module)."""
    for part, value in (("namespace", namespace), ("name", name)):
        if not _NAME.fullmatch(value):
            reason = f"{part} {_shown(value)}: not a Kubernetes name (a-z, 0-9, '-' and '.', at most 253)"
            return 400, document([], [reason])
    try:
        kind = parse_kind(kind_text[:64])
    except BadTarget as exc:
        return 400, document([], [str(exc)])
    snapshot = cluster.snapshot() if cluster is not None else None
    if not isinstance(snapshot, Snapshot):
        return 503, document([], ["this server watches no cluster (started without a kubeconfig): nothing to explain"])
    try:
        request = request_from_snapshot(snapshot, kind, namespace, name, None, stored_simulator(snapshot))
        explanation = explain(request)
    except NotSynced as exc:
        return 503, document([], [str(exc)])
    except NotFound as exc:
        return 404, document([], [str(exc)])
    except ExplainError as exc:
        return 400, document([], [str(exc)])
    return 200, document([explanation.result()])


def explain_route(cluster: ClusterState | None) -> Route:
    """The route, reading ``cluster``'s snapshot per request."""
    limiter = anyio.CapacityLimiter(1)

    async def endpoint(request: Request) -> Response:
        params = request.path_params
        try:
            status, body = await anyio.to_thread.run_sync(
                answer, cluster, params["namespace"], params["kind"], params["name"], limiter=limiter
            )
        except Exception:
            errors.exception("internal error explaining %s", request.url.path[:300])
            status, body = 500, document([], ["tpu-admission failed to explain this; see its logs"])
        headers = _RETRY_AFTER if status == 503 else None
        return Response(encode(body), status, headers, media_type="application/json")

    return Route(PATH, endpoint, methods=["GET"])
