"""The state from Kueue's objects as stored, end to end: RFC-0033's own queues and flavors."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.rfc_queues import team_flavor_quotas, tpu7x_flavor_spec
from tests.simulate_builders import NOW, from_document, state_from_objects
from webhook.kueue.fair_sharing import DEFAULT_STRATEGIES, FairSharing, fair_sharing
from webhook.kueue.localqueue import LocalQueueInfo, parse_local_queue
from webhook.kueue.workload import PendingWorkload
from webhook.simulate.engine import Simulator
from webhook.simulate.state import WORKLOADS

TPU = "google.com/tpu"


def _team(name: str) -> dict[str, Any]:
    """RFC-0033 4.2's team ClusterQueue: one resource group, tpu7x (TAS) first, cpu-standard after."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": "tpu-pool",
            "namespaceSelector": {"matchLabels": {"scheduling.antgroup.com/kueue-tier": "production"}},
            "resourceGroups": [
                {
                    "coveredResources": [TPU, "cpu", "memory", "ephemeral-storage"],
                    "flavors": team_flavor_quotas(),
                }
            ],
            "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"},
        },
    }


OBJECTS: list[dict[str, Any]] = [
    _team("team-a"),
    _team("team-b"),
    {
        "kind": "LocalQueue",
        "metadata": {"name": "team-a-queue", "namespace": "kubemaker"},
        "spec": {"clusterQueue": "team-a"},
    },
    {
        "kind": "LocalQueue",
        "metadata": {"name": "team-b-queue", "namespace": "kubemaker"},
        "spec": {"clusterQueue": "team-b"},
    },
    {
        "kind": "ResourceFlavor",
        "metadata": {"name": "tpu7x"},
        "spec": tpu7x_flavor_spec(),
    },
    {"kind": "ResourceFlavor", "metadata": {"name": "cpu-standard"}},
    {
        "kind": "Namespace",
        "metadata": {"name": "kubemaker", "labels": {"scheduling.antgroup.com/kueue-tier": "production"}},
    },
    {"kind": "ConfigMap", "metadata": {"name": "ignored"}},
]


def _workload(name: str, queue: str, chips: int, priority: int, admitted_to: str | None = None) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "resources": {"requests": {TPU: "4", "cpu": "8", "memory": "32Gi"}}}]}
    podset = {
        "name": "workers",
        "count": chips // 4,
        "template": {"spec": pod},
        "topologyRequest": {"podSetSliceSize": 16},
    }
    doc: dict[str, Any] = {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "kubemaker", "uid": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": queue, "priority": priority, "podSets": [podset]},
    }
    if admitted_to:
        usage = {TPU: str(chips), "cpu": str(chips * 2), "memory": f"{chips * 8}Gi"}
        doc["status"] = {
            "admission": {
                "clusterQueue": admitted_to,
                "podSetAssignments": [
                    {"name": "workers", "flavors": dict.fromkeys(usage, "tpu7x"), "resourceUsage": usage}
                ],
            },
            "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}],
        }
    return doc


def test_rfc_queues_read_from_objects_admit_a_tas_job_on_tpu7x_borrowing() -> None:
    objects = [*OBJECTS, _workload("a-1", "team-a-queue", 128, 1000, "team-a")]
    st = state_from_objects(objects, configuration={"apiVersion": "config.kueue.x-k8s.io/v1beta2", "fairSharing": {}})
    assert st.fair_sharing == FairSharing(True, DEFAULT_STRATEGIES)
    assert st.namespace_labels == {"kubemaker": {"scheduling.antgroup.com/kueue-tier": "production"}}
    job = from_document(_workload("in", "team-b-queue", 320, 100))
    assert isinstance(job, PendingWorkload)
    result = Simulator(st).simulate(job)
    assert (result.outcome, result.cluster_queue) == ("admit", "team-b")
    assert [(p.flavors, p.borrows) for p in result.podsets] == [({TPU: "tpu7x", "cpu": "tpu7x", "memory": "tpu7x"}, 64)]


def test_without_workloads_the_kind_is_named_missing() -> None:
    st = state_from_objects(OBJECTS, missing=[WORKLOADS], now=NOW + timedelta(days=1))
    job = from_document(_workload("in", "team-a-queue", 64, 100))
    assert isinstance(job, PendingWorkload)
    assert Simulator(st).simulate(job).outcome == "unknown"


def test_fair_sharing_configuration() -> None:
    assert fair_sharing(None) == FairSharing(False)
    assert fair_sharing({"apiVersion": "config.kueue.x-k8s.io/v1beta2"}) == FairSharing(False)
    v1beta2 = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
    }
    assert fair_sharing(v1beta2) == FairSharing(True, ("LessThanInitialShare",))
    assert fair_sharing({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "fairSharing": {}}) == FairSharing(False)
    assert fair_sharing({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "fairSharing": {"enable": True}}).enabled


def test_local_queue_stop_policy() -> None:
    obj = {"metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQueue": "cq", "stopPolicy": "Hold"}}
    assert parse_local_queue(obj) == LocalQueueInfo("n", "q", "cq", "Hold")
