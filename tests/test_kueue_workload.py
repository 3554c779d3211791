"""The one projection of a Workload (``webhook.kueue.workload``): explain's part given back in the
Workload's own shape, shared between equal Workloads, compared by value."""

from __future__ import annotations

import copy

from explain_builders import RECLAIM_MESSAGE, T0, T2, rfc_example_one, rfc_example_two

from webhook.kube.sharing import Sharing
from webhook.quota.ledger import project

TPU = "google.com/tpu"


def test_a_record_gives_back_what_explain_reads_and_nothing_else() -> None:
    workload = rfc_example_two().requeue_at(T2).obj()
    workload["metadata"]["labels"]["team"] = "b"
    workload["metadata"]["managedFields"] = [{"manager": "kueue"}]
    assert project(workload, TPU).document() == {
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
    assert RECLAIM_MESSAGE in str(project(workload, TPU).document()["status"]["conditions"])


def test_equal_workloads_share_their_conditions_and_records_compare_by_value() -> None:
    one = rfc_example_one().obj()
    other = copy.deepcopy(one)
    other["metadata"]["name"] = "another"
    shared = Sharing().share  # the store's table
    first, second = project(one, TPU, shared), project(other, TPU, shared)
    assert first.conditions is second.conditions and first.spec is second.spec
    assert project(copy.deepcopy(one), TPU) == first != second
    assert first.document()["status"]["admission"] == {"clusterQueue": "team-a"}
