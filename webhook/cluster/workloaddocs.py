"""Explain's lookups into the Workloads' projections: by key, by uid, by the job-uid label, by namespace.

Explain reads each Workload's projection (``webhook.kueue.workload.WorkloadInfo``, made once per
event by the store): its conditions, AdmissionChecks, ``spec.active``, priority, ClusterQueue,
requeue backoff, owner references and two labels (``kueue.x-k8s.io/job-uid`` finds it,
``kueue.x-k8s.io/queue-name``); ``WorkloadInfo.document()`` gives that back in the Workload's own
shape, for the few Workloads one explanation reads. The job objects themselves (JobSets, Jobs,
Deployments) are not kept: a job is found from its Workloads' owner references.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from webhook.kueue.workload import WorkloadInfo
from webhook.quota.table import SetTable, Table

#: (namespace, name) of a Workload
Key = tuple[str, str]

#: a namespace's Workloads are filed in this many sets, by their name's hash: a set shared with a
#: snapshot is copied on its first change, and one namespace can hold every Workload of the cluster
NAMESPACE_SHARDS: Final = 256


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
