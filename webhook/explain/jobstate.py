"""A job's state in RFC-0033's words (4.3.2), decided from its Workload's conditions.

The RFC's table, with Kueue's condition semantics (``pkg/workload``), in the order the
checks run; the first that holds decides, and its condition's ``lastTransitionTime`` is
``since``:

1. Finished / Failed: the job's own end condition (JobSet ``Completed`` / ``Failed``,
   Job ``Complete`` / ``Failed``), else the Workload's ``Finished=True`` (reason
   ``Failed`` is Failed). An ended job is ended whatever else is still written.
2. Deactivated: ``spec.active: false``. Kueue evicts it with reason ``Deactivated``
   (``DeactivatedDueTo<cause>`` when Kueue did it itself, ``InactiveWorkload`` before
   v0.9); it never runs again until someone sets ``active`` back.
3. Preempted: ``Evicted=True`` with reason ``Preempted``. Kueue resets ``Evicted`` to
   False when the Workload reserves quota again, so a True one means it has not yet;
   ``Requeued=True`` says it is back in its queue. The reason is the ``Preempted``
   condition's (InClusterQueue, InCohortReclamation, InCohortFairSharing, ...), never
   filtered (RFC 4.3.4).
4. Queued: ``QuotaReserved`` not True (absent, or False with a KEP-10852 reason). An
   eviction for another reason (PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped,
   NodeFailures) lands here too, and is said.
5. ProvisioningSlice: ``QuotaReserved=True`` and ``Admitted`` not True: an
   AdmissionCheck (the slice check, RFC 4.3.2) is not Ready yet. The static form has no
   such check, so it goes from 4 straight to 6.
6. Starting / Running: ``Admitted=True``; Running when every replica is ready (the job's
   status, else the Workload's ``PodsReady=True``), Starting otherwise or when nothing
   says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from webhook.explain import conditions as c
from webhook.explain.inputs import Document, metadata, text_field
from webhook.explain.jobstatus import all_ready, terminal

NOT_MANAGED: Final = "NotManaged"
QUEUED: Final = "Queued"
PROVISIONING_SLICE: Final = "ProvisioningSlice"
STARTING: Final = "Starting"
RUNNING: Final = "Running"
PREEMPTED: Final = "Preempted"
FINISHED: Final = "Finished"
FAILED: Final = "Failed"
DEACTIVATED: Final = "Deactivated"
STATES: Final = (
    NOT_MANAGED,
    QUEUED,
    PROVISIONING_SLICE,
    STARTING,
    RUNNING,
    PREEMPTED,
    FINISHED,
    FAILED,
    DEACTIVATED,
)
#: which of a Deployment's Workloads (one per pod) is explained: the first state here
NEEDS_EXPLAINING: Final = (
    PREEMPTED,
    QUEUED,
    DEACTIVATED,
    PROVISIONING_SLICE,
    STARTING,
    FAILED,
    RUNNING,
    FINISHED,
    NOT_MANAGED,
)


@dataclass(frozen=True, slots=True)
class Decided:
    """A state, since when, and what decided it, in words (``deciding``) and as data."""

    state: str
    since: str | None
    deciding: str
    #: Queued: the stored QuotaReserved reason when it is a KEP-10852 token; Preempted:
    #: the Preempted condition's reason; else ``None``
    reason: str | None = None
    #: the condition or AdmissionCheck message that says more, when there is one
    detail: str = ""
    #: Preempted: Requeued=True (back in the queue); Queued after an eviction: the backoff end
    requeued: bool = False
    requeue_at: str | None = None
    #: Queued after an eviction for another reason than preemption: that reason
    evicted_for: str | None = None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def decide(workload: Document, kind: str, job: Document | None) -> Decided:
    """The state of ``workload`` (the job ``job`` of ``kind`` when it is known), see the module."""
    status = _map(workload.get("status"))
    found = c.read_conditions(status.get("conditions"))
    ended = _ended(found, kind, job)
    if ended is not None:
        return ended
    evicted = found.get(c.EVICTED)
    evicted = evicted if evicted is not None and evicted.true else None
    if _map(workload.get("spec")).get("active") is False:
        deactivation = evicted if evicted is not None and c.is_deactivation(evicted.reason) else None
        return Decided(
            DEACTIVATED,
            deactivation.since if deactivation else None,
            "spec.active is false",
            detail=deactivation.message if deactivation else "",
        )
    if evicted is not None and evicted.reason == c.EVICTED_BY_PREEMPTION:
        preempted = found.get(c.PREEMPTED)
        requeued = found.get(c.REQUEUED)
        return Decided(
            PREEMPTED,
            evicted.since,
            "Evicted=True with reason Preempted",
            reason=preempted.reason or None if preempted is not None and preempted.true else None,
            detail=(preempted.message if preempted is not None and preempted.true else "") or evicted.message,
            requeued=requeued is not None and requeued.true,
        )
    reserved = found.get(c.QUOTA_RESERVED)
    if reserved is None or not reserved.true:
        return _queued(workload, reserved, evicted, found.get(c.REQUEUED), status)
    admitted = found.get(c.ADMITTED)
    if admitted is None or not admitted.true:
        return _provisioning(status, reserved, admitted)
    return _started(found, admitted, kind, job)


def _ended(found: Mapping[str, c.Condition], kind: str, job: Document | None) -> Decided | None:
    own = terminal(kind, job)
    if own is not None:
        condition, failed = own
        return Decided(
            FAILED if failed else FINISHED,
            condition.since,
            f"the {kind}'s {condition.type}=True",
            detail=condition.message,
        )
    finished = found.get(c.FINISHED)
    if finished is None or not finished.true:
        return None
    failed = finished.reason == c.FINISHED_FAILED
    return Decided(
        FAILED if failed else FINISHED,
        finished.since,
        f"Finished=True with reason {finished.reason or '(none)'}",
        detail=finished.message,
    )


def _queued(
    workload: Document,
    reserved: c.Condition | None,
    evicted: c.Condition | None,
    requeued: c.Condition | None,
    status: Mapping[str, Any],
) -> Decided:
    reason = reserved.reason if reserved is not None and reserved.reason in c.KEP_10852_REASONS else None
    since = reserved.since if reserved is not None else None
    requeue_at = _map(status.get("requeueState")).get("requeueAt")
    backoff = requeued is not None and not requeued.true and isinstance(requeue_at, str)
    return Decided(
        QUEUED,
        since or (evicted.since if evicted else None) or text_field(metadata(workload), "creationTimestamp") or None,
        "QuotaReserved is not True" if reserved is not None else "no QuotaReserved condition yet",
        reason=reason,
        detail=(evicted.message if evicted is not None else reserved.message if reserved is not None else ""),
        requeue_at=requeue_at if backoff and isinstance(requeue_at, str) else None,
        evicted_for=evicted.reason or None if evicted is not None else None,
    )


def _provisioning(status: Mapping[str, Any], reserved: c.Condition, admitted: c.Condition | None) -> Decided:
    waiting = [
        check for check in c.read_admission_checks(status.get("admissionChecks")) if check.state != c.CHECK_READY
    ]
    if waiting:
        check = waiting[0]
        return Decided(
            PROVISIONING_SLICE,
            check.since or reserved.since,
            f"QuotaReserved=True, AdmissionCheck {check.name} is {check.state or 'not Ready'}",
            detail=check.message,
        )
    return Decided(
        PROVISIONING_SLICE,
        reserved.since,
        "QuotaReserved=True, Admitted is not True",
        detail=admitted.message if admitted is not None else "",
    )


def _started(found: Mapping[str, c.Condition], admitted: c.Condition, kind: str, job: Document | None) -> Decided:
    ready = all_ready(kind, job)
    pods_ready = found.get(c.PODS_READY)
    if ready is None and pods_ready is not None:
        ready = pods_ready.true
    if ready:
        since = pods_ready.since if pods_ready is not None and pods_ready.true else admitted.since
        return Decided(RUNNING, since or admitted.since, "Admitted=True, every replica ready")
    if ready is None:
        return Decided(STARTING, admitted.since, "Admitted=True; nothing says its replicas are ready yet")
    detail = pods_ready.message if pods_ready is not None and not pods_ready.true else ""
    return Decided(STARTING, admitted.since, "Admitted=True, not every replica ready", detail=detail)
