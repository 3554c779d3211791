"""The cluster as a request reads it: an immutable, versioned snapshot, and what is memoized on it.

Kueue's shape (``pkg/cache/scheduler``): the cache keeps usage current as events arrive,
and each scheduling cycle reads an immutable ``Snapshot``. Here the store
(``webhook.cluster.store``) is the cache: the watch threads (or the state files) write it
under its lock, and each event moves the counts by its difference. A request asks the
store for its snapshot once (``ClusterStore.snapshot``): the one already published when
nothing changed since (a version comparison and a clock read, no lock), else a new one,
made of the store's parts as they are now. A part that did not change since the last
snapshot is shared with it, answers memoized on it included:

- ``QueueState``: namespaces, LocalQueues, ClusterQueues, Cohorts, ResourceFlavors and
  what the ClusterQueues store in their cohorts, with whether the Cohorts can be read;
  memoized on it: potential quota and flavor assignment (``webhook.quota``);
- ``NodeState``: the node index; memoized on it: node fit and the pools' topologies;
- ``DocumentState``: Kueue's objects as written; memoized on it: the admin guard's judged set;
- the counted Workloads (``webhook.cluster.workloadindex.CountedWorkloads``: the ledger's
  counters, each one's projection, where each is; forked, buckets shared until written),
  and what explain reads of every Workload (``WorkloadRecords``), forked on its own changes;
- which kinds cannot be read, captured with the moment the clock could change that.

Memoized on the ``Snapshot`` itself: whatever also reads the Workloads (the guaranteed
chips pending, the balance, the assignment within it) and the cluster rules' findings
per job shape (``webhook.engine.decision``). Nothing memoized is ever changed: a watch
event changes the store, and the next request gets a new snapshot with new memos for
the parts the event changed; the old snapshot and its memos go when no request holds it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from decimal import Decimal
from typing import Any

from webhook.cluster import kinds as k
from webhook.cluster.memo import Memo
from webhook.cluster.nodes import NodeIndex
from webhook.cluster.workloadindex import PLACED, UNPLACED, CountedWorkloads, LocatedSet, Where, WorkloadRecords
from webhook.kube.scheduling import Toleration
from webhook.kube.topology import NODEPOOL_LABEL
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo, CohortMembers
from webhook.kueue.podset import PodSetDemand
from webhook.kueue.potential import Bound, ResourceNodes
from webhook.kueue.resourceflavor import FlavorInfo
from webhook.kueue.workload import HOLDS, WAITS, WorkloadInfo
from webhook.policy.config import Policy
from webhook.quota.feasibility import Feasibility, FeasibilityCheck
from webhook.quota.ledger import Balance, BalanceAnswer
from webhook.quota.model import QuotaModel
from webhook.quota.objects import NodeFit
from webhook.quota.picture import QuotaPicture, build_picture, pending_requests

WorkloadKey = tuple[str, str]


class QueueState:
    """The queues, cohorts, flavors and namespaces of one snapshot; potential quota and flavor
    assignment are memoized on it (``memo``)."""

    def __init__(
        self,
        namespaces: Mapping[str, Mapping[str, str]],
        local_queues: Mapping[tuple[str, str], str],
        queues_of_cq: Mapping[str, Set[tuple[str, str]]],
        cluster_queues: Mapping[str, ClusterQueueInfo],
        cohorts: Mapping[str, CohortInfo],
        flavors: Mapping[str, FlavorInfo],
        members: CohortMembers,
        cohorts_reason: str | None,
    ) -> None:
        self.namespaces = namespaces
        self.local_queues = local_queues
        self.queues_of_cq = queues_of_cq
        self.cluster_queues = cluster_queues
        self.cohorts = cohorts
        self.flavors = flavors
        self.members = members
        #: ``"Cohorts: <why>"`` when the Cohort objects cannot be read
        self.cohorts_reason = cohorts_reason
        self.memo = Memo()
        self.nodes = ResourceNodes(self, members, self.memo.get, self.memo.keep)
        self.assigner = FeasibilityCheck(self, self.nodes, self.memo.get, self.memo.keep)

    def cohorts_unknown(self) -> str | None:
        return self.cohorts_reason

    def with_cohorts_reason(self, reason: str | None) -> QueueState:
        """The same objects under another answer about the Cohorts (new memo: potential quota reads it)."""
        return QueueState(
            self.namespaces,
            self.local_queues,
            self.queues_of_cq,
            self.cluster_queues,
            self.cohorts,
            self.flavors,
            self.members,
            reason,
        )


class DocumentState:
    """Kueue's objects as written (``webhook.cluster.documents``) of one snapshot: kind name -> store
    key -> kept document. Shared by the snapshots published while no kept document changes (a
    Workload or a Node event leaves it), so what is worked out from the documents alone (the admin
    guard's judged set) is memoized on it and outlives those events."""

    __slots__ = ("by_kind", "memo")

    def __init__(self, by_kind: Mapping[str, Mapping[Any, Mapping[str, Any]]] | None = None) -> None:
        self.by_kind: Mapping[str, Mapping[Any, Mapping[str, Any]]] = by_kind or {}
        self.memo = Memo()


class NodeState:
    """The node index of one snapshot (a copy nothing moves); node fit is memoized on it."""

    def __init__(self, index: NodeIndex, tpu: str) -> None:
        self.index = index
        self.memo = Memo()
        #: the static pool topologies the node labels advertise
        self.topologies = index.topologies()
        #: chips on all nodes of the TPU accelerator; ``None`` when no node advertises the resource
        self.accelerator_chips = index.accelerator_chips if tpu in index.advertised else None

    def fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Toleration],
        tolerate_keys: frozenset[str],
    ) -> NodeFit:
        key = (tuple(sorted(selector.items())), tuple(sorted(requests.items())), tuple(tolerations), tolerate_keys)
        held = self.memo.get(key)
        if held is None:
            held = self.index.fit(selector, requests, tolerations, tolerate_keys)
            self.memo.keep(key, held)
        return held  # type: ignore[no-any-return]

    def pools(self, selector: tuple[tuple[str, str], ...]) -> Mapping[str, int]:
        """Node pool -> its schedulable nodes, of the nodes carrying every label of ``selector`` (static
        mode's slices: one whole pool each), memoized. Cordoned nodes take no new pods, so a pool with
        one counts fewer hosts."""
        key = ("pools", selector)
        held = self.memo.get(key)
        if held is None:
            index = self.index
            counted: dict[str, int] = {}
            for name in index.matching(dict(selector)):
                node = index.nodes[name]
                pool = node.labels.get(NODEPOOL_LABEL)
                if pool:
                    counted[pool] = counted.get(pool, 0) + (0 if node.unschedulable else 1)
            held = counted
            self.memo.keep(key, held)
        return held  # type: ignore[no-any-return]

    def pool_of(self, label: str, value: str) -> str | None:
        """The node pool of the node(s) a topology domain names (the pool itself, or a hostname's)."""
        if label == NODEPOOL_LABEL:
            return value
        index = self.index
        for name in index.label_index.get((label, value)) or ():
            node = index.nodes.get(name)
            pool = node.labels.get(NODEPOOL_LABEL) if node is not None else None
            if pool:
                return pool
        return None


class Snapshot:
    """One state of the cluster, never changed: what every rule of a request reads (``ClusterView``)."""

    def __init__(
        self,
        version: int,
        policy_tpu: str,
        queues: QueueState,
        nodes: NodeState,
        counted: CountedWorkloads,
        availability: tuple[int, dict[str, str], float],
        policy: Policy,
        *,
        records: WorkloadRecords | None = None,
        records_version: int = 0,
        memo: Memo | None = None,
        documents: DocumentState | None = None,
    ) -> None:
        #: the store's count of changes this snapshot holds
        self.version = version
        self.tpu = policy_tpu
        self.queues = queues
        self.nodes = nodes
        #: the counted Workloads (``webhook.cluster.workloadindex``): the ledger's counters, each one's
        #: projection by key, and where each is (the simulator reads one queue's Workloads through it)
        self.counted = counted
        self.ledger = counted.ledger
        self.workloads = counted.entries
        #: (the availability's change count, kinds that cannot be read with why, until when that holds)
        self.availability_changes, self.unread, self.until = availability
        #: the policy the store reads objects with: answers memoized here are for it alone
        self.policy = policy
        #: what ``explain`` reads of each Workload (``webhook.cluster.workloadindex``) and its change count
        self.record_tables = records if records is not None else WorkloadRecords()
        self.records: Mapping[WorkloadKey, WorkloadInfo] = self.record_tables.by_key
        self.records_version = records_version
        self.memo = memo if memo is not None else Memo()
        #: the kept documents (Kueue's objects as written), as the store kept them
        self.documents = documents if documents is not None else DocumentState()
        #: kind name -> key -> kept document (LocalQueues, Kueue's Configuration)
        self.kept = self.documents.by_kind
        workloads_reason = self.unread.get(k.WORKLOADS.name)
        self.quota = QuotaModel(
            queues,
            queues.nodes,
            queues.assigner,
            counted.ledger,
            policy_tpu,
            f"{k.WORKLOADS.name}: {workloads_reason}" if workloads_reason is not None else None,
            self.memo.get,
            self.memo.keep,
        )

    def snapshot(self) -> Snapshot:
        """``ClusterState.snapshot``: a snapshot is its own."""
        return self

    def cache_sizes(self) -> list[tuple[str, int, int]]:
        """(cache, entries, bytes) of what is memoized on this snapshot and its parts: for the
        cache-size metric (``ClusterStore.cache_sizes`` adds the store's sharing table)."""
        return [
            ("snapshot_memo", len(self.memo.answers), self.memo.bytes),
            ("queue_memo", len(self.queues.memo.answers), self.queues.memo.bytes),
            ("node_memo", len(self.nodes.memo.answers), self.nodes.memo.bytes),
            ("document_memo", len(self.documents.memo.answers), self.documents.memo.bytes),
            ("part_memo", *self._part_memos()),
        ]

    def _part_memos(self) -> tuple[int, int]:
        """Entries and bytes of the index parts' memos, summed (O(parts), for the metric)."""
        entries = size = 0
        for part in self.counted.located.values():
            memo = part.kept if isinstance(part, LocatedSet) else None
            if memo is not None:
                entries, size = entries + len(memo.answers), size + memo.bytes
        return entries, size

    def part_memo(self, where: tuple[str, str, str]) -> Memo | None:
        """The memo of the index part at ``where`` (``(HOLDS, ClusterQueue, "")``, ``(WAITS,
        namespace, LocalQueue)``): what is worked out from that part's Workloads alone is kept
        there, and outlives Workload events elsewhere. ``None`` when the part is empty: then it is
        worked out each time it is asked."""
        part = self.counted.located.get(where)
        return part.memo if isinstance(part, LocatedSet) else None

    def remember(self, key: Any, make: Callable[[], Any], *, derived: bool = False) -> Any:
        """The answer memoized under ``key`` on this snapshot, worked out by ``make`` the first time
        (``derived``: from the cluster alone, under a key of the code's own; see ``Memo``)."""
        return self.memo.remember(key, make, derived=derived)

    def without(self, keys: Iterable[WorkloadKey]) -> Snapshot:
        """This state as if the Workloads ``keys`` were not there (``audit`` judges an object against
        the cluster less its own Workloads): the same queues and nodes, memos included; the
        Workloads counted again without them."""
        counted = self.counted.fork()
        for key in keys:
            counted.pop(key)
        changes = (self.availability_changes, self.unread, self.until)
        return Snapshot(
            self.version,
            self.tpu,
            self.queues,
            self.nodes,
            counted,
            changes,
            self.policy,
            records=self.record_tables,
            records_version=self.records_version,
            documents=self.documents,
        )

    def with_records(
        self,
        records: WorkloadRecords,
        records_version: int,
        availability: tuple[int, dict[str, str], float],
    ) -> Snapshot:
        """This state with newer Workload records (``explain``'s) and availability: nothing memoized
        reads either (the caller keeps which kinds cannot be read, and why, as they were), so the
        memos are shared with this snapshot."""
        return Snapshot(
            self.version,
            self.tpu,
            self.queues,
            self.nodes,
            self.counted,
            availability,
            self.policy,
            records=records,
            records_version=records_version,
            memo=self.memo,
            documents=self.documents,
        )

    # ---------------------------------------------------------------- ClusterView

    def unavailable(self, kinds: frozenset[str]) -> dict[str, str]:
        unread = self.unread
        if not unread:
            return {}
        return {kind: unread[kind] for kind in kinds if kind in unread}

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        if k.NAMESPACES.name in self.unread:
            return None
        return self.queues.namespaces.get(namespace)

    def static_topologies(self) -> frozenset[str]:
        return frozenset() if k.NODES.name in self.unread else self.nodes.topologies

    def local_queue(self, namespace: str, name: str) -> str | None:
        return self.queues.local_queues.get((namespace, name))

    def local_queue_names(self, namespace: str) -> list[str]:
        return sorted(name for ns, name in self.queues.local_queues if ns == namespace)

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None:
        return self.queues.cluster_queues.get(name)

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Feasibility:
        return self.quota.assign(cluster_queue, podsets, within_balance)

    def guaranteed_shortfalls(self, cluster_queue: str, podsets: Sequence[PodSetDemand]) -> BalanceAnswer:
        return self.quota.guaranteed_shortfalls(cluster_queue, podsets)

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        return self.quota.potential(cluster_queue, flavor, resource)

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        return self.quota.in_use(cluster_queue, flavor)

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        return self.quota.balance(cluster_queue, flavor)

    def node_fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Toleration] = (),
        tolerate_keys: frozenset[str] = frozenset(),
    ) -> NodeFit:
        return self.nodes.fit(selector, requests, tolerations, tolerate_keys)

    def node_pools(self, topology: str) -> int:
        return self.nodes.index.node_pools(topology)

    def accelerator_chips(self) -> Decimal | None:
        return self.nodes.accelerator_chips

    # ---------------------------------------------------------------- what explain and quota read

    def quota_picture(self) -> QuotaPicture:
        """Every ClusterQueue's and cohort's nominal, in use, borrowed, lent and pending per flavor
        and resource (``webhook.quota.picture``), memoized."""

        def make() -> QuotaPicture:
            queues = self.queues.cluster_queues
            pending: dict[tuple[str, str, str], Decimal] = {}
            for name, queue in queues.items():
                shapes = (entry.shape for _, _, entry in self.waiting_in(name))
                for (flavor, resource), amount in pending_requests(queue, shapes).items():
                    pending[(name, flavor, resource)] = amount
            return build_picture(queues, self.queues.cohorts, dict(self.ledger.usage.items()), pending)

        return self.remember("quota picture", make, derived=True)  # type: ignore[no-any-return]

    # ---------------------------------------------------------------- what the simulator reads

    def holding_in(self, cluster_queue: str) -> list[tuple[str, str, WorkloadInfo]]:
        """(namespace, name, entry) of the Workloads holding quota in the queue: O(the queue's
        Workloads) through the index, not memoized (the caller memoizes what it builds)."""
        return self._located((HOLDS, cluster_queue, ""))

    def waiting_in(self, cluster_queue: str) -> list[tuple[str, str, WorkloadInfo]]:
        """(namespace, name, entry) of the Workloads waiting in the queue's LocalQueues, unordered."""
        out: list[tuple[str, str, WorkloadInfo]] = []
        for namespace, local in self.local_queues_of(cluster_queue):
            out.extend(self.waiting_at(namespace, local))
        return out

    def local_queues_of(self, cluster_queue: str) -> list[tuple[str, str]]:
        """(namespace, LocalQueue) of the LocalQueues that point at ``cluster_queue``, sorted."""
        local_queues = self.queues.local_queues
        return [
            key
            for key in sorted(self.queues.queues_of_cq.get(cluster_queue, ()))
            if local_queues.get(key) == cluster_queue
        ]

    def waiting_at(self, namespace: str, local: str) -> list[tuple[str, str, WorkloadInfo]]:
        """(namespace, name, entry) of the Workloads waiting in one LocalQueue."""
        return self._located((WAITS, namespace, local))

    def _located(self, where: Where) -> list[tuple[str, str, WorkloadInfo]]:
        out = []
        for key in sorted(self.counted.at(where)):
            entry = self.workloads.get(key)
            if entry is not None:
                out.append((key[0], key[1], entry))
        return out

    def occupied(self) -> tuple[dict[tuple[str, str], Set[WorkloadKey]], tuple[WorkloadKey, ...]]:
        """(node label, value) of each topology domain an admitted Workload occupies -> those Workloads
        (the index's own sets, read only), and the admitted Workloads whose ``topologyAssignment``
        cannot be read (memoized). O(queues + domains): the index's keys, never its Workloads, are
        walked; a caller expands only the domains it asks about."""

        def make() -> tuple[dict[tuple[str, str], Set[WorkloadKey]], tuple[WorkloadKey, ...]]:
            located = self.counted.located
            domains: dict[tuple[str, str], Set[WorkloadKey]] = {
                (where[1], where[2]): keys for where, keys in located.items() if where[0] == PLACED and keys
            }
            return domains, tuple(sorted(located.get((UNPLACED, "", "")) or ()))

        return self.remember("occupied domains", make, derived=True)  # type: ignore[no-any-return]

    def queue_usages(self) -> dict[str, dict[tuple[str, str], Decimal]]:
        """ClusterQueue -> (flavor, resource) -> usage, from the counters in one pass (memoized):
        O(queues × flavors × resources), whatever the number of Workloads."""

        def make() -> dict[str, dict[tuple[str, str], Decimal]]:
            out: defaultdict[str, dict[tuple[str, str], Decimal]] = defaultdict(dict)
            for (queue, flavor, resource), amount in self.ledger.usage.items():
                out[queue][(flavor, resource)] = amount
            return dict(out)

        return self.remember("queue usages", make, derived=True)  # type: ignore[no-any-return]

    def kept_documents(self, kind: k.Kind) -> list[Mapping[str, Any]]:
        """The kind's kept documents this snapshot carries (LocalQueues, Kueue's Configuration)."""
        return list(self.kept.get(kind.name, {}).values())
