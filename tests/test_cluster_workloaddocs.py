"""What the store keeps of a Workload for explain, given back in the Workload's own shape."""

from __future__ import annotations

import copy

from explain_builders import RECLAIM_MESSAGE, T0, T2, rfc_example_one, rfc_example_two

from webhook.cluster.workloaddocs import workload_record
from webhook.kube.sharing import Sharing


def test_a_record_gives_back_what_explain_reads_and_nothing_else() -> None:
    workload = rfc_example_two().requeue_at(T2).obj()
    workload["metadata"]["labels"]["team"] = "b"
    workload["metadata"]["managedFields"] = [{"manager": "kueue"}]
    assert workload_record(workload).document() == {
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
    assert RECLAIM_MESSAGE in str(workload_record(workload).document()["status"]["conditions"])


def test_equal_workloads_share_their_conditions_and_records_compare_by_value() -> None:
    one = rfc_example_one().obj()
    other = copy.deepcopy(one)
    other["metadata"]["name"] = "another"
    shared = Sharing().share  # the store's table
    first, second = workload_record(one, shared), workload_record(other, shared)
    assert first.conditions is second.conditions and first.spec is second.spec
    assert workload_record(copy.deepcopy(one)) == first != second
    assert first.document()["status"]["admission"] == {"clusterQueue": "team-a"}
