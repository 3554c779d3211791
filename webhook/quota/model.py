"""The quota model: where quota is computed, the way Kueue computes it.

Everything the cluster-aware rules ask about quota is answered here, from the objects
the store keeps (``webhook.cluster.store``): which flavors a podSet can get in a
ClusterQueue and in what order, the most a ClusterQueue could ever hold of a flavor's
resource, what is in use, and the guaranteed balance. The rules do no arithmetic.

It follows kubernetes-sigs/kueue (facts restated, no code copied):

- **Flavor eligibility** (``pkg/scheduler/flavorassigner``, ``checkFlavorForPodSets``,
  ``flavorSelector``, ``checkPodSetAndFlavorMatchForTAS``): a topology-aware flavor
  (``topologyName``) is passed over by a podSet that does not ask for topology-aware
  scheduling, unless every flavor of the queue is one; a flavor's ``nodeTaints``
  (NoSchedule/NoExecute) must be tolerated by the pod's tolerations plus the flavor's
  own ``tolerations``; the pod's nodeSelector
  and required node-affinity terms are cut down to the keys of *this flavor's*
  ``nodeLabels`` and must then match those labels. A term left empty by the cut makes
  the affinity match anything (terms are ORed). A flavor without labels matches every pod.
- **Flavor order** (``findFlavorForPodSets``): per resource group, flavors in the group's
  order; a flavor where the podSet plus what earlier podSets already took of it exceeds
  the queue's potential quota is "NoFit" and the next flavor is tried. Resources the
  ClusterQueue does not cover are skipped when their request is 0. When the queue
  covers ``pods``, each podSet requests its pod count of it.
- **Potential quota** (``pkg/cache/scheduler/resource_node.go``, ``potentialAvailable``):
  a ClusterQueue's subtree quota is its nominal quota; a Cohort's is its own nominal plus,
  from each child, the child's subtree quota minus what the child keeps to itself
  (subtree − lendingLimit, when a lendingLimit is set). The potential of a node without
  parent is its subtree quota; with a parent it is what it keeps plus its parent's
  potential, capped at subtree + borrowingLimit when one is set. Cohorts named by a
  ClusterQueue without a Cohort object are implicit cohorts: no quota, no parent.

We differ on purpose in one way: Kueue judges "does it fit now" against current usage;
the gate judges "could it ever fit" (usage zero), because a job that fits later is
admissible. With zero usage Kueue's ``available`` equals ``potentialAvailable``, so a
flavor Kueue calls NoFit ("exceeds max quota") is exactly one we call NoFit.

Unknown is not zero: a flavor whose ResourceFlavor object is missing, a cohort tree with
a cycle, or a cohort tree that cannot be read (Cohorts unknown, and no borrowingLimit to
bound the answer) makes the answer unknown, and the rules say nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from webhook.kube.resources import InitResources, Resources, pod_requests
from webhook.quota.objects import (
    Affinity,
    ClusterQueueInfo,
    CohortInfo,
    FlavorInfo,
    Quota,
    ResourceGroup,
    Toleration,
    parse_required_affinity,
    parse_tolerations,
    tolerated,
)

ZERO = Decimal(0)
PODS = "pods"


# ---------------------------------------------------------------- inputs


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


class QuotaSource(Protocol):
    """What the model reads from the store (bookkeeping lives there, not here)."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def cohorts(self) -> Mapping[str, CohortInfo]: ...

    @property
    def flavors(self) -> Mapping[str, FlavorInfo]: ...

    @property
    def lent(self) -> Mapping[str, Mapping[tuple[str, str], Decimal]]:
        """Cohort name -> (flavor, resource) -> what its member ClusterQueues lend it (``lends``)."""

    @property
    def children(self) -> Mapping[str, set[str]]:
        """Cohort name -> the Cohort objects whose ``parentName`` names it."""

    def cohorts_known(self) -> bool:
        """Whether the Cohort objects can be read (else the tree above a queue is unknown)."""


# ---------------------------------------------------------------- answers


@dataclass(frozen=True, slots=True)
class Bound:
    """The most a ClusterQueue could ever hold of one flavor's resource; ``None`` = unknown."""

    value: Decimal | None
    explanation: str
    #: ``False`` when ``value`` is only an upper bound (the cohort tree is unknown)
    exact: bool = True


@dataclass(frozen=True, slots=True)
class Balance:
    """A ClusterQueue's guaranteed balance on one flavor: nominal − in use − pending (chips)."""

    nominal: int
    holding: int
    waiting: int

    @property
    def left(self) -> int:
        return self.nominal - self.holding - self.waiting


@dataclass(frozen=True, slots=True)
class Attempt:
    """One flavor tried for a podSet, and why it was passed over."""

    flavor: str
    #: "mismatch" (labels/affinity), "taint", "capacity", "unknown"
    kind: str
    detail: str
    resource: str = ""
    needed: Decimal = ZERO
    bound: Bound | None = None


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


# ---------------------------------------------------------------- the model


class QuotaModel:
    """Kueue's quota picture over a ``QuotaSource``; memoized per store generation."""

    def __init__(
        self, source: QuotaSource, memo: Callable[[object], object], remember: Callable[[object, object], None]
    ):
        self.source = source
        self._memo = memo
        self._remember = remember

    # ------------------------------------------------ the cohort tree

    def _chain(self, cohort: str) -> list[str] | None:
        """``cohort`` and its ancestors up to the root; ``None`` on a cycle (Kueue: inactive)."""
        chain: list[str] = []
        name: str | None = cohort
        while name is not None:
            if name in chain:
                return None
            chain.append(name)
            info = self.source.cohorts.get(name)
            name = info.parent if info is not None else None  # no object: an implicit cohort
        return chain

    def _cohort_subtree(self, cohort: str, flavor: str, resource: str, depth: int = 0) -> Decimal:
        """A cohort's subtree quota: own nominal + each child's subtree minus what it keeps."""
        key = ("subtree", cohort, flavor, resource)
        cached = self._memo(key)
        if isinstance(cached, Decimal):
            return cached
        info = self.source.cohorts.get(cohort)
        own = info.quota(flavor, resource) if info is not None else None
        total = own.nominal if own is not None else ZERO
        lent = self.source.lent.get(cohort)  # the member ClusterQueues' part, summed as they change
        if lent:
            total += lent.get((flavor, resource), ZERO)
        if depth < 64:  # cycles are refused before we get here; the bound is belt and braces
            for child in self.source.children.get(cohort, ()):
                child_info = self.source.cohorts.get(child)
                subtree = self._cohort_subtree(child, flavor, resource, depth + 1)
                quota = (child_info.quota(flavor, resource) if child_info is not None else None) or Quota(ZERO)
                total += subtree - _kept(subtree, quota)
        self._remember(key, total)
        return total

    def _cohort_potential(self, chain: list[str], flavor: str, resource: str) -> Decimal:
        """``potentialAvailable`` of ``chain[0]``, walking up to the root."""
        name, parents = chain[0], chain[1:]
        subtree = self._cohort_subtree(name, flavor, resource)
        if not parents:
            return subtree
        info = self.source.cohorts.get(name)
        quota = (info.quota(flavor, resource) if info is not None else None) or Quota(ZERO)
        potential = _kept(subtree, quota) + self._cohort_potential(parents, flavor, resource)
        if quota.borrowing_limit is not None:
            potential = min(potential, subtree + quota.borrowing_limit)
        return potential

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        """The most ``cluster_queue`` could ever hold of ``resource`` in ``flavor`` (usage zero)."""
        key = ("potential", cluster_queue, flavor, resource)
        cached = self._memo(key)
        if isinstance(cached, Bound):
            return cached
        answer = self._potential(cluster_queue, flavor, resource)
        self._remember(key, answer)
        return answer

    def _potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        queue = self.source.cluster_queues.get(cluster_queue)
        if queue is None:
            return Bound(None, f"ClusterQueue {cluster_queue} is unknown")
        quota = queue.quota(flavor, resource) or Quota(ZERO)
        nominal, limit = quota.nominal, quota.borrowing_limit
        if queue.cohort is None:
            return Bound(nominal, f"nominal {_n(nominal)}, no cohort to borrow from")
        capped = f"nominal {_n(nominal)} + borrowing limit {_n(limit)}" if limit is not None else ""
        if not self.source.cohorts_known():
            if limit is None:
                return Bound(None, f"cohort {queue.cohort} is unknown and there is no borrowing limit")
            return Bound(nominal + limit, f"{capped}, cohort {queue.cohort} unknown", exact=False)
        chain = self._chain(queue.cohort)
        if chain is None:
            return Bound(None, f"the cohort tree above {queue.cohort} has a cycle")
        tree = self._cohort_potential(chain, flavor, resource)
        lent = nominal - _kept(nominal, quota)  # what this queue itself put into the tree
        potential = _kept(nominal, quota) + tree
        where = f"cohort {queue.cohort}" + (f" (tree up to {chain[-1]})" if len(chain) > 1 else "")
        others = tree - lent
        if limit is not None and nominal + limit < potential:
            return Bound(nominal + limit, f"{capped} ({where} could lend {_n(others)})")
        suffix = "" if limit is not None else ", no borrowing limit"
        return Bound(potential, f"nominal {_n(nominal)} + {_n(others)} the rest of {where} could lend{suffix}")

    # ------------------------------------------------ flavor assignment

    def assign(
        self,
        cluster_queue: str,
        podsets: Sequence[PodSetDemand],
        budget: Callable[[str, str], Decimal | None] | None = None,
    ) -> Assignment:
        """Kueue's flavor assignment with zero usage: podSets in order, flavors in group order.

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

    def _assign(
        self, cluster_queue: str, podsets: Sequence[PodSetDemand], budget: Callable[[str, str], Decimal | None] | None
    ) -> Assignment:
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
                chosen, tried, exactly = self._pick(cluster_queue, group, demand, wanted, taken, budget, tas_only)
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

    def _pick(
        self,
        cluster_queue: str,
        group: ResourceGroup,
        demand: PodSetDemand,
        wanted: Mapping[str, Decimal],
        taken: Mapping[tuple[str, str], Decimal],
        budget: Callable[[str, str], Decimal | None] | None,
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
                bound = self.potential(cluster_queue, name, resource)
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
                tried.append(Attempt(name, "unknown", bound_reason(cluster_queue, self, name, wanted)))
                return None, tried, True
            return name, tried, exact
        return None, tried, True


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
        within = min(within, int(quota.nominal // amount))
        if amount * replicas > quota.nominal:
            over.append((resource, amount * replicas, quota.nominal))
    return NominalFit(within, tuple(over))


def bound_reason(cluster_queue: str, model: QuotaModel, flavor: str, wanted: Mapping[str, Decimal]) -> str:
    for resource in sorted(wanted):
        bound = model.potential(cluster_queue, flavor, resource)
        if bound.value is None:
            return bound.explanation
    return "unknown"


def lends(queue: ClusterQueueInfo) -> dict[tuple[str, str], Decimal]:
    """What a ClusterQueue puts into its cohort's subtree quota: nominal − what it keeps."""
    return {key: quota.nominal - _kept(quota.nominal, quota) for key, quota in queue.quotas.items()}


def _kept(subtree: Decimal, quota: Quota) -> Decimal:
    """Kueue's ``localQuota``: what a node keeps from its parent (subtree − lendingLimit, ≥ 0)."""
    if quota.lending_limit is None:
        return ZERO
    return max(ZERO, subtree - quota.lending_limit)


def _n(value: Decimal) -> str:
    return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)


def format_amount(value: Decimal) -> str:
    return _n(value)
