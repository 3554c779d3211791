"""PodSets as Kueue's flavor assigner reads them: pod counts, per-pod requests, totals.

Kueue turns each podSet of a Workload into its requests per pod and a pod count
(kubernetes-sigs/kueue ``pkg/workload``, ``PodSetResources``: name, requests, count); the
flavor assigner and the quota sums read only that. ``PodSetDemand`` is our
``PodSetResources`` plus what flavor eligibility reads of the pod template (nodeSelector,
required node affinity, tolerations) and whether the podSet asks for topology-aware
scheduling.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from webhook.kube.resources import InitResources, Resources, pod_requests
from webhook.kube.scheduling import Affinity, Toleration, parse_required_affinity, parse_tolerations

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
