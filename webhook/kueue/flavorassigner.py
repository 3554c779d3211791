"""Flavor assignment with the current usage, as Kueue's flavor assigner makes it.

It restates kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner.go``:
podSet by podSet, and within one per resource group, the group's flavors are tried in
order. A flavor the podSet cannot use (taints, node labels, topology) is skipped; else
each resource is judged (``fitsResourceQuota``): beyond what the queue could ever hold
(``potentialAvailable``) is NoFit (``ExceedsMaxQuota``); within what it has available now
is Fit, at the borrowing level the quota comes from; otherwise, when its nominal holds it,
its subtree could reclaim, or policy allows preempting while borrowing, the preemptor is
asked (Preempt, or Preempt without candidates), else NoFit (``WaitingForQuota``).
``flavorFungibility`` decides whether to stop at a flavor (``shouldTryNextFlavor``) and
which of those tried is best (``isPreferred``). Earlier podSets' assignments count as
usage for later ones.

Preemption is asked of an oracle behind ``PreemptionOracle``, as Kueue's assigner asks
its ``preemptionOracle``: this module imports no preemptor. Without an oracle (the
gates' question, at zero usage) a flavor short of free quota has no candidates.

Static mode's topology placement is the engine's next step (``placement``). Not modelled
(``docs/simulate.md``): podSet groups (``podSetGroupName``), the last-tried flavor of a
requeued Workload, dynamic mode's placement, elastic slices, DRA, admission checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol

from webhook.kueue.amounts import canonical
from webhook.kueue.clusterqueue import ClusterQueueInfo, FlavorFungibility
from webhook.kueue.podset import PODS, PodSetDemand
from webhook.kueue.resource_node import Node, available, lowest_fitting_height, potential_available
from webhook.kueue.resourceflavor import FlavorInfo, flavor_mismatch
from webhook.kueue.resources import FlavorResource, ResourceGroup

ZERO = Decimal(0)
FIT, PREEMPT, NOFIT = "Fit", "Preempt", "NoFit"
NO_MATCHING_FLAVOR, EXCEEDS_MAX_QUOTA, WAITING_FOR_QUOTA = "NoMatchingFlavor", "ExceedsMaxQuota", "WaitingForQuota"
_SEVERITY = {"": 0, "TopologyPlacementFailed": 1, WAITING_FOR_QUOTA: 2, EXCEEDS_MAX_QUOTA: 3, NO_MATCHING_FLAVOR: 4}

# Kueue's internal preemption modes, worst to best
NO_FIT, NO_CANDIDATES, PREEMPT_MODE, RECLAIM, FIT_MODE = range(5)
_WORST_BORROW = 1 << 30


@dataclass(frozen=True, slots=True)
class Granular:
    """``granularMode``: how a flavor fits and how far up the tree its quota comes from."""

    preemption: int
    borrow: int

    @property
    def mode(self) -> str:
        return {NO_FIT: NOFIT, FIT_MODE: FIT}.get(self.preemption, PREEMPT)


WORST, BEST = Granular(NO_FIT, _WORST_BORROW), Granular(FIT_MODE, 0)


def is_preferred(a: Granular, b: Granular, fungibility: FlavorFungibility) -> bool:
    """``isPreferred``: whether ``a`` is better than ``b`` under the queue's fungibility."""
    if a.preemption == NO_FIT:
        return False
    if b.preemption == NO_FIT:
        return True
    if (a.preemption == NO_CANDIDATES) != (b.preemption == NO_CANDIDATES):
        return a.preemption != NO_CANDIDATES
    if fungibility.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.preemption > b.preemption
    if a.preemption != b.preemption:
        return a.preemption > b.preemption
    return a.borrow < b.borrow


def should_try_next(mode: Granular, fungibility: FlavorFungibility) -> bool:
    """``shouldTryNextFlavor``."""
    if mode.preemption in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.preemption in (PREEMPT_MODE, RECLAIM) and fungibility.when_can_preempt == "TryNextFlavor":
        return True
    return mode.borrow != 0 and fungibility.when_can_borrow == "TryNextFlavor"


@dataclass(frozen=True, slots=True)
class FlavorTry:
    """One flavor tried for one resource group of a podSet, and what came of it."""

    flavor: str
    mode: str
    borrow: int
    #: for NoFit: NoMatchingFlavor, ExceedsMaxQuota or WaitingForQuota
    reason: str = ""
    detail: str = ""
    #: the resource that set ``reason`` (empty when the flavor itself did not match)
    resource: str = ""


@dataclass
class PodSetAssignment:
    name: str
    count: int
    #: resource -> what the podSet asks in all (per pod × count, ``pods`` when the queue covers it)
    requests: dict[str, Decimal] = field(default_factory=dict)
    #: resource -> flavor
    flavors: dict[str, str] = field(default_factory=dict)
    #: resource -> Fit / Preempt
    modes: dict[str, str] = field(default_factory=dict)
    #: (flavor, resource) -> what this podSet uses
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    #: per resource group, the flavors tried
    tries: list[tuple[FlavorTry, ...]] = field(default_factory=list)
    #: NoFit: the most severe reason (``resolveNoFitReason``)
    reason: str = ""
    #: whether every resource group's chosen flavor fits as a whole (its representative mode):
    #: Kueue then calls the podSet Fit, even where one resource of a flavor alone needs
    #: preemption (under ``PreemptionOverBorrowing`` a deeper borrow outranks a preemption)
    groups_fit: bool = True

    @property
    def mode(self) -> str:
        if self.reason:
            return NOFIT
        if self.groups_fit:
            return FIT
        return PREEMPT if PREEMPT in self.modes.values() else FIT


@dataclass
class Assignment:
    podsets: list[PodSetAssignment]
    #: (flavor, resource) -> what the whole job uses (``TotalRequestsFor``)
    usage: dict[FlavorResource, Decimal]

    @property
    def mode(self) -> str:
        modes = {p.mode for p in self.podsets}
        return NOFIT if NOFIT in modes else PREEMPT if PREEMPT in modes else FIT

    @property
    def reason(self) -> str:
        worst = ""
        for podset in self.podsets:
            if _SEVERITY.get(podset.reason, 0) > _SEVERITY[worst]:
                worst = podset.reason
        return worst

    def need_preemption(self) -> frozenset[FlavorResource]:
        """``flavorResourcesNeedPreemption``: the (flavor, resource)s assigned in Preempt mode."""
        return frozenset((p.flavors[r], r) for p in self.podsets for r, mode in p.modes.items() if mode == PREEMPT)


def podset_requests(queue: ClusterQueueInfo, podset: PodSetDemand) -> dict[str, Decimal]:
    """A podSet's total requests, with ``pods`` when the queue covers it."""
    return podset.totals(queue.group_of(PODS) is not None)


class PreemptionOracle(Protocol):
    """``preemptionOracle``: could preemption free ``quantity`` of ``fr`` for the job in ``queue``?"""

    def simulate_preemption(self, queue: Node, fr: FlavorResource, quantity: Decimal) -> tuple[int, int]:
        """(``NO_CANDIDATES``, ``PREEMPT_MODE`` or ``RECLAIM``; the borrowing height once the
        victims are gone), leaving the usage as it found it."""
        ...


class FlavorAssigner:
    """One job's flavor assignment against the tree, asking the oracle where Kueue does."""

    def __init__(
        self,
        queue: Node,
        flavors: Mapping[str, FlavorInfo],
        fair_sharing: bool,
        oracle: PreemptionOracle | None = None,
    ) -> None:
        assert queue.info is not None
        self.node = queue
        self.queue = queue.info
        self.flavors = flavors
        self.oracle = oracle
        preemption = self.queue.preemption
        self.preempt_while_borrowing = preemption.borrow_within_cohort != "Never" or (
            fair_sharing and preemption.reclaim_within_cohort != "Never"
        )
        self.tas_only = bool(self.queue.flavors) and all(
            (f := flavors.get(name)) is not None and f.topology_name is not None for name, _ in self.queue.flavors
        )

    def assign(self, podsets: Sequence[PodSetDemand]) -> Assignment:
        assignment = Assignment([], {})
        for podset in podsets:
            result = self._podset(podset, assignment.usage)
            assignment.podsets.append(result)
            for fr, value in result.usage.items():
                if fr[0]:
                    assignment.usage[fr] = assignment.usage.get(fr, ZERO) + value
            if result.mode == NOFIT:
                break
        return assignment

    def unmatched(self, podsets: Sequence[PodSetDemand]) -> str | None:
        """Why some podSet has no flavor it could ever use in a resource group it asks from (KEP-10852's
        ``NoMatchingFlavor``, decided before quota is looked at); ``None`` when every one has some."""
        for podset in podsets:
            for resource, value in sorted(podset_requests(self.queue, podset).items()):
                group = self.queue.group_of(resource)
                if group is None:
                    if value:
                        return (
                            f"podSet {podset.name}: resource {resource} unavailable in ClusterQueue {self.queue.name}"
                        )
                    continue
                reasons = []
                for flavor in group.flavors:
                    info = self.flavors.get(flavor)
                    mismatch = (
                        ("missing", "not found") if info is None else flavor_mismatch(info, podset, self.tas_only)
                    )
                    if mismatch is None:
                        break
                    reasons.append(f"{flavor}: {mismatch[1]}")
                else:
                    return f"podSet {podset.name}: " + "; ".join(reasons[:10])
        return None

    def _podset(self, podset: PodSetDemand, assumed: dict[FlavorResource, Decimal]) -> PodSetAssignment:
        requests = podset_requests(self.queue, podset)
        result = PodSetAssignment(podset.name, podset.count, requests)
        done: set[str] = set()
        for resource, value in sorted(requests.items()):
            if resource in done:
                continue
            group = self.queue.group_of(resource)
            if group is None:
                if value == 0:
                    continue
                result.reason = NO_MATCHING_FLAVOR
                result.tries.append(
                    (FlavorTry("", NOFIT, 0, NO_MATCHING_FLAVOR, f"resource {resource} unavailable in ClusterQueue"),)
                )
                return result
            wanted = {r: v for r, v in requests.items() if r in group.covered}
            done.update(wanted)
            chosen, tries, fits = self._group(podset, group, wanted, assumed)
            result.tries.append(tries)
            result.groups_fit = result.groups_fit and fits
            if chosen is None:
                reasons = [t.reason for t in tries if t.mode == NOFIT] or [NO_MATCHING_FLAVOR]
                result.reason = min(reasons, key=lambda r: _SEVERITY.get(r, 0))
                return result
            flavor, modes = chosen
            for r, v in wanted.items():
                result.flavors[r] = flavor
                result.modes[r] = modes[r]
                result.usage[(flavor, r)] = v
        return result

    def _group(
        self,
        podset: PodSetDemand,
        group: ResourceGroup,
        wanted: dict[str, Decimal],
        assumed: dict[FlavorResource, Decimal],
    ) -> tuple[tuple[str, dict[str, str]] | None, tuple[FlavorTry, ...], bool]:
        """``findFlavorForPodSets`` for one resource group: the flavor chosen (with each resource's
        own mode), the flavors tried, and whether the chosen flavor fits as a whole (Kueue returns
        no status for the group then, which makes the podSet Fit)."""
        tries: list[FlavorTry] = []
        best: tuple[str, dict[str, str]] | None = None
        best_mode = WORST
        fungibility = self.queue.fungibility
        for flavor in group.flavors:
            info = self.flavors.get(flavor)
            mismatch = (
                ("missing", f"flavor {flavor} not found")
                if info is None
                else flavor_mismatch(info, podset, self.tas_only)
            )
            if mismatch is not None:
                tries.append(FlavorTry(flavor, NOFIT, 0, NO_MATCHING_FLAVOR, mismatch[1]))
                continue
            representative = BEST
            modes: dict[str, str] = {}
            reason, detail, short = "", "", ""
            for resource, value in sorted(wanted.items()):
                fr = (flavor, resource)
                mode, why, text = self._fits(fr, assumed.get(fr, ZERO), value)
                if why and _SEVERITY[why] >= _SEVERITY[reason]:
                    reason, detail, short = why, text, resource
                if is_preferred(representative, mode, fungibility):
                    representative = mode
                if representative.preemption == NO_FIT:
                    # Kueue still checks the flavor's other resources: the most severe reason wins
                    continue
                modes[resource] = mode.mode
            tries.append(
                FlavorTry(
                    flavor,
                    representative.mode,
                    representative.borrow if representative.preemption != NO_FIT else 0,
                    reason if representative.preemption == NO_FIT else "",
                    detail,
                    short,
                )
            )
            if not should_try_next(representative, fungibility):
                return (flavor, modes), tuple(tries), representative.preemption == FIT_MODE
            if is_preferred(representative, best_mode, fungibility):
                best, best_mode = (flavor, modes), representative
        return best, tuple(tries), best is not None and best_mode.preemption == FIT_MODE

    def _fits(self, fr: FlavorResource, assumed: Decimal, request: Decimal) -> tuple[Granular, str, str]:
        """``fitsResourceQuota``: the mode for ``request`` more of ``fr`` on top of ``assumed``."""
        node = self.node
        value = assumed + request
        most = potential_available(node, fr)
        if value > most:
            return (
                Granular(NO_FIT, 0),
                EXCEEDS_MAX_QUOTA,
                f"{fr[1]} in flavor {fr[0]}: {canonical(value, fr[1])} > maximum capacity {canonical(most, fr[1])}",
            )
        borrow, may_reclaim = lowest_fitting_height(node, fr, value)
        free = available(node, fr)
        if value <= free:
            return Granular(FIT_MODE, borrow), "", ""
        short = f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, {canonical(value - free, fr[1])} more needed"
        if node.quota(fr).nominal >= value or may_reclaim or self.preempt_while_borrowing:
            if self.oracle is None:
                return Granular(NO_CANDIDATES, borrow), "", short
            possibility, after = self.oracle.simulate_preemption(node, fr, value)
            return Granular(possibility, after if possibility != NO_CANDIDATES else borrow), "", short
        return Granular(NO_FIT, borrow), WAITING_FOR_QUOTA, short
