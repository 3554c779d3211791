"""``explain``: why a job is not running, and until when, from the inputs of ``inputs.py``.

One pass, no I/O: find the job's Workloads (``workloads``), decide the state of each
(``state``) and explain the one that most needs it (a Deployment has one per pod; the
count by state is said), resolve the preemptor (``preemptor``), ask the simulation when
the job waits (Queued, or Preempted and back in the queue), and pick its ClusterQueue's
quota numbers. The result carries SPEC §13's fields (``result``) and what the text
rendering adds (the cohort's teams, the Workload count, the plain-words lines).

A job whose uid is missing cannot be looked up (its Workload is found by that uid), so
it is an ``ExplainError`` naming the field, not a NotManaged guess.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from webhook.explain import jobstate as s
from webhook.explain.inputs import Document, QuotaPicture, Simulate, WorkloadIndex, metadata, text_field
from webhook.explain.jobstatus import POD
from webhook.explain.preemption import parse_preemption_message, why
from webhook.explain.preemptor import Preemptor, admitted_cluster_queue, resolve_preemptor
from webhook.explain.result import ExplainResult, PreemptorJson, QuotaJson, quota_numbers, simulation_json
from webhook.explain.simulation import SimulationView, read_simulation
from webhook.explain.workloads import WORKLOAD, job_workloads, name_of, owner_job
from webhook.kube.typos import did_you_mean
from webhook.objects.kinds import DEPLOYMENT, JOB, JOBSET
from webhook.simulate.result import Result

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: the kinds ``explain`` answers for (SPEC §13)
KINDS: Final = (JOBSET, JOB, DEPLOYMENT, WORKLOAD)


class ExplainError(ValueError):
    """The input cannot be explained (what is wrong and how to fix it, in the message)."""


@dataclass(frozen=True, slots=True)
class ExplainRequest:
    """One job to explain and the state to explain it from (see ``webhook.explain.inputs``).

    ``kind`` is JobSet, Job, Deployment or Workload; ``job`` its document as stored.
    ``local_queues`` maps (namespace, LocalQueue) to its ClusterQueue, for a Workload
    that holds no quota yet. ``pods`` maps (namespace, name) to the Pods read, for a
    Deployment's Workloads (one per Pod, each as ready as its Pod).
    """

    kind: str
    job: Document
    workloads: WorkloadIndex
    quota: QuotaPicture | None = None
    simulate: Simulate | None = None
    local_queues: Mapping[tuple[str, str], str] = field(default_factory=dict)
    pods: Mapping[tuple[str, str], Document] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Explanation:
    """The explained job: §13's fields plus what the text rendering shows."""

    kind: str
    namespace: str
    name: str
    workload: str | None
    decided: s.Decided
    cluster_queue: str | None
    preemptor: Preemptor | None
    simulation: Result | None
    quota: QuotaPicture | None
    #: the job's Workloads by state (more than one only for a Deployment)
    workload_states: Mapping[str, int]
    #: the points of the explanation, one sentence each, in reading order
    points: tuple[str, ...]
    #: what the person can do about it, in a few words (the text leads with it)
    next_step: str = ""

    @property
    def state(self) -> str:
        return self.decided.state

    @property
    def reason(self) -> str | None:
        if self.state == s.QUEUED:
            view = read_simulation(self.simulation)
            return view.kep_reason if view is not None and view.kep_reason else self.decided.reason
        return self.decided.reason if self.state == s.PREEMPTED else None

    @property
    def cohort(self) -> str | None:
        if self.quota is None or self.cluster_queue is None:
            return None
        queue = self.quota.cluster_queues.get(self.cluster_queue)
        return queue.cohort if queue is not None else None

    @property
    def message(self) -> str:
        return " ".join(self.points)

    def result(self) -> ExplainResult:
        """The §13 ``results`` entry."""
        preemptor = self.preemptor
        queue = self.quota.cluster_queues.get(self.cluster_queue) if self.quota and self.cluster_queue else None
        return ExplainResult(
            kind=self.kind,
            namespace=self.namespace,
            name=self.name,
            workload=self.workload,
            state=self.state,
            reason=self.reason,
            since=self.decided.since,
            cluster_queue=self.cluster_queue,
            preemptor=(
                PreemptorJson(preemptor.workload, preemptor.job, preemptor.cluster_queue, preemptor.priority)
                if preemptor is not None
                else None
            ),
            simulation=simulation_json(self.simulation),
            quota=QuotaJson(quota_numbers(queue.flavors), queue.cohort) if queue is not None else None,
            message=self.message,
        )


def explain(request: ExplainRequest) -> Explanation:
    """Explain one job (see the module)."""
    if request.kind not in KINDS:
        guess = did_you_mean(request.kind, KINDS)
        hint = f"did you mean {guess}? " if guess else ""
        raise ExplainError(f"kind {request.kind!r}: not one explain answers for; {hint}use one of {', '.join(KINDS)}")
    meta = metadata(request.job)
    namespace, name = text_field(meta, "namespace"), text_field(meta, "name")
    if not name:
        raise ExplainError("metadata.name: missing; give the object as stored (kubectl get -o yaml)")
    if request.kind == WORKLOAD:
        workloads: list[Document] = [request.job]
        job_kind = (owner_job(request.job) or "").partition("/")[0]
        job: Document | None = None
    else:
        if not text_field(meta, "uid") and request.kind != DEPLOYMENT:
            raise ExplainError(
                "metadata.uid: missing; the job's Workload is found by its uid (label "
                "kueue.x-k8s.io/job-uid), so give the object as stored (kubectl get -o yaml)"
            )
        workloads = job_workloads(request.kind, request.job, request.workloads)
        # a Deployment's status counts all its pods; each Workload is one pod's (its Pod, its PodsReady)
        job_kind, job = request.kind, (None if request.kind == DEPLOYMENT else request.job)
    if not workloads:
        return _not_managed(request, namespace, name)
    if request.kind == DEPLOYMENT:
        decided = [(s.decide(w, POD, _pod_of(w, request.pods)), w) for w in workloads]
    else:
        decided = [(s.decide(w, job_kind, job), w) for w in workloads]
    decided.sort(key=lambda pair: s.NEEDS_EXPLAINING.index(pair[0].state))
    chosen, workload = decided[0]
    counts = Counter(d.state for d, _ in decided)
    preemptor = None
    if chosen.state == s.PREEMPTED:
        preemptor = resolve_preemptor(parse_preemption_message(chosen.detail), request.workloads)
    waiting = chosen.state == s.QUEUED or (chosen.state == s.PREEMPTED and chosen.requeued)
    simulation = request.simulate() if waiting and request.simulate is not None else None
    cluster_queue = _cluster_queue(workload, chosen, simulation, request.local_queues)
    view = read_simulation(simulation)
    points = _points(request.kind, chosen, preemptor, view, counts, cluster_queue)
    return Explanation(
        request.kind,
        namespace,
        name,
        name_of(workload),
        chosen,
        cluster_queue,
        preemptor,
        simulation,
        request.quota,
        dict(counts),
        points,
        _next_step(chosen, view, cluster_queue),
    )


def _pod_of(workload: Document, pods: Mapping[tuple[str, str], Document]) -> Document | None:
    """The Pod a Deployment's Workload is for (its owner), when it was read."""
    kind, _, rest = (owner_job(workload) or "").partition("/")
    namespace, _, name = rest.partition("/")
    return pods.get((namespace, name)) if kind == POD else None


def _not_managed(request: ExplainRequest, namespace: str, name: str) -> Explanation:
    meta = metadata(request.job)
    labels = meta.get("labels")
    queue = text_field(labels, QUEUE_LABEL) if isinstance(labels, Mapping) else ""
    if request.kind == DEPLOYMENT:
        looked = "no Workload is owned by a Pod of this Deployment"
    else:
        looked = f"no Workload in {namespace} has the label kueue.x-k8s.io/job-uid={text_field(meta, 'uid')}"
    why_not = (
        f"it has no {QUEUE_LABEL} label, so Kueue does not manage it"
        if not queue
        else f"it names LocalQueue {queue}, yet Kueue made no Workload: the namespace or kind may be "
        "outside Kueue's scope (managedJobsNamespaceSelector, integrations.frameworks)"
    )
    decided = s.Decided(s.NOT_MANAGED, None, "no Workload")
    point = f"Not managed by Kueue: {looked}; {why_not}."
    step = (
        f"add the label {QUEUE_LABEL} naming a LocalQueue, and resubmit."
        if not queue
        else "ask the cluster's admin whether Kueue manages this namespace and kind."
    )
    return Explanation(
        request.kind, namespace, name, None, decided, None, None, None, request.quota, {}, (point,), step
    )


def _cluster_queue(
    workload: Document,
    decided: s.Decided,
    simulation: Result | None,
    local_queues: Mapping[tuple[str, str], str],
) -> str | None:
    """Its ClusterQueue: where it holds quota, else what its LocalQueue points to, else what
    the simulation or the preemption message's own path names."""
    held = admitted_cluster_queue(workload)
    if held:
        return held
    queue_name = _map(workload.get("spec")).get("queueName")
    namespace = text_field(metadata(workload), "namespace")
    if isinstance(queue_name, str) and (namespace, queue_name) in local_queues:
        return local_queues[(namespace, queue_name)]
    view = read_simulation(simulation)
    if view is not None and view.cluster_queue:
        return view.cluster_queue
    if decided.state == s.PREEMPTED:
        return parse_preemption_message(decided.detail).preemptee_path_queue
    return None


#: what to do in each state that no simulation answers for
_STEPS: Final = {
    s.QUEUED: "wait for Kueue to admit it; give the cluster state to see what it waits for.",
    s.PREEMPTED: "nothing: Kueue requeues it by itself once its pods are gone.",
    s.PROVISIONING_SLICE: "wait for its slice to be provisioned; nothing to do unless the check fails.",
    s.STARTING: "wait for its pods to become ready.",
    s.RUNNING: "nothing: it runs.",
    s.FINISHED: "nothing: it finished.",
    s.FAILED: "read its pods' logs, fix the job and resubmit.",
    s.DEACTIVATED: "set spec.active back to true for Kueue to admit it again.",
}


_UNDECIDED: Final = "wait for Kueue to admit it; the simulation cannot say when (the detail says why)."


def _next_step(decided: s.Decided, simulation: SimulationView | None, cluster_queue: str | None) -> str:
    """The short "what to do" line: the simulation's answer for a waiting job, else the state's."""
    if simulation is not None:
        return simulation.next_step(cluster_queue) or _UNDECIDED
    if decided.state == s.PREEMPTED and decided.requeued:
        return "nothing to resubmit: it waits in its queue to be admitted again."
    return _STEPS.get(decided.state, "")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sentence(text: str) -> str:
    return text.rstrip().rstrip(".") + "."


def _since(decided: s.Decided) -> str:
    return f" since {decided.since}" if decided.since else ""


def _points(
    kind: str,
    decided: s.Decided,
    preemptor: Preemptor | None,
    simulation: SimulationView | None,
    counts: Counter[str],
    cluster_queue: str | None,
) -> tuple[str, ...]:
    points: list[str] = []
    total = sum(counts.values())
    if kind == DEPLOYMENT:
        by_state = ", ".join(f"{n} {state}" for state, n in sorted(counts.items(), key=lambda i: s.STATES.index(i[0])))
        points.append(f"{total} Workload(s), one per pod: {by_state}; explaining one that is {decided.state}.")
    state = decided.state
    team = f" in ClusterQueue {cluster_queue}" if cluster_queue else ""
    if state == s.PREEMPTED:
        points.append(f"Preempted{_since(decided)}: {why(decided.reason)}.")
        if preemptor is not None:
            points.append(f"Preempted by {preemptor.words()}.")
        else:
            points.append("Kueue's message does not name the preemptor.")
        if decided.requeued:
            points.append(f"It was requeued automatically and waits{team} to be admitted again; nothing to resubmit.")
        else:
            points.append("Its pods are stopping; Kueue requeues it by itself once they are gone.")
    elif state == s.QUEUED:
        points.append(f"Queued{team}{_since(decided)}: it holds no quota yet.")
        if decided.evicted_for:
            points.append(_sentence(f"Kueue evicted it ({decided.evicted_for}): {decided.detail}".rstrip(": ")))
        if decided.requeue_at:
            points.append(f"It goes back in the queue at {decided.requeue_at} (backoff after the eviction).")
        elif decided.detail and not decided.evicted_for:
            points.append(_sentence(f"Kueue says: {decided.detail}"))
    elif state == s.PROVISIONING_SLICE:
        points.append(f"Provisioning its slice{_since(decided)}: quota is reserved{team}; {decided.deciding}.")
        if decided.detail:
            points.append(_sentence(f"The check says: {decided.detail}"))
    elif state == s.STARTING:
        points.append(f"Starting{_since(decided)}: admitted{team}, its pods are coming up ({decided.deciding}).")
        if decided.detail:
            points.append(_sentence(f"Kueue says: {decided.detail}"))
    elif state == s.RUNNING:
        points.append(f"Running{_since(decided)}{team}: every replica is ready.")
    elif state in (s.FINISHED, s.FAILED):
        word = "Failed" if state == s.FAILED else "Finished"
        points.append(f"{word}{_since(decided)} ({decided.deciding}).")
        if decided.detail:
            points.append(_sentence(decided.detail))
    elif state == s.DEACTIVATED:
        points.append(
            f"Deactivated{_since(decided)}: spec.active is false, so Kueue will not admit it until it is set "
            "back to true."
        )
        if decided.detail:
            points.append(_sentence(f"Kueue says: {decided.detail}"))
    if simulation is not None:
        points += simulation.points()
    return tuple(points)
