"""``explain``'s inputs filled from a cluster snapshot, for the CLI and the advisor's explanations.

The server's watch cache keeps every Workload (what ``explain`` reads of each,
``webhook.cluster.workloadindex``) and Kueue's queue objects, not the jobs: a JobSet, Job
or Deployment is found from its Workloads, whose owner reference names it (kind, name,
uid) and whose ``kueue.x-k8s.io/job-uid`` label carries its uid. So without the job's
document the state comes from the Workload's conditions alone (readiness from
``PodsReady``, the end from ``Finished``), and a job with no Workload cannot be told
from one that does not exist: both are "not found", with why. The CLI can pass the job
documents it read (``jobs``): then the job's own status decides as well, and a job
without a Workload is explained as NotManaged.

Answers, as an experienced Kubernetes user expects them (the HTTP route uses the codes):

- ``BadTarget`` 400: a kind explain does not answer for (with "did you mean");
- ``NotFound`` 404: no such Workload, or no Workload names such a job;
- ``NotSynced`` 503: the Workloads cannot be read now (the watch has not listed them
  yet, or is stale): the reason says which and why.

Nothing here calls the API server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from webhook.cluster import kinds as k
from webhook.cluster.own import OwnedWorkloads
from webhook.cluster.snapshot import Snapshot
from webhook.cluster.workloadindex import WorkloadRecords
from webhook.explain import jobstate as s
from webhook.explain.explainer import ExplainError, ExplainRequest
from webhook.explain.inputs import Document, Simulate, metadata, text_field
from webhook.explain.jobstatus import POD
from webhook.explain.workloads import WORKLOAD, job_workloads
from webhook.kube.typos import did_you_mean
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.simulate.live import simulate_stored
from webhook.simulate.result import Result

#: what a user may type for each kind, lower-cased: kubectl's names (singular, plural, short names
#: from the CRDs: Workload's ``kwl``, ``kueueworkload``)
KIND_NAMES: Final[Mapping[str, str]] = {
    "jobset": JOBSET,
    "jobsets": JOBSET,
    "job": JOB,
    "jobs": JOB,
    "deployment": DEPLOYMENT,
    "deployments": DEPLOYMENT,
    "deploy": DEPLOYMENT,
    "workload": WORKLOAD,
    "workloads": WORKLOAD,
    "kwl": WORKLOAD,
    "kueueworkload": WORKLOAD,
    "kueueworkloads": WORKLOAD,
}
#: (namespace, Workload name) -> the simulator's answer for that stored Workload as if submitted now
StoredSimulate = Callable[[str, str], Result | None]


class BadTarget(ExplainError):
    """The question is wrong (HTTP 400, CLI exit 2)."""


class NotFound(BadTarget):
    """No such object in the state (HTTP 404, CLI exit 1)."""


class NotSynced(BadTarget):
    """The Workloads cannot be read now (HTTP 503): unknown is not "none"."""


def parse_kind(text: str) -> str:
    """The kind ``text`` names, as kubectl accepts it (any case, plural, short name, ``.group``)."""
    word = text.strip().lower().partition(".")[0]
    kind = KIND_NAMES.get(word)
    if kind is None:
        guess = did_you_mean(word, KIND_NAMES)
        hint = f"did you mean {KIND_NAMES[guess]}? " if guess else ""
        raise BadTarget(f"kind {text!r}: not one explain answers for; {hint}use JobSet, Job, Deployment or Workload")
    return kind


def parse_target(text: str) -> tuple[str, str]:
    """``KIND/NAME`` -> (kind, name)."""
    kind, slash, name = text.partition("/")
    if not slash or not kind or not name or "/" in name:
        raise BadTarget(f"{text!r}: expected KIND/NAME, e.g. jobset/train-llm or workload/jobset-train-llm-1a2b3")
    return parse_kind(kind), name


def _job_from_owners(kind: str, namespace: str, name: str, index: WorkloadRecords) -> Document | None:
    """The job as its Workloads name it (kind, namespace, name, uid), or ``None`` when none does."""
    if kind == DEPLOYMENT:
        owned = OwnedWorkloads()
        for workload in index.in_namespace(namespace):
            owned.add(workload)
        found = owned.of(DEPLOYMENT, namespace, name)
        return {"kind": kind, "metadata": {"name": name, "namespace": namespace}} if found else None
    newest: tuple[str, str] | None = None
    for record in index.records_in(namespace):
        for reference in record.owner_references():
            if reference.get("kind") == kind and reference.get("name") == name:
                candidate = (record.created_at, str(reference.get("uid") or ""))
                newest = candidate if newest is None or candidate > newest else newest
    if newest is None:
        return None
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "uid": newest[1]}}


def _bound_simulation(
    kind: str, job: Document, index: WorkloadRecords, simulator: StoredSimulate | None
) -> Simulate | None:
    """The request's ``simulate``: the simulator asked about the job's Workload that waits (a
    Deployment's pods share one shape, so the first that waits answers for them)."""
    if simulator is None:
        return None
    workloads = [job] if kind == WORKLOAD else job_workloads(kind, job, index)
    for workload in workloads:
        if s.decide(workload, kind, None).state in (s.QUEUED, s.PREEMPTED):
            meta = metadata(workload)
            namespace, name = text_field(meta, "namespace"), text_field(meta, "name")
            return lambda: simulator(namespace, name)
    return None


def request_from_snapshot(
    snapshot: Snapshot,
    kind: str,
    namespace: str,
    name: str,
    jobs: Mapping[tuple[str, str, str], Document] | None = None,
    simulator: StoredSimulate | None = None,
    read: Mapping[tuple[str, str, str], Document] | None = None,
) -> ExplainRequest:
    """The ``ExplainRequest`` for ``kind`` ``namespace``/``name`` (see the module for the errors).

    ``jobs``: (kind, namespace, name) -> document, when the caller read ``kind``'s objects
    (the CLI's files or cluster; empty: none); ``None`` when it did not (the server).
    ``read``: every object the caller read by (kind, namespace, name), whatever the kind
    asked: the Pods among them tell a Deployment's Workloads' readiness.
    """
    reason = snapshot.unread.get(k.WORKLOADS.name)
    if reason is not None:
        raise NotSynced(f"Workloads cannot be read now: {reason}; retry once the watch has synced")
    index = snapshot.record_tables  # explain's Workload index
    job: Document | None
    if kind == WORKLOAD:
        record = snapshot.records.get((namespace, name))
        if record is None:
            raise NotFound(f"Workload {namespace}/{name}: not found")
        job = record.document()
    else:
        job = (jobs or {}).get((kind, namespace, name)) or _job_from_owners(kind, namespace, name, index)
        if job is None:
            why = (
                f"no {kind} {namespace}/{name} was read, and no Workload names it as its owner"
                if jobs is not None
                else f"no Workload in {namespace} names {kind} {name} as its owner; {kind}s themselves are not "
                "read here, so one Kueue does not manage (no kueue.x-k8s.io/queue-name label) is not known either"
            )
            raise NotFound(f"{kind} {namespace}/{name}: not found: {why}")
    unread_queues = snapshot.unread.get(k.CLUSTER_QUEUES.name)
    return ExplainRequest(
        kind,
        job,
        index,
        quota=snapshot.quota_picture() if unread_queues is None else None,
        simulate=_bound_simulation(kind, job, index, simulator),
        local_queues=snapshot.queues.local_queues,
        pods={(ns, pod): doc for (of, ns, pod), doc in (read or {}).items() if of == POD},
    )


def stored_simulator(snapshot: Snapshot) -> StoredSimulate:
    """The simulator's answer for a stored Workload as if submitted now, itself left out of the
    state (``webhook.simulate.live.simulate_stored``): the CLI and the server alike."""

    def simulate(namespace: str, name: str) -> Result | None:
        return simulate_stored(snapshot, namespace, name, snapshot.policy)

    return simulate
