"""The engine's Workloads from the one Workload projection (``webhook.kueue.workload.WorkloadInfo``).

A stored Workload is read once, into a ``WorkloadInfo``, whoever reads it:
the ledger, the rules and the simulator. Here an entry becomes the engine's Workload when
a scheduling attempt reads its queue: holding quota (``HOLDS``: ``QuotaReserved`` True,
not finished, active) is an ``AdmittedWorkload`` with the entry's usage per (flavor,
resource); waiting (``WAITS``: active, not finished, not reserved, whatever reason
Kueue gives) is a ``PendingWorkload`` with the entry's podSets; anything else is not
counted, as Kueue's cache does not count it.

``job_of`` reads the job being simulated when it is a Workload: the same reader, plus
whether it is active (a deactivated Workload is answered ``Deactivated``, not dropped).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kueue.workload import HOLDS, WAITS, AdmittedWorkload, WorkloadInfo
from webhook.quota.ledger import project, shape_of
from webhook.simulate.state import TPU, PendingWorkload

EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC) if seconds else EPOCH


def admitted_of(namespace: str, name: str, entry: WorkloadInfo) -> AdmittedWorkload:
    """A Workload holding quota, as the preemptor reads it."""
    key = f"{namespace}/{name}"
    return AdmittedWorkload(
        key,
        entry.uid or key,
        entry.cluster_queue,
        entry.priority_value,
        _time(entry.created),
        datetime.fromtimestamp(entry.reserved_at, UTC) if entry.reserved_at else None,
        {(flavor, resource): amount for flavor, resource, amount in entry.usage},
        entry.evicted,
    )


def pending_of(namespace: str, name: str, entry: WorkloadInfo, active: bool = True) -> PendingWorkload:
    """A Workload waiting in its LocalQueue, as the queue in front reads it."""
    key = f"{namespace}/{name}"
    return PendingWorkload(
        key,
        entry.uid or key,
        namespace,
        entry.local_queue,
        entry.priority_value,
        _time(entry.created),
        entry.shape,
        active,
    )


def from_entry(namespace: str, name: str, entry: WorkloadInfo) -> AdmittedWorkload | PendingWorkload | None:
    """The entry as the engine counts it; ``None`` when Kueue's cache does not count it."""
    if entry.state == HOLDS:
        return admitted_of(namespace, name, entry)
    if entry.state == WAITS:
        return pending_of(namespace, name, entry)
    return None


def from_document(obj: Mapping[str, Any], tpu: str = TPU) -> AdmittedWorkload | PendingWorkload | None:
    """A stored Workload document through the one reader (files, tests)."""
    metadata = as_dict(obj.get("metadata"))
    return from_entry(str(metadata.get("namespace", "")), str(metadata.get("name", "")), project(obj, tpu))


def job_of(obj: Mapping[str, Any], tpu: str = TPU) -> PendingWorkload:
    """The Workload being simulated, as submitted now: its podSets whatever its status says, and
    whether it is active."""
    metadata, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    entry = project(obj, tpu)
    namespace, name = str(metadata.get("namespace", "")), str(metadata.get("name", ""))
    key = f"{namespace}/{name}"
    return PendingWorkload(
        key,
        entry.uid or key,
        namespace,
        str(spec.get("queueName") or ""),
        entry.priority_value,
        _time(entry.created),
        entry.shape or shape_of(spec),
        spec.get("active", True) is not False,
    )
