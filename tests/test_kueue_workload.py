"""The one projection of a Workload (``webhook.kueue.workload``): explain's part given back in the
Workload's own shape, shared between equal Workloads, compared by value; and the Workload as the
engine counts it (``WorkloadInfo.counted``), as Kueue's cache counts it."""

from __future__ import annotations

import copy
from datetime import timedelta
from decimal import Decimal

from explain_builders import RECLAIM_MESSAGE, T0, T2, rfc_example_one, rfc_example_two

from tests.simulate_builders import NOW, admitted, from_document, pending_document
from webhook.kube.sharing import Sharing
from webhook.kueue.workload import AdmittedWorkload, PendingWorkload, read_workload, submitted_workload

TPU = "google.com/tpu"


def test_a_record_gives_back_what_explain_reads_and_nothing_else() -> None:
    workload = rfc_example_two().requeue_at(T2).obj()
    workload["metadata"]["labels"]["team"] = "b"
    workload["metadata"]["managedFields"] = [{"manager": "kueue"}]
    assert read_workload(workload, TPU).document() == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "jobset-llm-pretrain-a3f8-4f9d2",
            "namespace": "kubemaker",
            "uid": workload["metadata"]["uid"],
            "creationTimestamp": T0,
            "labels": {"kueue.x-k8s.io/job-uid": workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"]},
            "ownerReferences": workload["metadata"]["ownerReferences"],
        },
        "spec": {
            "queueName": "team-a-queue",
            "active": True,
            "priority": 100,
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "best-effort"},
        },
        "status": {
            "conditions": workload["status"]["conditions"],
            "admissionChecks": workload["status"]["admissionChecks"],
            "requeueState": {"count": 1, "requeueAt": T2},
        },
    }
    assert RECLAIM_MESSAGE in str(read_workload(workload, TPU).document()["status"]["conditions"])


def test_equal_workloads_share_their_conditions_and_records_compare_by_value() -> None:
    one = rfc_example_one().obj()
    other = copy.deepcopy(one)
    other["metadata"]["name"] = "another"
    shared = Sharing().share  # the store's table
    first, second = read_workload(one, TPU, shared), read_workload(other, TPU, shared)
    assert first.conditions is second.conditions and first.spec is second.spec
    assert read_workload(copy.deepcopy(one), TPU) == first != second
    assert first.document()["status"]["admission"] == {"clusterQueue": "team-a"}


def test_admitted_workload_usage_is_read_from_its_admission() -> None:
    doc = admitted(
        "w",
        "team-a",
        {"google.com/tpu": "64", "cpu": "1500m"},
        flavors={"google.com/tpu": "tpu7x", "cpu": "cpu-standard"},
        priority=7,
        at=NOW + timedelta(minutes=3),
        created=NOW,
        namespace="ns",
    )
    doc["status"]["admission"]["podSetAssignments"].append(  # type: ignore[index]
        {
            "name": "second",
            "flavors": {"google.com/tpu": "tpu7x"},
            "resourceUsage": {"google.com/tpu": "16", "memory": "1Gi"},
        }
    )
    assert from_document(doc) == AdmittedWorkload(
        "ns/w",
        "w",
        "team-a",
        7,
        NOW,
        NOW + timedelta(minutes=3),
        {("tpu7x", "google.com/tpu"): Decimal(80), ("cpu-standard", "cpu"): Decimal("1.5")},
        False,
    )


def test_evicted_while_still_holding_quota_is_admitted_and_marked() -> None:
    workload = from_document(admitted("w", "q", {"cpu": "1"}, evicted=True))
    assert isinstance(workload, AdmittedWorkload) and workload.evicted


def test_finished_counts_for_nothing() -> None:
    doc = admitted("w", "q", {"cpu": "1"})
    doc["status"]["conditions"].append({"type": "Finished", "status": "True"})  # type: ignore[index]
    assert from_document(doc) is None


def test_pending_workload_keeps_its_queue_priority_creation_and_podsets() -> None:
    workload = from_document(pending_document("p", "team-a", {"google.com/tpu": "4"}, count=16, priority=3))
    assert isinstance(workload, PendingWorkload)
    assert (workload.key, workload.queue_name, workload.priority, workload.created, workload.active) == (
        "default/p",
        "team-a",
        3,
        NOW,
        True,
    )
    assert [(p.name, p.count, p.requests) for p in workload.podsets] == [
        ("main", 16, (("google.com/tpu", Decimal(4)),))
    ]


def test_deactivated_workload_is_not_counted_but_as_the_job_it_is_inactive() -> None:
    """Kueue's cache counts neither a deactivated Workload's quota nor its place in the queue;
    simulated as the job, it is answered Deactivated, so its reader keeps ``active``."""
    document = pending_document("p", "q", {"cpu": "1"}, active=False)
    assert from_document(document) is None
    job = submitted_workload(document, TPU)
    assert (job.key, job.queue_name, job.active, [p.count for p in job.podsets]) == ("default/p", "q", False, [1])


def test_evicted_admitted_workload_is_tried_first() -> None:
    doc = admitted("w", "team-a", {"cpu": "1"}, flavors={"cpu": "cpu"}, at=NOW)
    doc["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted"})  # type: ignore[index]
    workload = from_document(doc)
    assert isinstance(workload, AdmittedWorkload) and workload.evicted


def test_odd_fields_read_leniently() -> None:
    """The API server validated the object; what is of the wrong type reads as absent."""
    doc = {
        "metadata": {"name": "x", "namespace": "n", "creationTimestamp": "yesterday"},
        "spec": {"priority": "high", "podSets": [{"count": "3"}]},
    }
    workload = from_document(doc)
    assert isinstance(workload, PendingWorkload)
    assert (workload.priority, workload.podsets[0].count, workload.uid) == (0, 1, "n/x")


def test_usage_sums_are_exact_and_times_without_a_zone_read_as_utc() -> None:
    doc = admitted("w", "q", {"cpu": "1e30"}, at=NOW)
    doc["status"]["admission"]["podSetAssignments"].append(  # type: ignore[index]
        {"name": "b", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1n"}}
    )
    doc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00"  # type: ignore[index]
    workload = from_document(doc)
    assert isinstance(workload, AdmittedWorkload)
    assert workload.usage == {("default", "cpu"): Decimal("1000000000000000000000000000000.000000001")}
    assert workload.created == NOW
