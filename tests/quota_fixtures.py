"""Kueue's objects as its own test helpers build them, and a store holding them (quota tests).

``cluster_queue``/``cohort`` follow Kueue's test wrappers (``MakeClusterQueue``,
``MakeCohort``, ``Resource(name, nominal, borrowing, lending)``); ``store`` puts the objects
into a ``ClusterStore`` with every kind known, and ``snapshot`` is that store's snapshot, so a
test reads the quota answers the rules read (``potential``, ``assign``, ``balance``) where
they read them.
"""

from __future__ import annotations

from typing import Any

import simulate_builders as builders

from webhook.cluster import kinds as k
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.store import ClusterStore
from webhook.kube.quantity import quantity_or_none
from webhook.kueue.podset import PodSetDemand, podset_demand
from webhook.objects.workload import Workload, parse_jobset
from webhook.policy.config import Policy

#: (nominal, borrowingLimit, lendingLimit), as Kueue's test helper ``Resource(name, nominal, borrowing, lending)``
Q = tuple[str, str | None, str | None]


def cluster_queue(name: str, groups: list[list[tuple[str, dict[str, Q]]]], cohort: str | None = None) -> dict[str, Any]:
    """A ClusterQueue in Kueue's wrapper shape (resource groups as lists of (flavor, quotas)),
    built by the one ClusterQueue builder (``simulate_builders.cluster_queue``)."""
    return builders.cluster_queue(name, *(dict(group) for group in groups), cohort=cohort)


def cohort(name: str, parent: str | None = None, quotas: dict[str, dict[str, Q]] | None = None) -> dict[str, Any]:
    """A Cohort in Kueue's wrapper shape, built by the one Cohort builder."""
    return builders.cohort(name, *([quotas] if quotas else []), parent=parent)


def store(*objects: dict[str, Any], flavors: dict[str, dict[str, Any]] | None = None) -> ClusterStore:
    state = ClusterStore(Policy())
    for obj in objects:
        state.apply(k.BY_KIND[obj["kind"]], "ADDED", obj)
    for name, spec in (flavors or {}).items():
        state.apply(k.RESOURCE_FLAVORS, "ADDED", {"metadata": {"name": name}, "spec": spec})
    for kind in k.KINDS:
        state.availability.mark_synced(kind.name)
    return state


def snapshot(*objects: dict[str, Any], flavors: dict[str, dict[str, Any]] | None = None) -> Snapshot:
    """The snapshot of ``store(*objects, flavors=flavors)``, for a test that changes nothing after."""
    return store(*objects, flavors=flavors).snapshot()


def q(nominal: str, borrowing: str | None = None, lending: str | None = None) -> Q:
    return (nominal, borrowing, lending)


def pod(requests: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}


def affinity(*terms: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    node_terms = [
        {"matchExpressions": [{"key": key, "operator": op, "values": values} for key, op, values in term]}
        for term in terms
    ]
    required = {"nodeSelectorTerms": node_terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def demand(name: str, count: int, pod_spec: dict[str, Any]) -> PodSetDemand:
    requests = {}
    for resource, raw in pod_spec["containers"][0]["resources"]["requests"].items():
        value = quantity_or_none(raw)
        assert value is not None
        requests[resource] = value  # zero requests kept: Kueue sees them too
    return podset_demand(name, pod_spec, count, requests)


#: the ClusterQueue Kueue's flavorassigner tests assign in
CQ = "test-clusterqueue"


def jobset(*replicated_jobs: tuple[str, int, int | None, dict[str, Any]]) -> Workload:
    """A JobSet read as the rules read it, from (name, replicas, parallelism, pod spec) per replicatedJob."""
    jobs = []
    for name, replicas, parallelism, pod_spec in replicated_jobs:
        job_spec: dict[str, Any] = {"template": {"spec": pod_spec}}
        if parallelism is not None:
            job_spec["parallelism"] = parallelism
        jobs.append({"name": name, "replicas": replicas, "template": {"spec": job_spec}})
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"replicatedJobs": jobs},
    }
    return parse_jobset(obj, Policy())
