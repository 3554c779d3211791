"""The state machine: RFC-0033 4.3.2's table over Kueue's Workload conditions.

Each case is a Workload (and the job when it matters) and the whole decision expected:
state, since, reason and the fields the explanation reads. The conditions are written as
Kueue writes them (``pkg/workload``, ``pkg/workload/evict``, ``pkg/scheduler/preemption``).
"""

from __future__ import annotations

from typing import Any

import pytest
from explain_builders import (
    RECLAIM_MESSAGE,
    T0,
    T1,
    T2,
    StoredJobSet,
    queued_workload,
    rfc_example_one,
    rfc_example_two,
)

from webhook.explain import jobstate as s
from webhook.explain.jobstate import Decided, decide

TIMEOUT = "Exceeded the PodsReady timeout default/wl"
CASES: list[tuple[str, dict[str, Any], str, dict[str, Any] | None, Decided]] = [
    (
        "RFC example one with the JobSet's replicas all ready: Running",
        rfc_example_one().obj(),
        "JobSet",
        StoredJobSet().ready(2).obj(),
        Decided(s.RUNNING, T1, "Admitted=True, every replica ready"),
    ),
    (
        "RFC example one, one of two replicated Jobs ready: Starting",
        rfc_example_one().obj(),
        "JobSet",
        StoredJobSet().ready(1).obj(),
        Decided(s.STARTING, T1, "Admitted=True, not every replica ready"),
    ),
    (
        "RFC example one, no job status and no PodsReady: Starting, said as not known",
        rfc_example_one().obj(),
        "JobSet",
        StoredJobSet().obj(),
        Decided(s.STARTING, T1, "Admitted=True; nothing says its replicas are ready yet"),
    ),
    (
        "Admitted, the job says nothing, PodsReady=True (waitForPodsReady): Running since PodsReady",
        rfc_example_one().condition("PodsReady", "True", "Started", since=T2).obj(),
        "Workload",
        None,
        Decided(s.RUNNING, T2, "Admitted=True, every replica ready"),
    ),
    (
        "PodsReady=False WaitForRecovery: Starting, with Kueue's message",
        rfc_example_one().condition("PodsReady", "False", "WaitForRecovery", "a pod failed").obj(),
        "Workload",
        None,
        Decided(s.STARTING, T1, "Admitted=True, not every replica ready", detail="a pod failed"),
    ),
    (
        "RFC example two: Evicted=True Preempted, then Requeued=True: Preempted (InCohortReclamation)",
        rfc_example_two().obj(),
        "JobSet",
        StoredJobSet().obj(),
        Decided(
            s.PREEMPTED,
            T2,
            "Evicted=True with reason Preempted",
            reason="InCohortReclamation",
            detail=RECLAIM_MESSAGE,
            requeued=True,
        ),
    ),
    (
        "Preempted, pods still stopping (no Requeued yet): Preempted, not requeued",
        rfc_example_one().preempted("InClusterQueue", requeued=False).obj(),
        "JobSet",
        None,
        Decided(s.PREEMPTED, T2, "Evicted=True with reason Preempted", reason="InClusterQueue", detail=RECLAIM_MESSAGE),
    ),
    (
        "Evicted Preempted without a Preempted condition (older Kueue): Preempted, no reason",
        rfc_example_two().condition("Preempted", "False", "QuotaReserved").obj(),
        "JobSet",
        None,
        Decided(
            s.PREEMPTED, T2, "Evicted=True with reason Preempted", reason=None, detail=RECLAIM_MESSAGE, requeued=True
        ),
    ),
    (
        "Re-admitted after a preemption: Kueue resets Evicted and Preempted to False",
        rfc_example_two()
        .condition("QuotaReserved", "True", "QuotaReserved", since=T2)
        .condition("Evicted", "False", "QuotaReserved")
        .condition("Preempted", "False", "QuotaReserved")
        .condition("Admitted", "True", "Admitted", since=T2)
        .check("tpu7x-slice", "Ready", since=T2)
        .admitted_in("team-b")
        .obj(),
        "JobSet",
        StoredJobSet().ready(2).obj(),
        Decided(s.RUNNING, T2, "Admitted=True, every replica ready"),
    ),
    (
        "QuotaReserved=False with a KEP-10852 reason: Queued with that reason",
        queued_workload().obj(),
        "JobSet",
        StoredJobSet().obj(),
        Decided(s.QUEUED, T0, "QuotaReserved is not True", reason="WaitingForQuota", detail="couldn't assign flavors"),
    ),
    (
        "QuotaReserved=False with the legacy reason Pending: Queued, no KEP-10852 token",
        queued_workload().condition("QuotaReserved", "False", "Pending", "", T0).obj(),
        "JobSet",
        None,
        Decided(s.QUEUED, T0, "QuotaReserved is not True"),
    ),
    (
        "No condition at all yet (UnadmittedWorkloadsExplicitStatus off): Queued since creation",
        rfc_example_one().no_conditions().admitted_in(None).obj(),
        "JobSet",
        None,
        Decided(s.QUEUED, T0, "no QuotaReserved condition yet"),
    ),
    (
        "Evicted PodsReadyTimeout, Requeued=False with requeueAt (backoff): Queued until requeueAt",
        queued_workload()
        .condition("Evicted", "True", "PodsReadyTimeout", TIMEOUT, T1)
        .condition("Requeued", "False", "PodsReadyTimeout", TIMEOUT, T1)
        .requeue_at(T2)
        .obj(),
        "JobSet",
        None,
        Decided(
            s.QUEUED,
            T0,
            "QuotaReserved is not True",
            reason="WaitingForQuota",
            detail=TIMEOUT,
            requeue_at=T2,
            evicted_for="PodsReadyTimeout",
        ),
    ),
    (
        "QuotaReserved=True, the slice check Pending: ProvisioningSlice since the check, its message",
        rfc_example_one()
        .condition("Admitted", "False", "UnsatisfiedAdmissionChecks", since=T0)
        .check("tpu7x-slice", "Pending", "Slice llm-pretrain-a3f8-0 is being created", since=T1)
        .obj(),
        "JobSet",
        None,
        Decided(
            s.PROVISIONING_SLICE,
            T1,
            "QuotaReserved=True, AdmissionCheck tpu7x-slice is Pending",
            detail="Slice llm-pretrain-a3f8-0 is being created",
        ),
    ),
    (
        "QuotaReserved=True, every check Ready, Admitted not yet set: ProvisioningSlice since QuotaReserved",
        rfc_example_one().condition("Admitted", "False", "PendingDelayedTopologyRequests", "delayed", T0).obj(),
        "JobSet",
        None,
        Decided(s.PROVISIONING_SLICE, T0, "QuotaReserved=True, Admitted is not True", detail="delayed"),
    ),
    (
        "spec.active false, Kueue's requeuing limit: Deactivated since the eviction",
        rfc_example_two()
        .active(False)
        .condition("Evicted", "True", "DeactivatedDueToRequeuingLimitExceeded", "The workload is deactivated", T1)
        .obj(),
        "JobSet",
        None,
        Decided(s.DEACTIVATED, T1, "spec.active is false", detail="The workload is deactivated"),
    ),
    (
        "spec.active false before Kueue evicted it: Deactivated, since unknown",
        queued_workload().active(False).obj(),
        "JobSet",
        None,
        Decided(s.DEACTIVATED, None, "spec.active is false"),
    ),
    (
        "Finished=True reason Succeeded: Finished",
        rfc_example_one().condition("Finished", "True", "Succeeded", "Job finished successfully").obj(),
        "JobSet",
        None,
        Decided(s.FINISHED, T2, "Finished=True with reason Succeeded", detail="Job finished successfully"),
    ),
    (
        "Finished=True reason Failed: Failed",
        rfc_example_one().condition("Finished", "True", "Failed", "maxRestarts reached").obj(),
        "JobSet",
        None,
        Decided(s.FAILED, T2, "Finished=True with reason Failed", detail="maxRestarts reached"),
    ),
    (
        "The JobSet's own Failed=True decides before the Workload catches up",
        rfc_example_one().obj(),
        "JobSet",
        StoredJobSet().condition("Failed", "jobset failed, maxRestarts exceeded", T1).obj(),
        Decided(s.FAILED, T1, "the JobSet's Failed=True", detail="jobset failed, maxRestarts exceeded"),
    ),
    (
        "The JobSet's own Completed=True: Finished",
        rfc_example_one().obj(),
        "JobSet",
        StoredJobSet().condition("Completed", "jobset completed successfully", T2).obj(),
        Decided(s.FINISHED, T2, "the JobSet's Completed=True", detail="jobset completed successfully"),
    ),
    (
        "A batch/v1 Job's Complete=True: Finished",
        rfc_example_one().obj(),
        "Job",
        {"spec": {"parallelism": 1}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}},
        Decided(s.FINISHED, None, "the Job's Complete=True"),
    ),
]


@pytest.mark.parametrize(("workload", "kind", "job", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_state(workload: dict[str, Any], kind: str, job: dict[str, Any] | None, expected: Decided) -> None:
    assert decide(workload, kind, job) == expected


def test_every_state_but_not_managed_is_decided_by_a_case() -> None:
    # NotManaged is the absence of a Workload: the explainer decides it (test_explain_explainer)
    decided = {case[4].state for case in CASES}
    assert decided == set(s.STATES) - {s.NOT_MANAGED}
