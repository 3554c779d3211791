"""PodSets as Kueue's quota reads them: pod counts, per-pod requests, totals.

Kueue turns each podSet of a Workload into its requests per pod and a pod count
(kubernetes-sigs/kueue ``pkg/workload``, ``PodSetResources``: name, requests, count); the
flavor assigner and the quota sums read only that. ``PodSetDemand`` is our
``PodSetResources`` plus what flavor eligibility reads of the pod template (nodeSelector,
required node affinity, tolerations) and whether the podSet asks for topology-aware
scheduling. The other questions here (a job's chips, its slices per topology) are the
sums the cluster-aware rules ask of a submitted job.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from webhook.kube.resources import InitResources, Resources, pod_requests
from webhook.objects.workload import PodSet, Workload
from webhook.quota.objects import Affinity, Toleration, parse_required_affinity, parse_tolerations

ZERO = Decimal(0)
#: the resource by which a ClusterQueue may limit how many pods it admits
PODS = "pods"

#: Kueue's annotations by which a podSet asks for topology-aware scheduling
TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
)
#: GKE's Slice Provisioner translates this one into Kueue's slice annotations as the job is
#: created (dynamic mode), so a podSet carrying it reaches Kueue asking for a topology
PROVISIONER_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"


@dataclass(frozen=True, slots=True)
class PodSetDemand:
    """One podSet as Kueue's flavor assigner sees it (hashable: answers are memoized)."""

    name: str
    #: one pod's requests, sorted by resource
    requests: tuple[tuple[str, Decimal], ...]
    count: int
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: Affinity = ()
    tolerations: tuple[Toleration, ...] = ()
    #: it asks for topology-aware scheduling (a Kueue topology annotation, or a TPU podSet,
    #: which gets one from the Slice Provisioner or must carry one in static mode)
    tas: bool = False

    def total(self, resource: str) -> Decimal:
        for name, value in self.requests:
            if name == resource:
                return value * self.count
        return ZERO

    def totals(self, counts_pods: bool) -> dict[str, Decimal]:
        """Every request of the podSet's pods together (per pod × count), as Kueue's flavor
        assigner sums them; with ``counts_pods`` (the ClusterQueue covers ``pods``) the pod
        count too, as ``pods``."""
        totals = {resource: value * self.count for resource, value in self.requests}
        if counts_pods:
            totals[PODS] = Decimal(self.count)
        return totals


#: names longer than this are not interned: a name is a DNS label (63), and a longer one, which
#: only a request can carry, must not be held by the interpreter's table
_INTERNED_NAME: Final = 253


def podset_demand(
    name: str,
    pod_spec: Mapping[str, Any],
    count: int,
    requests: Mapping[str, Decimal] | None = None,
    tas: bool = False,
    share: Callable[[PodSetDemand], PodSetDemand] | None = None,
) -> PodSetDemand:
    """A podSet from its pod template's spec. ``share``: the table identical ones are shared
    through (the watch cache's, ``webhook.kube.sharing``, for 100k stored Workloads); a
    request's job keeps its own, held no longer than the request and what is memoized on the
    snapshot (bounded in bytes there)."""
    if requests is None:
        requests = pod_requests(
            _containers(pod_spec.get("containers")), _init_containers(pod_spec.get("initContainers"))
        )
    selector = pod_spec.get("nodeSelector")
    demand = PodSetDemand(
        sys.intern(name) if len(name) <= _INTERNED_NAME else name,
        tuple(sorted((sys.intern(r) if len(r) <= _INTERNED_NAME else r, v) for r, v in requests.items())),
        count,
        tuple(sorted((str(k), str(v)) for k, v in selector.items())) if isinstance(selector, dict) else (),
        parse_required_affinity(pod_spec),
        parse_tolerations(pod_spec.get("tolerations")),
        tas,
    )
    return share(demand) if share is not None else demand


def _resources(container: Any) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    resources = container.get("resources") if isinstance(container, dict) else None
    resources = resources if isinstance(resources, dict) else {}
    requests, limits = resources.get("requests"), resources.get("limits")
    return (requests if isinstance(requests, dict) else {}), (limits if isinstance(limits, dict) else {})


def _containers(value: Any) -> Iterator[Resources]:
    for container in value if isinstance(value, list) else ():
        yield _resources(container)


def _init_containers(value: Any) -> Iterator[InitResources]:
    for container in value if isinstance(value, list) else ():
        requests, limits = _resources(container)
        yield requests, limits, isinstance(container, dict) and container.get("restartPolicy") == "Always"


# ---------------------------------------------------------------- a submitted job's podSets


def pod_count(podset: PodSet) -> int:
    """Kueue's podSet count for a replicatedJob (or a Job): replicas × the pods of one Job,
    which is parallelism (1 when unset) capped by completions, as Kueue's integrations count."""
    parallelism = podset.parallelism if podset.parallelism is not None else 1
    per_job = min(parallelism, podset.completions) if podset.completions is not None else parallelism
    return podset.replicas * per_job


def demand_of(podset: PodSet, count: int, topology_required: bool = False) -> PodSetDemand:
    """A podSet as Kueue's flavor assigner reads it.

    ``topology_required``: the caller's rules refuse a TPU podSet without a topology
    request, so such a podSet is read as the job will be once fixed, asking for one.
    """
    tas = asks_for_tas(podset) or (topology_required and podset.is_tpu)
    return podset_demand(podset.name, podset.pod_spec, count, podset.pod_requests(), tas)


def asks_for_tas(podset: PodSet) -> bool:
    """Whether Kueue will read a topology request on the podSet.

    Kueue reads one only from its annotations, or from the Slice Provisioner's, which the
    provisioner turns into Kueue's as the job is created. A TPU podSet with neither asks
    for none: Kueue then gives it a flavor without a topology, or any flavor of a queue
    whose flavors all have one (topology-aware scheduling implied).
    """
    annotations = podset.annotations
    return PROVISIONER_ANNOTATION in annotations or any(key in annotations for key in TAS_ANNOTATIONS)


def demands_of(workload: Workload, topology_required: bool = False) -> list[PodSetDemand]:
    """The podSets as Kueue's flavor assigner reads them (count = replicas × parallelism)."""
    return [demand_of(podset, pod_count(podset), topology_required) for podset in workload.podsets]


def requesting(podsets: Sequence[PodSet], resource: str) -> list[PodSet]:
    """The podSets whose pods request a non-zero amount of ``resource``."""
    return [podset for podset in podsets if podset.pod_requests().get(resource)]


def total_request(podsets: Sequence[PodSet], resource: str) -> Decimal:
    """What all pods of ``podsets`` request of ``resource`` together."""
    return sum((p.pod_requests().get(resource, ZERO) * pod_count(p) for p in podsets), ZERO)


def exceeding(podsets: Sequence[PodSet], resource: str, ceiling: Decimal) -> Decimal | None:
    """The podSets' total request of ``resource`` when it is more than ``ceiling``, else ``None``."""
    needed = total_request(podsets, resource)
    return needed if needed > ceiling else None


@dataclass(frozen=True, slots=True)
class PoolShortage:
    """A static topology the job needs more node pools of (one per slice) than the cluster has."""

    topology: str
    #: slices of the topology the job asks for
    needed: int
    #: node pools of the topology in the cluster
    pools: int
    #: the first podSet that asks for the topology (where the finding points)
    podset: PodSet


def pool_shortages(
    podsets: Sequence[PodSet], topology_label: str, node_pools: Callable[[str], int]
) -> list[PoolShortage]:
    """Per static topology (sorted) that ``podsets`` select, when they need more slices than it has pools."""
    slices: dict[str, tuple[int, PodSet]] = {}
    for podset in podsets:
        topology = podset.node_selector.get(topology_label)
        if topology:
            count, first = slices.get(topology, (0, podset))
            slices[topology] = (count + podset.replicas, first)
    shortages = []
    for topology, (needed, podset) in sorted(slices.items()):
        pools = node_pools(topology)
        if pools < needed:
            shortages.append(PoolShortage(topology, needed, pools, podset))
    return shortages
