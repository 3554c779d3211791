"""Flavor assignment: which flavor of a ClusterQueue each podSet gets, or that none ever could.

It follows kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner`` (facts restated, no
code copied):

- **Flavor eligibility** (``checkFlavorForPodSets``, ``flavorSelector``,
  ``checkPodSetAndFlavorMatchForTAS`` in ``tas_flavorassigner.go``): a topology-aware
  flavor (``topologyName``) is passed over by a podSet that does not ask for
  topology-aware scheduling, unless every flavor of the queue is one; a flavor's
  ``nodeTaints`` (NoSchedule/NoExecute) must be tolerated by the pod's tolerations plus
  the flavor's own ``tolerations``; the pod's nodeSelector and required node-affinity
  terms are cut down to the keys of *this flavor's* ``nodeLabels`` and must then match
  those labels. A term left empty by the cut makes the affinity match anything (terms are
  ORed). A flavor without labels matches every pod.
- **Flavor order** (``assignFlavors``, ``findFlavorForPodSets``, ``fitsResourceQuota``):
  podSets in order; per resource group, flavors in the group's order; a flavor where the
  podSet plus what earlier podSets already took of it exceeds the queue's potential quota
  (``webhook.quota.resource_node``) is NoFit and the next flavor is tried. Resources the
  ClusterQueue does not cover are skipped when their request is 0, else Kueue reports
  "resource … unavailable in ClusterQueue" (``uncovered_requests``). When the queue
  covers ``pods``, each podSet requests its pod count of it. Kueue stops at the first
  podSet without a flavor.

We differ on purpose in one way: Kueue judges "does it fit now" against current usage
(its answer may be Preempt); the gate judges "could it ever fit" (usage zero), because a
job that fits later is admissible. With zero usage Kueue's ``available`` equals
``potentialAvailable``, so a flavor Kueue calls NoFit ("exceeds max quota") is exactly one
we call NoFit; ``FlavorFungibility`` plays no part.

Unknown is not zero: a flavor whose ResourceFlavor object is missing (Kueue: "flavor …
not found"), or a potential quota that is unknown, makes the podSet's answer unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from webhook.kube.quantity import quantity_or_none
from webhook.objects.workload import Container, PodSet
from webhook.quota.objects import ClusterQueueInfo, FlavorInfo, ResourceGroup, tolerated
from webhook.quota.podsets import PodSetDemand, demand_of
from webhook.quota.resource_node import Bound, Memo, NominalFit, Remember, ResourceNodes, nominal_fit

ZERO = Decimal(0)
PODS = "pods"

#: ``budget(flavor, resource)``: a further cap per flavor (the guaranteed balance), ``None`` = none
Budget = Callable[[str, str], Decimal | None]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One flavor tried for a podSet, and why it was passed over."""

    flavor: str
    #: "tas", "mismatch" (labels/affinity), "taint", "capacity", "budget", "unknown"
    kind: str
    detail: str
    resource: str = ""
    needed: Decimal = ZERO
    bound: Bound | None = None


@dataclass(frozen=True, slots=True)
class Exceeded:
    """A flavor passed over because the podSet needs more of a resource than the queue could ever hold."""

    flavor: str
    resource: str
    needed: Decimal
    #: the most the queue could ever hold of ``resource`` in ``flavor``
    most: Decimal
    #: how ``most`` is made up (nominal, what the cohort tree could lend, limits)
    explanation: str


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    #: resource -> flavor; complete only when ``status == "fit"``
    flavors: Mapping[str, str]
    #: "fit", "nofit" (no flavor could ever hold it) or "unknown"
    status: str
    attempts: tuple[Attempt, ...] = ()
    #: uncovered resources requested with a non-zero quantity (``resource-not-covered``'s business)
    uncovered: tuple[str, ...] = ()
    #: ``False`` when the flavor was picked against an upper bound only: Kueue might pick a later one
    exact: bool = True

    @property
    def passed_over(self) -> tuple[Attempt, ...]:
        """The flavors passed over for the pod's labels, affinity or taints."""
        return tuple(a for a in self.attempts if a.kind in ("mismatch", "taint"))

    @property
    def exceeded(self) -> tuple[Exceeded, ...]:
        """The flavors passed over because the queue could never hold the podSet there."""
        return tuple(
            Exceeded(a.flavor, a.resource, a.needed, a.bound.value, a.bound.explanation)
            for a in self.attempts
            if a.kind == "capacity" and a.bound is not None and a.bound.value is not None
        )

    @property
    def unknown(self) -> tuple[Attempt, ...]:
        """The flavors that could not be judged."""
        return tuple(a for a in self.attempts if a.kind == "unknown")


@dataclass(frozen=True, slots=True)
class Assignment:
    podsets: tuple[PodSetAssignment, ...] = ()

    @property
    def fits(self) -> bool:
        return all(p.status == "fit" for p in self.podsets)

    @property
    def exact(self) -> bool:
        return all(p.exact for p in self.podsets)

    @property
    def status(self) -> str:
        statuses = {p.status for p in self.podsets}
        return "nofit" if "nofit" in statuses else "unknown" if "unknown" in statuses else "fit"

    def first_unassigned(self) -> tuple[int, bool] | None:
        """The first podSet without a flavor (Kueue stops there), and whether every earlier
        podSet's flavor is certainly the one Kueue would pick; ``None`` when all fit."""
        certain = True
        for index, podset in enumerate(self.podsets):
            if podset.status != "fit":
                return index, certain
            certain = certain and podset.exact
        return None

    def usage(self, podsets: Sequence[PodSetDemand], resource: str) -> dict[str, Decimal]:
        """Per flavor, how much of ``resource`` the assigned podSets take."""
        out: dict[str, Decimal] = {}
        for demand, assigned in zip(podsets, self.podsets, strict=True):
            flavor = assigned.flavors.get(resource)
            if flavor is not None:
                out[flavor] = out.get(flavor, ZERO) + demand.total(resource)
        return out


# ---------------------------------------------------------------- eligibility


def flavor_mismatch(flavor: FlavorInfo, demand: PodSetDemand, tas_only: bool = False) -> tuple[str, str] | None:
    """Why Kueue would not give ``flavor`` to this podSet ((kind, detail)), or ``None``.

    ``tas_only``: every flavor of the queue is a topology-aware one, so Kueue treats every
    podSet as asking for topology-aware scheduling.
    """
    if flavor.topology_name is not None and not demand.tas and not tas_only:
        return "tas", "supports only topology-aware scheduling, which this podSet does not ask for"
    tolerations = (*demand.tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if not tolerated(taint, tolerations):
            return "taint", f"has taint {taint.key}={taint.value}:{taint.effect}, which the pod does not tolerate"
    labels = flavor.node_labels
    for key, value in demand.node_selector:
        if key in labels and labels[key] != value:
            return "mismatch", f"has {key}={labels[key]}, the pod's nodeSelector asks for {value}"
    if demand.affinity:
        terms = []
        for term in demand.affinity:
            kept = tuple(r for r in term if r.key in labels)
            if not kept:
                return None  # a term with none of the flavor's keys matches any flavor (terms are ORed)
            terms.append(kept)
        if not any(all(r.matches(labels) for r in term) for term in terms):
            return "mismatch", "does not match the pod's required node affinity on its nodeLabels"
    return None


def uncovered_requests(podset: PodSet, covered: frozenset[str]) -> Iterator[tuple[Container, str, str]]:
    """(container, "requests" or "limits", resource) for each resource the podSet asks for and
    the ClusterQueue does not cover, once per resource; Kueue skips a zero request of one."""
    reported: set[str] = set()
    for container in [*podset.containers, *podset.init_containers]:
        for kind, values in (("requests", container.requests), ("limits", container.limits)):
            for resource, raw in values.items():
                if resource in covered or resource in reported or quantity_or_none(raw) == 0:
                    continue
                reported.add(resource)
                yield container, kind, resource


# ---------------------------------------------------------------- the assigner


class FlavorSource(Protocol):
    """What the flavor assigner reads of the cached objects."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def flavors(self) -> Mapping[str, FlavorInfo]: ...


class FlavorAssigner:
    """Kueue's flavor assignment with zero usage, against ``ResourceNodes``' potential quota."""

    def __init__(self, source: FlavorSource, nodes: ResourceNodes, memo: Memo, remember: Remember) -> None:
        self.source = source
        self.nodes = nodes
        self._memo = memo
        self._remember = remember

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], budget: Budget | None = None) -> Assignment:
        """Podsets in order, flavors in group order.

        ``budget(flavor, resource)``, when given, is a further cap per flavor (the
        guaranteed balance): a flavor over it is passed over as Kueue passes over a flavor
        whose quota is taken. Memoized without a budget only.
        """
        key = ("assign", cluster_queue, tuple(podsets))
        if budget is None:
            cached = self._memo(key)
            if isinstance(cached, Assignment):
                return cached
        answer = self._assign(cluster_queue, podsets, budget)
        if budget is None:
            self._remember(key, answer)
        return answer

    def _assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], budget: Budget | None) -> Assignment:
        queue = self.source.cluster_queues.get(cluster_queue)
        if queue is None:
            return Assignment(tuple(PodSetAssignment(p.name, {}, "unknown") for p in podsets))
        taken: dict[tuple[str, str], Decimal] = {}
        pods_group = queue.group_of(PODS)
        known = [self.source.flavors.get(name) for name, _ in queue.flavors]
        tas_only = all(f is not None and f.topology_name is not None for f in known)
        results = []
        for demand in podsets:
            requests = {r: v * demand.count for r, v in demand.requests}
            if pods_group is not None:
                requests[PODS] = Decimal(demand.count)
            flavors: dict[str, str] = {}
            status, attempts, uncovered, exact = "fit", [], [], True
            for resource in sorted(requests):
                if resource in flavors:
                    continue
                group = queue.group_of(resource)
                if group is None:
                    if requests[resource] != 0:
                        uncovered.append(resource)
                    continue
                wanted = {r: v for r, v in requests.items() if r in group.covered}
                chosen, tried, exactly = self._find_flavor(
                    cluster_queue, group, demand, wanted, taken, budget, tas_only
                )
                attempts.extend(tried)
                exact = exact and exactly
                if chosen is None:
                    status = "unknown" if any(a.kind == "unknown" for a in tried) else "nofit"
                    break
                for r, v in wanted.items():
                    flavors[r] = chosen
                    taken[(chosen, r)] = taken.get((chosen, r), ZERO) + v
            results.append(PodSetAssignment(demand.name, flavors, status, tuple(attempts), tuple(uncovered), exact))
            if status != "fit":
                # Later podSets would be judged against usage we cannot know; Kueue stops here too.
                results.extend(PodSetAssignment(p.name, {}, "unknown") for p in podsets[len(results) :])
                break
        return Assignment(tuple(results))

    def _find_flavor(
        self,
        cluster_queue: str,
        group: ResourceGroup,
        demand: PodSetDemand,
        wanted: Mapping[str, Decimal],
        taken: Mapping[tuple[str, str], Decimal],
        budget: Budget | None,
        tas_only: bool,
    ) -> tuple[str | None, list[Attempt], bool]:
        """The first flavor of ``group`` that could ever hold ``wanted``; whether that is certain."""
        tried: list[Attempt] = []
        for name in group.flavors:
            flavor = self.source.flavors.get(name)
            if flavor is None:
                tried.append(Attempt(name, "unknown", "its ResourceFlavor object is unknown"))
                return None, tried, True  # Kueue would say "flavor not found"; we cannot judge what follows
            mismatch = flavor_mismatch(flavor, demand, tas_only)
            if mismatch is not None:
                tried.append(Attempt(name, mismatch[0], mismatch[1]))
                continue
            failed: Attempt | None = None
            unknown, exact = False, True
            for resource, value in sorted(wanted.items()):
                needed = taken.get((name, resource), ZERO) + value
                bound = self.nodes.potential_available(cluster_queue, name, resource)
                if bound.value is None:
                    unknown = True
                    continue
                exact = exact and bound.exact
                if needed > bound.value:
                    failed = Attempt(name, "capacity", "", resource, needed, bound)
                    break
                cap = budget(name, resource) if budget is not None else None
                if cap is not None and needed > cap:
                    failed = Attempt(name, "budget", "", resource, needed, Bound(cap, "balance"))
                    break
            if failed is not None:
                tried.append(failed)
                continue
            if unknown:
                tried.append(Attempt(name, "unknown", bound_reason(self.nodes, cluster_queue, name, wanted)))
                return None, tried, True
            return name, tried, exact
        return None, tried, True


def bound_reason(nodes: ResourceNodes, cluster_queue: str, flavor: str, wanted: Mapping[str, Decimal]) -> str:
    """Why the potential quota of ``flavor`` for one of ``wanted``'s resources is unknown."""
    for resource in sorted(wanted):
        bound = nodes.potential_available(cluster_queue, flavor, resource)
        if bound.value is None:
            return bound.explanation
    return "unknown"


# ---------------------------------------------------------------- questions the rules ask


class Assigns(Protocol):
    """The flavor assignment as the rules reach it (``webhook.cluster.state.ClusterState``)."""

    def assign(
        self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False
    ) -> Assignment: ...


@dataclass(frozen=True, slots=True)
class BeyondNominal:
    """Pods of one shape that do not all fit in the nominal quota of the flavor one pod gets."""

    flavor: str
    fit: NominalFit


def beyond_nominal(cluster: Assigns, queue: ClusterQueueInfo, podset: PodSet, replicas: int) -> BeyondNominal | None:
    """``replicas`` pods of ``podset`` against the nominal quota of the flavor Kueue gives one pod.

    ``None`` when they fit, when there are none or the podSet requests nothing, or when
    one pod gets no flavor (never fits, or unknown: nothing to say).
    """
    per_pod = podset.pod_requests()
    if replicas < 1 or not per_pod:
        return None
    # The flavor one pod takes: Kueue's flavor assignment for a podSet of one pod.
    [assigned] = cluster.assign(queue.name, [demand_of(podset, 1)]).podsets
    if assigned.status != "fit" or not assigned.flavors:
        return None
    flavor = assigned.flavors[min(assigned.flavors)]
    fit = nominal_fit(queue, flavor, per_pod, replicas)
    return BeyondNominal(flavor, fit) if fit.over else None
