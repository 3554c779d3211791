"""A simulation: one object in, one SPEC §12 result out, for AIStudio and ``kubectl``.

The body is one JSON object (a JobSet, Job, Deployment or ``kueue.x-k8s.io`` Workload) of
the namespace the request names (an object naming another namespace is refused; one
naming none is taken as that namespace's); the answer is the result the CLI's ``--output
json`` gives for it (``webhook.advisor.submitted``), against the advisor's current
snapshot. Bad input is a 4xx with ``{"error": reason}``; nothing is a 5xx. Without a
cluster the answer is ``unknown``, saying so: the simulator never guesses usage. The HTTP
plumbing (body limit, content type, caller, queue) is the advisor app's
(``webhook.advisor.app``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from webhook.advisor.submitted import NotSimulated, not_synced, result_json, simulate_submitted
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.view import ClusterState
from webhook.objects.jsontext import plain_json
from webhook.policy.config import Policy
from webhook.simulate.live import live
from webhook.simulate.result import UNKNOWN, Result

errors = logging.getLogger("tpu_admission.server")


def answer(body: bytes, policy: Policy, cluster: ClusterState | None, namespace: str) -> tuple[int, dict[str, Any]]:
    """(status, JSON) for one request body in ``namespace``: 200 and the result, or a 4xx and ``{"error": ...}``."""
    try:
        obj = plain_json(body)
    except RecursionError:
        return 400, {"error": "the body is nested too deeply to be read"}
    except UnicodeDecodeError as exc:  # as the CLI says of a file (webhook.objects.sources)
        return 400, {"error": f"the body is not UTF-8 text ({exc.reason} at byte {exc.start})"}
    except (json.JSONDecodeError, ValueError) as exc:
        return 400, {"error": f"the body is not JSON text: {exc}"}
    if not isinstance(obj, dict):
        return 400, {"error": "the body must be one JSON object: a JobSet, Job, Deployment or kueue.x-k8s.io Workload"}
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = obj["metadata"] = {}
    if not isinstance(metadata, dict):
        return 400, {"error": "metadata must be a JSON object"}
    named = metadata.get("namespace")
    if named not in (None, "", namespace):
        return 400, {"error": f"the object's namespace {str(named)[:100]!r} is not the request's, {namespace!r}"}
    metadata["namespace"] = namespace
    snapshot = cluster.snapshot() if cluster is not None else None
    if not isinstance(snapshot, Snapshot):
        result = Result(
            UNKNOWN,
            "",
            "",
            "the advisor has no cluster state (serve-advisor --kubeconfig): what Kueue would do is unknown",
            kind=str(obj.get("kind") or ""),
            namespace=namespace,
            name=str(metadata.get("name") or ""),
        )
        return 200, result.to_json()
    unsynced = not_synced(snapshot)
    if unsynced is not None:
        return 503, {"error": unsynced}
    try:
        return 200, result_json(simulate_submitted(obj, live(snapshot, policy), source="request"))
    except NotSimulated as exc:
        return 422, {"error": str(exc)}
    except Exception:  # a bug must not become a 5xx
        errors.exception("internal error simulating a request")
        return 422, {"error": "tpu-admission failed to simulate this object; see its logs"}
