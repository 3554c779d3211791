"""The object kinds the cluster-aware rules read, and where the API server serves them.

Rules name the kinds they need (``Rule.requires``) with these names; the caches report
availability per kind with the same names, so a skipped check's warning says exactly
which piece of state was unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

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
