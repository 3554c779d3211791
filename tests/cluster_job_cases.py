"""Cluster-rule cases for Jobs and Deployments against tests/fixtures/cluster (RFC-0033 4.2/4.6).

Shared by ``check --cluster-state`` (tests/test_cli_cluster_state.py) and the live server with
its watch cache (tests/test_serving_cluster.py): each case is an object, the tier path
the API server would call, and the one cluster rule it must trip (``None``: none may).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from support import CLUSTER_RULES, load_deployment, load_job, set_path

#: the cluster rules' IDs, Job and Deployment alike
RULES = CLUSTER_RULES
QUEUE = 'metadata.labels["kueue.x-k8s.io/queue-name"]'
PRIORITY = 'metadata.labels["kueue.x-k8s.io/priority-class"]'
CONTAINER = "spec.template.spec.containers[0]"
TPU_4X4X4 = {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "4x4x4"}


@dataclass(frozen=True)
class ClusterCase:
    name: str
    kind: str
    build: Callable[[], dict[str, Any]]
    rule: str | None

    @property
    def tier(self) -> str:
        return "dev" if self.object()["metadata"]["namespace"] in ("default", "falcon-jobs", "legacy") else "production"

    def object(self) -> dict[str, Any]:
        return self.build()


def _edit(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    for path, value in changes.items():
        set_path(obj, path, value)
    return obj


def job(**changes: Any) -> dict[str, Any]:
    return _edit(load_job("rfc-job-static"), **changes)


def big_job(**changes: Any) -> dict[str, Any]:
    """One 8x8x8 slice (512 chips): team-a's 8x8x8 flavor has nominal 0, and no 8x8x8 pool exists."""
    selector = {**TPU_4X4X4, "cloud.google.com/gke-tpu-topology": "8x8x8"}
    return job(
        **{"spec.template.spec.nodeSelector": selector, "spec.parallelism": 128, "spec.completions": 128}, **changes
    )


def two_slices_job(**changes: Any) -> dict[str, Any]:
    """128 chips of 4x4x4: within what team-a can hold (384), beyond its guaranteed balance (64).

    (An 8x8x8 job can never fit team-a at all: exceeds-queue-capacity, not the balance.)
    """
    return job(**{"spec.parallelism": 32, "spec.completions": 32}, **changes)


def deployment(**changes: Any) -> dict[str, Any]:
    return _edit(load_deployment("service-deployment"), **changes)


#: a pod's topology request for one host (Kueue's TAS annotation)
ON_ONE_HOST = {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}


def tpu_deployment(chips: str, **changes: Any) -> dict[str, Any]:
    """A Deployment whose one pod asks ``chips`` TPU chips on one 4x4x4 host: the topology
    annotation it needs, as Kueue gives the RFC's TPU flavors only to pods that ask for one."""
    obj = deployment(**{"spec.template.spec.nodeSelector": dict(TPU_4X4X4), **changes})
    obj["spec"]["template"].setdefault("metadata", {})["annotations"] = dict(ON_ONE_HOST)
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": chips}}
    return obj


def _dev(loader: Callable[[str], dict[str, Any]], name: str, namespace: str) -> dict[str, Any]:
    return _edit(loader(name), **{"metadata.namespace": namespace})


CASES = [
    ClusterCase("rfc-job", "Job", job, None),
    ClusterCase("rfc-deployment", "Deployment", deployment, None),
    ClusterCase("dev-job", "Job", lambda: load_job("dev-job-cpu"), None),
    ClusterCase("dev-deployment", "Deployment", lambda: load_deployment("dev-deployment"), None),
    ClusterCase("job-missing-queue", "Job", lambda: job(**{QUEUE: "team-z-queue"}), "local-queue-not-found"),
    ClusterCase(
        "deployment-missing-queue", "Deployment", lambda: deployment(**{QUEUE: "team-z-queue"}), "local-queue-not-found"
    ),
    ClusterCase("job-not-selected", "Job", lambda: _dev(load_job, "dev-job-cpu", "legacy"), "namespace-not-selected"),
    ClusterCase(
        "deployment-not-selected",
        "Deployment",
        lambda: _dev(load_deployment, "dev-deployment", "legacy"),
        "namespace-not-selected",
    ),
    ClusterCase("job-not-covered", "Job", lambda: job(**{QUEUE: "team-c-queue"}), "resource-not-covered"),
    ClusterCase(
        "deployment-not-covered", "Deployment", lambda: deployment(**{QUEUE: "team-c-queue"}), "resource-not-covered"
    ),
    ClusterCase("job-over-capacity", "Job", big_job, "exceeds-queue-capacity"),
    ClusterCase(
        "deployment-pod-over-capacity",
        "Deployment",
        lambda: tpu_deployment("68", **{QUEUE: "team-c-queue"}),
        "exceeds-queue-capacity",
    ),
    ClusterCase("job-guaranteed", "Job", lambda: job(**{PRIORITY: "guaranteed"}), None),
    ClusterCase(
        "job-guaranteed-over-balance",
        "Job",
        lambda: two_slices_job(**{PRIORITY: "guaranteed"}),
        "guaranteed-balance-exceeded",
    ),
    ClusterCase(
        "deployment-guaranteed-over-balance",
        "Deployment",
        lambda: tpu_deployment("68", **{PRIORITY: "guaranteed"}),
        "guaranteed-balance-exceeded",
    ),
    ClusterCase(
        "job-fits-no-node",
        "Job",
        lambda: job(**{f'{CONTAINER}.resources.requests["cpu"]': "300"}),
        "exceeds-node-capacity",
    ),
    ClusterCase(
        "deployment-fits-no-node",
        "Deployment",
        lambda: deployment(**{f'{CONTAINER}.resources.requests["cpu"]': "40"}),
        "exceeds-node-capacity",
    ),
    ClusterCase("job-without-pools", "Job", big_job, "insufficient-node-pools"),
    ClusterCase(
        "deployment-beyond-nominal",
        "Deployment",
        lambda: deployment(**{"spec.replicas": 600}),
        "replicas-beyond-nominal",
    ),
    ClusterCase("deployment-within-nominal", "Deployment", lambda: deployment(**{"spec.replicas": 400}), None),
]
