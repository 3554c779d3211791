"""What a job's own status says: finished or failed, and whether all its replicas are ready.

RFC-0033 4.3.2 decides Running, Finished and Failed from the job (a JobSet's
``replicatedJobsStatus`` all ready, its ``Completed`` or ``Failed`` condition); Kueue
mirrors the end in the Workload's ``Finished`` condition (reason ``Succeeded`` or
``Failed``), and readiness in ``PodsReady`` when ``waitForPodsReady`` is on. The job's
word is read first, the Workload's when the job says nothing. ``None`` means the job
does not say, which is not "no".

A Deployment's pods are one Workload each, owned by the Pod: such a Workload's job is its
Pod, ready when its ``Ready`` condition is True (or it has succeeded), as the kubelet
reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhook.explain.conditions import Condition, read_conditions
from webhook.explain.inputs import Document
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET

#: the owner of a Workload that Kueue's pod integration made (a Deployment's pod)
POD: Final = "Pod"

#: the job's condition types that end it, per kind: (succeeded, failed)
_TERMINAL = {JOBSET: ("Completed", "Failed"), JOB: ("Complete", "Failed")}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any, default: int | None = None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def terminal(kind: str, job: Document | None) -> tuple[Condition, bool] | None:
    """The job's condition that ends it, with whether it failed; ``None`` while it has not ended."""
    if job is None or kind not in _TERMINAL:
        return None
    found = read_conditions(_map(job.get("status")).get("conditions"))
    succeeded, failed = _TERMINAL[kind]
    for kind_of_end, is_failure in ((failed, True), (succeeded, False)):
        condition = found.get(kind_of_end)
        if condition is not None and condition.true:
            return condition, is_failure
    return None


def all_ready(kind: str, job: Document | None) -> bool | None:
    """Whether every replica of the job is ready (or done); ``None`` when its status does not say."""
    if job is None:
        return None
    spec, status = _map(job.get("spec")), job.get("status")
    if not isinstance(status, Mapping):
        return None
    if kind == JOBSET:
        return _jobset_ready(spec, status)
    if kind == JOB:
        return _job_ready(spec, status)
    if kind == DEPLOYMENT:
        wanted = _count(spec.get("replicas"), 1)
        return (_count(status.get("readyReplicas"), 0) or 0) >= (wanted or 0)
    if kind == POD:
        return _pod_ready(status)
    return None


def _pod_ready(status: Mapping[str, Any]) -> bool | None:
    if status.get("phase") == "Succeeded":
        return True
    ready = read_conditions(status.get("conditions")).get("Ready")
    return ready.true if ready is not None else None


def _jobset_ready(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool | None:
    reported = status.get("replicatedJobsStatus")
    if not isinstance(reported, list):
        return None
    by_name = {entry.get("name"): entry for entry in reported if isinstance(entry, Mapping)}
    replicated = spec.get("replicatedJobs")
    if not isinstance(replicated, list) or not replicated:
        return None
    for job in replicated:
        if not isinstance(job, Mapping):
            return None
        entry = by_name.get(job.get("name"))
        if entry is None:
            return False
        done = (_count(entry.get("ready"), 0) or 0) + (_count(entry.get("succeeded"), 0) or 0)
        if done < (_count(job.get("replicas"), 1) or 0):
            return False
    return True


def _job_ready(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool | None:
    ready = _count(status.get("ready"))
    if ready is None:
        return None
    wanted = _count(spec.get("parallelism"), 1) or 0
    completions = _count(spec.get("completions"))
    if completions is not None:
        wanted = min(wanted, max(completions - (_count(status.get("succeeded"), 0) or 0), 0))
    return ready >= wanted
