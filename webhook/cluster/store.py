"""The in-memory cluster state both sources fill, and the answers the rules read.

``ClusterStore`` implements ``ClusterState``. The watch cache feeds it events from
background threads; the state files (``webhook.cluster.statefiles``) feed it once.
Writers take the lock per object; readers that walk a collection take it too, so a
request never sees a half-applied event. Every answer a request needs is an index
lookup or a memo keyed by a generation counter that writes bump: requests never sum
Workloads or scan every node twice.

The store keeps objects, indexes and the lock, nothing more: quota (the cohort sums, the
chips ledger, potential quota, flavor assignment, the guaranteed balance) is the quota
model's (``webhook.quota.model``), which reads the store as its ``QuotaSource`` and is
told when a ClusterQueue or a Workload comes or goes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import msgspec

from webhook.cluster import kinds as k
from webhook.cluster.availability import Availability
from webhook.cluster.documents import KeptDocuments
from webhook.cluster.nodes import NodeIndex
from webhook.policy.config import Policy
from webhook.quota.flavorassigner import Assignment
from webhook.quota.ledger import Balance, BalanceAnswer, WorkloadEntry, project
from webhook.quota.model import QuotaModel
from webhook.quota.objects import (
    ClusterQueueInfo,
    CohortInfo,
    FlavorInfo,
    NodeFit,
    Toleration,
    parse_cluster_queue,
    parse_cohort,
    parse_flavor,
    parse_node,
    string_map,
)
from webhook.quota.podsets import PodSetDemand
from webhook.quota.resource_node import Bound

Key = str | tuple[str, str]
#: objects indexed per lock hold during a first list
_CHUNK = 1000
_MEMO_LIMIT = 4096
#: the kinds the job rules read (the admin guard's are not among them)
_JOB_KINDS = tuple(kind.name for kind in k.KINDS)


def object_key(kind: k.Kind, obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    name = str(metadata.get("name", ""))
    return (sys.intern(str(metadata.get("namespace", ""))), name) if kind.namespaced else name


class ClusterStore:
    """Bookkeeping: the objects (parsed), their indexes and the lock. Quota is ``self.quota``."""

    def __init__(self, policy: Policy, stale_after: float = 120.0) -> None:
        self.policy = policy
        self.tpu = policy.tpu.resource_name
        self.lock = threading.RLock()
        self.availability = Availability((kind.name for kind in k.WATCHED), stale_after)
        self.keys: dict[str, set[Key]] = {kind.name: set() for kind in k.WATCHED}
        #: per kind, each object's resourceVersion: a relist skips what it already holds
        self.object_versions: dict[str, dict[Key, str]] = {kind.name: {} for kind in k.WATCHED}
        #: Kueue's objects as written, for the admin guard (``webhook.cluster.documents``)
        self.documents = KeptDocuments()
        self.namespaces: dict[str, dict[str, str]] = {}
        self.local_queues: dict[tuple[str, str], str] = {}
        self.queues_of_cq: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)
        self.cluster_queues: dict[str, ClusterQueueInfo] = {}
        #: parent cohort -> child Cohort objects
        self.children: defaultdict[str, set[str]] = defaultdict(set)
        self.cohorts: dict[str, CohortInfo] = {}
        self.flavors: dict[str, FlavorInfo] = {}
        self.node_index = NodeIndex(policy.tpu)
        self.workloads: dict[tuple[str, str], WorkloadEntry] = {}
        self.queue_generation = 0  # ClusterQueues, Cohorts, ResourceFlavors, LocalQueues
        self.node_generation = 0
        self._memo: dict[Any, Any] = {}
        self._memo_generation: tuple[int, int, bool] = (-1, -1, False)
        #: bumped by every write that changes what the store holds of a kind but the Workloads
        self.revision = 0
        #: bumped by every write that changes what the store holds of the Workloads, once applied
        self.workload_changes = 0
        self._recall = StoreRecall(self)
        #: the availability stamp and the revision ``_recall`` was made at
        self._recall_availability = self._recall_revision = -1
        self.quota = QuotaModel(self, self.tpu, policy.guaranteed_priority_class, self._memoized, self._remember)

    @property
    def nodes(self) -> dict[str, Any]:
        return self.node_index.nodes

    def cohorts_known(self) -> bool:
        return self.availability.reason(k.COHORTS.name) is None

    def cohorts_unknown(self) -> str | None:
        return self._unknown(k.COHORTS)

    def workloads_unknown(self) -> str | None:
        return self._unknown(k.WORKLOADS)

    def _unknown(self, kind: k.Kind) -> str | None:
        """``"<Kind>: <why>"`` when the kind cannot be read, as a skipped rule names it; ``None`` when it can."""
        reason = self.availability.reason(kind.name)
        return f"{kind.name}: {reason}" if reason is not None else None

    # ---------------------------------------------------------------- writes

    def apply(self, kind: k.Kind, event: str, obj: Mapping[str, Any]) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``)."""
        key = object_key(kind, obj)
        with self.lock:
            if event == "DELETED":
                self._delete(kind, key)
            else:
                self._put_version(kind, key, obj)

    def replace(self, kind: k.Kind, objects: Iterable[Mapping[str, Any]], atomic: bool = True) -> None:
        """A full list: the kind's objects become exactly ``objects``.

        ``atomic`` (a relist of a kind requests already read): in one lock hold, so a
        request never judges half a relist (some objects new, the gone ones not yet
        dropped); objects whose resourceVersion is the one held are skipped, so the hold
        lasts as long as the changes take, not the list. Otherwise (a first list, which
        nothing reads yet) the lock is taken per chunk, so requests reading other kinds
        do not wait for 100,000 Workloads to be indexed.
        """
        keyed = [(object_key(kind, obj), obj) for obj in objects]
        seen = {key for key, _ in keyed}
        step = max(1, len(keyed) if atomic else _CHUNK)
        with self.lock if atomic else contextlib.nullcontext():
            for start in range(0, len(keyed), step):
                with self.lock:
                    for key, obj in keyed[start : start + step]:
                        self._put_version(kind, key, obj)
                if not atomic:
                    time.sleep(0)  # let a waiting request thread take the lock (it is not fair)
            with self.lock:
                for key in self.keys[kind.name] - seen:
                    self._delete(kind, key)

    def _unchanged(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> bool:
        """Whether an update leaves everything we keep of the object as it was.

        Most MODIFIED events are status-only: node heartbeats and condition changes, Kueue
        writing a ClusterQueue's usage on every admission. They must not reset the memos
        every request reads (the generations), nor re-index a node.
        """
        if key not in self.keys[kind.name]:
            return False
        metadata = obj.get("metadata") or {}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        if kind is k.NODES:
            return self.node_index.nodes.get(str(key)) == parse_node(obj)
        if kind is k.CLUSTER_QUEUES:
            return self.cluster_queues.get(str(key)) == parse_cluster_queue(obj)
        if kind is k.COHORTS:
            return self.cohorts.get(str(key)) == parse_cohort(obj)
        if kind is k.RESOURCE_FLAVORS:
            return self.flavors.get(str(key)) == parse_flavor(obj)
        if kind is k.NAMESPACES:
            return self.namespaces.get(str(key)) == string_map(metadata.get("labels"))
        if kind is k.LOCAL_QUEUES and isinstance(key, tuple) and isinstance(spec, dict):
            return self.local_queues.get(key) == str(spec.get("clusterQueue") or "")
        return False

    def _put_version(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> None:
        """``_put``, skipped for the very object already held (same resourceVersion)."""
        version = (obj.get("metadata") or {}).get("resourceVersion")
        version = version if isinstance(version, str) else ""
        versions = self.object_versions[kind.name]
        if version and versions.get(key) == version and key in self.keys[kind.name]:
            return
        self.documents.put(kind, key, obj)
        self._put(kind, key, obj)
        if version:
            versions[key] = version

    def _put(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> None:
        if kind is k.WORKLOADS:
            assert isinstance(key, tuple)
            return self._put_workload(key, obj)
        if self._unchanged(kind, key, obj):
            return None
        if key in self.keys[kind.name]:
            self._remove(kind, key)
        self.keys[kind.name].add(key)
        metadata = obj.get("metadata") or {}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        if kind is k.NAMESPACES:
            assert isinstance(key, str)
            self.namespaces[key] = string_map(metadata.get("labels"))
        elif kind is k.LOCAL_QUEUES:
            assert isinstance(key, tuple)
            cq = str(spec.get("clusterQueue") or "")
            self.local_queues[key] = cq
            self.queues_of_cq[cq].add(key)
        elif kind is k.CLUSTER_QUEUES:
            assert isinstance(key, str)
            info = parse_cluster_queue(obj)
            self.cluster_queues[key] = info
            self.quota.add_cluster_queue(info)
        elif kind is k.COHORTS:
            assert isinstance(key, str)
            cohort = parse_cohort(obj)
            self.cohorts[key] = cohort
            if cohort.parent:
                self.children[cohort.parent].add(key)
        elif kind is k.RESOURCE_FLAVORS:
            assert isinstance(key, str)
            self.flavors[key] = parse_flavor(obj)
        elif kind is k.NODES:
            assert isinstance(key, str)
            self.node_index.put(parse_node(obj))
        self._bump(kind)
        return None

    def _put_workload(self, key: tuple[str, str], obj: Mapping[str, Any]) -> None:
        """A Workload, projected once; an update that leaves its part of the ledger as it was
        (conditions' times and messages, most status writes) moves nothing."""
        entry = project(obj, self.tpu)
        held = self.workloads.get(key)
        if held is not None and held == entry:
            return
        self.keys[k.WORKLOADS.name].add(key)
        self.quota.count_workload(key[0], held, -1)
        self.workloads[key] = entry
        self.quota.count_workload(key[0], entry, +1)
        self.workload_changes += 1

    def _delete(self, kind: k.Kind, key: Key) -> None:
        """The object is gone: its indexes and its kept document (``_remove`` alone is also
        the first half of replacing an object, whose new document is already kept)."""
        self._remove(kind, key)
        self.documents.remove(kind, key)

    def _remove(self, kind: k.Kind, key: Key) -> None:
        self.keys[kind.name].discard(key)
        self.object_versions[kind.name].pop(key, None)
        name = key if isinstance(key, str) else ""
        pair = key if isinstance(key, tuple) else ("", "")
        if kind is k.NAMESPACES:
            self.namespaces.pop(name, None)
        elif kind is k.LOCAL_QUEUES:
            cq = self.local_queues.pop(pair, None)
            if cq is not None:
                self.queues_of_cq[cq].discard(pair)
        elif kind is k.CLUSTER_QUEUES:
            info = self.cluster_queues.pop(name, None)
            if info is not None:
                self.quota.remove_cluster_queue(info)
        elif kind is k.COHORTS:
            cohort = self.cohorts.pop(name, None)
            if cohort is not None and cohort.parent:
                self.children[cohort.parent].discard(name)
        elif kind is k.RESOURCE_FLAVORS:
            self.flavors.pop(name, None)
        elif kind is k.NODES:
            self.node_index.remove(name)
        elif kind is k.WORKLOADS:
            self.quota.count_workload(pair[0], self.workloads.pop(pair, None), -1)
        self._bump(kind)

    def _bump(self, kind: k.Kind) -> None:
        if kind is k.WORKLOADS:  # what they decide is keyed by ``ledger_state``, not dropped
            self.workload_changes += 1
        else:
            self.revision += 1
        if kind is k.NODES:
            self.node_generation += 1
        elif kind in (k.LOCAL_QUEUES, k.CLUSTER_QUEUES, k.COHORTS, k.RESOURCE_FLAVORS):
            self.queue_generation += 1

    def _memoized(self, key: Any) -> Any:
        generation = (self.queue_generation, self.node_generation, self.cohorts_known())
        if generation != self._memo_generation or len(self._memo) > _MEMO_LIMIT:
            self._memo = {}
            self._memo_generation = generation
        return self._memo.get(key, _MISSING)

    def _remember(self, key: Any, value: Any) -> None:
        self._memo[key] = value

    def recall(self) -> StoreRecall | None:
        """``ClusterState.recall``: a new one after every change to what the store holds of a
        kind but the Workloads or to a kind's availability; ``None`` while a kind the job rules
        read cannot be read."""
        availability = self.availability
        if (
            availability.clock() < availability.clear_until
            and availability.changes == self._recall_availability
            and self.revision == self._recall_revision
        ):
            return self._recall  # every request asks: nothing changed, and every kind can be read
        stamp = availability.stamp(_JOB_KINDS)
        if stamp is None:
            return None
        if stamp != self._recall_availability or self.revision != self._recall_revision:
            self._recall = StoreRecall(self)
            self._recall_availability, self._recall_revision = stamp, self.revision
        return self._recall

    def kind_metrics(self) -> list[tuple[str, bool, float | None, float | None]]:
        """Per kind, for /metrics: usable now, seconds since last known current, since last event."""
        availability = self.availability
        return [
            (
                kind.name,
                availability.reason(kind.name) is None,
                availability.age(kind.name),
                availability.since_event(kind.name),
            )
            for kind in k.WATCHED
        ]

    # ---------------------------------------------------------------- ClusterState

    def unavailable(self, kinds: frozenset[str]) -> dict[str, str]:
        return self.availability.unavailable(kinds)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        if self.availability.reason(k.NAMESPACES.name) is not None:
            return None
        return self.namespaces.get(namespace)

    def static_topologies(self) -> frozenset[str]:
        recall = self.recall()
        if recall is not None:
            return recall.static_topologies(frozenset())
        if self.availability.reason(k.NODES.name) is not None:
            return frozenset()
        with self.lock:
            return self.node_index.topologies()

    def local_queue(self, namespace: str, name: str) -> str | None:
        return self.local_queues.get((namespace, name))

    def local_queue_names(self, namespace: str) -> list[str]:
        with self.lock:
            return sorted(name for ns, name in self.local_queues if ns == namespace)

    def cluster_queue(self, name: str) -> ClusterQueueInfo | None:
        return self.cluster_queues.get(name)

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Assignment:
        with self.lock:
            return self.quota.assign(cluster_queue, podsets, within_balance)

    def guaranteed_shortfalls(self, cluster_queue: str, podsets: Sequence[PodSetDemand]) -> BalanceAnswer:
        with self.lock:
            return self.quota.guaranteed_shortfalls(cluster_queue, podsets)

    def potential(self, cluster_queue: str, flavor: str, resource: str) -> Bound:
        with self.lock:
            return self.quota.potential(cluster_queue, flavor, resource)

    def in_use(self, cluster_queue: str, flavor: str) -> int:
        return self.quota.in_use(cluster_queue, flavor)

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        """The guaranteed balance of the queue's TPU quota on ``flavor`` (see ``webhook.quota.ledger``)."""
        with self.lock:
            return self.quota.balance(cluster_queue, flavor)

    def node_fit(
        self,
        selector: Mapping[str, str],
        requests: Mapping[str, Decimal],
        tolerations: Sequence[Toleration] = (),
        tolerate_keys: frozenset[str] = frozenset(),
    ) -> NodeFit:
        memo_key = (
            "fit",
            tuple(sorted(selector.items())),
            tuple(sorted(requests.items())),
            tuple(tolerations),
            tolerate_keys,
        )
        cached = self._memoized(memo_key)
        if cached is not _MISSING:
            return cached  # type: ignore[no-any-return]
        with self.lock:
            answer = self.node_index.fit(selector, requests, tolerations, tolerate_keys)
            self._memo[memo_key] = answer
        return answer

    def node_pools(self, topology: str) -> int:
        with self.lock:
            return self.node_index.node_pools(topology)

    def accelerator_chips(self) -> Decimal | None:
        """Chips on all nodes of the TPU accelerator; ``None`` when no node advertises the resource."""
        with self.lock:
            if self.tpu not in self.node_index.advertised:
                return None
            return self.node_index.accelerator_chips


_MISSING = object()
#: a queue's ledger state (per flavor, guaranteed chips in use and pending) as JSON text
_ENCODE = msgspec.json.Encoder().encode


class StoreRecall:
    """The store's ``Recall``: the engine's answers, and the static topologies and queue
    balances the store works out for it, all for one state of the store but its Workloads
    (``ClusterStore.recall`` makes a new one after a change)."""

    __slots__ = ("_balances", "_topologies", "answers", "store")

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.answers: dict[Any, Any] = {}
        #: ``static_topologies`` per set of known ones (a server asks with its policy's only)
        self._topologies: dict[frozenset[str], frozenset[str]] = {}
        #: per LocalQueue held (namespace, name), its ``queue_balance`` and the count of
        #: Workload changes it was read at
        self._balances: dict[tuple[str, str], tuple[int, bytes]] = {}

    def static_topologies(self, known: frozenset[str]) -> frozenset[str]:
        # Every request asks (``RuleContext``): kept until the next change, which brings a new Recall.
        held = self._topologies.get(known)
        if held is None:
            with self.store.lock:
                held = self._topologies[known] = known | self.store.node_index.topologies()
        return held

    def queue_balance(self, namespace: str, queue: str) -> Hashable:
        # Every guaranteed job asks (its answer's key): one lookup while the count stays. The
        # LocalQueue's target is the store's answer for this Recall's whole life (a change
        # to a LocalQueue brings a new one). The state is kept as its JSON text, one bytes
        # object per count: its hash is worked out once, and a remembered key holding the
        # same object compares by identity.
        store, changes = self.store, self.store.workload_changes
        held = self._balances.get((namespace, queue))
        if held is not None and held[0] == changes:
            return held[1]
        cluster_queue = store.local_queue(namespace, queue)
        if not cluster_queue:
            # No such LocalQueue, or one that names no ClusterQueue: no balance read, and
            # nothing kept, so queue names no LocalQueue has cannot grow what is kept.
            return None
        with store.lock:
            state = _ENCODE(store.quota.ledger_state(cluster_queue))
        if changes == store.workload_changes:  # no event was half applied meanwhile
            self._balances[namespace, queue] = (changes, state)
        return state

    def ledger_changes(self) -> int:
        return self.store.workload_changes

    def keep(self, key: Hashable, answer: Any) -> None:
        # At most ``_MEMO_LIMIT`` answers: one past it drops those kept so far.
        answers = self.answers
        if len(answers) >= _MEMO_LIMIT:
            answers.clear()
        answers[key] = answer
