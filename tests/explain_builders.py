"""Builders for the explainer's tests: stored Workloads, stored jobs, quota pictures, simulations.

``rfc_example_one()`` and ``rfc_example_two()`` restate RFC-0033 4.3.2's two Workload
examples (admitted and running; preempted and requeued) with the UIDs the RFC elides
written out in full (``1c8f5b7e-…`` stays recognisable as ``1c8f5b7e-0000-…``). Each
builder works on its own copy and changes it through named methods, so a test says what
it changes, Kueue's wrapper style (``MakeWorkload(...).Condition(...)``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Self

from builders import MetadataBuilder, jobset

from webhook.cluster.workloadindex import WorkloadRecords
from webhook.explain.inputs import Amounts, CohortQuota, QueueQuota, QuotaPicture
from webhook.kueue.workload import read_workload
from webhook.simulate.result import PodSetResult, Position, PreemptionResult, Result

JOBSET_UID = "1c8f5b7e-0000-4000-8000-000000000001"
PREEMPTOR_UID = "9a41c2d0-0000-4000-8000-000000000002"
PREEMPTOR_JOB_UID = "5be27f3e-0000-4000-8000-000000000003"
WORKLOAD_UID = "7d0e9b11-0000-4000-8000-000000000004"
TPU = "google.com/tpu"
T0 = "2026-12-01T08:00:00Z"
T1 = "2026-12-01T09:00:00Z"
T2 = "2026-12-01T10:00:00Z"
#: RFC-0033 4.3.2 example two's message, UIDs in full
RECLAIM_MESSAGE = (
    f"Preempted to accommodate a workload (UID: {PREEMPTOR_UID}, JobUID: {PREEMPTOR_JOB_UID}) due to "
    "reclamation within the cohort; preemptor path: /tpu-pool/team-a; preemptee path: /tpu-pool/team-b"
)

_EXAMPLE_ONE: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {
        "name": "jobset-llm-pretrain-a3f8-4f9d2",
        "namespace": "kubemaker",
        "uid": WORKLOAD_UID,
        "creationTimestamp": T0,
        "labels": {"kueue.x-k8s.io/job-uid": JOBSET_UID},
        "ownerReferences": [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "llm-pretrain-a3f8",
                "uid": JOBSET_UID,
                "controller": True,
            }
        ],
    },
    "spec": {
        "queueName": "team-a-queue",
        "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "best-effort"},
        "priority": 100,
        "active": True,
        "podSets": [{"name": "workers", "count": 32}],
    },
    "status": {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": T0},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": T1},
        ],
        "admissionChecks": [{"name": "tpu7x-slice", "state": "Ready", "lastTransitionTime": T1}],
        "admission": {
            "clusterQueue": "team-a",
            "podSetAssignments": [
                {"name": "workers", "flavors": {TPU: "tpu7x"}, "resourceUsage": {TPU: "128"}, "count": 32}
            ],
        },
    },
}

_EXAMPLE_TWO_STATUS: dict[str, Any] = {
    "conditions": [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": T2},
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": RECLAIM_MESSAGE,
            "lastTransitionTime": T2,
        },
        {
            "type": "Preempted",
            "status": "True",
            "reason": "InCohortReclamation",
            "message": RECLAIM_MESSAGE,
            "lastTransitionTime": T2,
        },
        {"type": "Requeued", "status": "True", "reason": "Preempted", "lastTransitionTime": T2},
        {"type": "Admitted", "status": "False", "reason": "NoReservation", "lastTransitionTime": T2},
    ],
    "admissionChecks": [
        {
            "name": "tpu7x-slice",
            "state": "Pending",
            "message": "Reset to Pending after eviction. Previously: Ready",
            "lastTransitionTime": T2,
        }
    ],
}


class WorkloadBuilder(MetadataBuilder):
    """A stored Workload document."""

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def job_uid(self, uid: str | None) -> Self:
        return self.label("kueue.x-k8s.io/job-uid", uid)

    def owner(self, kind: str, name: str, uid: str = "", api_version: str = "v1") -> Self:
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
        ]
        return self

    def priority(self, value: int) -> Self:
        self._obj["spec"]["priority"] = value
        return self

    def active(self, value: bool) -> Self:
        self._obj["spec"]["active"] = value
        return self

    def admitted_in(self, cluster_queue: str | None) -> Self:
        if cluster_queue is None:
            self._obj["status"].pop("admission", None)
        else:
            self._obj["status"].setdefault("admission", {"podSetAssignments": []})["clusterQueue"] = cluster_queue
        return self

    def no_conditions(self) -> Self:
        self._obj["status"]["conditions"] = []
        return self

    def condition(self, type_: str, status: str, reason: str = "", message: str = "", since: str | None = T2) -> Self:
        """Set condition ``type_`` (replacing one of that type), as ``apimeta.SetStatusCondition`` does."""
        conditions = [c for c in self._obj["status"].setdefault("conditions", []) if c["type"] != type_]
        entry = {"type": type_, "status": status, "reason": reason, "message": message}
        if since is not None:
            entry["lastTransitionTime"] = since
        self._obj["status"]["conditions"] = [*conditions, entry]
        return self

    def check(self, name: str, state: str, message: str = "", since: str = T1) -> Self:
        checks = [c for c in self._obj["status"].setdefault("admissionChecks", []) if c["name"] != name]
        entry = {"name": name, "state": state, "message": message, "lastTransitionTime": since}
        self._obj["status"]["admissionChecks"] = [*checks, entry]
        return self

    def requeue_at(self, when: str) -> Self:
        self._obj["status"]["requeueState"] = {"count": 1, "requeueAt": when}
        return self

    def preempted(self, reason: str, message: str = RECLAIM_MESSAGE, requeued: bool = True) -> Self:
        """Evicted by preemption, as ``IssuePreemptions`` writes it (Evicted + Preempted, one message)."""
        self.condition("QuotaReserved", "False", "Pending", "", T2)
        self.condition("Evicted", "True", "Preempted", message)
        self.condition("Preempted", "True", reason, message)
        self.condition("Admitted", "False", "NoReservation")
        self.admitted_in(None)
        if requeued:
            self.condition("Requeued", "True", "Preempted")
        return self


def rfc_example_one() -> WorkloadBuilder:
    """RFC-0033 4.3.2 example one: QuotaReserved and Admitted True, slice check Ready."""
    return WorkloadBuilder(copy.deepcopy(_EXAMPLE_ONE))


def rfc_example_two() -> WorkloadBuilder:
    """RFC-0033 4.3.2 example two: example one's Workload preempted (InCohortReclamation), requeued."""
    obj = copy.deepcopy(_EXAMPLE_ONE)
    obj["status"] = copy.deepcopy(_EXAMPLE_TWO_STATUS)
    return WorkloadBuilder(obj)


def queued_workload() -> WorkloadBuilder:
    """Example one's Workload before Kueue admitted it: QuotaReserved False (WaitingForQuota)."""
    return (
        rfc_example_one()
        .admitted_in(None)
        .no_conditions()
        .condition("QuotaReserved", "False", "WaitingForQuota", "couldn't assign flavors", T0)
        .condition("Admitted", "False", "NoReservation", "", T0)
    )


def preemptor_workload() -> WorkloadBuilder:
    """The Workload example two names (UID 9a41…, JobUID 5be2…): team-a's guaranteed JobSet."""
    return (
        rfc_example_one()
        .name("jobset-llm-finetune-77aa-1b2c3")
        .namespace("team-a-ns")
        .uid(PREEMPTOR_UID)
        .job_uid(PREEMPTOR_JOB_UID)
        .owner("JobSet", "llm-finetune-77aa", PREEMPTOR_JOB_UID, "jobset.x-k8s.io/v1alpha2")
        .priority(1000)
    )


class StoredJobSet:
    """RFC-0033 4.3.1's JobSet as stored: with its uid and, as a test sets it, a status."""

    def __init__(self) -> None:
        self._obj = jobset("rfc-4.3.1-dynamic").obj()
        self._obj["metadata"]["uid"] = JOBSET_UID

    def obj(self) -> dict[str, Any]:
        return self._obj

    def uid(self, uid: str | None) -> Self:
        if uid is None:
            self._obj["metadata"].pop("uid", None)
        else:
            self._obj["metadata"]["uid"] = uid
        return self

    def queue(self, name: str | None) -> Self:
        labels = self._obj["metadata"].setdefault("labels", {})
        if name is None:
            labels.pop("kueue.x-k8s.io/queue-name", None)
        else:
            labels["kueue.x-k8s.io/queue-name"] = name
        return self

    def ready(self, count: int) -> Self:
        """``replicatedJobsStatus``: ``count`` of the ``workers`` Jobs ready (the spec asks for 2)."""
        status = self._obj.setdefault("status", {})
        status["replicatedJobsStatus"] = [{"name": "workers", "ready": count, "succeeded": 0}]
        return self

    def condition(self, type_: str, message: str = "", since: str = T2) -> Self:
        status = self._obj.setdefault("status", {})
        status.setdefault("conditions", []).append(
            {"type": type_, "status": "True", "reason": type_, "message": message, "lastTransitionTime": since}
        )
        return self


def amounts(nominal: int, in_use: int = 0, borrowed: int = 0, lent: int = 0, pending: int = 0) -> Amounts:
    return Amounts(Decimal(nominal), Decimal(in_use), Decimal(borrowed), Decimal(lent), Decimal(pending))


def tpu_pool() -> QuotaPicture:
    """The RFC's cohort ``tpu-pool``: team-a took back its lent quota from team-b (example two)."""
    return QuotaPicture(
        cluster_queues={
            "team-a": QueueQuota("team-a", "tpu-pool", {"tpu7x": {TPU: amounts(256, 256)}}),
            "team-b": QueueQuota("team-b", "tpu-pool", {"tpu7x": {TPU: amounts(256, 128, 0, 0, 128)}}),
        },
        cohorts={"tpu-pool": CohortQuota("tpu-pool")},
    )


def workload_index(documents: Iterable[dict[str, Any]]) -> WorkloadRecords:
    """Explain's Workload index over ``documents``, each read as the store reads a watched one."""
    records = WorkloadRecords()
    for document in documents:
        info = read_workload(document, TPU)
        records.put((info.namespace, info.name), info)
    return records


def simulation(
    outcome: str,
    reason: str = "",
    ahead: int = 0,
    chips_ahead: int = 0,
    message: str = "",
    cluster_queue: str = "team-a",
    preempting: tuple[str, ...] = (),
) -> Result:
    """The simulator's answer for the RFC's JobSet (``preempting``: its victims' keys, of team-b)."""
    return Result(
        outcome,
        reason,
        cluster_queue,
        message,
        podsets=(PodSetResult("workers", 32, {TPU: "tpu7x"}),),
        preemptions=tuple(PreemptionResult(key, "team-b", 100, "InCohortReclamation") for key in preempting),
        position=Position(ahead, Decimal(chips_ahead)),
        source="cluster",
        kind="JobSet",
        namespace="kubemaker",
        name="llm-pretrain-a3f8",
    )


def preempted_example_objects() -> list[dict[str, Any]]:
    """The state of SPEC §13's example: a JobSet of kubemaker preempted by a Workload of
    team-a-ns, in two team queues of one cohort."""
    from quota_fixtures import cluster_queue, cohort, q

    return [
        cluster_queue("team-a", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cluster_queue("team-b", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cohort("tpu-pool"),
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "team-a-queue", "namespace": "kubemaker"},
            "spec": {"clusterQueue": "team-b"},
        },
        rfc_example_two().obj(),
        preemptor_workload().obj(),
    ]
