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
generations: a write that changes quota drops them). The ledger's counters move with
each Workload event (``webhook.quota.ledger``), and so does each queue's sum of
guaranteed chips pending per flavor once it has been worked out (the flavor a pending
Workload takes depends on the queues, so the sums are worked out again after a change to
them, per queue when first read): a queue's guaranteed balance is a few lookups. What
also depends on the Workloads (the flavor assignment within the balance, a guaranteed
job's shortfalls) is memoized per ClusterQueue under what it read of the ledger, that
queue's guaranteed chips in use and pending per flavor: a Workload event drops nothing,
and a request after it searches again only when its queue's chips are ones not seen before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any, Protocol

from webhook.quota.flavorassigner import Assignment, FlavorAssigner
from webhook.quota.ledger import (
    WAITS,
    Balance,
    BalanceAnswer,
    ChipsLedger,
    Shape,
    WorkloadEntry,
    add_pending,
    guaranteed_balance,
    guaranteed_shortfalls,
    pending_chips,
)
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

    @property
    def local_queues(self) -> Mapping[tuple[str, str], str]:
        """(namespace, LocalQueue name) -> the ClusterQueue it points to."""

    def cohorts_unknown(self) -> str | None:
        """Why the Cohort objects cannot be read (the tree above a queue is unknown); ``None`` when they can."""

    def workloads_unknown(self) -> str | None:
        """Why the Workloads cannot be read (what queues hold and wait for is unknown); ``None`` when they can."""


#: answers kept per ClusterQueue, at most (distinct jobs and ledger states asked about)
_QUEUE_MEMO_LIMIT = 256


class QuotaModel:
    """Potential quota, flavor assignment, chips in use and the guaranteed balance."""

    def __init__(self, source: QuotaSource, tpu: str, guaranteed: str, memo: Memo, remember: Remember) -> None:
        self.source = source
        self.tpu = tpu
        self.members = CohortMembers()
        self.ledger = ChipsLedger(guaranteed)
        self.nodes = ResourceNodes(source, self.members, memo, remember)
        self.assigner = FlavorAssigner(source, self.nodes, memo, remember)
        self._memo = memo
        self._remember = remember

    # ------------------------------------------------ what the store tells it

    def add_cluster_queue(self, queue: ClusterQueueInfo) -> None:
        self.members.add(queue)

    def remove_cluster_queue(self, queue: ClusterQueueInfo) -> None:
        self.members.remove(queue)

    def count_workload(self, namespace: str, entry: WorkloadEntry | None, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) one Workload's part of the ledger.

        A guaranteed pending one also moves its ClusterQueue's pending chips, when they are
        summed already (else they are summed from the ledger when first read).
        """
        if entry is None:
            return
        self.ledger.move(namespace, entry, sign)
        if entry.state != WAITS or entry.priority != self.ledger.guaranteed:
            return
        # Pending ones count where their LocalQueue points; one without a LocalQueue counts
        # nowhere until it appears (which drops every memo).
        cluster_queue = self.source.local_queues.get((namespace, entry.local_queue))
        if cluster_queue is None:
            return
        sums = self._memo(("pending chips", cluster_queue))
        if isinstance(sums, dict):
            add_pending(sums, self.assigner.assign(cluster_queue, entry.shape), entry.shape, self.tpu, sign)

    def pending(self, cluster_queue: str) -> dict[str, int]:
        """Per flavor, the queue's guaranteed chips pending: summed once per state of its queues,
        then moved by each Workload event (``count_workload``)."""
        key = ("pending chips", cluster_queue)
        sums = self._memo(key)
        if isinstance(sums, dict):
            return sums

        def assign(shape: Shape) -> Assignment:
            return self.assigner.assign(cluster_queue, shape)

        sums = pending_chips(self.ledger, self.source.queues_of_cq.get(cluster_queue, ()), assign, self.tpu)
        self._remember(key, sums)
        return sums

    def _queue_answers(self, cluster_queue: str, podsets: Sequence[PodSetDemand]) -> tuple[dict[Any, Any], Any]:
        """The queue's answers that read the ledger, and the key of ``podsets``' in it.

        The key holds what the answers read of the ledger, the queue's guaranteed chips in use
        and pending per flavor, so a Workload event drops nothing: a later request with the
        same chips finds its answer. Held in the store's memo, so a change to the queues,
        flavors or nodes drops them as it drops every other answer.
        """
        key = ("ledger answers", cluster_queue)
        answers = self._memo(key)
        if not isinstance(answers, dict) or len(answers) >= _QUEUE_MEMO_LIMIT:
            answers = {}
            self._remember(key, answers)
        return answers, (tuple(podsets), self.ledger_state(cluster_queue))

    def ledger_state(self, cluster_queue: str) -> tuple[tuple[int, int], ...]:
        """What the queue's guaranteed balance reads of the Workloads: per flavor of the queue,
        its guaranteed chips in use and pending (``guaranteed_balance``)."""
        queue = self.source.cluster_queues.get(cluster_queue)
        holding, pending = self.ledger.holding, self.pending(cluster_queue)
        flavors = queue.flavors if queue is not None else ()
        return tuple((holding.get((cluster_queue, name), 0), pending.get(name, 0)) for name, _ in flavors)

    # ------------------------------------------------ answers (``ClusterState``'s quota part)

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        return self.nodes.potential_available(cluster_queue, flavor, resource)

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Assignment:
        if not within_balance:
            return self.assigner.assign(cluster_queue, podsets)
        tpu = self.tpu

        def budget(flavor: str, resource: str) -> Bound | None:
            return self.balance(cluster_queue, flavor).bound() if resource == tpu else None

        if self.source.workloads_unknown() is not None:
            return self.assigner.assign(cluster_queue, podsets, budget)
        answers, key = self._queue_answers(cluster_queue, podsets)
        cached = answers.get(("within balance", key))
        if not isinstance(cached, Assignment):
            cached = answers[("within balance", key)] = self.assigner.assign(cluster_queue, podsets, budget)
        return cached

    def guaranteed_shortfalls(self, cluster_queue: str, podsets: Sequence[PodSetDemand]) -> BalanceAnswer:
        """Where a guaranteed job's chips exceed the queue's balance (``ledger.guaranteed_shortfalls``)."""
        if self.source.workloads_unknown() is not None:
            return guaranteed_shortfalls(self, cluster_queue, podsets, self.tpu)
        answers, key = self._queue_answers(cluster_queue, podsets)
        cached = answers.get(("shortfalls", key))
        if not isinstance(cached, BalanceAnswer):
            cached = answers[("shortfalls", key)] = guaranteed_shortfalls(self, cluster_queue, podsets, self.tpu)
        return cached

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        return self.ledger.in_use.get((cluster_queue, flavor), 0)

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        unknown = self.source.workloads_unknown()
        return guaranteed_balance(
            self.ledger,
            cluster_queue,
            self.source.cluster_queues.get(cluster_queue),
            flavor,
            self.tpu,
            self.pending(cluster_queue) if unknown is None else {},
            unknown or "",
        )
