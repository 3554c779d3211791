"""A submitted job's podSets as Kueue's job integrations hand them to the scheduler, and
the sums the cluster-aware rules ask of them (a job's chips, its slices per topology).

Kueue's jobframework turns a JobSet's replicatedJobs or a Job into podSets: a pod count
and a pod template, with the topology request its annotations carry. What Kueue's
scheduler reads of one podSet is the Kueue model's (``webhook.kueue.podset``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from webhook.kueue.podset import PROVISIONER_ANNOTATION, TAS_ANNOTATIONS, ZERO, PodSetDemand, podset_demand
from webhook.objects.workload import PodSet, Workload


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
