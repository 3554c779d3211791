"""The store's Workload index: every Workload's projection, and the lookups into them, moved per event.

Each Workload is read once per watch event into its projection (``webhook.kueue.workload.WorkloadInfo``)
and filed in two parts, each forked by a snapshot on its own changes:

- ``CountedWorkloads``: what Kueue's cache counts, as the gates and the simulator read it: the
  projections by key, the ledger's counters, and where each Workload is (the ClusterQueue it
  holds quota in, the LocalQueue it waits in, the topology domains it occupies), so a
  scheduling attempt reads one queue's Workloads, never all of them;
- ``WorkloadRecords``: what explain reads, with its three lookups: each Workload's conditions,
  AdmissionChecks, ``spec.active``, priority, ClusterQueue, requeue backoff, owner references
  and two labels (``kueue.x-k8s.io/job-uid`` finds it, ``kueue.x-k8s.io/queue-name``), given back
  in the Workload's own shape (``WorkloadInfo.document()``) for the few one explanation reads.

The job objects themselves (JobSets, Jobs, Deployments) are not kept: a job is found from its
Workloads' owner references.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import Any, Final

from webhook.cluster.memo import PART_LIMIT, Memo
from webhook.kueue.workload import HOLDS, WAITS, WorkloadInfo
from webhook.quota.ledger import ChipsLedger
from webhook.quota.table import SetTable, Table

#: (namespace, name) of a Workload
Key = tuple[str, str]
#: a place of the index: (HOLDS, ClusterQueue, ""), (WAITS, namespace, LocalQueue), (PLACED, node label, value)
Where = tuple[str, str, str]

#: a namespace's Workloads are filed in this many sets, by their name's hash: a set shared with a
#: snapshot is copied on its first change, and one namespace can hold every Workload of the cluster
NAMESPACE_SHARDS: Final = 256


class LocatedSet(set[tuple[str, str]]):
    """The Workloads at one place of the store's index (the holders of a ClusterQueue, the
    waiters of a LocalQueue), with a memo of what is worked out from them alone. The store
    never changes a set a published snapshot holds (it copies it first, and the copy starts
    with no memo), so the memo is shared by every snapshot while that place is unchanged and
    goes with the set: a Workload event elsewhere keeps it."""

    __slots__ = ("_memo",)

    def __init__(self, keys: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(keys)
        self._memo: Memo | None = None

    @property
    def memo(self) -> Memo:
        memo = self._memo
        if memo is None:
            memo = self._memo = Memo(PART_LIMIT)
        return memo

    @property
    def kept(self) -> Memo | None:
        """The memo, if anything was worked out from the set yet."""
        return self._memo


#: index keys of the topology domains admitted Workloads occupy: (PLACED, node label, value), and
#: (UNPLACED, "", "") for those whose ``topologyAssignment`` cannot be read
PLACED, UNPLACED = "placed", "unplaced"


def places(key: Key, entry: WorkloadInfo) -> tuple[Where, ...]:
    """Where a Workload is indexed: ("holds", ClusterQueue, "") or ("waits", namespace, LocalQueue); one
    holding quota also under each topology domain it occupies (static mode's placement reads them)."""
    if entry.state == HOLDS:
        if entry.placed is None:
            return ((HOLDS, entry.cluster_queue, ""), (UNPLACED, "", ""))
        if entry.placed:
            return ((HOLDS, entry.cluster_queue, ""), *((PLACED, label, value) for label, value in entry.placed))
        return ((HOLDS, entry.cluster_queue, ""),)
    if entry.state == WAITS:
        return ((WAITS, key[0], entry.local_queue),)
    return ()


class CountedWorkloads:
    """The Workloads Kueue's cache counts: each one's projection by key, the ledger's counters, and
    where each is (``places``), moved together by one Workload's difference. Copy-on-write: a
    snapshot holds a fork, and what neither side changes is shared, a located set's memo with it."""

    __slots__ = ("entries", "ledger", "located")

    def __init__(self, guaranteed_priority_class: str) -> None:
        self.entries: Table[Key, WorkloadInfo] = Table()
        self.ledger = ChipsLedger(guaranteed_priority_class)
        self.located: SetTable[Where, Key] = SetTable(LocatedSet)

    def put(self, key: Key, entry: WorkloadInfo) -> None:
        """``entry`` counted in place of what was counted under ``key``."""
        self._move(key, self.entries.get(key), -1)
        self.entries[key] = entry
        self._move(key, entry, +1)

    def swap(self, key: Key, entry: WorkloadInfo) -> None:
        """``entry`` in place of one that counts the same (``WorkloadInfo.counts_like``): nothing moves."""
        self.entries[key] = entry

    def pop(self, key: Key) -> WorkloadInfo | None:
        gone = self.entries.pop(key)
        self._move(key, gone, -1)
        return gone

    def _move(self, key: Key, entry: WorkloadInfo | None, sign: int) -> None:
        if entry is None:
            return
        self.ledger.move(key[0], entry, sign)
        for where in places(key, entry):
            self.located.move(where, key, sign)

    def fork(self) -> CountedWorkloads:
        """The same Workloads, counted apart from here on (a snapshot's, or one it changes)."""
        out = CountedWorkloads.__new__(CountedWorkloads)
        out.entries, out.ledger, out.located = self.entries.fork(), self.ledger.copy(), self.located.fork()
        return out

    def at(self, where: Where) -> Set[Key]:
        """The keys at one place of the index (empty when none)."""
        return self.located.get(where) or frozenset()


class WorkloadRecords:
    """Every Workload's projection by key, and the three lookups ``explain`` makes into them (by uid, by
    the job-uid label, by namespace), moved record by record as events arrive: explain's
    ``WorkloadIndex`` (``webhook.explain.inputs``), whose answers are the records' documents.

    Copy-on-write tables (``webhook.quota.table``): a snapshot forks them whatever their size, and
    a condition change moves one record's entries, so an explanation after it reads the lookups as
    they are instead of indexing every Workload again.
    """

    def __init__(self) -> None:
        self.by_key: Table[Key, WorkloadInfo] = Table()
        self.uids: Table[str, Key] = Table()
        #: job uid -> its Workloads' keys: nearly always one, so a tuple (replaced, never changed) and
        #: not a set of its own per job, which would be most of a cached Workload's bytes
        self.job_uids: Table[str, tuple[Key, ...]] = Table()
        #: (namespace, shard) -> keys (``keys_in`` reads a namespace's shards together)
        self.namespaces: SetTable[tuple[str, int], Key] = SetTable()

    def put(self, key: Key, record: WorkloadInfo) -> None:
        held = self.by_key.get(key)
        self.by_key[key] = record
        if held is not None and (held.uid, held.job_uid) == (record.uid, record.job_uid):
            return  # filed as before (a status change): no lookup's set is copied
        if held is not None:
            self._index(key, held, -1)
        self._index(key, record, +1)

    def pop(self, key: Key) -> WorkloadInfo | None:
        record = self.by_key.pop(key)
        if record is not None:
            self._index(key, record, -1)
        return record

    def _index(self, key: Key, record: WorkloadInfo, sign: int) -> None:
        if record.uid:
            if sign > 0:
                self.uids[record.uid] = key
            elif self.uids.get(record.uid) == key:
                self.uids.pop(record.uid)
        if record.job_uid:
            held = self.job_uids.get(record.job_uid) or ()
            if sign > 0:
                if key not in held:
                    self.job_uids[record.job_uid] = (*held, key)
            elif key in held:
                left = tuple(other for other in held if other != key)
                if left:
                    self.job_uids[record.job_uid] = left
                else:
                    self.job_uids.pop(record.job_uid)
        self.namespaces.move((key[0], hash(key[1]) & (NAMESPACE_SHARDS - 1)), key, sign)

    def keys_in(self, namespace: str) -> Iterator[Key]:
        """The keys of the namespace's Workloads, unordered."""
        for shard in range(NAMESPACE_SHARDS):
            yield from self.namespaces.get((namespace, shard)) or ()

    def fork(self) -> WorkloadRecords:
        """Records that nothing moves (a snapshot's), sharing what neither side changes."""
        out = WorkloadRecords.__new__(WorkloadRecords)
        out.by_key, out.uids = self.by_key.fork(), self.uids.fork()
        out.job_uids, out.namespaces = self.job_uids.fork(), self.namespaces.fork()
        return out

    # ------------------------------------------------ explain's lookups: a record becomes a document
    # only when explain reads it (one job's Workloads and its preemptor; a Deployment's namespace)

    def by_uid(self, uid: str) -> Mapping[str, Any] | None:
        key = self.uids.get(uid)
        return self.by_key[key].document() if key is not None else None

    def by_job_uid(self, job_uid: str) -> Sequence[Mapping[str, Any]]:
        return [record.document() for record in self._records(self.job_uids.get(job_uid) or ())]

    def in_namespace(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return [record.document() for record in self.records_in(namespace)]

    def records_in(self, namespace: str) -> Sequence[WorkloadInfo]:
        """The namespace's records, by name."""
        return self._records(self.keys_in(namespace))

    def _records(self, keys: Iterable[Key]) -> list[WorkloadInfo]:
        by_key = self.by_key
        return [by_key[key] for key in sorted(keys)]
