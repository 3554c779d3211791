"""The cluster state both sources fill, kept current as events arrive, and the snapshots it publishes.

``ClusterStore`` is the writer's side, Kueue's cache: the watch cache feeds it events from
background threads, the state files (``webhook.cluster.statefiles``) feed it once. Writers
take the lock; each event moves what it changes by its difference (the Workloads' counts
in the ledger, what ClusterQueues store in their cohorts, the node index), and an update
that changes nothing kept (node heartbeats, Kueue's status writes) moves nothing.

Readers never take the lock and never read these maps: a request reads one
``webhook.cluster.snapshot.Snapshot`` (``snapshot()``), immutable, made from the parts
as they are when it is asked for and shared until the next change. Every answer a
request needs is memoized on that snapshot (see there).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from webhook.cluster import kinds as k
from webhook.cluster.availability import Availability
from webhook.cluster.documents import KeptDocuments
from webhook.cluster.nodes import NodeIndex
from webhook.cluster.snapshot import DocumentState, NodeState, QueueState, Snapshot
from webhook.cluster.workloadindex import CountedWorkloads, WorkloadRecords
from webhook.kube.jsonvalues import as_dict
from webhook.kube.scheduling import string_map
from webhook.kube.sharing import Sharing
from webhook.kueue.clusterqueue import ClusterQueueInfo, parse_cluster_queue
from webhook.kueue.cohort import CohortInfo, CohortMembers, parse_cohort
from webhook.kueue.localqueue import parse_local_queue
from webhook.kueue.resourceflavor import FlavorInfo, parse_flavor
from webhook.kueue.workload import read_workload
from webhook.policy.config import Policy
from webhook.quota.objects import NodeInfo, parse_node
from webhook.quota.table import SetTable, Table

Key = str | tuple[str, str]
#: objects indexed per lock hold during a first list
_CHUNK = 1000


def object_key(kind: k.Kind, obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    name = str(metadata.get("name", ""))
    return (sys.intern(str(metadata.get("namespace", ""))), name) if kind.namespaced else name


def _parsed(kind: k.Kind, obj: Mapping[str, Any]) -> Any:
    """What the store keeps of an object of a kind a snapshot part reads; ``None`` for the other kinds
    (the admin guard's, of which only the kept document is read)."""
    if kind is k.NODES:
        return parse_node(obj)
    if kind is k.CLUSTER_QUEUES:
        return parse_cluster_queue(obj)
    if kind is k.COHORTS:
        return parse_cohort(obj)
    if kind is k.RESOURCE_FLAVORS:
        return parse_flavor(obj)
    if kind is k.NAMESPACES:
        return string_map(as_dict(obj.get("metadata")).get("labels"))
    if kind is k.LOCAL_QUEUES:
        return parse_local_queue(obj).cluster_queue
    return None


class ClusterStore:
    """The objects (parsed), their indexes and counts, the lock, and the snapshot last published.

    A ``ClusterState``: it answers no question about the cluster itself. The answers
    (``ClusterView``) are the snapshot's, so a reader asks ``snapshot()`` and then it.
    """

    def __init__(self, policy: Policy, stale_after: float = 120.0) -> None:
        self.policy = policy
        self.tpu = policy.tpu.resource_name
        self.lock = threading.RLock()
        self.availability = Availability((kind.name for kind in k.WATCHED), stale_after)
        #: the keys held per kind; a Workload's are its records' (``held_keys``), not kept twice
        self.keys: dict[str, set[Key]] = {kind.name: set() for kind in k.WATCHED if kind is not k.WORKLOADS}
        #: per kind, each object's resourceVersion: a relist skips what it already holds
        self.object_versions: dict[str, dict[Key, str]] = {kind.name: {} for kind in k.WATCHED}
        #: Kueue's objects as written, for the admin guard (``webhook.cluster.documents``)
        self.documents = KeptDocuments()
        # copy-on-write tables (``webhook.quota.table``): a snapshot forks them, whatever their size
        self.namespaces: Table[str, dict[str, str]] = Table()
        self.local_queues: Table[tuple[str, str], str] = Table()
        self.queues_of_cq: SetTable[str, tuple[str, str]] = SetTable()
        self.cluster_queues: Table[str, ClusterQueueInfo] = Table()
        self.cohorts: Table[str, CohortInfo] = Table()
        self.flavors: Table[str, FlavorInfo] = Table()
        self.node_index = NodeIndex(policy.tpu)
        #: what Kueue's cache counts of the Workloads: their projections, the ledger, where each is
        self.counted = CountedWorkloads(policy.guaranteed_priority_class)
        #: one copy of equal values across the Workloads' projections (``webhook.kube.sharing``)
        self.sharing = Sharing()
        #: what ``explain`` reads of each Workload, with explain's lookups (``webhook.cluster.workloadindex``),
        #: and its own change count: a new condition message publishes a snapshot that keeps the others' memos
        self.workload_records = WorkloadRecords()
        self.records_version = 0
        #: the kept documents as the last snapshot carries them, and the generation they were copied at
        self._kept: tuple[int, DocumentState] = (-1, DocumentState())
        #: what ClusterQueues store in their cohorts, kept summed as they come and go
        self.members = CohortMembers()
        #: bumped by every write that changes what the store holds (a snapshot made before is not current)
        self.version = 0
        self.node_generation = 0
        #: which parts changed since the last snapshot
        self._queues_changed = self._nodes_changed = self._counted_changed = True
        self._published: Snapshot | None = None

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        return self.node_index.nodes

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
                for key in [key for key in self.held_keys(kind) if key not in seen]:
                    self._delete(kind, key)

    def _held(self, kind: k.Kind, key: Key) -> Any:
        """What the store holds of an object of a kind a snapshot part reads (``None``: nothing)."""
        if kind is k.NODES:
            return self.node_index.nodes.get(str(key))
        if kind is k.CLUSTER_QUEUES:
            return self.cluster_queues.get(str(key))
        if kind is k.COHORTS:
            return self.cohorts.get(str(key))
        if kind is k.RESOURCE_FLAVORS:
            return self.flavors.get(str(key))
        if kind is k.NAMESPACES:
            return self.namespaces.get(str(key))
        if kind is k.LOCAL_QUEUES and isinstance(key, tuple):
            return self.local_queues.get(key)
        return None

    def _put_version(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> None:
        """``_put``, skipped for the very object already held (same resourceVersion)."""
        version = (obj.get("metadata") or {}).get("resourceVersion")
        version = version if isinstance(version, str) else ""
        versions = self.object_versions[kind.name]
        if version and versions.get(key) == version and key in self.held_keys(kind):
            return
        generation = self.documents.generation
        self.documents.put(kind, key, obj)
        self._put(kind, key, obj)
        self._kept_moved(kind, generation)
        if version:
            versions[key] = version

    def _put(self, kind: k.Kind, key: Key, obj: Mapping[str, Any]) -> None:
        """An object, parsed once: an update that leaves what is kept of it as it was moves nothing.

        Most MODIFIED events are status-only: node heartbeats and condition changes, Kueue
        writing a ClusterQueue's usage on every admission. They must not reset the memos
        every request reads (the generations), nor re-index a node.
        """
        if kind is k.WORKLOADS:
            assert isinstance(key, tuple)
            return self._put_workload(key, obj)
        value = _parsed(kind, obj)
        if key in self.keys[kind.name]:
            if value is not None and self._held(kind, key) == value:
                return None
            self._remove(kind, key)
        self.keys[kind.name].add(key)
        if kind is k.NAMESPACES:
            assert isinstance(key, str)
            self.namespaces[key] = value
        elif kind is k.LOCAL_QUEUES:
            assert isinstance(key, tuple)
            self.local_queues[key] = value
            self.queues_of_cq.move(value, key, +1)
        elif kind is k.CLUSTER_QUEUES:
            assert isinstance(key, str)
            self.cluster_queues[key] = value
            self.members.add(value)
        elif kind is k.COHORTS:
            assert isinstance(key, str)
            self.cohorts[key] = value
        elif kind is k.RESOURCE_FLAVORS:
            assert isinstance(key, str)
            self.flavors[key] = value
        elif kind is k.NODES:
            self.node_index.put(value)
        self._bump(kind)
        return None

    def _put_workload(self, key: tuple[str, str], obj: Mapping[str, Any]) -> None:
        """A Workload, projected once (``webhook.kueue.workload``), filed in both tables as one object.

        An update that leaves what is counted as it was (conditions' times and messages, most
        status writes) moves nothing in the ledger and publishes no new counts; one that leaves
        what explain reads as it was publishes nothing for explain either.
        """
        info = read_workload(obj, self.tpu, self.sharing.share)
        record = self.workload_records.by_key.get(key)
        held = self.counted.entries.get(key)
        explained = record is not None and record.reads_like(info)
        counted = held is not None and held.counts_like(info)
        if explained and counted:
            return
        # one object per Workload: the part that did not change takes the new projection too,
        # which no snapshot sees until it forks that part for a change of its own
        self.workload_records.put(key, info)
        if not explained:
            self.records_version += 1
        if counted:
            self.counted.swap(key, info)
            return
        self.counted.put(key, info)
        self._bump(k.WORKLOADS)

    def _delete(self, kind: k.Kind, key: Key) -> None:
        """The object is gone: its indexes and its kept document (``_remove`` alone is also
        the first half of replacing an object, whose new document is already kept)."""
        generation = self.documents.generation
        self._remove(kind, key)
        self.documents.remove(kind, key)
        self._kept_moved(kind, generation)

    def _kept_moved(self, kind: k.Kind, generation: int) -> None:
        """A new snapshot when a kept document changed since ``generation``: the simulator reads some
        (a LocalQueue's stopPolicy, Kueue's Configuration, a WorkloadPriorityClass's value) and the
        admin guard all of them, from the snapshot. A change only some kept document holds (a
        Topology's levels, a ClusterQueue's admission checks) publishes a new snapshot whose parts
        are the last one's; a status write keeps the document, so it publishes nothing."""
        if self.documents.generation != generation:
            self.version += 1

    def held_keys(self, kind: k.Kind) -> Collection[Key]:
        """The keys of the objects of ``kind`` the store holds."""
        return self.workload_records.by_key if kind is k.WORKLOADS else self.keys[kind.name]

    def _remove(self, kind: k.Kind, key: Key) -> None:
        if kind is not k.WORKLOADS:
            self.keys[kind.name].discard(key)
        self.object_versions[kind.name].pop(key, None)
        name = key if isinstance(key, str) else ""
        pair = key if isinstance(key, tuple) else ("", "")
        if kind is k.NAMESPACES:
            self.namespaces.pop(name, None)
        elif kind is k.LOCAL_QUEUES:
            cq = self.local_queues.pop(pair, None)
            if cq is not None:
                self.queues_of_cq.move(cq, pair, -1)
        elif kind is k.CLUSTER_QUEUES:
            info = self.cluster_queues.pop(name, None)
            if info is not None:
                self.members.remove(info)
        elif kind is k.COHORTS:
            self.cohorts.pop(name, None)
        elif kind is k.RESOURCE_FLAVORS:
            self.flavors.pop(name, None)
        elif kind is k.NODES:
            self.node_index.remove(name)
        elif kind is k.WORKLOADS:
            self.counted.pop(pair)
            if self.workload_records.pop(pair) is not None:
                self.records_version += 1
        self._bump(kind)

    def _bump(self, kind: k.Kind) -> None:
        """What a change of ``kind`` makes stale. The admin guard's kinds nothing here: only their kept
        documents are read (a change of one publishes through ``_kept_moved``), so Kueue's status
        writes to its controller Deployment or an AdmissionCheck keep every memo."""
        if kind in k.ADMIN_KINDS:
            return
        self.version += 1
        if kind is k.WORKLOADS:
            self._counted_changed = True
        elif kind is k.NODES:
            self._nodes_changed = True
            self.node_generation += 1
        else:
            self._queues_changed = True

    # ---------------------------------------------------------------- the snapshot

    def snapshot(self) -> Snapshot:
        """The state now, as one immutable ``Snapshot``: the one published last while nothing changed
        since (neither the objects, nor a kind's availability, nor the clock past its capture)."""
        published = self._published
        availability = self.availability
        if (
            published is not None
            and published.version == self.version
            and published.records_version == self.records_version
            and published.availability_changes == availability.changes
            and availability.clock() < published.until
        ):
            return published
        with self.lock:
            return self._publish()

    def _publish(self) -> Snapshot:
        """A new snapshot (under the lock): the parts that changed are copied, the rest shared with the last."""
        last = self._published
        captured = self.availability.capture()
        if last is not None and last.version == self.version and last.unread == captured[1]:
            # The same objects, and the same kinds unreadable for the same reasons: only what explain
            # reads of the Workloads changed, or the clock moved (past the moment some kind could have
            # gone silent, and it was heard from since), or a watch was renewed. Every part and memo
            # stays the last one's, so what was worked out on it (a [simulate] line) is not worked out again.
            moved = last.records_version != self.records_version
            records = self.workload_records.fork() if moved else last.record_tables
            self._published = last.with_records(records, self.records_version, captured)
            return self._published
        cohorts = captured[1].get(k.COHORTS.name)
        cohorts_reason = f"{k.COHORTS.name}: {cohorts}" if cohorts is not None else None
        if last is None or self._queues_changed:
            queues = QueueState(
                self.namespaces.fork(),
                self.local_queues.fork(),
                self.queues_of_cq.fork(),
                self.cluster_queues.fork(),
                self.cohorts.fork(),
                self.flavors.fork(),
                self.members.copy(),
                cohorts_reason,
            )
        elif last.queues.cohorts_reason != cohorts_reason:
            queues = last.queues.with_cohorts_reason(cohorts_reason)
        else:
            queues = last.queues
        nodes = NodeState(self.node_index.copy(), self.tpu) if last is None or self._nodes_changed else last.nodes
        counted = self.counted.fork() if last is None or self._counted_changed else last.counted
        documents = self.documents
        copied, kept = self._kept
        if copied != documents.generation:
            # a copy of the kinds changed since the last snapshot; the others are the last one's own
            self._kept = (
                documents.generation,
                DocumentState(
                    {
                        name: dict(held) if documents.changed_at[name] > copied else kept.by_kind[name]
                        for name, held in documents.by_kind.items()
                    }
                ),
            )
        self._queues_changed = self._nodes_changed = self._counted_changed = False
        published = Snapshot(
            self.version,
            self.tpu,
            queues,
            nodes,
            counted,
            captured,
            self.policy,
            records=self.workload_records.fork(),
            records_version=self.records_version,
            documents=self._kept[1],
        )
        if last is not None:
            last.memo.previous = None  # one link only: nothing keeps a chain of old snapshots alive
            published.memo.previous = last.memo
        self._published = published
        return published

    def cache_sizes(self) -> list[tuple[str, int, int]]:
        """(cache, entries, bytes) of the published snapshot's memos and of the sharing table."""
        return [*self.snapshot().cache_sizes(), ("sharing", *self.sharing.held())]

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
