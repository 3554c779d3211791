"""The object kinds the cache reads, and where the API server serves them.

Rules name the kinds they need (``Rule.requires``) with these names; the caches report
availability per kind with the same names, so a skipped check's warning says exactly
which piece of state was unknown.

``KINDS`` are what the cluster-aware job rules read (and ``snapshot`` writes);
``WATCHED`` adds what only the admin guard reads: WorkloadPriorityClasses, Topologies,
AdmissionChecks, and two single objects read by name, Kueue's ConfigMap and its
controller Deployment (``named``: never every ConfigMap or Deployment of the cluster).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.policy.config import Policy

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # plural, as in warnings and metrics: "LocalQueues"
    kind: str  # as in objects: "LocalQueue"
    group: str  # "" for the core API
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The collection's URL path across all namespaces (list and watch)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"


NAMESPACES = Kind("Namespaces", "Namespace", "", "v1", "namespaces", False)
NODES = Kind("Nodes", "Node", "", "v1", "nodes", False)
LOCAL_QUEUES = Kind("LocalQueues", "LocalQueue", KUEUE_GROUP, KUEUE_VERSION, "localqueues", True)
CLUSTER_QUEUES = Kind("ClusterQueues", "ClusterQueue", KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", False)
COHORTS = Kind("Cohorts", "Cohort", KUEUE_GROUP, KUEUE_VERSION, "cohorts", False)
RESOURCE_FLAVORS = Kind("ResourceFlavors", "ResourceFlavor", KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", False)
WORKLOADS = Kind("Workloads", "Workload", KUEUE_GROUP, KUEUE_VERSION, "workloads", True)

KINDS: tuple[Kind, ...] = (
    NAMESPACES,
    LOCAL_QUEUES,
    CLUSTER_QUEUES,
    COHORTS,
    RESOURCE_FLAVORS,
    NODES,
    WORKLOADS,
)
BY_KIND: dict[str, Kind] = {kind.kind: kind for kind in KINDS}

WORKLOAD_PRIORITY_CLASSES = Kind(
    "WorkloadPriorityClasses", "WorkloadPriorityClass", KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", False
)
TOPOLOGIES = Kind("Topologies", "Topology", KUEUE_GROUP, KUEUE_VERSION, "topologies", False)
ADMISSION_CHECKS = Kind("AdmissionChecks", "AdmissionCheck", KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", False)
#: Kueue's ConfigMap (its Configuration), read by namespace and name only
KUEUE_CONFIG = Kind("KueueConfigMap", "ConfigMap", "", "v1", "configmaps", True)
#: Kueue's controller Deployment (its image and --feature-gates), read by namespace and name only
KUEUE_CONTROLLER = Kind("KueueController", "Deployment", "apps", "v1", "deployments", True)

#: the kinds only the admin guard reads
ADMIN_KINDS: tuple[Kind, ...] = (
    WORKLOAD_PRIORITY_CLASSES,
    TOPOLOGIES,
    ADMISSION_CHECKS,
    KUEUE_CONFIG,
    KUEUE_CONTROLLER,
)
#: the kinds a live state is listed with for the simulator (``simulate``, ``explain``): the
#: cluster rules' and what it reads besides (fair sharing, priority values)
SIMULATED: tuple[Kind, ...] = (*KINDS, KUEUE_CONFIG, WORKLOAD_PRIORITY_CLASSES)
#: every kind the watch cache lists and watches
WATCHED: tuple[Kind, ...] = (*KINDS, *ADMIN_KINDS)


def named(kind: Kind, policy: Policy) -> tuple[str, str] | None:
    """``(namespace, name)`` of the one object read of a kind read by name; ``None`` for a whole collection."""
    if kind is KUEUE_CONFIG:
        return policy.kueue.namespace, policy.kueue.config_map
    if kind is KUEUE_CONTROLLER:
        return policy.kueue.namespace, policy.kueue.controller_deployment
    return None


def typed(kind: Kind, item: dict[str, Any]) -> dict[str, Any]:
    """A listed ``item`` given its ``apiVersion`` and ``kind`` (in place; returned).

    The API server's list of a built-in kind (Namespaces, Nodes, ConfigMaps, Deployments)
    leaves both out of each item, as the list's own ``kind`` says them once; lists of
    custom resources and watch events keep them. Readers that tell objects by their kind
    need them on every item."""
    item.setdefault("apiVersion", kind.api_version)
    item.setdefault("kind", kind.kind)
    return item
