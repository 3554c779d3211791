"""What is kept of each Workload as written, for ``explain``.

The ledger keeps a projection of each Workload (``webhook.quota.ledger.WorkloadEntry``):
enough to count quota, not to say why a job waits. ``explain`` reads a Workload's
conditions (type, status, reason, message, since when), its AdmissionChecks' states and
messages, ``spec.active``, its priority, its ClusterQueue, its requeue backoff, its
owner references and two labels (``kueue.x-k8s.io/job-uid`` finds it,
``kueue.x-k8s.io/queue-name``). The store keeps exactly that per Workload, as a compact
``WorkloadRecord`` (slots and tuples, no podSets, no templates, no managedFields), and
``document()`` gives it back in the Workload's own shape when explain reads it: only the
few Workloads one explanation reads are ever turned back into documents.

Memory: one record per Workload; most of it is the conditions. Workloads made in one
burst carry equal conditions (the same reasons, messages and times), so each condition,
AdmissionCheck, spec and string in them is shared between the records that hold an equal
one (a bounded table, as the ledger shares usage). bench/README.md has the cost. The
job objects themselves (JobSets, Jobs, Deployments) are not kept: a job is found from
its Workloads' owner references.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from webhook.kube.jsonvalues import as_dict
from webhook.kube.sharing import Share, unshared
from webhook.quota.table import SetTable, Table

_CONDITION_FIELDS: Final = ("type", "status", "reason", "message", "lastTransitionTime")
_CHECK_FIELDS: Final = ("name", "state", "message", "lastTransitionTime")
_OWNER_FIELDS: Final = ("apiVersion", "kind", "name", "uid", "controller")
_SPEC_FIELDS: Final = ("queueName", "active", "priority", "priorityClassName")
_REF_FIELDS: Final = ("group", "kind", "name")
_REQUEUE_FIELDS: Final = ("count", "requeueAt")
#: the job-uid label first (``WorkloadRecord.job_uid``)
_LABELS: Final = ("kueue.x-k8s.io/job-uid", "kueue.x-k8s.io/queue-name")

#: a mapping's values in its fields' order, ``None`` for a field it does not have
Values = tuple[Any, ...]
#: (namespace, name) of a Workload
Key = tuple[str, str]


def _values(value: Any, fields: tuple[str, ...], shared: Share) -> Values:
    """A mapping's ``fields`` as a shared tuple of shared values."""
    source = as_dict(value)
    return shared(tuple(shared(source.get(key)) for key in fields))


def _values_list(value: Any, fields: tuple[str, ...], shared: Share) -> tuple[Values, ...] | None:
    if not isinstance(value, list):
        return None
    return shared(tuple(_values(item, fields, shared) for item in value if isinstance(item, Mapping)))


def _mapping(values: Values, fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in zip(fields, values, strict=True) if value is not None}


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    """One Workload as explain reads it (see the module); equal when everything kept is equal."""

    api_version: str
    namespace: str
    name: str
    uid: str
    created: str
    labels: Values
    owners: tuple[Values, ...]
    spec: Values
    priority_class_ref: Values | None
    conditions: tuple[Values, ...]
    cluster_queue: str | None
    checks: tuple[Values, ...] | None
    requeue: Values | None

    @property
    def job_uid(self) -> str:
        """The ``kueue.x-k8s.io/job-uid`` label ("" when absent)."""
        value = self.labels[0]
        return value if isinstance(value, str) else ""

    def owner_references(self) -> list[dict[str, Any]]:
        return [_mapping(owner, _OWNER_FIELDS) for owner in self.owners]

    def document(self) -> dict[str, Any]:
        """The record in the Workload's own shape (a new dict: the reader may keep it)."""
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.uid:
            metadata["uid"] = self.uid
        if self.created:
            metadata["creationTimestamp"] = self.created
        labels = _mapping(self.labels, _LABELS)
        if labels:
            metadata["labels"] = labels
        if self.owners:
            metadata["ownerReferences"] = self.owner_references()
        spec = _mapping(self.spec, _SPEC_FIELDS)
        if self.priority_class_ref is not None:
            spec["priorityClassRef"] = _mapping(self.priority_class_ref, _REF_FIELDS)
        status: dict[str, Any] = {"conditions": [_mapping(c, _CONDITION_FIELDS) for c in self.conditions]}
        if self.cluster_queue is not None:
            status["admission"] = {"clusterQueue": self.cluster_queue}
        if self.checks is not None:
            status["admissionChecks"] = [_mapping(check, _CHECK_FIELDS) for check in self.checks]
        if self.requeue is not None:
            status["requeueState"] = _mapping(self.requeue, _REQUEUE_FIELDS)
        return {
            "apiVersion": self.api_version,
            "kind": "Workload",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }


def workload_record(obj: Mapping[str, Any], shared: Share = unshared) -> WorkloadRecord:
    """The part of a Workload ``explain`` reads (see the module); ``shared``: the store's sharing table."""
    metadata, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    owners = metadata.get("ownerReferences")
    ref = spec.get("priorityClassRef")
    admission = as_dict(status.get("admission"))
    cluster_queue = admission.get("clusterQueue")
    return WorkloadRecord(
        shared(str(obj.get("apiVersion") or "")),
        shared(str(metadata.get("namespace") or "")),
        str(metadata.get("name") or ""),
        str(metadata.get("uid") or ""),
        shared(str(metadata.get("creationTimestamp") or "")),
        _values(metadata.get("labels"), _LABELS, shared),
        _values_list(owners, _OWNER_FIELDS, shared) or (),
        _values(spec, _SPEC_FIELDS, shared),
        _values(ref, _REF_FIELDS, shared) if isinstance(ref, Mapping) else None,
        _values_list(status.get("conditions"), _CONDITION_FIELDS, shared) or (),
        shared(cluster_queue) if isinstance(cluster_queue, str) else None,
        _values_list(status.get("admissionChecks"), _CHECK_FIELDS, shared),
        _values(status.get("requeueState"), _REQUEUE_FIELDS, shared) if "requeueState" in status else None,
    )


class WorkloadRecords:
    """Every Workload's record by key, and the three lookups ``explain`` makes into them (by uid, by
    the job-uid label, by namespace), moved record by record as events arrive.

    Copy-on-write tables (``webhook.quota.table``): a snapshot forks them whatever their size, and
    a condition change moves one record's entries, so an explanation after it reads the lookups as
    they are instead of indexing every Workload again.
    """

    def __init__(self) -> None:
        self.by_key: Table[Key, WorkloadRecord] = Table()
        self.by_uid: Table[str, Key] = Table()
        self.by_job_uid: SetTable[str, Key] = SetTable()
        self.by_namespace: SetTable[str, Key] = SetTable()

    def put(self, key: Key, record: WorkloadRecord) -> None:
        held = self.by_key.get(key)
        self.by_key[key] = record
        if held is not None and (held.uid, held.job_uid) == (record.uid, record.job_uid):
            return  # filed as before (a status change): no lookup's set is copied
        if held is not None:
            self._index(key, held, -1)
        self._index(key, record, +1)

    def pop(self, key: Key) -> WorkloadRecord | None:
        record = self.by_key.pop(key)
        if record is not None:
            self._index(key, record, -1)
        return record

    def _index(self, key: Key, record: WorkloadRecord, sign: int) -> None:
        if record.uid:
            if sign > 0:
                self.by_uid[record.uid] = key
            elif self.by_uid.get(record.uid) == key:
                self.by_uid.pop(record.uid)
        if record.job_uid:
            self.by_job_uid.move(record.job_uid, key, sign)
        self.by_namespace.move(key[0], key, sign)

    def fork(self) -> WorkloadRecords:
        """Records that nothing moves (a snapshot's), sharing what neither side changes."""
        out = WorkloadRecords.__new__(WorkloadRecords)
        out.by_key, out.by_uid = self.by_key.fork(), self.by_uid.fork()
        out.by_job_uid, out.by_namespace = self.by_job_uid.fork(), self.by_namespace.fork()
        return out
