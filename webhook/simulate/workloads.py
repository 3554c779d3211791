"""A stored Workload document as the engine's input: the adapter to fold into the snapshot.

``from_document`` reads a ``kueue.x-k8s.io/v1beta2`` Workload as Kueue's cache counts it
(``pkg/workload``): holding quota when ``QuotaReserved`` is True and it is not finished
(its usage read from ``status.admission``: each podSet assignment's ``resourceUsage`` on
its ``flavors``), pending when active, not finished and not reserved, else nothing. It is
one function on purpose: at integration it folds into the snapshot's Workload reader
(``webhook.quota.ledger.project``), which reads the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from typing import Any

from webhook.kube.quantity import CONTEXT, quantity_or_none
from webhook.quota.podsets import podset_demand
from webhook.simulate.state import AdmittedWorkload, FlavorResource, PendingWorkload

EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _time(value: Any) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    if parsed is not None and parsed.tzinfo is None:  # the API server writes UTC; never compare naive with aware
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _add_usage(usage: dict[FlavorResource, Decimal], admission: Mapping[str, Any]) -> None:
    """Each podSet assignment's ``resourceUsage`` on the flavor it names for that resource."""
    for assignment in map(_dict, admission.get("podSetAssignments") or ()):
        flavors = _dict(assignment.get("flavors"))
        for resource, raw in _dict(assignment.get("resourceUsage")).items():
            amount = quantity_or_none(raw)
            if amount is not None and resource in flavors:
                fr = (str(flavors[resource]), str(resource))
                usage[fr] = usage.get(fr, Decimal(0)) + amount


def from_document(obj: Mapping[str, Any]) -> AdmittedWorkload | PendingWorkload | None:
    """The Workload as the engine counts it; ``None`` when finished (a deactivated one is pending, inactive)."""
    metadata, spec, status = _dict(obj.get("metadata")), _dict(obj.get("spec")), _dict(obj.get("status"))
    key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    uid = str(metadata.get("uid") or key)
    created = _time(metadata.get("creationTimestamp")) or EPOCH
    priority = spec.get("priority")
    priority = priority if isinstance(priority, int) and not isinstance(priority, bool) else 0
    conditions = {str(c.get("type")): c for c in map(_dict, status.get("conditions") or ())}

    def true(kind: str) -> bool:
        return conditions.get(kind, {}).get("status") == "True"

    if true("Finished"):
        return None
    if true("QuotaReserved"):
        admission = _dict(status.get("admission"))
        usage: dict[FlavorResource, Decimal] = {}
        with localcontext(CONTEXT):  # a sum of quantities is exact in the quantities' context
            _add_usage(usage, admission)
        reserved = _time(conditions["QuotaReserved"].get("lastTransitionTime"))
        return AdmittedWorkload(
            key, uid, str(admission.get("clusterQueue") or ""), priority, created, reserved, usage, true("Evicted")
        )
    podsets = []
    for podset in map(_dict, spec.get("podSets") or ()):
        count = podset.get("count", 1)
        pod = _dict(_dict(podset.get("template")).get("spec"))
        podsets.append(
            podset_demand(
                str(podset.get("name", "")),
                pod,
                count if isinstance(count, int) else 1,
                tas="topologyRequest" in podset,
            )
        )
    namespace = str(metadata.get("namespace", ""))
    queue = str(spec.get("queueName") or "")
    return PendingWorkload(
        key, uid, namespace, queue, priority, created, tuple(podsets), spec.get("active", True) is not False
    )
