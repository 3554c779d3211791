"""Quota and usage of one resource node, as Kueue's scheduler cache keeps them.

It restates kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` (facts only, in
our words). ClusterQueues and Cohorts are both resource nodes, with quotas per (flavor,
resource) (nominal, borrowingLimit, lendingLimit):

- **Subtree quota** (``SubtreeQuota``): a ClusterQueue's is its nominal quota; a Cohort's
  is its own nominal plus, from each child, the child's subtree quota less its local quota:
  what the child stores in its parent (``webhook.kueue.hierarchy`` adds them up).
- **Local quota** (``localQuota``): what a node keeps to its own subtree and never lends:
  subtree − lendingLimit (never below zero) when a lendingLimit is set, else nothing.
- **Usage**: a queue's is what its Workloads hold; a Cohort's what its children use beyond
  their local quota. Usage moves up only past a node's local quota (``addUsage``,
  ``removeUsage``), so taking a Workload out and putting it back restores every node.
- **Available** (``available``): what a node can take now: its unused local quota plus
  what its parent can give, capped at subtree + borrowingLimit − usage when a
  borrowingLimit is set; at the root, subtree − usage (negative after over-admission).
- **Potential available** (``potentialAvailable``): available with nothing admitted
  anywhere, "could it ever fit" beside "does it fit now". It is worked out by the same
  walk with every usage read as zero, so the two cannot disagree on an empty cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal

from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.resources import ZERO, FlavorResource, Quota

#: how a walk reads a node's usage of one (flavor, resource)
Usage = Callable[["Node", FlavorResource], Decimal]


def local_quota(subtree: Decimal, quota: Quota) -> Decimal:
    """Kueue's ``localQuota``: what a node keeps from its parent (subtree − lendingLimit, ≥ 0)."""
    if quota.lending_limit is None:
        return ZERO
    return max(ZERO, subtree - quota.lending_limit)


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
        #: so worked out once (``webhook.kueue.fair_sharing``)
        self.lendable: dict[str, Decimal] | None = None
        #: moves with every usage change; the share below is kept for the version it was worked out at
        self.version = 0
        #: (version, dominant resource share) as ``webhook.kueue.fair_sharing`` last worked it out
        self.drs: tuple[int, object] | None = None

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

    def within_nominal(self, frs: Iterable[FlavorResource]) -> bool:
        """``IsWithinNominalInResources``: usage within the subtree quota on every one of ``frs``."""
        return all(self.subtree.get(fr, ZERO) >= self.usage.get(fr, ZERO) for fr in frs)


def _used(node: Node, fr: FlavorResource) -> Decimal:
    return node.usage.get(fr, ZERO)


def _unused(node: Node, fr: FlavorResource) -> Decimal:
    return ZERO


def available(node: Node, fr: FlavorResource, used: Usage = _used) -> Decimal:
    """What ``node`` can take now of ``fr`` (may be negative after over-admission).

    Past a borrowingLimit the node's usage above its local quota and what it may still take
    from above add up to at most what it stores above plus the limit, so the cap is
    subtree + borrowingLimit − usage whether or not the node uses its local quota up.
    """
    usage = used(node, fr)
    subtree = node.subtree.get(fr, ZERO)
    if node.parent is None:
        return subtree - usage
    here = max(ZERO, local_quota(subtree, node.quota(fr)) - usage) + available(node.parent, fr, used)
    limit = node.quota(fr).borrowing_limit
    if limit is not None:
        here = min(subtree + limit - usage, here)
    return here


def potential_available(node: Node, fr: FlavorResource) -> Decimal:
    """What ``node`` could take of ``fr`` with nothing admitted anywhere: ``available`` at zero usage."""
    return available(node, fr, _unused)


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
