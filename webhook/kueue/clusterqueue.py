"""A ClusterQueue as the Kueue model reads it: quotas, policies and what its nominal holds.

The compact view the caches keep of a ClusterQueue (``parse_cluster_queue``): its cohort,
namespace selector, resource groups and quotas per flavor, preemption and flavor
fungibility with Kueue's defaults, queueing strategy, stop policy and fair-sharing weight.
Parsing is lenient (a field of the wrong type reads as absent): the API server has
already validated the object against its schema.

``nominal_fit`` asks Kueue's ``IsWithinNominalInResources`` of a shape of pods: how many
of them the queue's nominal quota of a flavor holds without borrowing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import CONTEXT
from webhook.kueue.resources import FlavorQuotas, FlavorResource, Quota, ResourceGroup, fair_weight, resource_groups


@dataclass(frozen=True, slots=True)
class Preemption:
    """``spec.preemption`` of a ClusterQueue, with Kueue's defaults (every policy ``Never``)."""

    #: Never | LowerPriority | LowerOrNewerEqualPriority
    within_cluster_queue: str = "Never"
    #: Never | LowerPriority | Any
    reclaim_within_cohort: str = "Never"
    #: ``borrowWithinCohort.policy``: Never | LowerPriority
    borrow_within_cohort: str = "Never"
    #: ``borrowWithinCohort.maxPriorityThreshold``
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """``spec.flavorFungibility``, with Kueue's defaults; v1beta1's ``Borrow``/``Preempt`` read as ``MayStopSearch``."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    #: BorrowingOverPreemption | PreemptionOverBorrowing | None
    preference: str | None = None


def _preemption(value: Any) -> Preemption:
    spec = as_dict(value)
    borrow = as_dict(spec.get("borrowWithinCohort"))
    threshold = borrow.get("maxPriorityThreshold")
    return Preemption(
        str(spec.get("withinClusterQueue") or "Never"),
        str(spec.get("reclaimWithinCohort") or "Never"),
        str(borrow.get("policy") or "Never"),
        threshold if isinstance(threshold, int) and not isinstance(threshold, bool) else None,
    )


def _fungibility(value: Any) -> FlavorFungibility:
    spec = as_dict(value)

    def policy(key: str, default: str) -> str:
        raw = str(spec.get(key) or default)
        return "MayStopSearch" if raw in ("Borrow", "Preempt") else raw

    preference = spec.get("preference")
    return FlavorFungibility(
        policy("whenCanBorrow", "MayStopSearch"),
        policy("whenCanPreempt", "TryNextFlavor"),
        str(preference) if preference else None,
    )


@dataclass(frozen=True, slots=True)
class ClusterQueueInfo:
    name: str
    cohort: str | None
    #: the raw ``namespaceSelector``; ``None`` is Kueue's null selector (matches nothing)
    namespace_selector: Mapping[str, Any] | None
    groups: tuple[ResourceGroup, ...]
    flavors: FlavorQuotas
    #: (flavor, resource) -> quota: the lookup every potential-quota sum makes
    quotas: Mapping[FlavorResource, Quota] = field(default_factory=dict)
    covered: frozenset[str] = frozenset()
    preemption: Preemption = Preemption()
    fungibility: FlavorFungibility = FlavorFungibility()
    #: StrictFIFO | BestEffortFIFO
    queueing_strategy: str = "BestEffortFIFO"
    #: None | Hold | HoldAndDrain
    stop_policy: str = "None"
    fair_weight: Decimal = Decimal(1)

    def group_of(self, resource: str) -> ResourceGroup | None:
        for group in self.groups:
            if resource in group.covered:
                return group
        return None

    def quota(self, flavor: str, resource: str) -> Quota | None:
        return self.quotas.get((flavor, resource))


def parse_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueueInfo:
    spec = as_dict(obj.get("spec"))
    selector = spec.get("namespaceSelector")
    groups, flavors = resource_groups(spec.get("resourceGroups"))
    cohort = spec.get("cohortName")
    return ClusterQueueInfo(
        name=str(as_dict(obj.get("metadata")).get("name", "")),
        cohort=str(cohort) if cohort else None,
        namespace_selector=selector if isinstance(selector, dict) else None,
        groups=groups,
        flavors=flavors,
        quotas={(name, r): quota for name, resources in flavors for r, quota in resources.items()},
        covered=frozenset().union(*(group.covered for group in groups)),
        preemption=_preemption(spec.get("preemption")),
        fungibility=_fungibility(spec.get("flavorFungibility")),
        queueing_strategy=str(spec.get("queueingStrategy") or "BestEffortFIFO"),
        stop_policy=str(spec.get("stopPolicy") or "None"),
        fair_weight=fair_weight(spec),
    )


@dataclass(frozen=True, slots=True)
class NominalFit:
    """How many pods of one shape a ClusterQueue's nominal quota of a flavor holds."""

    #: pods that fit in nominal on every covered resource
    within: int
    #: (resource, what ``replicas`` pods need, nominal) for each covered resource they pass
    over: tuple[tuple[str, Decimal, Decimal], ...]


def nominal_fit(queue: ClusterQueueInfo, flavor: str, per_pod: Mapping[str, Decimal], replicas: int) -> NominalFit:
    """``replicas`` pods of ``per_pod`` against ``queue``'s nominal quota of ``flavor``, without borrowing.

    Resources the flavor does not cover are left out (``resource-not-covered`` speaks of them).
    """
    within = replicas
    over: list[tuple[str, Decimal, Decimal]] = []
    for resource, amount in sorted(per_pod.items()):
        quota = queue.quota(flavor, resource)
        if quota is None or amount <= 0:
            continue
        within = min(within, int(CONTEXT.divide_int(quota.nominal, amount)))  # up to 10^31 / 1n: 41 digits
        if amount * replicas > quota.nominal:
            over.append((resource, amount * replicas, quota.nominal))
    return NominalFit(within, tuple(over))
