"""The cohort tree: every Cohort and ClusterQueue as a resource node, linked by name.

It restates kubernetes-sigs/kueue ``pkg/cache/hierarchy`` and the subtree sums of
``pkg/cache/scheduler`` (``updateCohortResourceNode``; facts only). A Cohort names its
parent (``parentName``); a name no Cohort object answers to is an implicit cohort (no
quota, no parent). A ``parentName`` chain that comes back to itself is a cycle: Kueue
leaves the queues in and under it inactive. Cycles are found here, once, and cut loose
(no walk ever loops); every node in or under one is marked ``cyclic``.

Two callers build the same tree: the simulator with a node per ClusterQueue and usage
added Workload by Workload, and the gates at zero usage from the Cohorts alone, with what
the member queues store in each cohort kept summed (``CohortMembers``) and a node made
for the one queue asked about (``Tree.queue``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo, CohortMembers
from webhook.kueue.resource_node import Node, add_usage, remove_usage
from webhook.kueue.resources import ZERO, FlavorResource, Quota


@dataclass
class Tree:
    """Every Cohort (and, unless built from member sums, every ClusterQueue) as a node."""

    queues: dict[str, Node]
    cohorts: dict[str, Node]
    #: each cohort cycle, its members in ``parentName`` order from the smallest name
    cycles: list[tuple[str, ...]]
    #: what was odd in building it (Workloads counted against a queue or flavor not known), for people
    notes: list[str] = field(default_factory=list)

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

    def queue(self, info: ClusterQueueInfo) -> Node:
        """The node of ``info``: the tree's own, or, in a tree built from member sums, one made now
        under its cohort (its quota is already in the cohort's sums, so it is not listed as a child)."""
        node = self.queues.get(info.name)
        if node is None:
            node = _queue_node(info)
            if info.cohort:
                # a cohort no member sum names yet is an implicit one with nothing stored in it
                node.parent = self.cohorts.get(info.cohort) or Node(info.cohort, {}, Decimal(1))
                node.cyclic = node.parent.cyclic
        return node


def find_cycles(cohorts: Mapping[str, CohortInfo]) -> list[tuple[str, ...]]:
    """Each ``parentName`` cycle among ``cohorts``, in parent order from its smallest name."""
    found: list[tuple[str, ...]] = []
    done: set[str] = set()
    for start in sorted(cohorts):
        chain: list[str] = []
        name: str | None = start
        while name is not None and name not in done:
            if name in chain:
                loop = chain[chain.index(name) :]
                first = loop.index(min(loop))
                found.append(tuple(loop[first:] + loop[:first]))
                break
            chain.append(name)
            info = cohorts.get(name)
            name = info.parent if info is not None else None
        done.update(chain)
    return found


def _cohort_quotas(info: CohortInfo | None) -> dict[FlavorResource, Quota]:
    if info is None:
        return {}
    return {(flavor, r): quota for flavor, resources in info.flavors for r, quota in resources.items()}


def _queue_node(info: ClusterQueueInfo) -> Node:
    node = Node(info.name, dict(info.quotas), info.fair_weight)
    node.info = info
    node.subtree = {fr: quota.nominal for fr, quota in info.quotas.items()}
    return node


def _accumulate(node: Node, members: CohortMembers | None) -> None:
    """``updateCohortResourceNode``: subtree quotas bottom-up (usage is added Workload by Workload)."""
    node.subtree = {fr: quota.nominal for fr, quota in node.quotas.items()}
    stored = members.stored(node.name) if members is not None else None
    for fr, amount in (stored or {}).items():
        node.subtree[fr] = node.subtree.get(fr, ZERO) + amount
    for child in (*node.child_cohorts, *node.child_queues):
        if not child.is_queue:
            _accumulate(child, members)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, ZERO) + quota - child.local_quota(fr)


def build_tree(
    cluster_queues: Mapping[str, ClusterQueueInfo],
    cohorts: Mapping[str, CohortInfo],
    members: CohortMembers | None = None,
) -> Tree:
    """The cohort forest, no usage yet: with ``members``, the Cohorts alone (O(cohorts)), each
    holding its member queues' sums; without, a node per ClusterQueue too (O(queues + cohorts))."""
    cycles = find_cycles(cohorts)
    cyclic = {name for cycle in cycles for name in cycle}
    names = set(cohorts) | {c.parent for c in cohorts.values() if c.parent}
    if members is None:
        names |= {q.cohort for q in cluster_queues.values() if q.cohort}
    else:
        names.update(members.cohorts())
    nodes = {}
    for name in sorted(names):
        info = cohorts.get(name)
        nodes[name] = Node(name, _cohort_quotas(info), info.fair_weight if info is not None else Decimal(1))
    for name, node in nodes.items():
        info = cohorts.get(name)
        if info is not None and info.parent and name not in cyclic:
            node.parent = nodes[info.parent]
            node.parent.child_cohorts.append(node)
    for node in nodes.values():
        node.cyclic = any(a.name in cyclic for a in (node, *node.ancestors()))
    queues = {}
    if members is None:
        for name, queue in sorted(cluster_queues.items()):
            node = _queue_node(queue)
            if queue.cohort:
                node.parent = nodes[queue.cohort]
                node.parent.child_queues.append(node)
                node.cyclic = node.parent.cyclic
            queues[name] = node
    for node in nodes.values():
        if node.parent is None:
            _accumulate(node, members)
    return Tree(queues, nodes, cycles)


def subtree_queues(cohort: Node) -> Iterator[Node]:
    """The ClusterQueues of ``cohort`` and of every cohort below it (cycles are cut: no walk loops)."""
    yield from cohort.child_queues
    for child in cohort.child_cohorts:
        yield from subtree_queues(child)


def subtree_cohorts(cohort: Node) -> Iterator[Node]:
    """``cohort`` and every cohort below it."""
    yield cohort
    for child in cohort.child_cohorts:
        yield from subtree_cohorts(child)
