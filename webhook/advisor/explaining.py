"""An explanation: SPEC §13's answer for one job or Workload, for AIStudio's UI and ``kubectl``.

It answers from the advisor's watch cache through the same code as ``tpu-admission
explain`` (``webhook.explain.lookup``); the request never calls the API server. The
advisor's app (``webhook.advisor.app``) serves it as the ``explanations`` resource, to
callers the API server has authenticated and authorized.

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
once per snapshot, and one explanation) runs in the advisor's worker
(``webhook.advisor.workqueue``).
"""

from __future__ import annotations

import re
from typing import Any, Final

from webhook.cluster.snapshot import Snapshot
from webhook.cluster.view import ClusterState
from webhook.explain.explainer import ExplainError, explain
from webhook.explain.lookup import BadTarget, NotFound, NotSynced, parse_kind, request_from_snapshot, stored_simulator
from webhook.explain.result import document

#: a Kubernetes object name (DNS subdomain): what a namespace and a name may be
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


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
