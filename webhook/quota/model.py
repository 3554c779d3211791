"""The quota model: Kueue's quota picture over the cached objects, in one place.

The store (``webhook.cluster.store``) keeps the objects, their indexes and the lock; it
hands this model a read-only view of them (``QuotaSource``) and tells it when a
ClusterQueue or a Workload comes or goes. Everything quota is answered here, by the
modules that follow Kueue's own split (kubernetes-sigs/kueue):

- ``webhook.quota.resource_node`` (``pkg/cache/scheduler/resource_node.go``): subtree
  quota, local quota, potential available through the cohort tree;
- ``webhook.quota.flavorassigner`` (``pkg/scheduler/flavorassigner``): flavor
  eligibility and assignment against that potential quota, several podSets through
  ``webhook.quota.combinations``;
- ``webhook.quota.ledger`` (``pkg/workload``, ``pkg/cache``'s usage): what Workloads
  hold and wait for, and the guaranteed balance (ours, not Kueue's);
- ``webhook.quota.podsets`` (``pkg/workload``, ``PodSetResources``): a podSet's requests
  and pod count.

Answers are memoized through the store's ``memo``/``remember`` (keyed by its
generations: a write that changes quota drops them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Protocol

from webhook.quota.flavorassigner import Assignment, FlavorAssigner
from webhook.quota.ledger import Balance, ChipsLedger, Shape, WorkloadEntry, guaranteed_balance
from webhook.quota.objects import ClusterQueueInfo, CohortInfo, FlavorInfo
from webhook.quota.podsets import PodSetDemand
from webhook.quota.resource_node import Bound, CohortMembers, Memo, Remember, ResourceNodes


class QuotaSource(Protocol):
    """The read-only view of the store the model reads (``ClusterStore`` is one)."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def cohorts(self) -> Mapping[str, CohortInfo]: ...

    @property
    def flavors(self) -> Mapping[str, FlavorInfo]: ...

    @property
    def children(self) -> Mapping[str, Set[str]]:
        """Cohort name -> the Cohort objects whose ``parentName`` names it."""

    @property
    def queues_of_cq(self) -> Mapping[str, Set[tuple[str, str]]]:
        """ClusterQueue name -> the (namespace, name) of the LocalQueues that point to it."""

    def cohorts_unknown(self) -> str | None:
        """Why the Cohort objects cannot be read (the tree above a queue is unknown); ``None`` when they can."""

    def workloads_unknown(self) -> str | None:
        """Why the Workloads cannot be read (what queues hold and wait for is unknown); ``None`` when they can."""


class QuotaModel:
    """Potential quota, flavor assignment, chips in use and the guaranteed balance."""

    def __init__(self, source: QuotaSource, tpu: str, guaranteed: str, memo: Memo, remember: Remember) -> None:
        self.source = source
        self.tpu = tpu
        self.members = CohortMembers()
        self.ledger = ChipsLedger(guaranteed)
        self.nodes = ResourceNodes(source, self.members, memo, remember)
        self.assigner = FlavorAssigner(source, self.nodes, memo, remember)

    # ------------------------------------------------ what the store tells it

    def add_cluster_queue(self, queue: ClusterQueueInfo) -> None:
        self.members.add(queue)

    def remove_cluster_queue(self, queue: ClusterQueueInfo) -> None:
        self.members.remove(queue)

    def count_workload(self, namespace: str, entry: WorkloadEntry | None, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) one Workload's part of the ledger."""
        self.ledger.move(namespace, entry, sign)

    # ------------------------------------------------ answers (``ClusterState``'s quota part)

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        return self.nodes.potential_available(cluster_queue, flavor, resource)

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Assignment:
        if not within_balance:
            return self.assigner.assign(cluster_queue, podsets)
        tpu = self.tpu

        def budget(flavor: str, resource: str) -> Bound | None:
            return self.balance(cluster_queue, flavor).bound() if resource == tpu else None

        return self.assigner.assign(cluster_queue, podsets, budget)

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        return self.ledger.in_use.get((cluster_queue, flavor), 0)

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        def assign(shape: Shape) -> Assignment:
            return self.assigner.assign(cluster_queue, shape)

        return guaranteed_balance(
            self.ledger,
            cluster_queue,
            self.source.cluster_queues.get(cluster_queue),
            flavor,
            self.tpu,
            self.source.queues_of_cq.get(cluster_queue, ()),
            assign,
            self.source.workloads_unknown() or "",
        )
