"""What the explainer reads, as plain inputs the caller fills from whatever holds the state.

The explainer is a pure function of these: the job document as stored, an index of the
cluster's Workloads, the quota picture per ClusterQueue and cohort, and (optionally) a
simulation of the job as if submitted now. The watch cache, ``--cluster-state`` files
and the tests all fill the same shapes, so none of them is special.

- ``WorkloadIndex``: Workload documents by their uid (to resolve a preemptor from the
  UID in a condition message), by the ``kueue.x-k8s.io/job-uid`` label (RFC-0033 4.3.2:
  a job's Workload is found by that label, never by its generated name) and by
  namespace (a Deployment's Workloads are its Pods', see ``webhook.explain.workloads``).
  The store's Workload records (``webhook.cluster.workloadindex.WorkloadRecords``) are the one
  implementation, whatever filled the store (the watch, ``--cluster-state`` files, a test).
- ``QuotaPicture``: per ClusterQueue, flavor and resource the numbers a team reads
  (nominal, in use, borrowed, lent, pending) and the cohort tree. It is an input, not
  worked out here: ``webhook.quota.picture`` holds it and its arithmetic, and a snapshot
  memoizes it (``Snapshot.quota_picture``).
- ``Simulate``: a callable returning the simulator's answer (``webhook.simulate.result.Result``)
  for the job's Workload as if submitted now with itself left out, or ``None`` when it
  cannot say. It is called only for a job that waits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
