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
  worked out here: the state's owner already keeps these numbers Kueue's way.
- ``Simulate``: a callable returning a simulate result (SPEC §12, one ``results`` entry
  as a JSON-ready dict) for the job's Workload as if submitted now with itself left
  out, or ``None`` when it cannot say. Opaque here: only its ``outcome``, ``reason``,
  ``position`` and ``message`` are read. It is called only for a job that waits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Protocol

JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"

Document = Mapping[str, Any]
Simulate = Callable[[], Mapping[str, Any] | None]


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


@dataclass(frozen=True, slots=True)
class Amounts:
    """One ClusterQueue's numbers for one flavor and resource, in the resource's units.

    ``borrowed``: what it uses beyond its nominal quota, from the cohort. ``lent``: the
    part of its nominal quota other queues of the cohort use now. ``pending``: what its
    pending Workloads request. A limit of ``None`` is no limit.
    """

    nominal: Decimal = Decimal(0)
    in_use: Decimal = Decimal(0)
    borrowed: Decimal = Decimal(0)
    lent: Decimal = Decimal(0)
    pending: Decimal = Decimal(0)
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


#: flavor -> resource -> amounts
FlavorAmounts = Mapping[str, Mapping[str, Amounts]]


@dataclass(frozen=True, slots=True)
class QueueQuota:
    """A ClusterQueue (a team, RFC-0033) and its cohort, ``None`` when it stands alone."""

    name: str
    cohort: str | None
    flavors: FlavorAmounts = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CohortQuota:
    """A cohort: its parent (hierarchical cohorts) and its own quota, when it has any."""

    name: str
    parent: str | None = None
    flavors: FlavorAmounts = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QuotaPicture:
    """Every ClusterQueue's and cohort's numbers. A cohort a queue names without a Cohort
    object exists all the same (Kueue makes it implicitly): it is a root with no quota."""

    cluster_queues: Mapping[str, QueueQuota] = field(default_factory=dict)
    cohorts: Mapping[str, CohortQuota] = field(default_factory=dict)

    def cohort(self, name: str) -> CohortQuota:
        return self.cohorts.get(name) or CohortQuota(name)

    def root(self, cohort: str) -> str:
        """The root of ``cohort``'s tree (a parent cycle, which Kueue refuses, stops the walk)."""
        seen = {cohort}
        while (parent := self.cohort(cohort).parent) is not None and parent not in seen:
            seen.add(parent)
            cohort = parent
        return cohort

    def child_cohorts(self, cohort: str) -> list[str]:
        return sorted(name for name, node in self.cohorts.items() if node.parent == cohort and name != cohort)

    def member_queues(self, cohort: str) -> list[QueueQuota]:
        return sorted((q for q in self.cluster_queues.values() if q.cohort == cohort), key=lambda q: q.name)

    def queues_under(self, cohort: str) -> list[QueueQuota]:
        """The ClusterQueues of ``cohort`` and of every cohort below it, by name."""
        names, todo, seen = [], [cohort], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            names += self.member_queues(current)
            todo += self.child_cohorts(current)
        return sorted(names, key=lambda q: q.name)

    def roots(self) -> list[str]:
        """The root cohorts: of Cohort objects and of the cohorts queues name."""
        named = {q.cohort for q in self.cluster_queues.values() if q.cohort} | set(self.cohorts)
        return sorted({self.root(name) for name in named})

    def standalone(self) -> list[QueueQuota]:
        return sorted((q for q in self.cluster_queues.values() if not q.cohort), key=lambda q: q.name)
