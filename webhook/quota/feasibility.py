"""Feasibility: could some choice of a ClusterQueue's flavors ever hold a job's podSets.

This is the gates' question of the Kueue model, not Kueue's own: Kueue's flavor assigner
(``webhook.kueue.flavorassigner``) asks "does it fit now", against current usage, and its
answer may be Preempt; the gate asks "could it ever fit" (usage zero), because a job that
fits later is admissible. Both read one eligibility (``webhook.kueue.resourceflavor``:
topology requests, taints, node labels and affinity) and one potential quota
(``webhook.kueue.potential``). With zero usage Kueue's ``available`` equals
``potentialAvailable``, so a flavor Kueue calls NoFit for a podSet on its own
(``ExceedsMaxQuota``) is exactly one called infeasible here.

- **Quota** (``fitsResourceQuota``): a flavor holds a podSet when, per resource, what the
  podSets on it take together is within the queue's potential quota; one whose potential
  quota a podSet exceeds on its own, on any one resource, is infeasible for it, whatever is
  unknown about its other resources. Resources the ClusterQueue does not cover are skipped
  when their request is 0, else Kueue reports "resource … unavailable in ClusterQueue"
  (``uncovered_requests``). When the queue covers ``pods``, each podSet requests its pod
  count of it.
- **Several podSets** (``assignFlavors``, ``findFlavorForPodSets``): Kueue assigns them in
  order, each to the first flavor that fits now; which one that is depends on usage, so
  the gate asks whether any choice of eligible flavors could hold them together
  (``webhook.quota.combinations``).

Unknown is not zero: a flavor whose ResourceFlavor object is missing (Kueue: "flavor …
not found"), or a potential quota known only within a range, leaves a choice uncertain;
the answer is ``nofit`` only when every choice is past an upper bound that holds whatever
is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from webhook.kube.quantity import quantity_or_none
from webhook.kueue.amounts import format_amount
from webhook.kueue.clusterqueue import ClusterQueueInfo, NominalFit, nominal_fit
from webhook.kueue.podset import PODS, PodSetDemand
from webhook.kueue.potential import Bound, Memo, Remember, ResourceNodes
from webhook.kueue.resourceflavor import FlavorInfo, flavor_mismatch
from webhook.objects.workload import Container, PodSet
from webhook.quota.combinations import LIMIT, Bounds, Choice, Doubt, Option, choose, holds, most
from webhook.quota.podsets import demand_of

ZERO = Decimal(0)

#: ``budget(flavor, resource)``: a further cap per flavor (the guaranteed balance), ``None`` = none
Budget = Callable[[str, str], Bound | None]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One flavor tried for a podSet on its own, and why it was passed over or is uncertain."""

    flavor: str
    #: "tas", "mismatch" (labels/affinity), "taint", "capacity", "budget", "unknown"
    kind: str
    detail: str
    resource: str = ""
    needed: Decimal = ZERO
    bound: Bound | None = None


@dataclass(frozen=True, slots=True)
class Exceeded:
    """A flavor a podSet needs more of a resource of than the queue could ever hold there."""

    flavor: str
    resource: str
    needed: Decimal
    #: the most the queue could ever hold of ``resource`` in ``flavor``
    most: Decimal
    #: how ``most`` is made up (nominal, what the cohort tree could lend, limits)
    explanation: str


@dataclass(frozen=True, slots=True)
class PodSetFeasibility:
    name: str
    #: resource -> flavor, of the choice found (empty when none)
    flavors: Mapping[str, str]
    #: on its own: "fit", "nofit" (no flavor could ever hold it) or "unknown"
    status: str
    attempts: tuple[Attempt, ...] = ()
    #: uncovered resources requested with a non-zero quantity (``resource-not-covered``'s business)
    uncovered: tuple[str, ...] = ()
    #: the flavors it could take on its own, in group order
    options: tuple[str, ...] = ()

    @property
    def passed_over(self) -> tuple[Attempt, ...]:
        """The flavors passed over for the pod's labels, affinity, taints or topology request."""
        return tuple(a for a in self.attempts if a.kind in ("mismatch", "taint", "tas"))

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
class Feasibility:
    podsets: tuple[PodSetFeasibility, ...] = ()
    #: "fit": some choice of flavors certainly holds every podSet; "nofit": no choice ever could; "unknown"
    status: str = "fit"
    #: for "unknown": what is uncertain, and what would decide it
    doubt: str = ""
    #: for "nofit" with every podSet fitting some flavor on its own: the flavors they contend for
    contended: tuple[Exceeded, ...] = ()

    @property
    def fits(self) -> bool:
        return self.status == "fit"

    def first_unassigned(self) -> int | None:
        """The first podSet no flavor could ever hold on its own (Kueue stops there); ``None`` when each fits one."""
        for index, podset in enumerate(self.podsets):
            if podset.status == "nofit":
                return index
        return None

    def usage(self, podsets: Sequence[PodSetDemand], resource: str) -> dict[str, Decimal]:
        """Per flavor, how much of ``resource`` the podSets take in the choice found."""
        out: dict[str, Decimal] = {}
        for demand, assigned in zip(podsets, self.podsets, strict=True):
            flavor = assigned.flavors.get(resource)
            if flavor is not None:
                out[flavor] = out.get(flavor, ZERO) + demand.total(resource)
        return out


# ---------------------------------------------------------------- eligibility


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


def describe_doubt(cluster_queue: str, doubt: Doubt) -> str:
    """A ``Doubt`` in words: what is uncertain, and what would decide it."""
    if doubt.bound is None:
        return f"flavor {doubt.flavor!r}: {doubt.text}"
    bound, n = doubt.bound, format_amount
    most = f", at most {n(bound.value)}" if bound.value is not None else ""
    decided = f" — decided by {bound.decided_by}" if bound.decided_by else ""
    return (
        f"flavor {doubt.flavor!r} would need {n(doubt.amount, doubt.resource)} {doubt.resource}, more than "
        f"ClusterQueue {cluster_queue!r} certainly holds ({n(bound.floor)}{most}: {bound.explanation}){decided}"
    )


# ---------------------------------------------------------------- the assigner


class FlavorSource(Protocol):
    """What the flavor assigner reads of the cached objects."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def flavors(self) -> Mapping[str, FlavorInfo]: ...


@dataclass(frozen=True, slots=True)
class _Slot:
    """One podSet's resource group: the flavors it could take there."""

    podset: int
    options: tuple[Option, ...]


class FeasibilityCheck:
    """Kueue's flavor assignment with zero usage, against ``ResourceNodes``' potential quota."""

    def __init__(self, source: FlavorSource, nodes: ResourceNodes, memo: Memo, remember: Remember) -> None:
        self.source = source
        self.nodes = nodes
        self._memo = memo
        self._remember = remember

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], budget: Budget | None = None) -> Feasibility:
        """Could some choice of eligible flavors ever hold ``podsets`` together?

        ``budget(flavor, resource)``, when given, is a further cap per flavor (the
        guaranteed balance), judged as the potential quota is. Memoized without a budget;
        with one, only the search runs again (which flavors each podSet could take is memoized).
        """
        key = ("assign", cluster_queue, tuple(podsets))
        if budget is None:
            cached = self._memo(key)
            if isinstance(cached, Feasibility):
                return cached
        queue = self.source.cluster_queues.get(cluster_queue)
        if queue is None:
            unknown = tuple(PodSetFeasibility(p.name, {}, "unknown") for p in podsets)
            return Feasibility(unknown, "unknown", f"ClusterQueue {cluster_queue} is unknown")
        alone, slots = self._prepared(queue, podsets)
        bound = self._bounds(cluster_queue, budget)
        if any(p.status == "nofit" for p in alone):
            answer = Feasibility(alone, "nofit")
        else:
            choice = choose([slot.options for slot in slots], bound)
            answer = self._answer(cluster_queue, podsets, alone, slots, choice, bound)
        if budget is None:
            self._remember(key, answer)
        return answer

    def _bounds(self, cluster_queue: str, budget: Budget | None) -> Bounds:
        """``bounds(flavor, resource)``: the queue's potential quota, and the budget's cap when there is one."""
        bounds: dict[tuple[str, str], tuple[Bound, ...]] = {}

        def bound(flavor: str, resource: str) -> tuple[Bound, ...]:
            found = bounds.get((flavor, resource))
            if found is None:
                quota = self.nodes.potential_available(cluster_queue, flavor, resource)
                cap = budget(flavor, resource) if budget is not None else None
                found = bounds[(flavor, resource)] = (quota, cap) if cap is not None else (quota,)
            return found

        return bound

    def _prepared(
        self, queue: ClusterQueueInfo, podsets: Sequence[PodSetDemand]
    ) -> tuple[tuple[PodSetFeasibility, ...], tuple[_Slot, ...]]:
        """Each podSet on its own (its flavors, why not the others) and its slots; memoized."""
        key = ("slots", queue.name, tuple(podsets))
        cached = self._memo(key)
        if isinstance(cached, tuple):
            return cached
        bound = self._bounds(queue.name, None)
        tas_only = self._tas_only(queue)
        pods_group = queue.group_of(PODS)
        slots: list[_Slot] = []
        alone: list[PodSetFeasibility] = []
        for index, demand in enumerate(podsets):
            requests = demand.totals(pods_group is not None)
            attempts: list[Attempt] = []
            uncovered: list[str] = []
            options: list[str] = []
            status = "fit"
            seen: set[frozenset[str]] = set()
            for resource in sorted(requests):
                group = queue.group_of(resource)
                if group is None:
                    if requests[resource] != 0:
                        uncovered.append(resource)
                    continue
                if group.covered in seen:
                    continue
                seen.add(group.covered)
                wanted = tuple(sorted((r, v) for r, v in requests.items() if r in group.covered))
                slot, tried, certain = self._slot(queue.name, index, group.flavors, demand, wanted, bound, tas_only)
                attempts.extend(tried)
                options.extend(o.flavor for o in slot.options if o.flavor not in options)
                slots.append(slot)
                if not slot.options:
                    status = "nofit"
                elif not certain and status == "fit":
                    status = "unknown"
            alone.append(PodSetFeasibility(demand.name, {}, status, tuple(attempts), tuple(uncovered), tuple(options)))
        answer = (tuple(alone), tuple(slots))
        self._remember(key, answer)
        return answer

    def _tas_only(self, queue: ClusterQueueInfo) -> bool | None:
        """Whether every flavor of the queue is topology-aware (``None``: a flavor object is unknown)."""
        known = [self.source.flavors.get(name) for name, _ in queue.flavors]
        if any(f is not None and f.topology_name is None for f in known):
            return False
        return None if any(f is None for f in known) else True

    def _slot(
        self,
        cluster_queue: str,
        podset: int,
        flavors: Sequence[str],
        demand: PodSetDemand,
        wanted: tuple[tuple[str, Decimal], ...],
        bound: Bounds,
        tas_only: bool | None,
    ) -> tuple[_Slot, list[Attempt], bool]:
        """The flavors of a group the podSet could take on its own, the others (why not), and whether
        one of them certainly holds it."""
        tried: list[Attempt] = []
        options: list[Option] = []
        certain = False
        for name in flavors:
            flavor = self.source.flavors.get(name)
            doubt = ""
            if flavor is None:
                doubt = f"its ResourceFlavor object is not in the cluster state (Kueue: flavor {name} not found)"
            else:
                mismatch = flavor_mismatch(flavor, demand, tas_only is not False)  # unknown: the wider set
                if mismatch is not None:
                    tried.append(Attempt(name, mismatch[0], mismatch[1]))
                    continue
                if tas_only is None and flavor.topology_name is not None and not demand.tas:
                    doubt = "eligible only if every flavor of the queue is topology-aware (a ResourceFlavor is missing)"
            failed: Attempt | None = None
            unsure: Attempt | None = None
            for resource, value in wanted:
                held, limits = holds(bound(name, resource), value)
                if held is False and limits is not None:
                    kind = "capacity" if limits is bound(name, resource)[0] else "budget"
                    failed = Attempt(name, kind, "", resource, value, limits)
                    break
                if held is None and limits is not None and unsure is None:
                    text = describe_doubt(cluster_queue, Doubt(0, name, resource, value, limits))
                    unsure = Attempt(name, "unknown", text, resource, value, limits)
            if failed is not None:
                tried.append(failed)
                continue
            options.append(Option(name, wanted, doubt))
            if doubt:
                tried.append(Attempt(name, "unknown", doubt))
            elif unsure is not None:
                tried.append(unsure)
            else:
                certain = True
        return _Slot(podset, tuple(options)), tried, certain

    def _answer(
        self,
        cluster_queue: str,
        podsets: Sequence[PodSetDemand],
        alone: tuple[PodSetFeasibility, ...],
        slots: tuple[_Slot, ...],
        choice: Choice,
        bound: Bounds,
    ) -> Feasibility:
        if choice.status == "nofit":
            return Feasibility(tuple(alone), "nofit", contended=_contended(slots, bound))
        flavors: list[dict[str, str]] = [{} for _ in alone]
        for slot, pick in zip(slots, choice.picks or [-1] * len(slots), strict=True):
            if pick < 0:
                continue  # stopped at the search's limit before finding one
            option = slot.options[pick]
            for resource, _ in option.wanted:
                flavors[slot.podset][resource] = option.flavor
        chosen = tuple(
            PodSetFeasibility(p.name, flavors[i], p.status, p.attempts, p.uncovered, p.options)
            for i, p in enumerate(alone)
        )
        if choice.status == "fit":
            return Feasibility(chosen)
        if choice.doubt is None:
            doubt = (
                f"the podSets together have more choices of flavors than the {LIMIT} the gate tries "
                "— Kueue decides when it assigns them"
            )
        else:
            who = podsets[slots[choice.doubt.slot].podset].name
            doubt = f"podSet {who!r}: {describe_doubt(cluster_queue, choice.doubt)}"
        return Feasibility(chosen, "unknown", doubt)


def _contended(slots: Sequence[_Slot], bound: Bounds) -> tuple[Exceeded, ...]:
    """Where no choice holds the podSets together: each (flavor, resource) the podSets that could take
    the flavor ask more of than the queue could ever hold, in the order they come."""
    asked: dict[tuple[str, str], Decimal] = {}
    for slot in slots:
        for option in slot.options:
            for resource, amount in option.wanted:
                asked[(option.flavor, resource)] = asked.get((option.flavor, resource), ZERO) + amount
    out = []
    for (flavor, resource), total in asked.items():
        limits = most(bound(flavor, resource))
        if limits is not None and limits.value is not None and total > limits.value:
            out.append(Exceeded(flavor, resource, total, limits.value, limits.explanation))
    return tuple(out)


# ---------------------------------------------------------------- questions the rules ask


class Assigns(Protocol):
    """The flavor assignment as the rules reach it (``webhook.cluster.view.ClusterState``)."""

    def assign(
        self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False
    ) -> Feasibility: ...


@dataclass(frozen=True, slots=True)
class BeyondNominal:
    """Pods of one shape that do not all fit in the nominal quota of the flavor one pod gets."""

    flavor: str
    fit: NominalFit


def beyond_nominal(cluster: Assigns, queue: ClusterQueueInfo, podset: PodSet, replicas: int) -> BeyondNominal | None:
    """``replicas`` pods of ``podset`` against the nominal quota of the flavor Kueue gives one pod.

    ``None`` when they fit, when there are none or the podSet requests nothing, or when
    one pod never gets a flavor. When which flavor holds one pod is uncertain, the first
    one that might (Kueue's first try at zero usage) is the one judged.
    """
    per_pod = podset.pod_requests()
    if replicas < 1 or not per_pod:
        return None
    # The flavor one pod takes: Kueue's flavor assignment for a podSet of one pod.
    assignment = cluster.assign(queue.name, [demand_of(podset, 1)])
    [assigned] = assignment.podsets
    if assignment.status == "nofit" or not assigned.flavors:
        return None
    flavor = assigned.flavors[min(assigned.flavors)]
    fit = nominal_fit(queue, flavor, per_pod, replicas)
    return BeyondNominal(flavor, fit) if fit.over else None
