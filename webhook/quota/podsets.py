"""PodSets as Kueue's quota reads them: pod counts, per-pod requests, totals.

Kueue turns each podSet of a Workload into its requests per pod and a pod count
(kubernetes-sigs/kueue ``pkg/workload``, ``PodSetResources``: name, requests, count); the
flavor assigner and the quota sums read only that. ``PodSetDemand`` is our
``PodSetResources`` plus what flavor eligibility reads of the pod template (nodeSelector,
required node affinity, tolerations) and whether the podSet asks for topology-aware
scheduling.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.kube.resources import InitResources, Resources, pod_requests
from webhook.quota.objects import Affinity, Toleration, parse_required_affinity, parse_tolerations

ZERO = Decimal(0)


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


_DEMANDS: dict[PodSetDemand, PodSetDemand] = {}


def podset_demand(
    name: str,
    pod_spec: Mapping[str, Any],
    count: int,
    requests: Mapping[str, Decimal] | None = None,
    tas: bool = False,
) -> PodSetDemand:
    """A podSet from its pod template's spec; identical ones share one object (100k Workloads)."""
    if requests is None:
        requests = pod_requests(
            _containers(pod_spec.get("containers")), _init_containers(pod_spec.get("initContainers"))
        )
    selector = pod_spec.get("nodeSelector")
    demand = PodSetDemand(
        sys.intern(name),
        tuple(sorted((sys.intern(r), v) for r, v in requests.items())),
        count,
        tuple(sorted((str(k), str(v)) for k, v in selector.items())) if isinstance(selector, dict) else (),
        parse_required_affinity(pod_spec),
        parse_tolerations(pod_spec.get("tolerations")),
        tas,
    )
    if len(_DEMANDS) > 65536:
        _DEMANDS.clear()
    return _DEMANDS.setdefault(demand, demand)


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
