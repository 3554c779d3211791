"""The quota model: Kueue's quota picture over one snapshot of the cluster, in one place.

A snapshot (``webhook.cluster.snapshot``) hands this model its immutable parts: the
queues, cohorts and flavors (``QuotaSource``), with the cohort tree's potential quota and
the flavor assigner built on them, and the counted Workloads (a ``LedgerView``). Everything
quota is answered here, by the modules that follow Kueue's own split
(kubernetes-sigs/kueue):

- ``webhook.kueue.potential`` over ``webhook.kueue.resource_node``
  (``pkg/cache/scheduler/resource_node.go``): what a queue could ever hold through its
  cohort tree, a bound even when the Cohorts are unknown;
- ``webhook.quota.feasibility`` (``pkg/scheduler/flavorassigner``): flavor
  eligibility and assignment against that potential quota, several podSets through
  ``webhook.quota.combinations``;
- ``webhook.quota.ledger`` (``pkg/workload``, ``pkg/cache``'s usage): what Workloads
  hold and wait for, and the guaranteed balance (ours, not Kueue's);
- ``webhook.quota.podsets`` (``pkg/workload``, ``PodSetResources``): a podSet's requests
  and pod count.

What reads the Workloads (the guaranteed chips pending per flavor, the assignment within
the balance, a guaranteed job's shortfalls) is memoized in ``memo``, the snapshot's own:
it dies with the snapshot, so no answer outlives the state it was worked out from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Protocol

from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo
from webhook.kueue.podset import PodSetDemand
from webhook.kueue.potential import Bound, Memo, Remember, ResourceNodes
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.kueue.workload import Shape
from webhook.quota.feasibility import Feasibility, FeasibilityCheck
from webhook.quota.ledger import (
    Balance,
    BalanceAnswer,
    LedgerView,
    guaranteed_balance,
    guaranteed_shortfalls,
    pending_chips,
)


class QuotaSource(Protocol):
    """The queues, cohorts and flavors of one snapshot, as the model reads them."""

    @property
    def cluster_queues(self) -> Mapping[str, ClusterQueueInfo]: ...

    @property
    def cohorts(self) -> Mapping[str, CohortInfo]: ...

    @property
    def flavors(self) -> Mapping[str, FlavorInfo]: ...

    @property
    def queues_of_cq(self) -> Mapping[str, Set[tuple[str, str]]]:
        """ClusterQueue name -> the (namespace, name) of the LocalQueues that point to it."""

    def cohorts_unknown(self) -> str | None:
        """Why the Cohort objects cannot be read (the tree above a queue is unknown); ``None`` when they can."""


class QuotaModel:
    """Potential quota, flavor assignment, chips in use and the guaranteed balance, for one snapshot."""

    def __init__(
        self,
        source: QuotaSource,
        nodes: ResourceNodes,
        assigner: FeasibilityCheck,
        ledger: LedgerView,
        tpu: str,
        workloads_unknown: str | None,
        memo: Memo,
        remember: Remember,
    ) -> None:
        self.source = source
        self.nodes = nodes
        self.assigner = assigner
        self.ledger = ledger
        self.tpu = tpu
        #: why the Workloads cannot be read (``"Workloads: …"``); ``None`` when they can
        self.workloads_unknown = workloads_unknown
        self._memo = memo
        self._remember = remember

    def pending(self, cluster_queue: str) -> dict[str, int]:
        """Per flavor, the queue's guaranteed chips pending: the ledger's waiting shapes of the
        LocalQueues that point to it, each on the flavors Kueue's assignment gives it."""
        key = ("pending chips", cluster_queue)
        sums = self._memo(key)
        if not isinstance(sums, dict):

            def assign(shape: Shape) -> Feasibility:
                return self.assigner.assign(cluster_queue, shape)

            queues = self.source.queues_of_cq.get(cluster_queue, ())
            sums = pending_chips(self.ledger, sorted(queues), assign, self.tpu)
            self._remember(key, sums)
        return sums

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        return self.nodes.potential_available(cluster_queue, flavor, resource)

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Feasibility:
        if not within_balance:
            return self.assigner.assign(cluster_queue, podsets)
        key = ("within balance", cluster_queue, tuple(podsets))
        held = self._memo(key)
        if not isinstance(held, Feasibility):
            tpu = self.tpu

            def budget(flavor: str, resource: str) -> Bound | None:
                return self.balance(cluster_queue, flavor).bound() if resource == tpu else None

            held = self.assigner.assign(cluster_queue, podsets, budget)
            self._remember(key, held)
        return held

    def guaranteed_shortfalls(self, cluster_queue: str, podsets: Sequence[PodSetDemand]) -> BalanceAnswer:
        """Where a guaranteed job's chips exceed the queue's balance (``ledger.guaranteed_shortfalls``)."""
        key = ("shortfalls", cluster_queue, tuple(podsets))
        held = self._memo(key)
        if not isinstance(held, BalanceAnswer):
            held = guaranteed_shortfalls(self, cluster_queue, podsets, self.tpu)
            self._remember(key, held)
        return held

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        return self.ledger.in_use.get((cluster_queue, flavor), 0)

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        unknown = self.workloads_unknown
        return guaranteed_balance(
            self.ledger,
            cluster_queue,
            self.source.cluster_queues.get(cluster_queue),
            flavor,
            self.tpu,
            self.pending(cluster_queue) if unknown is None else {},
            unknown or "",
        )
