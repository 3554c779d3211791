"""What the explainer reads, as plain inputs the caller fills from whatever holds the state.

The explainer is a pure function of these: the job document as stored, an index of the
cluster's Workloads, the quota picture per ClusterQueue and cohort, and (optionally) a
simulation of the job as if submitted now. The watch cache, ``--cluster-state`` files
and the tests all fill the same shapes, so none of them is special.

- ``WorkloadIndex``: Workload documents by their uid (to resolve a preemptor from the
  UID in a condition message), by the ``kueue.x-k8s.io/job-uid`` label (RFC-0033 4.3.2:
  a job's Workload is found by that label, never by its generated name) and by
  namespace (a Deployment's Workloads are its Pods', see ``webhook.explain.workloads``).
  ``WorkloadList`` is the one implementation over a list of documents.
- ``QuotaPicture``: per ClusterQueue, flavor and resource the numbers a team reads
  (nominal, in use, borrowed, lent, pending) and the cohort tree. It is an input, not
  worked out here: ``webhook.quota.picture`` holds it and its arithmetic, and a snapshot
  memoizes it (``Snapshot.quota_picture``).
- ``Simulate``: a callable returning the simulator's answer (``webhook.simulate.result.Result``)
  for the job's Workload as if submitted now with itself left out, or ``None`` when it
  cannot say. It is called only for a job that waits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

from webhook.quota.picture import Amounts, CohortQuota, FlavorAmounts, QueueQuota, QuotaPicture
from webhook.simulate.result import Result

__all__ = [
    "JOB_UID_LABEL",
    "Amounts",
    "CohortQuota",
    "Document",
    "FlavorAmounts",
    "QueueQuota",
    "QuotaPicture",
    "Simulate",
    "WorkloadIndex",
    "WorkloadList",
    "metadata",
    "text_field",
]

JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"

Document = Mapping[str, Any]
Simulate = Callable[[], Result | None]


def metadata(document: Document) -> Mapping[str, Any]:
    value = document.get("metadata")
    return value if isinstance(value, Mapping) else {}


def text_field(mapping: Mapping[str, Any], key: str) -> str:
    value = mapping.get(key)
    return value if isinstance(value, str) else ""


class WorkloadIndex(Protocol):
    """The cluster's Workload documents, looked up the three ways the explainer needs."""

    def by_uid(self, uid: str) -> Document | None: ...

    def by_job_uid(self, job_uid: str) -> Sequence[Document]: ...

    def in_namespace(self, namespace: str) -> Sequence[Document]: ...


class WorkloadList:
    """A ``WorkloadIndex`` over Workload documents (each indexed once, when built)."""

    def __init__(self, documents: Iterable[Document]) -> None:
        self._by_uid: dict[str, Document] = {}
        self._by_job: defaultdict[str, list[Document]] = defaultdict(list)
        self._by_namespace: defaultdict[str, list[Document]] = defaultdict(list)
        for document in documents:
            meta = metadata(document)
            uid = text_field(meta, "uid")
            if uid:
                self._by_uid[uid] = document
            labels = meta.get("labels")
            job_uid = text_field(labels, JOB_UID_LABEL) if isinstance(labels, Mapping) else ""
            if job_uid:
                self._by_job[job_uid].append(document)
            self._by_namespace[text_field(meta, "namespace")].append(document)

    def by_uid(self, uid: str) -> Document | None:
        return self._by_uid.get(uid)

    def by_job_uid(self, job_uid: str) -> Sequence[Document]:
        return tuple(self._by_job.get(job_uid, ()))

    def in_namespace(self, namespace: str) -> Sequence[Document]:
        return tuple(self._by_namespace.get(namespace, ()))
