"""The quota picture: per ClusterQueue and cohort, the numbers a team reads, Kueue's way.

``explain`` and ``tpu-admission quota`` show, per ClusterQueue, flavor and resource:

- ``nominal`` and the borrowing and lending limits: the ClusterQueue's spec;
- ``inUse``: what its admitted Workloads use (``status.admission``'s usage, summed as
  Kueue's cache sums a ClusterQueue's usage; the store's ledger keeps it);
- ``borrowed``: what it uses beyond its nominal quota (Kueue counts a queue as borrowing
  exactly when its usage passes its nominal quota);
- ``lent``: the part of its unused nominal quota the rest of its cohort tree uses now.
  Kueue does not say who lent what: the tree's borrowing, less the quota the cohorts
  hold themselves (a Cohort's own ``resourceGroups``), is shared among the queues that
  have something to lend (unused nominal, capped by ``lendingLimit``) in proportion to
  it. The sum of ``lent`` over a tree is the part of its borrowing the queues covered;
- ``pending``: what its pending Workloads request. A pending Workload has no flavor yet,
  so its request counts on the first flavor of the resource group that covers the
  resource (the flavor Kueue tries first).

``QuotaPicture`` is built once per snapshot (``Snapshot.quota_picture``, memoized) from
the snapshot's ClusterQueues, Cohorts, usage and pending Workloads; nothing here reads
the cluster.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from webhook.kube.quantity import CONTEXT
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo
from webhook.kueue.hierarchy import Tree, build_tree, subtree_cohorts, subtree_queues
from webhook.kueue.podset import PodSetDemand
from webhook.kueue.resource_node import Node
from webhook.kueue.resources import FlavorQuotas

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class Amounts:
    """One ClusterQueue's numbers for one flavor and resource, in the resource's units.

    ``borrowed``: what it uses beyond its nominal quota, from the cohort. ``lent``: the
    part of its nominal quota other queues of the cohort use now. ``pending``: what its
    pending Workloads request. A limit of ``None`` is no limit.
    """

    nominal: Decimal = Decimal(0)
    in_use: Decimal = Decimal(0)
    borrowed: Decimal = Decimal(0)
    lent: Decimal = Decimal(0)
    pending: Decimal = Decimal(0)
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


#: flavor -> resource -> amounts
FlavorAmounts = Mapping[str, Mapping[str, Amounts]]


@dataclass(frozen=True, slots=True)
class QueueQuota:
    """A ClusterQueue (a team, RFC-0033) and its cohort, ``None`` when it stands alone."""

    name: str
    cohort: str | None
    flavors: FlavorAmounts = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CohortQuota:
    """A cohort: its parent (hierarchical cohorts) and its own quota, when it has any."""

    name: str
    parent: str | None = None
    flavors: FlavorAmounts = field(default_factory=dict)


@dataclass(frozen=True)
class QuotaPicture:
    """Every ClusterQueue's and cohort's numbers. A cohort a queue names without a Cohort
    object exists all the same (Kueue makes it implicitly): it is a root with no quota. The
    walks go through the Kueue model's one cohort tree (``webhook.kueue.hierarchy``), where
    a ``parentName`` cycle is cut loose: each of its cohorts stands as a root."""

    cluster_queues: Mapping[str, QueueQuota] = field(default_factory=dict)
    cohorts: Mapping[str, CohortQuota] = field(default_factory=dict)

    @cached_property
    def tree(self) -> Tree:
        """The cohort tree of the picture's queues and cohorts (its shape only: the numbers are here)."""
        queues = {name: ClusterQueueInfo(name, q.cohort, {}, (), ()) for name, q in self.cluster_queues.items()}
        cohorts = {name: CohortInfo(name, c.parent, ()) for name, c in self.cohorts.items()}
        return build_tree(queues, cohorts)

    def cohort(self, name: str) -> CohortQuota:
        return self.cohorts.get(name) or CohortQuota(name)

    def root(self, cohort: str) -> str:
        """The root of ``cohort``'s tree."""
        node = self.tree.cohorts.get(cohort)
        return node.root().name if node is not None else cohort

    def child_cohorts(self, cohort: str) -> list[str]:
        node = self.tree.cohorts.get(cohort)
        return sorted(child.name for child in node.child_cohorts) if node is not None else []

    def member_queues(self, cohort: str) -> list[QueueQuota]:
        node = self.tree.cohorts.get(cohort)
        return self._queues(node.child_queues) if node is not None else []

    def queues_under(self, cohort: str) -> list[QueueQuota]:
        """The ClusterQueues of ``cohort`` and of every cohort below it, by name."""
        node = self.tree.cohorts.get(cohort)
        return self._queues(subtree_queues(node)) if node is not None else []

    def subtree_cohorts(self, root: str) -> list[str]:
        """``root`` and every cohort below it, each once."""
        node = self.tree.cohorts.get(root)
        return [c.name for c in subtree_cohorts(node)] if node is not None else [root]

    def roots(self) -> list[str]:
        """The root cohorts: of Cohort objects and of the cohorts queues name."""
        return sorted(name for name, node in self.tree.cohorts.items() if node.parent is None)

    def standalone(self) -> list[QueueQuota]:
        return sorted((q for q in self.cluster_queues.values() if not q.cohort), key=lambda q: q.name)

    def _queues(self, nodes: Iterable[Node]) -> list[QueueQuota]:
        return sorted((self.cluster_queues[node.name] for node in nodes), key=lambda q: q.name)


#: (ClusterQueue, flavor, resource) -> amount
QueueAmounts = Mapping[tuple[str, str, str], Decimal]


def pending_requests(
    queue: ClusterQueueInfo, shapes: Iterable[tuple[PodSetDemand, ...]]
) -> dict[tuple[str, str], Decimal]:
    """(flavor, resource) -> what pending Workloads of ``shapes`` request in ``queue``, each
    resource on the first flavor of the group that covers it (see the module)."""
    sums: dict[tuple[str, str], Decimal] = {}
    for shape in shapes:
        for podset in shape:
            for resource, per_pod in podset.requests:
                group = queue.group_of(resource)
                if group is None or not group.flavors or not per_pod:
                    continue
                key = (group.flavors[0], resource)
                sums[key] = CONTEXT.add(sums.get(key, ZERO), CONTEXT.multiply(per_pod, podset.count))
    return sums


def _cohort_flavors(flavors: FlavorQuotas) -> dict[str, dict[str, Amounts]]:
    return {
        flavor: {
            resource: Amounts(quota.nominal, borrowing_limit=quota.borrowing_limit, lending_limit=quota.lending_limit)
            for resource, quota in resources.items()
        }
        for flavor, resources in flavors
    }


def build_picture(
    cluster_queues: Mapping[str, ClusterQueueInfo],
    cohorts: Mapping[str, CohortInfo],
    usage: QueueAmounts,
    pending: QueueAmounts,
) -> QuotaPicture:
    """The picture of every ClusterQueue and cohort (see the module for each number)."""
    cohort_quotas = {
        name: CohortQuota(name, info.parent, _cohort_flavors(info.flavors)) for name, info in cohorts.items()
    }
    skeleton = QuotaPicture({}, cohort_quotas)
    # first pass: nominal, in use, borrowed, pending; what each queue could lend
    numbers: dict[str, dict[tuple[str, str], Amounts]] = {}
    lendable: dict[tuple[str, str, str], Decimal] = {}
    for name, queue in cluster_queues.items():
        keys = {(flavor, resource) for flavor, resources in queue.flavors for resource in resources}
        keys |= {(f, r) for (q, f, r) in usage if q == name} | {(f, r) for (q, f, r) in pending if q == name}
        numbers[name] = {}
        for flavor, resource in keys:
            quota = queue.quotas.get((flavor, resource))
            nominal = quota.nominal if quota is not None else ZERO
            used = usage.get((name, flavor, resource), ZERO)
            unused = max(ZERO, CONTEXT.subtract(nominal, used))
            if quota is not None and quota.lending_limit is not None:
                unused = min(unused, quota.lending_limit)
            lendable[(name, flavor, resource)] = unused if queue.cohort else ZERO
            numbers[name][(flavor, resource)] = Amounts(
                nominal,
                used,
                max(ZERO, CONTEXT.subtract(used, nominal)),
                ZERO,
                pending.get((name, flavor, resource), ZERO),
                quota.borrowing_limit if quota is not None else None,
                quota.lending_limit if quota is not None else None,
            )
    # second pass: each root tree's borrowing beyond its cohorts' own quota, shared among the lenders
    trees: defaultdict[str, list[str]] = defaultdict(list)
    for name, queue in cluster_queues.items():
        if queue.cohort:
            trees[skeleton.root(queue.cohort)].append(name)
    lent: dict[tuple[str, str, str], Decimal] = {}
    for root, members in trees.items():
        own: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
        for cohort in skeleton.subtree_cohorts(root):
            for flavor, resources in cohort_quotas.get(cohort, CohortQuota(cohort)).flavors.items():
                for resource, amounts in resources.items():
                    own[(flavor, resource)] = CONTEXT.add(own[(flavor, resource)], amounts.nominal)
        pairs = {pair for member in members for pair in numbers[member]}
        for flavor, resource in pairs:
            borrowed = sum(
                (numbers[m][(flavor, resource)].borrowed for m in members if (flavor, resource) in numbers[m]), ZERO
            )
            need = max(ZERO, CONTEXT.subtract(borrowed, own[(flavor, resource)]))
            offers = {m: lendable.get((m, flavor, resource), ZERO) for m in members}
            total = sum(offers.values(), ZERO)
            if not need or not total:
                continue
            for member, offer in offers.items():
                if offer:
                    share = offer if need >= total else CONTEXT.divide(CONTEXT.multiply(offer, need), total)
                    lent[(member, flavor, resource)] = share
    queues = {}
    for name, queue in cluster_queues.items():
        flavors: dict[str, dict[str, Amounts]] = defaultdict(dict)
        for (flavor, resource), amounts in sorted(numbers[name].items()):
            given = lent.get((name, flavor, resource), ZERO)
            flavors[flavor][resource] = Amounts(
                amounts.nominal,
                amounts.in_use,
                amounts.borrowed,
                given,
                amounts.pending,
                amounts.borrowing_limit,
                amounts.lending_limit,
            )
        queues[name] = QueueQuota(name, queue.cohort, dict(flavors))
    return QuotaPicture(queues, cohort_quotas)
