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
generations: a write that changes quota drops them). What also depends on the Workloads
(the guaranteed balance, and the flavor assignment within it) is memoized per
ClusterQueue and dropped when one of that queue's guaranteed Workloads moves in the
ledger: a Workload event costs the next request on its own queue one recomputation of
that queue's balance, and no other queue's. The ledger's counters themselves move with
each event (``webhook.quota.ledger``), so that recomputation reads counters, not
Workloads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence, Set
from typing import Any, Protocol

from webhook.quota.flavorassigner import Assignment, FlavorAssigner
from webhook.quota.ledger import HOLDS, WAITS, Balance, ChipsLedger, Shape, WorkloadEntry, guaranteed_balance
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


#: answers kept per ClusterQueue between two moves of its ledger, at most (distinct jobs asked about)
_QUEUE_MEMO_LIMIT = 256


class _QueueAnswers:
    """A ClusterQueue's answers that read the ledger, valid while its ledger version stays ``version``."""

    __slots__ = ("answers", "version")

    def __init__(self, version: int) -> None:
        self.version = version
        self.answers: dict[Any, Any] = {}


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
        #: per ClusterQueue, bumped when one of its guaranteed Workloads moves in the ledger
        self.ledger_versions: defaultdict[str, int] = defaultdict(int)

    # ------------------------------------------------ what the store tells it

    def add_cluster_queue(self, queue: ClusterQueueInfo) -> None:
        self.members.add(queue)

    def remove_cluster_queue(self, queue: ClusterQueueInfo) -> None:
        self.members.remove(queue)

    def count_workload(self, namespace: str, entry: WorkloadEntry | None, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) one Workload's part of the ledger."""
        if entry is None:
            return
        self.ledger.move(namespace, entry, sign)
        if entry.priority != self.ledger.guaranteed:
            return  # the balance counts guaranteed Workloads only
        if entry.state == HOLDS:
            self.ledger_versions[entry.cluster_queue] += 1
        elif entry.state == WAITS:
            # Pending ones count where their LocalQueue points; one without a LocalQueue counts
            # nowhere until it appears (which drops every memo).
            cluster_queue = self.source.local_queues.get((namespace, entry.local_queue))
            if cluster_queue is not None:
                self.ledger_versions[cluster_queue] += 1

    def _queue_answers(self, cluster_queue: str) -> dict[Any, Any]:
        """The queue's answers that read the ledger: kept while its ledger does not move.

        Held in the store's memo, so a change to the queues, flavors or nodes drops them as it
        drops every other answer.
        """
        version = self.ledger_versions.get(cluster_queue, 0)
        key = ("ledger answers", cluster_queue)
        held = self._memo(key)
        if isinstance(held, _QueueAnswers) and held.version == version and len(held.answers) < _QUEUE_MEMO_LIMIT:
            return held.answers
        fresh = _QueueAnswers(version)
        self._remember(key, fresh)
        return fresh.answers

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
        answers = self._queue_answers(cluster_queue)
        key = ("within balance", tuple(podsets))
        cached = answers.get(key)
        if not isinstance(cached, Assignment):
            cached = answers[key] = self.assigner.assign(cluster_queue, podsets, budget)
        return cached

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        return self.ledger.in_use.get((cluster_queue, flavor), 0)

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        unknown = self.source.workloads_unknown()
        answers = self._queue_answers(cluster_queue) if unknown is None else {}
        key = ("balance", flavor)
        cached = answers.get(key)
        if isinstance(cached, Balance):
            return cached

        def assign(shape: Shape) -> Assignment:
            return self.assigner.assign(cluster_queue, shape)

        answer = answers[key] = guaranteed_balance(
            self.ledger,
            cluster_queue,
            self.source.cluster_queues.get(cluster_queue),
            flavor,
            self.tpu,
            self.source.queues_of_cq.get(cluster_queue, ()),
            assign,
            unknown or "",
        )
        return answer
