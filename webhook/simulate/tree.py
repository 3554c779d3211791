"""Quota and usage through the cohort tree, as Kueue's scheduler cache keeps them.

It restates kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` and
``fair_sharing.go`` with usage (``webhook.quota.resource_node`` asks the same of an empty
cluster): every ClusterQueue and Cohort is a ``Node`` with quotas per (flavor, resource),
a subtree quota (its own nominal plus what each child stores in it: the child's subtree
less its local quota) and a usage (a queue's: what its Workloads hold; a Cohort's: what
its children use beyond their local quota). ``available`` is what a node can take now,
``potential_available`` what it could with nothing admitted, both capped by borrowing
limits. Usage moves up the tree only past a node's local quota (``addUsage``,
``removeUsage``), so removing and re-adding a Workload (the preemptor's simulation)
restores the tree exactly.

A Cohort whose ``parentName`` chain comes back to itself is cut loose and reported: Kueue
leaves the queues under it inactive; here no walk ever loops.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.quota.objects import ClusterQueueInfo, CohortInfo, Quota
from webhook.quota.resource_node import local_quota
from webhook.simulate.state import COHORTS, FlavorResource, State

ZERO = Decimal(0)
INFINITY = Decimal("Infinity")


class Node:
    """A ClusterQueue or a Cohort: quotas, subtree quota and usage per (flavor, resource)."""

    __slots__ = (
        "child_cohorts",
        "child_queues",
        "cyclic",
        "drs",
        "info",
        "lendable",
        "name",
        "parent",
        "quotas",
        "subtree",
        "usage",
        "version",
        "weight",
    )

    def __init__(self, name: str, quotas: Mapping[FlavorResource, Quota], weight: Decimal) -> None:
        self.name = name
        self.quotas = quotas
        self.weight = weight
        self.parent: Node | None = None
        self.subtree: dict[FlavorResource, Decimal] = {}
        self.usage: dict[FlavorResource, Decimal] = {}
        self.child_queues: list[Node] = []
        self.child_cohorts: list[Node] = []
        #: the ClusterQueue a queue node stands for; ``None`` for a Cohort
        self.info: ClusterQueueInfo | None = None
        #: the node is in (or under) a cohort cycle: Kueue leaves it inactive
        self.cyclic = False
        #: per resource, what this Cohort could lend a child (``calculateLendable``): quota only,
        #: so worked out once
        self.lendable: dict[str, Decimal] | None = None
        #: moves with every usage change; the share below is kept for the version it was worked out at
        self.version = 0
        self.drs: tuple[int, DRS] | None = None

    def __repr__(self) -> str:
        return f"Node({self.name})"

    @property
    def is_queue(self) -> bool:
        return self.info is not None

    def quota(self, fr: FlavorResource) -> Quota:
        return self.quotas.get(fr) or Quota(ZERO)

    def local_quota(self, fr: FlavorResource) -> Decimal:
        return local_quota(self.subtree.get(fr, ZERO), self.quota(fr))

    def local_available(self, fr: FlavorResource) -> Decimal:
        """Kueue's ``LocalAvailable``: guaranteed quota here not yet used, invisible to the parent."""
        return max(ZERO, self.local_quota(fr) - self.usage.get(fr, ZERO))

    def ancestors(self) -> Iterator[Node]:
        """``PathParentToRoot``: the parent, its parent, ... up to the root."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def borrowing_with(self, fr: FlavorResource, value: Decimal) -> bool:
        """Usage plus ``value`` beyond the node's own quota (a queue's nominal, a Cohort's subtree)."""
        own = self.quota(fr).nominal if self.is_queue else self.subtree.get(fr, ZERO)
        return own < self.usage.get(fr, ZERO) + value

    def within_nominal(self, frs: Iterator[FlavorResource] | frozenset[FlavorResource]) -> bool:
        """``IsWithinNominalInResources``: usage within the subtree quota on every one of ``frs``."""
        return all(self.subtree.get(fr, ZERO) >= self.usage.get(fr, ZERO) for fr in frs)


def available(node: Node, fr: FlavorResource) -> Decimal:
    """What ``node`` can take now of ``fr`` (may be negative after over-admission)."""
    if node.parent is None:
        return node.subtree.get(fr, ZERO) - node.usage.get(fr, ZERO)
    above = available(node.parent, fr)
    limit = node.quota(fr).borrowing_limit
    if limit is not None:
        kept = node.local_quota(fr)
        stored = node.subtree.get(fr, ZERO) - kept
        used_above = max(ZERO, node.usage.get(fr, ZERO) - kept)
        above = min(stored - used_above + limit, above)
    return node.local_available(fr) + above


def potential_available(node: Node, fr: FlavorResource) -> Decimal:
    """What ``node`` could take of ``fr`` with nothing admitted anywhere."""
    if node.parent is None:
        return node.subtree.get(fr, ZERO)
    potential = node.local_quota(fr) + potential_available(node.parent, fr)
    limit = node.quota(fr).borrowing_limit
    if limit is not None:
        potential = min(node.subtree.get(fr, ZERO) + limit, potential)
    return potential


def add_usage(node: Node, fr: FlavorResource, value: Decimal) -> None:
    free_here = node.local_available(fr)
    node.usage[fr] = node.usage.get(fr, ZERO) + value
    node.version += 1
    if node.parent is not None and value > free_here:
        add_usage(node.parent, fr, value - free_here)


def remove_usage(node: Node, fr: FlavorResource, value: Decimal) -> None:
    stored_above = node.usage.get(fr, ZERO) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, ZERO) - value
    node.version += 1
    if stored_above > 0 and node.parent is not None:
        remove_usage(node.parent, fr, min(value, stored_above))


def fits_in_quota(node: Node, requests: Mapping[FlavorResource, Decimal]) -> tuple[bool, dict[FlavorResource, Decimal]]:
    """``QuantitiesFitInQuota``: whether ``requests`` fit the node's subtree quota, and what exceeds its local quota."""
    fits = True
    remaining = {}
    for fr, value in requests.items():
        if node.subtree.get(fr, ZERO) < node.usage.get(fr, ZERO) + value:
            fits = False
        remaining[fr] = max(ZERO, value - node.local_available(fr))
    return fits, remaining


def height(node: Node) -> int:
    """``getNodeHeight``: the distance from a Cohort to its furthest leaf."""
    tallest = min(len(node.child_queues) + len(node.child_cohorts), 1)
    for child in node.child_cohorts:
        tallest = max(tallest, height(child) + 1)
    return tallest


def lowest_fitting_height(queue: Node, fr: FlavorResource, value: Decimal) -> tuple[int, bool]:
    """``FindHeightOfLowestSubtreeThatFits``: how far up quota for ``value`` comes from (0: the queue itself),
    and whether that subtree is smaller than the whole tree (reclaim in the hierarchy may help)."""
    if not queue.borrowing_with(fr, value) or queue.parent is None:
        return 0, queue.parent is not None
    remaining = value - queue.local_available(fr)
    for node in queue.ancestors():
        if not node.borrowing_with(fr, remaining):
            return height(node), node.parent is not None
        remaining -= node.local_available(fr)
    return height(queue.root()), False


# ---------------------------------------------------------------- dominant resource share


@dataclass(frozen=True, slots=True)
class DRS:
    """Kueue's ``DRS``: the borrowed share of the dominant resource, ×1000, and the weight."""

    weight: Decimal
    ratio: Decimal = ZERO
    dominant: str = ""
    borrowing: bool = False
    #: ``PreciseWeightedShare``: the ratio over the weight (0 when not borrowing, infinite at weight 0)
    weighted: Decimal = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if self.ratio == 0:
            weighted = ZERO
        elif self.weight == 0:
            weighted = INFINITY
        else:
            weighted = self.ratio / self.weight
        object.__setattr__(self, "weighted", weighted)

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0


NEGATIVE_DRS = DRS(Decimal(1), Decimal(-1))


def compare_drs(a: DRS, b: DRS) -> int:
    """``CompareDRS``: lower is preferred for scheduling, higher for preemption."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    x, y = a.weighted, b.weighted
    return (x > y) - (x < y)


def dominant_resource_share(node: Node, request: Mapping[FlavorResource, Decimal] | None = None) -> DRS:
    """``dominantResourceShare``: per resource, what the node borrows (with ``request`` added) over
    what its parent could lend of it across flavors; the largest ratio wins, ties by name."""
    if request is None and node.drs is not None and node.drs[0] == node.version:
        return node.drs[1]
    share = _dominant_resource_share(node, request)
    if request is None:
        node.drs = (node.version, share)
    return share


def _dominant_resource_share(node: Node, request: Mapping[FlavorResource, Decimal] | None) -> DRS:
    if node.parent is None:
        return DRS(node.weight)
    borrowed: dict[str, Decimal] = {}
    for fr, quota in node.subtree.items():
        amount = (request or {}).get(fr, ZERO) + node.usage.get(fr, ZERO) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], ZERO) + amount
    if not borrowed:
        return DRS(node.weight)
    lendable = node.parent.lendable
    if lendable is None:
        lendable = {}
        for fr in node.root().subtree:
            lendable[fr[1]] = lendable.get(fr[1], ZERO) + potential_available(node.parent, fr)
        node.parent.lendable = lendable
    ratio, dominant = ZERO, ""
    for resource, amount in sorted(borrowed.items()):
        lend = lendable.get(resource, ZERO)
        if lend > 0:
            share = amount * 1000 / lend
            if share > ratio:
                ratio, dominant = share, resource
    return DRS(node.weight, ratio, dominant, True)


# ---------------------------------------------------------------- building the tree


@dataclass
class Tree:
    """Every ClusterQueue and Cohort as a node, usage from the admitted Workloads, and what was odd."""

    queues: dict[str, Node]
    cohorts: dict[str, Node]
    #: each cohort cycle, its members in ``parentName`` order from the smallest name
    cycles: list[tuple[str, ...]]
    #: Workloads counted against a ClusterQueue or flavor the state lacks, and how
    notes: list[str]

    def add(self, queue: str, usage: Mapping[FlavorResource, Decimal]) -> None:
        node = self.queues.get(queue)
        if node is not None:
            for fr, value in usage.items():
                add_usage(node, fr, value)

    def remove(self, queue: str, usage: Mapping[FlavorResource, Decimal]) -> None:
        node = self.queues.get(queue)
        if node is not None:
            for fr, value in usage.items():
                remove_usage(node, fr, value)


def _cohort_quotas(info: CohortInfo | None) -> dict[FlavorResource, Quota]:
    if info is None:
        return {}
    return {(flavor, r): quota for flavor, resources in info.flavors for r, quota in resources.items()}


def _cycles(cohorts: Mapping[str, CohortInfo]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    done: set[str] = set()
    for start in sorted(cohorts):
        chain: list[str] = []
        name: str | None = start
        while name is not None and name not in done:
            if name in chain:
                loop = chain[chain.index(name) :]
                first = loop.index(min(loop))
                found.append(tuple(loop[first:] + loop[:first]))  # in parent order, from the smallest name
                break
            chain.append(name)
            info = cohorts.get(name)
            name = info.parent if info is not None else None
        done.update(chain)
    return found


def _accumulate(node: Node) -> None:
    """``updateCohortResourceNode``: subtree quotas bottom-up (usage is added Workload by Workload)."""
    node.subtree = {fr: quota.nominal for fr, quota in node.quotas.items()}
    for child in (*node.child_cohorts, *node.child_queues):
        if not child.is_queue:
            _accumulate(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, ZERO) + quota - child.local_quota(fr)


def build_tree(state: State) -> Tree:
    """The cohort forest of ``state`` with its admitted Workloads' usage (O(queues + cohorts + Workloads))."""
    cycles = _cycles(state.cohorts)
    cyclic = {name for cycle in cycles for name in cycle}
    names = set(state.cohorts) | {q.cohort for q in state.cluster_queues.values() if q.cohort}
    names |= {c.parent for c in state.cohorts.values() if c.parent}
    cohorts = {}
    for name in sorted(names):
        info = state.cohorts.get(name)
        cohorts[name] = Node(name, _cohort_quotas(info), info.fair_weight if info is not None else Decimal(1))
    for name, node in cohorts.items():
        info = state.cohorts.get(name)
        if info is not None and info.parent and name not in cyclic:
            node.parent = cohorts[info.parent]
            node.parent.child_cohorts.append(node)
    for node in cohorts.values():
        node.cyclic = any(a.name in cyclic for a in (node, *node.ancestors()))
    queues = {}
    for name, queue in sorted(state.cluster_queues.items()):
        node = Node(name, dict(queue.quotas), queue.fair_weight)
        node.info = queue
        node.subtree = {fr: quota.nominal for fr, quota in queue.quotas.items()}
        if queue.cohort:
            node.parent = cohorts[queue.cohort]
            node.parent.child_queues.append(node)
            node.cyclic = node.parent.cyclic
        queues[name] = node
    for node in cohorts.values():
        if node.parent is None:
            _accumulate(node)
    tree = Tree(queues, cohorts, cycles, [])
    if COHORTS in state.missing:
        tree.notes.append("Cohort objects are not in the state: the quota above each cohort is unknown")
    if state.usage is not None:  # a live snapshot's counters: O(queues × flavors), never O(Workloads)
        for name, usage in state.usage.items():
            _add_counted(tree, state, name, usage)
        return tree
    for workload in state.admitted:
        held = state.cluster_queues.get(workload.cluster_queue)
        if held is None:
            tree.notes.append(
                f"Workload {workload.key} is admitted to ClusterQueue {workload.cluster_queue}, which the state lacks"
            )
            continue
        strange = sorted({flavor for flavor, _ in workload.usage if flavor not in {f for f, _ in held.flavors}})
        if strange:
            tree.notes.append(
                f"Workload {workload.key} holds quota of flavor {', '.join(strange)}, which ClusterQueue "
                f"{held.name} does not list; counted there all the same"
            )
        tree.add(workload.cluster_queue, workload.usage)
    return tree


def _add_counted(tree: Tree, state: State, name: str, usage: Mapping[FlavorResource, Decimal]) -> None:
    """A queue's usage as the snapshot counts it, with the notes ``build_tree`` gives Workload by Workload."""
    held = state.cluster_queues.get(name)
    if held is None:
        tree.notes.append(f"Workloads are admitted to ClusterQueue {name}, which the state lacks")
        return
    strange = sorted({flavor for flavor, _ in usage if flavor not in {f for f, _ in held.flavors}})
    if strange:
        tree.notes.append(
            f"ClusterQueue {name} holds quota of flavor {', '.join(strange)}, which it does not list; "
            "counted there all the same"
        )
    tree.add(name, usage)
